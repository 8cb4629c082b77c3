"""Processing tasks: one algorithm, and multi-step analyses that chain results as layers."""

from __future__ import annotations

from collections import Counter

from shapely.geometry.base import BaseGeometry

from evals.oracle import Oracle
from evals.task import FEATURES, Call, Expected, LayerExpect, Reads, Task, top_of


def run(algorithm: str, output: str, **parameters: object) -> list[Call]:
    return [Call("run_algorithm", {"algorithm": algorithm, "parameters": parameters, "output_name": output})]


def added(reads: Reads, what: str) -> str:
    return f"{reads.number(FEATURES):.0f} {what}."


def top_row(reads: Reads, key: str, value: str) -> str:
    row = max(reads.table(), key=lambda r: float(r[value]))
    return f"**{row[key]}** comes first with {row[value]}."


def _near(points: list[BaseGeometry], target: BaseGeometry, metres: float) -> list[BaseGeometry]:
    return [p for p in points if p.distance(target) <= metres]


def _schools(o: Oracle) -> list[BaseGeometry]:
    return [g for _, g in o.rows("schools")]


def _near_river_far_from_hospital(o: Oracle) -> list[BaseGeometry]:
    hospitals = o.union("hospitals")
    return [p for p in _near(_schools(o), o.union("rivers"), 500) if p.distance(hospitals) > 1000]


def _road_metres_per_district(o: Oracle) -> dict[str, float]:
    roads = [g for _, g in o.rows("roads")]
    return {a["name"]: sum(poly.intersection(r).length for r in roads) for a, poly in o.rows("districts")}


def _single_district(o: Oracle) -> dict[str, str]:
    """School name -> its district, for schools inside exactly one district."""
    found = {}
    for attrs, point in o.rows("schools"):
        hits = [a["name"] for a, poly in o.rows("districts") if poly.intersects(point)]
        if len(hits) == 1:
            found[attrs["name"]] = hits[0]
    return found


def _nearest_hospital_counts(o: Oracle) -> Counter:
    hospitals = o.rows("hospitals")
    return Counter(min(hospitals, key=lambda h: h[1].distance(p))[0]["name"] for p in _schools(o))


def _centre_roads(o: Oracle) -> list[float]:
    centre = o.district("Centre")
    return [length for length in (centre.intersection(g).length for _, g in o.rows("roads")) if length > 0]


