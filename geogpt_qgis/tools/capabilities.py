"""Answer "what can you do?" from the real tool list, not from the model's imagination."""

from __future__ import annotations

import inspect

from geogpt_qgis.tools.base import ToolContext, ToolFamily, ToolFunction


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

    def describe_capabilities(self) -> str:
        """What you can do now, by family."""
        lines = ["Tools available now:"]
        off = []
        for family in self._families:
            reason = family.unavailable_reason()
            if reason:
                off.append(f"- {family.title}: off ({reason})")
                continue
            lines.append(f"\n{family.title}: {family.summary}")
            lines += [f"- {tool.__name__}: {first_line(tool)}" for tool in family.tools()]
        if off:
            lines += ["\nNot available in this session:", *off]
        return "\n".join(lines)
