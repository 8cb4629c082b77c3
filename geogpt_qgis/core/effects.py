"""What a tool call would do to the world, in one vocabulary every safety check shares.

The classifiers (``tools/safety/``) look at a call before it runs and say
which effects it has and on what: the file, table, URL or layer.  The
approval policy then decides from the effects alone: reads, selections and
new result layers run freely; anything else asks the user (or is refused
under the "never" policy).  A classifier that cannot tell what a call would
do says so with an effect that asks, never with silence.  Qt-free.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum


class Effect(StrEnum):
    """One kind of thing a call can do; ``needs_approval`` is the policy's default for it.

    Stored as ``.value`` (a plain str): LangGraph's checkpoint serializer keeps an enum's class and warns
    on loading it (blocked in later versions), and QSettings would pickle it.
    """

    READ = "read"
    SELECT = "select"
    ADD_LAYER = "add_layer"
    CHANGE_PROJECT = "change_project"
    EDIT_DATA = "edit_data"
    WRITE_FILE = "write_file"
    WRITE_DATABASE = "write_database"
    NETWORK = "network"
    READ_PRIVATE = "read_private"
    RUN_CODE = "run_code"

    @property
    def verb(self) -> str:
        """The effect as the end of "Run X, which ...": shown on approval cards and told to the model."""
        return _VERBS[self]

    @property
    def needs_approval(self) -> bool:
        return self not in FREE_EFFECTS


_VERBS = {
    Effect.READ: "reads data",
    Effect.SELECT: "changes which features are selected",
    Effect.ADD_LAYER: "adds result layers",
    Effect.CHANGE_PROJECT: "changes the project",
    Effect.EDIT_DATA: "changes data in place",
    Effect.WRITE_FILE: "writes files",
    Effect.WRITE_DATABASE: "writes to a database",
    Effect.NETWORK: "talks to the network",
    Effect.READ_PRIVATE: "reads the environment, files or settings outside the project",
    Effect.RUN_CODE: "runs code that cannot be checked first",
}

# Effects that change nothing the user keeps: reading, selecting, adding a new temporary layer.
FREE_EFFECTS = frozenset({Effect.READ, Effect.SELECT, Effect.ADD_LAYER})


@dataclass(frozen=True)
class Found:
    """One effect on one thing: ``target`` names it ("file /home/ann/out.gpkg", "URL http://...")."""

    effect: Effect
    target: str = ""
    why: str = ""  # how the classifier knows, when it is not obvious

    def line(self) -> str:
        parts = [self.effect.verb]
        if self.target:
            parts.append(f": {self.target}")
        if self.why:
            parts.append(f" ({self.why})")
        return "".join(parts)


@dataclass(frozen=True)
class CallEffects:
    """Everything one call would do, in the order the classifier found it."""

    found: tuple[Found, ...] = field(default_factory=tuple)

    @classmethod
    def of(cls, items: Iterable[Found]) -> CallEffects:
        unique: list[Found] = []
        for item in items:
            if item not in unique:
                unique.append(item)
        return cls(tuple(unique))

    def __add__(self, other: CallEffects) -> CallEffects:
        return CallEffects.of([*self.found, *other.found])

    @property
    def kinds(self) -> list[Effect]:
        """Each effect once, in the order found."""
        return list(dict.fromkeys(item.effect for item in self.found))

    @property
    def needs_approval(self) -> bool:
        return any(item.effect.needs_approval for item in self.found)

    @property
    def risky(self) -> list[Found]:
        """The effects that need approval."""
        return [item for item in self.found if item.effect.needs_approval]

    def summary(self) -> str:
        """``writes files and talks to the network``: the risky effects, or all of them if none is risky."""
        kinds = [kind for kind in self.kinds if kind.needs_approval] or self.kinds
        verbs = [kind.verb for kind in kinds]
        if not verbs:
            return "has no effect outside the call"
        return verbs[0] if len(verbs) == 1 else ", ".join(verbs[:-1]) + " and " + verbs[-1]

    def lines(self) -> list[str]:
        """One human line per risky effect and target, for the approval card and for refusals."""
        return [item.line() for item in self.risky]
