"""Bound what one evaluation of an expression may build, before anything evaluates it.

A side-effect-free QGIS function can still freeze QGIS or exhaust memory:
``generate_series(1, 100000000)`` builds a hundred million values for every
feature, ``lpad('', 1e9, 'x')`` a gigabyte of text, ``buffer(g, 1, 1e7)`` a
forty-million-vertex polygon.  QGIS cannot interrupt one evaluation, so the
size is checked from the parse tree: every size-giving argument of these
functions must be a number written in the expression (a field value could be
anything) within the bound below, and the series an expression builds,
multiplied together (a series inside ``array_foreach`` of another series runs
once per item), stay under ``MAX_SERIES_ITEMS``.  It parses, never evaluates,
and approval does not lift it: the bound is about QGIS staying responsive.
Safe to call from any thread.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import qgis.core
from qgis.core import QgsExpression, QgsExpressionNode, QgsExpressionNodeUnaryOperator
from qgis.PyQt import sip

MAX_SERIES_ITEMS = 10_000  # about 6 ms per feature for array_foreach over the series

# function -> (argument, largest value, what it counts): the other size-giving arguments.
SIZE_ARGUMENTS: dict[str, tuple[str, float, str]] = {
    "lpad": ("width", 10_000, "characters"),
    "rpad": ("width", 10_000, "characters"),
    "format_number": ("places", 100, "decimal places"),
    "to_dm": ("precision", 100, "decimal places"),
    "to_dms": ("precision", 100, "decimal places"),
    "buffer": ("segments", 1_000, "segments per quarter circle"),
    "buffer_by_m": ("segments", 1_000, "segments per quarter circle"),
    "offset_curve": ("segments", 1_000, "segments per quarter circle"),
    "single_sided_buffer": ("segments", 1_000, "segments per quarter circle"),
    "tapered_buffer": ("segments", 1_000, "segments per quarter circle"),
    "make_circle": ("segments", 4_000, "segments"),
    "make_ellipse": ("segments", 4_000, "segments"),
    "make_regular_polygon": ("number_sides", 4_000, "sides"),
    "smooth": ("iterations", 10, "iterations (each one doubles the vertices)"),
}
SERIES = "generate_series"


@dataclass
class SizeCheck:
    """What one walk found: the problems (refusals) and the product of the series' lengths so far."""

    problems: list[str] = field(default_factory=list)
    series_items: float = 1.0

    def add_series(self, items: float) -> None:
        self.series_items *= max(items, 1.0)
        if self.series_items > MAX_SERIES_ITEMS and not any(SERIES in problem for problem in self.problems):
            self.problems.append(
                f"{SERIES}() would build {self.series_items:,.0f} values per feature "
                f"(series inside one another multiply); at most {MAX_SERIES_ITEMS:,}"
            )


# Node kinds that some QGIS versions hand to Python as a bare QgsExpressionNode (3.22's index operator).
_NODE_CLASSES = {
    "ntIndexOperator": "QgsExpressionNodeIndexOperator",
    "ntBetweenOperator": "QgsExpressionNodeBetweenOperator",
}


def children(node: QgsExpressionNode) -> list[QgsExpressionNode] | None:
    """The nodes directly under ``node``, or ``None`` for a kind of node this module cannot see into."""
    kind = node.nodeType()
    types = QgsExpressionNode.NodeType
    for kind_name, class_name in _NODE_CLASSES.items():
        node_class = getattr(qgis.core, class_name, None)
        if kind == getattr(types, kind_name, None) and node_class is not None and not isinstance(node, node_class):
            node = sip.cast(node, node_class)
    if kind == types.ntFunction:
        return arguments(node)
    if kind == types.ntBinaryOperator:
        return [node.opLeft(), node.opRight()]
    if kind == types.ntUnaryOperator:
        return [node.operand()]
    if kind == types.ntCondition:
        found: list[QgsExpressionNode] = []
        for case in node.conditions():
            found += [case.whenExp(), case.thenExp()]
        return [*found, node.elseExp()] if node.elseExp() is not None else found
    if kind == types.ntInOperator:
        return [node.node(), *node.list().list()]
    if kind == types.ntIndexOperator:
        return [node.container(), node.index()]
    if kind == getattr(types, "ntBetweenOperator", None):  # QGIS 3.26+
        return [node.node(), node.lowerBound(), node.higherBound()]
    if kind in (types.ntLiteral, types.ntColumnRef):
        return []
    return None


def arguments(node: QgsExpressionNode) -> list[QgsExpressionNode]:
    """A function node's arguments, in the function's order with its defaults filled in (QGIS does that)."""
    return list(node.args().list()) if node.args() is not None else []


def check_sizes(node: QgsExpressionNode | None, check: SizeCheck) -> None:
    """Add to ``check`` every size in the tree under ``node`` that is over its bound or not written out."""
    if node is None:
        return
    if node.nodeType() == QgsExpressionNode.NodeType.ntFunction:
        function = QgsExpression.Functions()[node.fnIndex()]
        names = [parameter.name() for parameter in function.parameters()]
        _check_function(function.name(), names, arguments(node), check)
    below = children(node)
    if below is None:  # a kind of node a later QGIS may add: what it builds cannot be bounded, so it is refused
        check.problems.append(f"an expression part this check cannot look into ({node.dump()[:60]})")
    for child in below or []:
        check_sizes(child, check)


def _check_function(name: str, parameters: list[str], args: list[QgsExpressionNode], check: SizeCheck) -> None:
    by_name = dict(zip(parameters, args, strict=False))  # QGIS fills in the defaults
    if name == SERIES:
        start, stop, step = (_number(by_name.get(key)) for key in ("start", "stop", "step"))
        if start is None or stop is None or step is None:
            check.problems.append(f"{SERIES}() needs its start, stop and step written as numbers in the expression")
        elif step != 0 and (stop - start) / step >= 0:
            check.add_series(math.floor((stop - start) / step) + 1)
        return
    if name not in SIZE_ARGUMENTS:
        return
    argument, largest, counts = SIZE_ARGUMENTS[name]
    if argument not in by_name:
        return  # a version of QGIS whose function has no such argument: nothing to bound
    value = _number(by_name[argument])
    bound = f"at most {largest:,.0f}"
    if value is None:
        check.problems.append(f"{name}()'s {argument} must be a number written in the expression ({bound})")
    elif value > largest:
        check.problems.append(f"{name}() with {argument} {value:,.0f} would build too much; {bound} {counts}")


def _number(node: QgsExpressionNode | None) -> float | None:
    """A number written in the expression (``12``, ``-3``, ``'40'``), or ``None`` for anything computed."""
    if node is None:
        return None
    types = QgsExpressionNode.NodeType
    if node.nodeType() == types.ntUnaryOperator and node.op() == QgsExpressionNodeUnaryOperator.UnaryOperator.uoMinus:
        inner = _number(node.operand())
        return -inner if inner is not None else None
    if node.nodeType() != types.ntLiteral:
        return None
    value = node.value()
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None
