"""The tour of the dock that the narrow-dock desktop test and ``make screenshot`` both take.

First run against a server that is not there, then (server up) a streamed
answer with a table and a code block after three tool steps, an approval card
(rejected), and a long answer stopped midway.  The numbers in the answer come
from the demo data, so the pictures tell the truth.
"""

from __future__ import annotations

import sqlite3

from tests.support.demo import GPKG

WIDTHS = (300, 450, 800)
QUESTION = "Which schools have more than 500 pupils? Select them, zoom to them and show the SQL."
APPROVAL_QUESTION = "Rename the parks layer to green spaces"
STOP_QUESTION = "Write a long report on every school"
CODE = "layer = project.mapLayersByName('parks')[0]\nlayer.setName('green_spaces')"


def turns() -> list[dict]:
    """The scripted model's turns for the whole tour, in the order the dock asks for them."""
    with sqlite3.connect(GPKG) as db:
        rows = db.execute(
            "SELECT type, count(*), sum(pupils) FROM schools WHERE pupils > 500 GROUP BY type ORDER BY count(*) DESC"
        ).fetchall()
    total = sum(count for _, count, _ in rows)
    table = "\n".join(f"| {kind} | {count} | {pupils:,} |" for kind, count, pupils in rows)
    answer = (
        f"**{total} schools** in Elvbury have more than 500 pupils. I selected them in *schools* "
        "and zoomed the map to them.\n\n"
        f"| type | schools | pupils |\n|---|---|---|\n{table}\n\n"
        "The same in SQL, if you keep the schools in PostGIS:\n\n"
        "```sql\nSELECT type, count(*) AS schools, sum(pupils) AS pupils\nFROM schools\n"
        "WHERE pupils > 500\nGROUP BY type\nORDER BY schools DESC;\n```\n\n"
        "Secondary schools dominate: most primary schools are smaller."
    )
    expression = '"pupils" > 500'
    return [
        {"tool_calls": [{"name": "describe_layer", "arguments": {"layer": "schools"}}]},
        {"tool_calls": [{"name": "select_features", "arguments": {"layer": "schools", "expression": expression}}]},
        {"tool_calls": [{"name": "set_layer", "arguments": {"layer": "schools", "zoom": True}}]},
        {"text": answer, "chunk_delay": 0.003},
        {"tool_calls": [{"name": "run_pyqgis", "arguments": {"code": CODE}}]},
        {"text": "All right, I left the parks layer as it is."},
        {"text": "".join(f"School {i} has {i * 37 % 700} pupils. " for i in range(400)), "chunk_delay": 0.02},
    ]
