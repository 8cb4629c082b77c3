"""Tasks over the database (SQL on PostGIS) and over the OGC API Features server."""

from __future__ import annotations

import re
from collections import Counter

from evals.oracle import Oracle
from evals.task import FEATURES, Call, Expected, LayerExpect, Reads, Task, top_of

ROWS = r"([\d,]+) rows?"


def sql(query: str, output_name: str = "") -> list[Call]:
    args = {"sql": query}
    if output_name:
        args["output_name"] = output_name
    return [Call("run_sql", args)]


def _first_row(reads: Reads) -> dict[str, str]:
    return reads.table()[0]


def _km_by_class(o: Oracle) -> dict[str, float]:
    totals: Counter = Counter()
    for attrs, geometry in o.rows("roads"):
        totals[attrs["class"]] += geometry.length
    return {name: round(metres / 1000, 2) for name, metres in totals.items()}


def _bbox_count(o: Oracle, layer: str, bounds: tuple[float, float, float, float]) -> int:
    x0, y0, x1, y1 = bounds
    return sum(x0 <= g.x <= x1 and y0 <= g.y <= y1 for _, g in o.rows(layer))


SQL = [
    Task(
        "sql-schools-per-district",
        "SQL",
        "Using the database: which district has the most schools?",
        [
            [Call("describe_table", {"tables": ["districts", "schools"]})],
            sql(
                "SELECT d.name, count(s.fid) AS schools FROM districts d "
                "JOIN schools s ON ST_Intersects(d.geom, s.geom) GROUP BY d.name ORDER BY schools DESC, d.name LIMIT 1"
            ),
            lambda r: "**{name}** has the most schools: {schools}.".format(**_first_row(r)),
        ],
        lambda o: (lambda c: Expected(words=[max(sorted(c), key=lambda k: c[k])], numbers=[max(c.values())]))(
            o.count_per_district([g for _, g in o.rows("schools")])
        ),
    ),
    Task(
        "sql-road-km-by-class",
        "SQL",
        "Using the database: how many km of road are there of each class?",
        [
            sql(
                "SELECT class, round((sum(ST_Length(geom)) / 1000)::numeric, 2) AS km FROM roads "
                "GROUP BY class ORDER BY km DESC"
            ),
            lambda r: "Road length by class: " + ", ".join(f"{row['class']} {row['km']} km" for row in r.table()) + ".",
        ],
        lambda o: Expected(words=list(_km_by_class(o)), numbers=list(_km_by_class(o).values())),
    ),
    Task(
        "sql-emergency-hospitals",
        "SQL",
        "Using the database: which hospitals have an emergency department?",
        [
            sql("SELECT name FROM hospitals WHERE emergency::int = 1 ORDER BY name"),
            lambda r: "Hospitals with an emergency department: " + ", ".join(row["name"] for row in r.table()) + ".",
        ],
        lambda o: Expected(words=[a["name"] for a, _ in o.rows("hospitals") if a["emergency"]]),
    ),
    Task(
        "sql-schools-near-rivers",
        "SQL",
        "Using the database, make a layer of the schools within 500 m of a river.",
        [
            sql(
                "SELECT s.fid, s.name, s.geom FROM schools s WHERE EXISTS "
                "(SELECT 1 FROM rivers r WHERE ST_DWithin(s.geom, r.geom, 500))",
                "schools_near_rivers_db",
            ),
            lambda r: f"Added **schools_near_rivers_db** with {r.number(ROWS):.0f} schools.",
        ],
        lambda o: (lambda n: Expected(numbers=[n], layers={"schools_near_rivers_db": LayerExpect(count=n)}))(
            sum(g.distance(o.union("rivers")) <= 500 for _, g in o.rows("schools"))
        ),
    ),
    Task(
        "sql-density",
        "SQL",
        "Using the database: which district is the most densely populated?",
        [
            sql(
                "SELECT name, round((population / (ST_Area(geom) / 1e6))::numeric, 3) AS density FROM districts "
                "ORDER BY density DESC LIMIT 1"
            ),
            lambda r: "**{name}**, with {density} people per km².".format(**_first_row(r)),
        ],
        lambda o: top_of(o.density()),
    ),
]


def _centre_box(o: Oracle) -> list[float]:
    return [round(v, 1) for v in o.district("Centre").bounds]


OGC = [
    Task(
        "ogc-collections",
        "OGC API",
        "What collections does the open data server have?",
        [
            [Call("describe_ogc_collections")],
            lambda r: "The server has: " + ", ".join(re.findall(r"^- (\w+)", r.last, re.MULTILINE)) + ".",
        ],
        lambda o: Expected(words=["districts", "schools", "hospitals", "roads", "rivers"], no_new_layers=True),
    ),
    Task(
        "ogc-big-hospitals",
        "OGC API",
        "From the open data server, get the hospitals with more than 200 beds.",
        [
            [
                Call(
                    "query_ogc_collection",
                    {"collection": "hospitals", "filter": "beds > 200", "output_name": "big_hospitals"},
                )
            ],
            lambda r: f"Added **big_hospitals**: {r.number(FEATURES):.0f} hospitals have more than 200 beds.",
        ],
        lambda o: (lambda n: Expected(numbers=[n], layers={"big_hospitals": LayerExpect(count=n)}))(
            sum(a["beds"] > 200 for a, _ in o.rows("hospitals"))
        ),
    ),
    Task(
        "ogc-schools-in-box",
        "OGC API",
        "From the open data server, fetch the schools in the Centre district's bounding box.",
        None,  # filled below: the box comes from the oracle
        lambda o: (lambda n: Expected(numbers=[n], layers={"centre_box_schools": LayerExpect(count=n)}))(
            _bbox_count(o, "schools", tuple(_centre_box(o)))
        ),
    ),
    Task(
        "ogc-school-types",
        "OGC API",
        "On the open data server, what is the most common type of school?",
        [
            [Call("describe_ogc_collections", {"collections": ["schools"]})],
            lambda r: "The most common type is **{}**.".format(
                re.search(r"^- type \([^)]*\) — (\w+)", r.last, re.MULTILINE).group(1)
            ),
        ],
        lambda o: Expected(words=[Counter(a["type"] for a, _ in o.rows("schools")).most_common(1)[0][0]]),
    ),
]


def with_oracle(tasks: list[Task], oracle: Oracle) -> list[Task]:
    """Tasks whose trace needs data only the oracle knows (a box), completed."""
    done = []
    for task in tasks:
        if task.id == "ogc-schools-in-box":
            box = _centre_box(oracle)
            steps = [
                [
                    Call(
                        "query_ogc_collection",
                        {
                            "collection": "schools",
                            "bbox": box,
                            "bbox_crs": "EPSG:25832",
                            "output_name": "centre_box_schools",
                        },
                    )
                ],
                lambda r: f"Added **centre_box_schools**: {r.number(FEATURES):.0f} schools lie in the box.",
            ]
            task = Task(task.id, task.group, task.question, steps, task.expect)
        done.append(task)
    return done