SINGLE = [
    Task(
        "buffer-rivers",
        "single algorithm",
        "Buffer the rivers by 500 m.",
        [
            run("native:buffer", "rivers_500m", INPUT="rivers", DISTANCE=500, SEGMENTS=32),
            lambda r: "Added **rivers_500m**: " + added(r, "buffered rivers"),
        ],
        lambda o: Expected(
            numbers=[len(o.rows("rivers"))],
            layers={
                "rivers_500m": LayerExpect(
                    count=len(o.rows("rivers")), area=sum(g.buffer(500, 32).area for _, g in o.rows("rivers"))
                )
            },
        ),
    ),
    Task(
        "dissolve-districts",
        "single algorithm",
        "Make one town boundary polygon from the districts.",
        [
            run("native:dissolve", "town_boundary", INPUT="districts"),
            lambda r: "Added **town_boundary**: " + added(r, "polygon"),
        ],
        lambda o: Expected(layers={"town_boundary": LayerExpect(count=1, area=o.union("districts").area)}),
    ),
    Task(
        "schools-per-district",
        "single algorithm",
        "Count the schools in each district. Which has the most?",
        [
            run("native:countpointsinpolygon", "school_counts", POLYGONS="districts", POINTS="schools", FIELD="n"),
            [Call("read_features", {"layer": "school_counts", "fields": ["name", "n"]})],
            lambda r: top_row(r, "name", "n"),
        ],
        lambda o: Expected(
            numbers=[max(o.count_per_district(_schools(o)).values())],
            layers={"school_counts": LayerExpect(count=9, values=("name", "n", o.count_per_district(_schools(o))))},
        ),
    ),
    Task(
        "big-schools",
        "single algorithm",
        "Make a layer of the schools with more than 400 pupils.",
        [
            run("native:extractbyattribute", "big_schools", INPUT="schools", FIELD="pupils", OPERATOR=2, VALUE="400"),
            lambda r: "Added **big_schools**: " + added(r, "schools have more than 400 pupils"),
        ],
        lambda o: (lambda n: Expected(numbers=[n], layers={"big_schools": LayerExpect(count=n)}))(
            sum(a["pupils"] > 400 for a, _ in o.rows("schools"))
        ),
    ),
    Task(
        "park-centroids",
        "single algorithm",
        "Put a point in the centre of every park.",
        [
            run("native:centroids", "park_centres", INPUT="parks"),
            lambda r: "Added **park_centres**: " + added(r, "points"),
        ],
        lambda o: Expected(layers={"park_centres": LayerExpect(count=len(o.rows("parks")))}),
    ),
    Task(
        "road-length-per-district",
        "single algorithm",
        "How many metres of road does each district have?",
        [
            run(
                "native:sumlinelengths",
                "road_lengths",
                POLYGONS="districts",
                LINES="roads",
                LEN_FIELD="road_m",
                COUNT_FIELD="road_n",
            ),
            [Call("read_features", {"layer": "road_lengths", "fields": ["name", "road_m"]})],
            lambda r: top_row(r, "name", "road_m"),
        ],
        lambda o: Expected(
            words=[max(_road_metres_per_district(o).items(), key=lambda kv: kv[1])[0]],
            layers={"road_lengths": LayerExpect(count=9, values=("name", "road_m", _road_metres_per_district(o)))},
        ),
    ),
    Task(
        "schools-with-district",
        "single algorithm",
        "Give every school the name of the district it lies in.",
        [
            run(
                "native:joinattributesbylocation",
                "schools_with_district",
                INPUT="schools",
                JOIN="districts",
                PREDICATE=[0],
                JOIN_FIELDS=["name"],
                METHOD=1,
                PREFIX="district_",
            ),
            lambda r: "Added **schools_with_district**: " + added(r, "schools, each with a district_name"),
        ],
        lambda o: Expected(
            numbers=[len(o.rows("schools"))],
            layers={
                "schools_with_district": LayerExpect(
                    count=len(o.rows("schools")), values=("name", "district_name", _single_district(o))
                )
            },
        ),
    ),
]

