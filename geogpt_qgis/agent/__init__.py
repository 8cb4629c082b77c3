"""The agent: model providers, prompt, graph and the session that runs it.

Everything that imports LangChain or LangGraph lives here and is imported
lazily, on the worker thread, when the first message is sent.
"""
