"""Model providers: ask a server what it has, build the chat model, repair its streams, retry and explain failures.

One module per concern, each imported where it is needed (nothing is
re-exported here, so a test that patches a module's setting patches the one in use):

- ``discovery``: the models a server offers, their context length, size and tool support
  (``list_models``, ``ollama_model_info``, ``openai_model_info``, ``ModelInfo``,
  ``effective_context``); failures are a ``ServerError``.
- ``chat``: the LangChain chat model for a configuration (``create_chat_model``), closed
  after a run (``aclose_chat_model``).
- ``transports``: chat streams checked and repaired line by line below the clients
  (``StreamRepairTransport``), so tool calls are bounded before any client parses them.
- ``retries``: a busy or failing server asked again (``with_retries``, ``retry_wait``,
  ``RetriesExhausted``).
- ``faults``: what kind of failure an exception is, from its type (one mapping for httpx,
  httpx2, openai, pydantic and ollama).
- ``explain``: a failure in the user's words (``explain_model_error``).
"""
