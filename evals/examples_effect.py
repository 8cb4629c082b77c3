"""``python -m evals.examples_effect``: does find_examples show the method each eval task needs?

For every task of the scripted suite that does something (decline tasks
aside), the method is what its competent script calls: the algorithm ids of
``run_algorithm`` and the other tools, discovery calls (list/describe/search)
left out. The question goes through the same search ``find_examples`` runs
(the demo town's layer names, shapes and fields as the vocabulary), and the
task counts as covered when the examples name its whole method (top 3), or
part of it. Offline, no QGIS, a second.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from typing import Any

from bench.common import REPO

DISCOVERY = frozenset(
    {"describe_layer", "describe_table", "describe_ogc_collections", "find_algorithm"}
    | {"describe_capabilities", "find_examples"}
    | {"list_layers", "list_tables", "search_algorithms", "describe_algorithm"}  # merged tools' old names
)
SHAPES = {"POINT": "point", "MULTIPOINT": "point", "LINESTRING": "line", "MULTILINESTRING": "line"}
SHAPES |= {"POLYGON": "polygon", "MULTIPOLYGON": "polygon"}


def demo_vocabulary() -> Any:
    """The demo town's layers (with shapes) and fields, read from the GeoPackage."""
    from geogpt_qgis.core.recipe_search import Vocabulary
    from harness.demo import GPKG, ensure_demo

    ensure_demo()
    with sqlite3.connect(GPKG) as db:
        rows = db.execute("SELECT table_name, geometry_type_name FROM gpkg_geometry_columns").fetchall()
        layers = {name: SHAPES.get(kind.upper(), "") for name, kind in rows}
        fields = {row[1] for name in layers for row in db.execute(f'PRAGMA table_info("{name}")')}
    return Vocabulary.of(layers, fields - {"fid", "geom"})


def method(task: Any) -> set[str]:
    """What the task's script does: algorithm ids and non-discovery tools."""
    found: set[str] = set()
    for step in task.steps or []:
        if callable(step) or not step:
            continue
        for call in step:
            if call.name == "run_algorithm":
                found.add(str(call.args.get("algorithm", "")))
            elif call.name not in DISCOVERY:
                found.add(call.name)
    return found


def main() -> dict[str, Any]:
    from evals.tasks_analysis import MULTI_STEP, SINGLE
    from evals.tasks_data import OGC, SQL
    from evals.tasks_project import INSPECTION
    from geogpt_qgis.tools.examples.family import recipe_index, render_examples

    vocabulary = demo_vocabulary()
    index = recipe_index()
    rows = []
    for task in [*INSPECTION, *SINGLE, *MULTI_STEP, *SQL, *OGC]:
        wanted = method(task)
        if not wanted:
            continue
        text = render_examples(index.search(task.question, vocabulary))
        shown = {m for m in wanted if m in text}
        rows.append({"id": task.id, "group": task.group, "method": sorted(wanted), "shown": sorted(shown)})
    whole = sum(set(r["method"]) == set(r["shown"]) for r in rows)
    part = sum(bool(r["shown"]) for r in rows)
    return {"tasks": len(rows), "whole_method_shown": whole, "part_shown": part, "results": rows}


if __name__ == "__main__":
    report = main()
    (REPO / "evals" / "results-examples.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(
        f"find_examples on the eval tasks: whole method in the top 3 for {report['whole_method_shown']}"
        f"/{report['tasks']}, part of it for {report['part_shown']}/{report['tasks']}"
    )
    for row in report["results"]:
        missing = sorted(set(row["method"]) - set(row["shown"]))
        if missing:
            print(f"  {row['id']}: not shown {', '.join(missing)}", file=sys.stdout)
