"""Loading tasks (issue 23): the demo's sensors CSV and a GeoPackage layer, scored on the layers the run adds.

The expected sensors come from the CSV itself, read with the csv module (and
pyproj to place them in the town); the expected parks from the GeoPackage
through the oracle (shapely), never from the tool under test.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evals.oracle import Oracle
from evals.task import FEATURES, Call, Expected, LayerExpect, Reads, Task

SENSORS_CSV = "sensors.csv"  # beside the demo project (harness/demo.copy_demo), read relative to it
TOLERANCE_DEGREES = 1e-9


def sensor_positions(o: Oracle) -> dict[str, tuple[float, float]]:
    """``sensor_id`` -> (longitude, latitude) as the demo CSV holds them."""
    with (Path(o.gpkg).parent / SENSORS_CSV).open(newline="", encoding="utf-8") as handle:
        return {row["sensor_id"]: (float(row["lon"]), float(row["lat"])) for row in csv.DictReader(handle)}


def points_at(layer_name: str, expected: dict[str, tuple[float, float]], key: str) -> Callable[[Any], list[str]]:
    """The layer holds exactly the expected points (by ``key``), in EPSG:4326, each where the file puts it."""

    def check(project: Any) -> list[str]:
        found = project.mapLayersByName(layer_name)
        if len(found) != 1:
            return [f"no single layer {layer_name!r}"]
        layer = found[0]
        if layer.crs().authid() != "EPSG:4326":
            return [f"{layer_name!r} is in {layer.crs().authid()}, not EPSG:4326"]
        got = {str(f[key]): f.geometry().asPoint() for f in layer.getFeatures()}
        if set(got) != set(expected):
            return [f"{layer_name!r} holds sensors {sorted(got)}, expected {sorted(expected)}"]
        wrong = [
            k
            for k, (x, y) in expected.items()
            if abs(got[k].x() - x) > TOLERANCE_DEGREES or abs(got[k].y() - y) > TOLERANCE_DEGREES
        ]
        return [f"{layer_name!r}: sensors at the wrong place: {wrong}"] if wrong else []

    return check


def _sensors_expected(o: Oracle) -> Expected:
    from pyproj import Transformer

    positions = sensor_positions(o)
    to_town = Transformer.from_crs("EPSG:4326", f"EPSG:{o.epsg('districts')}", always_xy=True)
    town = o.union("districts")
    inside = sum(town.buffer(1.0).contains(_point(*to_town.transform(lon, lat))) for lon, lat in positions.values())
    return Expected(
        numbers=[len(positions), inside],
        layers={"sensors": LayerExpect(count=len(positions))},
        project=[points_at("sensors", positions, "sensor_id")],
    )


def _point(x: float, y: float) -> Any:
    from shapely.geometry import Point

    return Point(x, y)


def _sensors_answer(reads: Reads) -> str:
    count = int(reads.number(FEATURES))
    return f"I loaded {count} sensors from the CSV; all {count} lie inside the town's districts."


def _parks_answer(reads: Reads) -> str:
    return f"Added the parks from the GeoPackage: {int(reads.number(FEATURES))} parks."


def _parks_expected(o: Oracle) -> Expected:
    parks = o.rows("parks")
    area = sum(geometry.area for _, geometry in parks)
    return Expected(numbers=[len(parks)], layers={"park areas": LayerExpect(count=len(parks), area=area)})


MAPS_LOAD = [
    Task(
        "load-sensors-csv",
        "maps",
        "Load the sensors CSV (sensors.csv in the project folder). How many sensors are there?",
        [[Call("load_data", {"source": SENSORS_CSV})], _sensors_answer],
        _sensors_expected,
    ),
    Task(
        "load-geopackage-layer",
        "maps",
        "Add the parks table of elvbury.gpkg as a new layer called 'park areas'.",
        [[Call("load_data", {"source": "elvbury.gpkg", "layer": "parks", "name": "park areas"})], _parks_answer],
        _parks_expected,
    ),
]
