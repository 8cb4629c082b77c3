"""Inspection tasks and tasks to decline: the agent reads the project and says what is (not) there."""

from __future__ import annotations

import re
from collections import Counter

from evals.task import Call, Expected, Reads, Task

SELECTED = r"Selected ([\d,]+) of"


def _layer_row(reads: Reads, name: str) -> dict[str, str]:
    return next(row for row in reads.table() if row["name"] == name)


def _field_names(reads: Reads) -> list[str]:
    return [name for name in re.findall(r"^- (\w+) \(", reads.last, re.MULTILINE) if name != "fid"]


def _mode_share(values: list[str]) -> tuple[str, float]:
    value, n = Counter(values).most_common(1)[0]
    return value, round(100 * n / len(values), 1)


def _layers_listed(reads: Reads) -> str:
    return ", ".join(row["name"] for row in reads.table())


INSPECTION = [
    Task(
        "count-schools",
        "inspection",
        "How many schools are there?",
        [[Call("describe_layer")], lambda r: f"There are **{_layer_row(r, 'schools')['features']} schools**."],
        lambda o: Expected(numbers=[len(o.rows("schools"))]),
    ),
    Task(
        "hospital-fields",
        "inspection",
        "What fields does the hospitals layer have?",
        [
            [Call("describe_layer", {"layer": "hospitals"})],
            lambda r: "The hospitals layer has these fields: " + ", ".join(_field_names(r)) + ".",
        ],
        lambda o: Expected(words=o.fields("hospitals")),
    ),
    Task(
        "roads-crs",
        "inspection",
        "Which coordinate reference system is the roads layer in?",
        [
            [Call("describe_layer", {"layer": "roads"})],
            lambda r: "The roads are in " + re.search(r"CRS: (EPSG:\d+)", r.last).group(1) + ", in metres.",
        ],
        lambda o: Expected(words=[f"EPSG:{o.epsg('roads')}"]),
    ),
    Task(
        "primary-schools",
        "inspection",
        "How many primary schools are there? Select them.",
        [
            [Call("select_features", {"layer": "schools", "expression": "\"type\" = 'primary'"})],
            lambda r: f"I selected the **{r.number(SELECTED):.0f} primary schools**.",
        ],
        lambda o: Expected(numbers=[sum(a["type"] == "primary" for a, _ in o.rows("schools"))]),
    ),
    Task(
        "landuse-mode",
        "inspection",
        "What is the most common land-use class, and what share of the parcels has it?",
        [
            [Call("describe_layer", {"layer": "landuse"})],
            lambda r: "The most common class is **{}**, {}% of the parcels.".format(
                *re.search(r"- class \(String\): (\w+) ([\d.]+)%", r.last).groups()
            ),
        ],
        lambda o: (lambda mode: Expected(words=[mode[0]], numbers=[mode[1]]))(
            _mode_share([a["class"] for a, _ in o.rows("landuse")])
        ),
    ),
    Task(
        "most-beds",
        "inspection",
        "Which hospital has the most beds?",
        [
            [Call("read_features", {"layer": "hospitals", "fields": ["name", "beds"]})],
            lambda r: (lambda top: f"**{top['name']}** has the most beds: {top['beds']}.")(
                max(r.table(), key=lambda row: int(row["beds"]))
            ),
        ],
        lambda o: (lambda top: Expected(words=[top["name"]], numbers=[top["beds"]]))(
            max((a for a, _ in o.rows("hospitals")), key=lambda a: a["beds"])
        ),
    ),
    Task(
        "total-population",
        "inspection",
        "What is the total population of all districts?",
        [
            [Call("read_features", {"layer": "districts", "fields": ["name", "population"]})],
            lambda r: f"The districts have **{sum(int(row['population']) for row in r.table()):,}** inhabitants.",
        ],
        lambda o: Expected(numbers=[sum(a["population"] for a, _ in o.rows("districts"))]),
    ),
]

DECLINE = [
    Task(
        "no-bus-stops",
        "decline",
        "How many bus stops are there in the Centre district?",
        [
            [Call("describe_layer")],
            lambda r: f"There is no bus stop layer in this project. The layers are: {_layers_listed(r)}.",
        ],
        lambda o: Expected(words=["no bus stop", *o.layer_names()], no_new_layers=True),
    ),
    Task(
        "no-house-prices",
        "decline",
        "What is the average house price per district?",
        [
            [Call("describe_layer", {"layer": "districts"})],
            lambda r: (
                "The districts layer has no house price field; its fields are "
                + ", ".join(_field_names(r))
                + ". Is there another layer with prices?"
            ),
        ],
        lambda o: Expected(words=["no house price", *o.fields("districts")], no_new_layers=True),
    ),
    Task(
        "no-railways",
        "decline",
        "Show the railway lines on the map.",
        [[Call("describe_layer")], lambda r: f"This project has no railway data. Its layers are {_layers_listed(r)}."],
        lambda o: Expected(words=["no railway", *o.layer_names()], no_new_layers=True),
    ),
    Task(
        "no-census-table",
        "decline",
        "Summarise the census table in the database.",
        [
            [Call("describe_table")],
            lambda r: (
                "The database has no census table. Its tables are "
                + ", ".join(re.findall(r"public\.(\w+)", r.last))
                + "."
            ),
        ],
        lambda o: Expected(words=["no census table", *o.layer_names()], no_new_layers=True),
    ),
]
