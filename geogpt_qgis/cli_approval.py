"""Approvals at a terminal, for ``python -m geogpt_qgis ask --approval ask``.

The dock shows a gated step on a card with Approve, Reject and "Always for
this tool"; here the same request is printed on the terminal and answered with
``y``, ``n`` (optionally followed by a reason, which the model reads) or
``always``.  The answer becomes the very decision the card sends (the same
dict, the same ``StandingApprovals`` rule for where "always" may stand), so the
run engine treats both front ends alike.  The request comes from the model's
tool call: what is printed is cleaned of control and invisible characters
(shown escaped), so text in the call cannot redraw the terminal or hide a line
of code from the person deciding.  Qt-free; the streams are passed in.
"""

from __future__ import annotations

import io
import os
import select
import unicodedata
from typing import Any, TextIO

from geogpt_qgis.core.approval import APPROVE, REJECT, ApprovalRequest, StandingApprovals
from geogpt_qgis.core.text import short, single_line

# Categories printed escaped in a preview's lines: controls, format characters (bidi overrides, zero-width),
# line and paragraph separators, private use, surrogates, unassigned.
_HIDDEN = ("Cc", "Cf", "Zl", "Zp", "Co", "Cn", "Cs")
MAX_FACTS = 8
MAX_DETAIL_LINES = 200

NO_TERMINAL = (
    "note: --approval ask needs a terminal to answer on, and standard input is not one: "
    "steps that need approval are refused, as with --approval never.\n"
)


def is_terminal(stream: TextIO) -> bool:
    """Whether ``stream`` is an interactive terminal (a closed or odd stream is not)."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def visible(text: str) -> str:
    """``text`` with every control or invisible character spelled out (``\\x1b``, ``\\u202e``); tabs kept."""
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if ch != "\t" and unicodedata.category(ch) in _HIDDEN:
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
        else:
            out.append(ch)
    return "".join(out)


def preview(request: ApprovalRequest) -> str:
    """The request as the card shows it: what, which tool and effects, what it affects, then the code or text."""
    lines = [f"Approval needed: {single_line(request.action)}"]
    if request.tool:
        lines.append(f"  tool: {single_line(request.tool)}")
    effects = [effect.verb for effect in request.effects]
    if effects:
        lines.append(f"  which: {', '.join(effects)}")
    for target in request.targets:
        lines.append(f"  affects: {single_line(target.line())}")
    for item in request.notes:
        lines.append(f"  note: {single_line(item)}")
    facts = [
        f"  {short(name, 40)}: {short(value, 100)}"
        for key, value in request.args.items()
        if key != request.editable
        for name, value in (value.items() if isinstance(value, dict) else [(key, value)])
        if isinstance(value, str | int | float | bool) and str(value)
    ]
    lines += facts[:MAX_FACTS]
    details = request.details.strip("\n")
    if details.strip():
        label = {"python": "code", "sql": "SQL"}.get(request.language, "details")
        lines.append(f"  --- {label} ---")
        body = details.split("\n")
        lines += [f"  | {visible(line)}" for line in body[:MAX_DETAIL_LINES]]
        if len(body) > MAX_DETAIL_LINES:
            lines.append(f"  | … ({len(body) - MAX_DETAIL_LINES} more lines not shown: answer n to be safe)")
        lines.append("  ---")
    return "\n".join(lines) + "\n"


def question(request: ApprovalRequest) -> str:
    """The prompt: ``always`` only where the dock offers it (never for code, each snippet is read)."""
    if StandingApprovals.can_stand(request):
        tool = single_line(request.tool)
        return f"Run it? [y]es / [n]o (a reason may follow) / [a]lways for {tool} in this run: "
    return "Run it? [y]es / [n]o (a reason may follow); code is approved one snippet at a time: "


class TerminalApprover:
    """Asks the person at the terminal about each gated step; answers with the card's decision dict.

    End of input (Ctrl+D) refuses the step and every later one without
    asking again (no one can answer any more); Ctrl+C at the question is the
    caller's to handle (``KeyboardInterrupt`` propagates: the command stops).
    """

    def __init__(self, answers: TextIO, out: TextIO) -> None:
        self.answers = answers
        self.out = out
        self.closed = False
        self._unread = b""  # read from the terminal past the last answer's line (a pasted second line)

    def decide(self, request: ApprovalRequest) -> dict[str, Any]:
        self.out.write("\n" + preview(request))
        if self.closed:
            return self._refuse(request, "No one can answer (input ended): refused.")
        can_stand = StandingApprovals.can_stand(request)
        while True:
            self.out.write(question(request))
            self.out.flush()
            line = self._read_line()
            if not line:
                self.out.write("\n")
                self.closed = True
                return self._refuse(request, "No answer (input ended): refused.")
            word, _, rest = line.strip().partition(" ")
            word = word.lower().rstrip(",:;.")
            if word in ("y", "yes"):
                self.out.write("Approved.\n")
                return {"action": APPROVE, "trust": False, "always": False, "call_id": request.call_id}
            if word in ("a", "always") and can_stand:
                self.out.write(
                    f"Approved, and {single_line(request.tool)}'s steps that do no more than this one "
                    "will run without asking in this run.\n"
                )
                return {"action": APPROVE, "trust": False, "always": True, "call_id": request.call_id}
            if word in ("n", "no"):
                reason = single_line(rest.strip())
                self.out.write("Refused; the assistant is told" + (" why.\n" if reason else ".\n"))
                return {"action": REJECT, "reason": reason, "call_id": request.call_id}
            if word in ("a", "always"):
                self.out.write("'always' is not offered for code: answer y or n.\n")
            else:
                self.out.write("Please answer y, n or always.\n" if can_stand else "Please answer y or n.\n")

    def _read_line(self) -> str:
        """One answer line, "" at the end of input; Ctrl+C raises ``KeyboardInterrupt`` while it waits.

        A blocking read could wait on after Ctrl+C: QGIS runs many threads, and the kernel may hand the signal
        to one of them, so the main thread's read is never interrupted and Python never runs its handler.
        Waiting in short ``select`` steps gives Python that chance between steps.  Without a file descriptor
        (a test's text stream) it is a plain ``readline``.
        """
        try:
            descriptor = self.answers.fileno()
        except (AttributeError, OSError, io.UnsupportedOperation):
            return self.answers.readline()
        while b"\n" not in self._unread:
            if not select.select([descriptor], [], [], 0.2)[0]:
                continue
            chunk = os.read(descriptor, 4096)
            if not chunk:  # end of input: what came before it is the last answer
                line, self._unread = self._unread, b""
                return line.decode("utf-8", "replace")
            self._unread += chunk
        line, _, self._unread = self._unread.partition(b"\n")
        return line.decode("utf-8", "replace") + "\n"

    def _refuse(self, request: ApprovalRequest, said: str) -> dict[str, Any]:
        self.out.write(said + "\n")
        return {"action": REJECT, "reason": "no one answered", "call_id": request.call_id}
