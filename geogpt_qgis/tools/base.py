"""What every tool family shares: the context it runs in and how it reports errors.

A tool is a plain method with typed arguments and a short docstring: the
signature and docstring are the schema the model reads, so both stay precise.
It returns a ``ToolResult``: the text the model reads, and the typed artifact
(layers read and added, tables, a chart...) the dock, the Sources list, the
run log and the evals read instead of the text.
Tools run on the agent's worker thread; whatever touches the project goes
through ``ToolContext.on_main``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from geogpt_qgis.core.artifacts import ToolResult
from geogpt_qgis.core.cancel import CancelToken, current_cancel_token
from geogpt_qgis.core.user_named import UserNamed

if TYPE_CHECKING:
    from pathlib import Path

    from qgis.core import QgsProject
    from qgis.gui import QgisInterface

    from geogpt_qgis.toolbelt.main_thread import MainThreadBridge

T = TypeVar("T")
# A tool answers with the text for the model and what it used and made (``core.artifacts``).
ToolFunction = Callable[..., ToolResult]


class ToolError(Exception):
    """A mistake the model can fix; the message goes back to it as the tool's result."""


@dataclass
class ToolContext:
    """The live QGIS a tool works on, and the run it belongs to.

    ``iface`` is ``None`` in headless use.  ``cancel`` is the token of the run
    the calling code belongs to (a context variable, see ``core.cancel``).
    """

    project: QgsProject
    bridge: MainThreadBridge
    iface: QgisInterface | None = None
    # The files, folders and URLs the user typed in each conversation: what tools may use without asking.
    user_named: UserNamed = field(default_factory=UserNamed)

    @property
    def cancel(self) -> CancelToken:
        return current_cancel_token.get()

    def on_main(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn`` on the main thread (skipped if the run is cancelled first)."""
        return self.bridge.call(fn, *args, cancel=self.cancel, **kwargs)

    def trusted_file(self, path: Path) -> bool:
        """A file in the project's folder, or one the user named in this conversation (main thread)."""
        return self.user_named.file_named(path, self.project.homePath())

    def check_cancelled(self) -> None:
        """Raise ``RunCancelled`` if the user pressed Stop."""
        self.cancel.raise_if_cancelled()


class ToolFamily:
    """A group of tools about one kind of data (project, processing, PostGIS...).

    Subclasses set ``name``/``title``/``summary`` and return their tool methods
    from ``tools()``.  ``unavailable_reason()`` returns why the family is off
    in this context (no connection configured, say), or ``None``.
    """

    name: str = ""
    title: str = ""
    summary: str = ""
    prompt_hint: str = ""  # one line for the system prompt when the family is active

    def __init__(self, ctx: ToolContext) -> None:
        self.ctx = ctx

    def tools(self) -> list[ToolFunction]:
        raise NotImplementedError

    def unavailable_reason(self) -> str | None:
        return None

    def notice_user_text(self, text: str) -> None:
        """See each message the user sends (before the run), e.g. to learn a server URL they named."""