MULTI_STEP = [
    Task(
        "schools-near-rivers",
        "multi-step",
        "Which schools lie within 500 m of a river? Count them per district.",
        [
            [Call("find_algorithm", {"query": "buffer"})],
            run("native:buffer", "rivers_500m", INPUT="rivers", DISTANCE=500, SEGMENTS=32),
            run(
                "native:extractbylocation",
                "schools_near_rivers",
                INPUT="schools",
                PREDICATE=[0],
                INTERSECT="rivers_500m",
            ),
            lambda r: f"**{r.number(FEATURES):.0f} schools** lie within 500 m of a river.",
        ],
        lambda o: (
            lambda near: Expected(numbers=[len(near)], layers={"schools_near_rivers": LayerExpect(count=len(near))})
        )(_near(_schools(o), o.union("rivers"), 500)),
    ),
    Task(
        "near-river-far-from-hospital",
        "multi-step",
        "Which schools are within 500 m of a river and more than 1 km from a hospital? Per district.",
        [
            run("native:buffer", "rivers_500m", INPUT="rivers", DISTANCE=500, SEGMENTS=64),
            run(
                "native:extractbylocation",
                "schools_near_rivers",
                INPUT="schools",
                PREDICATE=[0],
                INTERSECT="rivers_500m",
            ),
            run("native:buffer", "hospitals_1km", INPUT="hospitals", DISTANCE=1000, SEGMENTS=64),
            run(
                "native:extractbylocation",
                "schools_river_no_hospital",
                INPUT="schools_near_rivers",
                PREDICATE=[2],
                INTERSECT="hospitals_1km",
            ),
            run(
                "native:countpointsinpolygon",
                "districts_river_no_hospital",
                POLYGONS="districts",
                POINTS="schools_river_no_hospital",
                FIELD="n",
            ),
            [
                Call(
                    "read_features",
                    {"layer": "districts_river_no_hospital", "fields": ["name", "n"], "expression": '"n" > 0'},
                )
            ],
            lambda r: (
                f"**{sum(int(row['n']) for row in r.table())} schools** qualify: "
                + ", ".join(f"{row['name']} {row['n']}" for row in r.table())
                + "."
            ),
        ],
        lambda o: (
            lambda chosen: Expected(
                numbers=[len(chosen)],
                layers={
                    "schools_river_no_hospital": LayerExpect(count=len(chosen)),
                    "districts_river_no_hospital": LayerExpect(values=("name", "n", o.count_per_district(chosen))),
                },
            )
        )(_near_river_far_from_hospital(o)),
    ),
    Task(
        "roads-in-centre",
        "multi-step",
        "Clip the roads to the Centre district. How many road pieces are there?",
        [
            run("native:extractbyattribute", "centre", INPUT="districts", FIELD="name", OPERATOR=0, VALUE="Centre"),
            run("native:clip", "centre_roads", INPUT="roads", OVERLAY="centre"),
            lambda r: "The Centre district has " + added(r, "road pieces"),
        ],
        lambda o: Expected(
            numbers=[len(_centre_roads(o))],
            layers={"centre_roads": LayerExpect(count=len(_centre_roads(o)), length=sum(_centre_roads(o)))},
        ),
    ),
    Task(
        "parks-near-schools",
        "multi-step",
        "How many parks are within 300 m of a school?",
        [
            run("native:buffer", "schools_300m", INPUT="schools", DISTANCE=300, SEGMENTS=64, DISSOLVE=True),
            run(
                "native:extractbylocation", "parks_near_schools", INPUT="parks", PREDICATE=[0], INTERSECT="schools_300m"
            ),
            lambda r: f"**{r.number(FEATURES):.0f} parks** are within 300 m of a school.",
        ],
        lambda o: (lambda n: Expected(numbers=[n], layers={"parks_near_schools": LayerExpect(count=n)}))(
            sum(g.distance(o.union("schools")) <= 300 for _, g in o.rows("parks"))
        ),
    ),
    Task(
        "density",
        "multi-step",
        "Which district has the highest population density (people per km²)?",
        [
            run(
                "native:fieldcalculator",
                "district_density",
                INPUT="districts",
                FIELD_NAME="density",
                FIELD_TYPE=0,
                FIELD_PRECISION=3,
                FORMULA='"population" / ($area / 1000000)',
            ),
            [Call("read_features", {"layer": "district_density", "fields": ["name", "density"]})],
            lambda r: top_row(r, "name", "density"),
        ],
        lambda o: top_of(o.density()),
    ),
    Task(
        "nearest-hospital",
        "multi-step",
        "For each school find the nearest hospital. Which hospital is nearest to the most schools?",
        [
            run(
                "native:joinbynearest",
                "schools_nearest_hospital",
                INPUT="schools",
                INPUT_2="hospitals",
                FIELDS_TO_COPY=["name"],
                PREFIX="hospital_",
                NEIGHBORS=1,
            ),
            [Call("read_features", {"layer": "schools_nearest_hospital", "fields": ["hospital_name"], "limit": 50})],
            lambda r: (lambda c: f"**{c[0][0]}** is the nearest hospital for {c[0][1]} schools.")(
                Counter(row["hospital_name"] for row in r.table()).most_common(1)
            ),
        ],
        lambda o: (lambda c: Expected(words=[c[0][0]], numbers=[c[0][1]]))(_nearest_hospital_counts(o).most_common(1)),
    ),
]
