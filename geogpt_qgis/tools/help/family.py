"""Answer "what can you do?" from the real tool list, not from the model's imagination.

In a conversation with the compact tool profile (``agent.profiles``) the model
is sent only a few tool schemas; the others are listed here with their
arguments and marked, so that it can still call them by name (the toolkit runs
them like any other).
"""

from __future__ import annotations

import inspect
from contextvars import ContextVar

from geogpt_qgis.core.artifacts import ToolResult
from geogpt_qgis.tools.base import ToolContext, ToolFamily, ToolFunction

# The names of the tools the model was sent in this run (set by the agent session); ``None``: all of them.
offered_tools: ContextVar[frozenset[str] | None] = ContextVar("geogpt_offered_tools", default=None)
NOT_OFFERED_NOTE = "* = not in your tool list in this conversation: call it by name with the arguments shown."


def first_line(function: ToolFunction) -> str:
    doc = inspect.getdoc(function) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


class CapabilityTools(ToolFamily):
    """The self-description tool; it reads the families that are actually loaded."""

    name = "help"
    title = "Help"
    summary = "describe what the assistant can do"

    def __init__(self, ctx: ToolContext, families: list[ToolFamily]) -> None:
        super().__init__(ctx)
        self._families = families

    def tools(self) -> list[ToolFunction]:
        return [self.describe_capabilities]

    def describe_capabilities(self) -> ToolResult:
        """What you can do now, by family."""
        offered = offered_tools.get()
        lines = ["Tools available now:"]
        off = []
        for family in self._families:
            reason = family.unavailable_reason()
            if reason:
                off.append(f"- {family.title}: off ({reason})")
                continue
            lines.append(f"\n{family.title}: {family.summary}")
            for tool in family.tools():
                sent = offered is None or tool.__name__ in offered
                name = tool.__name__ if sent else f"*{tool.__name__}({_arguments(tool)})"
                lines.append(f"- {name}: {first_line(tool)}")
        if offered is not None and any(line.startswith("- *") for line in lines):
            lines.insert(1, NOT_OFFERED_NOTE)
        if off:
            lines += ["\nNot available in this session:", *off]
        return ToolResult("\n".join(lines))


def _arguments(function: ToolFunction) -> str:
    """``layer, fields?, limit?``: a tool's arguments, optional ones marked."""
    parameters = inspect.signature(function).parameters.values()
    return ", ".join(p.name + ("" if p.default is inspect.Parameter.empty else "?") for p in parameters)
