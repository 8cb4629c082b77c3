"""The plugin's tools offered to other assistants over the Model Context Protocol (MCP).

``tools`` turns the dock agent's toolkit into MCP tools and calls (same
schemas, checks, errors and result text), ``resources`` describes the
project's layers and the tool catalogue, ``server`` wires both into the
``mcp`` SDK's low-level server, and ``stdio`` is the headless
``python -m geogpt_qgis mcp PROJECT`` mode.  The SDK is imported only here,
and only when a server starts: QGIS start-up never pays for it.
"""
