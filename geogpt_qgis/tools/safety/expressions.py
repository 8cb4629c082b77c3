"""Check a QGIS expression's functions before anything evaluates it.

QGIS expressions are not pure: ``env()`` returns environment variables (API
keys), ``sqlite_fetch_and_increment()`` writes to a GeoPackage, file
functions look at the disk, ``eval()`` runs text built at evaluation time,
and any plugin (or the user) can register a Python function that does
anything at all.  So an expression is evaluated without the user's approval
only when every function it calls is a QGIS built-in on the reviewed list of
side-effect-free functions below (an allow-list: a function QGIS adds in a
later version asks until it is reviewed), and every ``eval``/``eval_template``
has literal text, which is then checked the same way.  Nothing here
evaluates anything: it parses.  Safe to call from any thread.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from qgis.core import QgsExpression, QgsExpressionNode

from geogpt_qgis.core.approval import ApprovalRequest
from geogpt_qgis.core.effects import CallEffects, Effect, Found
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.safety.expression_size import SizeCheck, arguments, check_sizes, children

# Reviewed against QGIS 3.22's 342 built-in functions: they compute from their arguments, the
# feature, the project's layers and variables, and change nothing.  Left out on purpose (they
# ask): env, eval and eval_template (followed instead), sqlite_fetch_and_increment, the file
# functions that look at the disk, layer_property and decode_uri (a layer's source, with
# credentials), and anything not listed here.
PURE_FUNCTIONS = frozenset(
    """
    aggregate array_agg collect concatenate concatenate_unique count count_distinct count_missing iqr
    majority max_length maximum mean median min_length minimum minority q1 q3 range relation_aggregate
    stdev sum
    array array_all array_append array_cat array_contains array_count array_distinct array_filter
    array_find array_first array_foreach array_get array_insert array_intersect array_last array_length
    array_majority array_max array_mean array_median array_min array_minority array_prepend
    array_prioritize array_remove_all array_remove_at array_replace array_reverse array_slice array_sort
    array_sum array_to_string generate_series regexp_matches string_to_array
    color_cmyk color_cmyka color_grayscale_average color_hsl color_hsla color_hsv color_hsva
    color_mix_rgb color_part color_rgb color_rgba create_ramp darker lighter project_color ramp_color
    set_color_part
    coalesce if nullif try regexp_match
    from_base64 hash md5 sha256 to_base64 to_decimal to_dm to_dms to_int to_real to_date to_datetime
    to_interval to_time to_string
    age datetime_from_epoch day day_of_week epoch hour make_date make_datetime make_interval make_time
    minute month now second week year format_date
    base_file_name file_name file_path file_suffix
    current_parent_value current_value
    hamming_distance levenshtein longest_common_substring soundex
    is_layer_visible mime_type var with_variable
    $area $geometry $length $perimeter $x $x_at $y $y_at $z affine_transform angle_at_vertex area
    azimuth boundary bounds bounds_height bounds_width buffer buffer_by_m centroid close_line
    closest_point collect_geometries combine contains convex_hull crosses difference disjoint distance
    distance_to_vertex end_point extend exterior_ring extrude flip_coordinates force_rhr geom_from_gml
    geom_from_wkb geom_from_wkt geom_to_wkb geom_to_wkt geometry geometry_n geometry_type
    hausdorff_distance inclination interior_ring_n intersection intersects intersects_bbox is_closed
    is_empty is_empty_or_null is_multipart is_valid length3D line_interpolate_angle
    line_interpolate_point line_locate_point line_merge line_substring m m_max m_min main_angle
    make_circle make_ellipse make_line make_point make_point_m make_polygon make_rectangle_3points
    make_regular_polygon make_square make_triangle minimal_circle nodes_to_points num_geometries
    num_interior_rings num_points num_rings offset_curve order_parts oriented_bbox overlaps
    overlay_contains overlay_crosses overlay_disjoint overlay_equals overlay_intersects overlay_nearest
    overlay_touches overlay_within perimeter point_n point_on_surface pole_of_inaccessibility project
    relate reverse rotate segments_to_lines shortest_line simplify simplify_vw single_sided_buffer
    sinuosity smooth start_point straight_distance_2d sym_difference tapered_buffer touches transform
    translate union wedge_buffer within x x_max x_min y y_max y_min z z_max z_min
    item_variables map_credits
    from_json hstore_to_map map map_akeys map_avals map_concat map_delete map_exist map_get map_insert
    map_to_hstore to_json
    abs acos asin atan atan2 ceil clamp cos degrees exp floor ln log log10 max min pi radians rand randf
    round scale_exp scale_linear sin sqrt tan
    parameter
    raster_statistic raster_value
    $currentfeature $id attribute attributes display_expression get_feature get_feature_by_id
    is_selected maptip num_selected represent_value uuid
    ascii char concat format format_number left lower lpad regexp_replace regexp_substr replace right
    rpad strpos substr title trim upper wordwrap length
    $scale
    """.split()
)

# Functions whose argument is expression text evaluated at run time: followed when it is literal.
EVALUATING_FUNCTIONS = frozenset({"eval", "eval_template"})

# Why a refused function is refused, for the message (the decision is the allow-list above).
_REASONS: dict[str, tuple[Effect, str]] = {
    "env": (Effect.READ_PRIVATE, "reads environment variables, where API keys and passwords are kept"),
    "sqlite_fetch_and_increment": (Effect.WRITE_DATABASE, "writes to a SQLite or GeoPackage database"),
    "layer_property": (Effect.READ_PRIVATE, "reads a layer's data source and file path"),
    "decode_uri": (Effect.READ_PRIVATE, "reads a layer's data source, which can hold passwords"),
    "exif": (Effect.READ_PRIVATE, "reads files on disk"),
    "exif_geotag": (Effect.READ_PRIVATE, "reads files on disk"),
    "file_exists": (Effect.READ_PRIVATE, "looks at files on disk"),
    "file_size": (Effect.READ_PRIVATE, "looks at files on disk"),
    "is_file": (Effect.READ_PRIVATE, "looks at files on disk"),
    "is_directory": (Effect.READ_PRIVATE, "looks at files on disk"),
}
_DYNAMIC = "evaluates expression text built while it runs, which cannot be checked first"
_PYTHON = "is defined in Python by the user or a plugin, so what it does cannot be checked"
_UNREVIEWED = "is not on the reviewed list of side-effect-free QGIS functions"
_TEMPLATE_PART = re.compile(r"\[%(.*?)%\]", re.DOTALL)
MAX_DEPTH = 4  # eval('eval(''...'')') nesting followed before giving up (and asking)


@dataclass(frozen=True)
class ExpressionCheck:
    """What evaluating one expression would do; ``effects`` is empty for a pure expression."""

    text: str
    parse_error: str = ""
    effects: CallEffects = field(default_factory=CallEffects)
    too_big: tuple[str, ...] = ()  # sizes over their bound (expression_size): refused even when approved

    @property
    def safe(self) -> bool:
        return not self.effects.needs_approval

    def problem(self, where: str = "the expression") -> str:
        """The refusal the model reads: which functions, why, and what to do instead."""
        reasons = "; ".join(f"{item.target} {item.why}" for item in self.effects.risky)
        return (
            f"{where} {self.text!r} is not evaluated without the user's approval: {reasons}. "
            'Use field names, values and built-in QGIS functions only (e.g. "pupils" > 300 AND "type" = \'primary\').'
        )

    def require_small(self, where: str = "the expression") -> None:
        """Refuse (``ToolError``) an expression that would build too much in one evaluation."""
        if self.too_big:
            raise ToolError(f"{where} {self.text!r} is not evaluated: {'; '.join(self.too_big)}.")


def check_expression(text: str) -> ExpressionCheck:
    """Parse ``text`` and classify every function it would call, following literal ``eval`` text."""
    expression = QgsExpression(text)
    if expression.hasParserError():
        return ExpressionCheck(text, " ".join(expression.parserErrorString().split()))
    found: list[Found] = []
    sizes = SizeCheck()
    _classify(expression, found, sizes, 0)
    return ExpressionCheck(text, "", CallEffects.of(found), tuple(sizes.problems))


def require_safe_expression(text: str, where: str = "the expression", approved: bool = False) -> None:
    """Refuse (``ToolError``) an expression with effects, unless the user approved this call.

    One that would build too much is refused even then (``ExpressionCheck.require_small``).
    """
    if not text or not text.strip():
        return
    check = check_expression(text)
    check.require_small(where)
    if not check.safe and not approved:
        raise ToolError(check.problem(where))


def expressions_effects(texts: list[tuple[str, str]]) -> tuple[CallEffects, list[str]]:
    """The effects of several ``(where, expression)`` pairs, and one problem line per unsafe one.

    ``ToolError`` for one that would build too much: no approval can let it run.
    """
    effects = CallEffects()
    problems = []
    for where, text in texts:
        if not text or not str(text).strip():
            continue
        check = check_expression(str(text))
        check.require_small(where)
        if not check.safe:
            effects = effects + check.effects
            problems.append(check.problem(where))
    return effects, problems


def _classify(expression: QgsExpression, found: list[Found], sizes: SizeCheck, depth: int) -> None:
    check_sizes(expression.rootNode(), sizes)
    for name in sorted(expression.referencedFunctions()):
        if name in EVALUATING_FUNCTIONS:
            continue
        found.extend(_function_effects(name))
    if EVALUATING_FUNCTIONS & set(expression.referencedFunctions()):
        _follow_evaluations(expression.rootNode(), found, sizes, depth)


def _function_effects(name: str) -> list[Found]:
    index = QgsExpression.functionIndex(name)
    function = QgsExpression.Functions()[index] if index >= 0 else None
    if function is not None and type(function).__module__ != "qgis._core":
        return [Found(Effect.RUN_CODE, f"{name}()", _PYTHON)]
    if name in PURE_FUNCTIONS:
        return []
    effect, why = _REASONS.get(name, (Effect.RUN_CODE, _UNREVIEWED))
    return [Found(effect, f"{name}()", why)]


def _follow_evaluations(node: QgsExpressionNode | None, found: list[Found], sizes: SizeCheck, depth: int) -> None:
    """Check the literal text of every ``eval``/``eval_template``; anything else they get is refused."""
    if node is None:
        return
    if node.nodeType() == QgsExpressionNode.NodeType.ntFunction:
        function = QgsExpression.Functions()[node.fnIndex()]
        if function.name() in EVALUATING_FUNCTIONS:
            _follow_text(function.name(), arguments(node), found, sizes, depth)
    below = children(node)
    if below is None:
        found.append(Found(Effect.RUN_CODE, "eval()", "sits in an expression part that cannot be followed"))
    for child in below or []:
        _follow_evaluations(child, found, sizes, depth)


def _follow_text(name: str, args: list[QgsExpressionNode], found: list[Found], sizes: SizeCheck, depth: int) -> None:
    literal = args[0] if len(args) == 1 and args[0].nodeType() == QgsExpressionNode.NodeType.ntLiteral else None
    text = literal.value() if literal is not None else None
    if not isinstance(text, str) or depth >= MAX_DEPTH:
        found.append(Found(Effect.RUN_CODE, f"{name}()", _DYNAMIC))
        return
    parts = [text] if name == "eval" else _TEMPLATE_PART.findall(text)
    for part in parts:
        inner = QgsExpression(part)
        if inner.hasParserError():
            continue  # evaluating it fails; nothing runs
        _classify(inner, found, sizes, depth + 1)


def expression_request(action: str, texts: list[tuple[str, str]]) -> ApprovalRequest | None:
    """An approval request for a call whose expressions have effects, or ``None`` when all are pure.

    It only parses: the preview of a call never evaluates what it describes.
    """
    effects, problems = expressions_effects(texts)
    if not effects.needs_approval:
        return None
    return ApprovalRequest(
        action=f"{action}, with an expression that {effects.summary()}",
        details="\n".join(problems),
        notes=effects.lines(),
        effects=effects.kinds,
    )
