"""The agent graph: the model calls tools until it answers, within a step cap, and asks before risky steps.

```
START -> model --tool calls--> review --gated, undecided--> approve --> tools --next call--> review ...
           |                      \\--harmless or decided------------------^     \\--last call--> model
           |--answer--> END
           \\--step cap reached--> step_cap --> END
```

The calls of one reply are taken one at a time, in order: each is previewed
(review) just before it runs, after the reply's earlier calls ran, so an
approval card never describes a project those calls are about to change.

The model node sends the system prompt plus the history that fits the
context.  The review node previews the next tool call: a gated call (code, a
SQL write, deleting a layer or features, writing a file) goes to the approve
node, which pauses the run with a LangGraph ``interrupt`` until the user
decides, unless the conversation's policy decides (trust: approve; never:
refuse) or an "always" covers it.  The tools node runs the call through the
``Toolkit`` (which turns every mistake into a message the model can act on),
never without a recorded approval, and never when it no longer resolves to
the layers, tables and files the user approved (``core.targets``).  At most
``MAX_TOOL_CALLS_PER_REPLY`` calls of one reply run, and
``MAX_TOOL_CALLS_PER_RUN`` per user message; each call past a cap is answered
"Not run" (nothing asked, nothing run), so a reply of 200 calls costs 16.

The nodes themselves, and the state they share, are in ``agent.nodes``; this
module only wires them.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from langgraph.graph import END, START, StateGraph

from geogpt_qgis.agent.nodes import (
    MAX_TOOL_CALLS_PER_REPLY,
    MAX_TOOL_CALLS_PER_RUN,
    AgentState,
    NodeSetup,
    after_model,
    after_review,
    after_tools,
    answer_reserve,
    approve,
    call_model,
    review,
    run_tools,
    step_cap_message,
    stop_at_cap,
    tool_call_id,
)
from geogpt_qgis.core.approval import ApprovalRequest
from geogpt_qgis.core.tokens import TokenCalibration

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.graph.state import CompiledStateGraph
    from langgraph.types import StateSnapshot

    from geogpt_qgis.agent.toolkit import Toolkit

# Imported from here by the session and the tests; they live with the nodes that use them.
__all__ = [
    "MAX_TOOL_CALLS_PER_REPLY",
    "MAX_TOOL_CALLS_PER_RUN",
    "AgentState",
    "answer_reserve",
    "build_graph",
    "pending_request",
    "recursion_limit",
    "step_cap_message",
    "tool_call_id",
]


def build_graph(
    model: BaseChatModel | None,
    toolkit: Toolkit,
    system_prompt: str,
    *,
    max_steps: int,
    context_tokens: int,
    checkpointer: BaseCheckpointSaver[str] | None = None,
    calibration: TokenCalibration | None = None,
    max_tokens: int = 1024,
    fallback: BaseChatModel | None = None,
    on_fallback: Callable[[], None] | None = None,
) -> CompiledStateGraph[AgentState]:
    """Compile the graph; ``system_prompt`` opens every model call, the same text each time.

    ``model`` may be ``None`` to inspect a conversation's stored state only.
    ``calibration`` carries what earlier calls taught about the server's token
    counts (it only ever makes estimates larger).  ``max_tokens`` is the bound
    on a reply the model was built with (``ModelConfig.max_tokens``), for the
    message when a reply reaches it.  ``fallback`` is the model asked for guided
    tool calls from the first call whose native calls the server refuses
    (``on_fallback`` is then called).
    """
    setup = NodeSetup(
        model,
        toolkit,
        system_prompt,
        max_steps,
        context_tokens,
        max_tokens,
        calibration or TokenCalibration(),
        fallback,
        on_fallback,
    )
    graph = StateGraph(AgentState)
    graph.add_node("model", partial(call_model, setup=setup))
    graph.add_node("review", partial(review, setup=setup))
    graph.add_node("approve", partial(approve, setup=setup))
    graph.add_node("tools", partial(run_tools, setup=setup))
    graph.add_node("step_cap", partial(stop_at_cap, setup=setup))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", partial(after_model, setup=setup), ["review", "model", "step_cap", END])
    graph.add_conditional_edges("review", partial(after_review, setup=setup), ["approve", "tools"])
    graph.add_edge("approve", "tools")
    graph.add_conditional_edges("tools", partial(after_tools, setup=setup), ["review", "model"])
    graph.add_edge("step_cap", END)
    return graph.compile(checkpointer=checkpointer)


def recursion_limit(max_steps: int) -> int:
    """LangGraph's step bound for one run: every model call, and review, approve and tools for every call run."""
    return 2 * max_steps + 3 * MAX_TOOL_CALLS_PER_RUN + 10


def pending_request(state: StateSnapshot) -> ApprovalRequest | None:
    """The approval a conversation is waiting for (from ``graph.aget_state``), if any."""
    for interrupt_ in getattr(state, "interrupts", ()) or ():
        value = getattr(interrupt_, "value", None)
        if isinstance(value, dict) and "action" in value:
            return ApprovalRequest.from_dict(value)
    return None
