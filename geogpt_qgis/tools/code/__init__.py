"""The code tool family: PyQGIS snippets for what no fixed tool covers, run only once the user approved them.

- ``family``: ``CodeTools`` (run_pyqgis), the gated call and its approval card.
- ``runner``: compiling and running a snippet (namespace, captured output, time limit and Stop).
"""
