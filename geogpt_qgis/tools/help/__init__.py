"""The help tool family: describe_capabilities, what every other family offers in this context.

- ``family``: ``CapabilityTools`` and ``offered_tools`` (which tools the model is sent).
"""
