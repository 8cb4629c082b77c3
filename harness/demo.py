"""The demo town for tests: generated once per session, copied per test."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEMO_DIR = REPO / "demo"
GPKG = DEMO_DIR / "elvbury.gpkg"
PROJECT = DEMO_DIR / "elvbury.qgz"
DEM = DEMO_DIR / "elvbury_dem.tif"
LANDCOVER = DEMO_DIR / "elvbury_landcover.tif"
SENSORS = DEMO_DIR / "sensors.csv"


def ensure_demo() -> Path:
    """Generate the demo data if it is missing (``make demo`` normally did it)."""
    if not all(path.is_file() for path in (GPKG, PROJECT, DEM, LANDCOVER, SENSORS)):
        subprocess.run([sys.executable, str(REPO / "scripts" / "make_demo_data.py"), str(DEMO_DIR)], check=True)
    return DEMO_DIR


def copy_demo(target: Path) -> Path:
    """Copy the demo project, GeoPackage, GeoTIFFs and sensors CSV into ``target``; return the project path."""
    ensure_demo()
    target.mkdir(parents=True, exist_ok=True)
    for path in (GPKG, PROJECT, DEM, LANDCOVER, SENSORS):
        shutil.copy2(path, target / path.name)
    return target / PROJECT.name
