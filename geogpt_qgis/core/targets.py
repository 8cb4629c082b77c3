"""What an approval names, resolved: the exact layer, table, file or URL a gated call would act on.

A card that says "delete 31 features from 'schools'" is a contract on *that*
layer (its id and data source) and *those* features, not on whatever is called
'schools' when the call runs.  A ``Target`` records the resolved identity
(``ident``: a layer id, ``connection/schema.table``, a real path, a URL), where it
lives (``source``), the state the card showed (``state``: the features it
counts, a table's oid, a file's inode/size/mtime) and what the call does to it
(``ops``: delete, update, insert, drop...).  ``broken_contract`` says why the
targets a call resolves to when it runs are not the ones approved;
``within`` says whether an "always" given for some targets covers a later call.
Typed, so nothing downstream parses a card's prose.  Qt-free.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

LAYER, TABLE, FILE, URL = "layer", "table", "file", "url"


@dataclass(frozen=True)
class Target:
    """One resolved thing a call acts on (see the module docstring)."""

    kind: str  # LAYER, TABLE, FILE or URL
    name: str  # as the user knows it: the layer's name, schema.table, the path or URL given
    ident: str  # what it resolves to: the layer id, "connection/schema.table", the real path, the URL
    source: str = ""  # where it lives: the layer's data source, the connection's server and database, the host
    state: str = ""  # what must not change between the card and the run (features, oid, inode/size/mtime)
    ops: tuple[str, ...] = ()  # what the call does to it: "delete", "update field", "insert", "drop", "write"...

    @property
    def key(self) -> tuple[str, str, str]:
        """The identity: the same key is the same layer, table or file (its state may differ)."""
        return self.kind, self.ident, self.source

    def line(self) -> str:
        """One line for the card: what, where, in which state, and what is done to it."""
        where = f" ({self.source})" if self.source and self.source != self.name else ""
        state = f"; {self.state}" if self.state else ""
        ops = f": {', '.join(self.ops)}" if self.ops else ""
        return f"{self.kind} {self.name!r}{where}{state}{ops}"

    def to_dict(self) -> dict[str, Any]:
        """Plain values only (a checkpoint and the run log store it)."""
        return {
            "kind": self.kind,
            "name": self.name,
            "ident": self.ident,
            "source": self.source,
            "state": self.state,
            "ops": list(self.ops),
        }

    @classmethod
    def from_value(cls, value: Any) -> Target:
        if isinstance(value, Target):
            return value
        data = dict(value) if isinstance(value, dict) else {}
        ops = data.get("ops") or ()
        return cls(
            str(data.get("kind") or ""),
            str(data.get("name") or ""),
            str(data.get("ident") or ""),
            str(data.get("source") or ""),
            str(data.get("state") or ""),
            tuple(str(op) for op in ops) if isinstance(ops, list | tuple) else (),
        )


def broken_contract(approved: Iterable[Target], now: Iterable[Target]) -> str | None:
    """Why a call's targets ``now`` are not the ``approved`` ones (``None``: they are exactly those).

    Every approved target must be there with the same identity and state, and
    nothing else may be: a layer renamed or replaced, a table dropped and made
    again, a path that now leads elsewhere, other features, a wider operation.
    """
    approved, now = list(approved), list(now)
    found = {target.key: target for target in now}
    for target in approved:
        current = found.pop(target.key, None)
        if current is None:
            same_name = next((t for t in now if t.kind == target.kind and t.name == target.name), None)
            if same_name is not None:
                return (
                    f"{target.kind} {target.name!r} now resolves to {same_name.ident} ({same_name.source or '-'}), "
                    f"not to the approved {target.ident} ({target.source or '-'})"
                )
            return f"the approved {target.kind} {target.name!r} ({target.ident}) is not what this call would change now"
        if current.state != target.state:
            then, now_ = target.state or "-", current.state
            return f"{target.kind} {target.name!r} changed since approval: {then} then, {now_} now"
        wider = [op for op in current.ops if op not in target.ops]
        if wider:
            return f"on {target.kind} {target.name!r} it would now also {', '.join(wider)}"
    if found:
        extra = next(iter(found.values()))
        return f"it would now also change {extra.kind} {extra.name!r} ({extra.ident}), which was not approved"
    return None


def within(granted: Iterable[Target], asked: Iterable[Target]) -> bool:
    """Whether ``asked`` acts only on ``granted``'s targets, with the same or fewer operations on each.

    Identity only (the state may have moved on: an "always" for deleting from
    a layer covers a later delete from that same layer with another filter).
    A call without targets is covered only by an answer given without targets.
    """
    granted, asked = list(granted), list(asked)
    if not asked or not granted:
        return not asked and not granted
    held = {target.key: set(target.ops) for target in granted}
    return all(target.key in held and set(target.ops) <= held[target.key] for target in asked)
