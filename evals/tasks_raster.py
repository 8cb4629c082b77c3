"""Raster tasks (issue 24): the demo's DEM and land cover, scored against GDAL + numpy (evals/raster_oracle.py)."""

from __future__ import annotations

import re

from evals.oracle import Oracle
from evals.raster_oracle import DEM, LANDCOVER, RasterOracle
from evals.task import Call, Expected, Reads, Task, top_of

ABOVE_METRES = 60


def _raster(o: Oracle) -> RasterOracle:
    return RasterOracle(o.gpkg)


def _top_mean(reads: Reads) -> str:
    row = max(reads.table(), key=lambda r: float(r["mean"]))
    return f"**{row['zone']}** is highest, with a mean elevation of {row['mean']} m."


def _forest_leader(reads: Reads) -> str:
    best, share = "", -1.0
    for row in reads.table():
        match = re.search(r"\b3 Forest ([\d.]+)%", row["classes (share of pixels, area)"])
        if match and float(match.group(1)) > share:
            best, share = row["zone"], float(match.group(1))
    return f"**{best}** has the most forest: {share}% of its area."


def _forest_expected(o: Oracle) -> Expected:
    shares = {name: classes.get("Forest", 0.0) for name, classes in _raster(o).class_shares().items()}
    return Expected(words=[max(shares, key=lambda k: shares[k]), "forest"], numbers=[max(shares.values())])


def _schools_above(reads: Reads) -> str:
    high = [row["point"] for row in reads.table() if float(row["band 1"]) > ABOVE_METRES]
    return f"{len(high)} schools lie above {ABOVE_METRES} m: " + ", ".join(high) + "."


def _schools_above_expected(o: Oracle) -> Expected:
    raster = _raster(o)
    names = [a["name"] for a, p in o.rows("schools") if raster.value_at(DEM, p.x, p.y) > ABOVE_METRES]
    return Expected(words=names, numbers=[len(names)])


def _steep_answer(reads: Reads) -> str:
    hectares = sum(
        float(m.group(1))
        for row in reads.table()
        for m in [re.search(r"(?:^|; )2 [\d.]+% ([\d.]+) ha", row["classes (share of pixels, area)"])]
        if m
    )
    return f"About {hectares:.1f} ha of the town is steeper than 15°."


def _hospital_cover(reads: Reads) -> str:
    return "; ".join(f"{row['point']}: {row['band 1'].split(' ', 1)[-1]}" for row in reads.table()) + "."


def _hospital_expected(o: Oracle) -> Expected:
    from evals.raster_oracle import LABELS

    raster = _raster(o)
    labels = [LABELS[int(raster.value_at(LANDCOVER, p.x, p.y))] for _, p in o.rows("hospitals")]
    return Expected(words=[a["name"] for a, _ in o.rows("hospitals")] + labels)


RASTER = [
    Task(
        "raster-mean-elevation",
        "inspection",
        "Which district has the highest mean elevation?",
        [[Call("describe_layer", {"layer": "elevation", "at": "districts"})], _top_mean],
        lambda o: top_of(_raster(o).mean_elevation()),
    ),
    Task(
        "raster-landcover-shares",
        "inspection",
        "Which district has the largest share of forest?",
        [[Call("describe_layer", {"layer": "landcover", "at": "districts"})], _forest_leader],
        _forest_expected,
    ),
    Task(
        "raster-schools-above",
        "inspection",
        f"Which schools lie above {ABOVE_METRES} m?",
        [[Call("describe_layer", {"layer": "elevation", "at": "schools"})], _schools_above],
        _schools_above_expected,
    ),
    Task(
        "raster-steep-area",
        "multi-step",
        "How much of the town is steeper than 15 degrees?",
        [
            [Call("run_algorithm", {"algorithm": "native:slope", "parameters": {"INPUT": "elevation"}})],
            [
                Call(
                    "run_algorithm",
                    {
                        "algorithm": "native:reclassifybytable",
                        "parameters": {
                            "INPUT_RASTER": "elevation_slope",
                            "RASTER_BAND": 1,
                            "TABLE": [0, 15, 1, 15, 90, 2],
                            "DATA_TYPE": 0,
                            "NO_DATA": 0,
                        },
                        "output_name": "steep",
                    },
                )
            ],
            [Call("describe_layer", {"layer": "steep", "at": "districts"})],
            _steep_answer,
        ],
        lambda o: Expected(numbers=[_raster(o).steep_hectares()], tolerance=0.02),
    ),
    Task(
        "raster-landcover-hospitals",
        "inspection",
        "What is the land cover under each hospital?",
        [[Call("describe_layer", {"layer": "landcover", "at": "hospitals"})], _hospital_cover],
        _hospital_expected,
    ),
]
