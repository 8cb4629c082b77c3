"""A real OGC API Features server for the tests: pygeoapi (from PyPI) serving the demo town.

Most collections come from the PostGIS copy of the demo town (pygeoapi's
PostgreSQL provider: CQL2 filters, ``bbox-crs``, CRS transformation).  One
collection, ``parks_file``, is a GeoJSON file served by pygeoapi's GeoJSON
provider, which ignores filters: the "server that does not support
filtering" case.  A page holds at most ``MAX_ITEMS`` features, so paging is
exercised.

The server runs in its own process (``python -m harness.ogc_server
CONFIG PORT``), so its Flask, SQLAlchemy and rasterio never share QGIS's process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from harness.net import free_port
from harness.postgis import PARAMS

MAX_ITEMS = 50
DEFAULT_ITEMS = 10
STORAGE_CRS = "http://www.opengis.net/def/crs/EPSG/0/25832"
CRS_LIST = [
    "http://www.opengis.net/def/crs/OGC/1.3/CRS84",
    "http://www.opengis.net/def/crs/EPSG/0/4326",
    STORAGE_CRS,
]
POSTGIS_COLLECTIONS = {
    # id: (title, description, keywords)
    "districts": ("Districts", "The nine districts of Elvbury with their population.", ["boundaries"]),
    "schools": ("Schools", "Primary and secondary schools with pupil numbers.", ["education"]),
    "hospitals": ("Hospitals", "Hospitals with beds and emergency departments.", ["health"]),
    "roads": ("Roads", "The road network by class.", ["transport"]),
    "rivers": ("Rivers", "The Elv and its tributary.", ["water"]),
}
REPO = Path(__file__).resolve().parents[1]


def _postgis_provider(table: str) -> dict:
    return {
        "type": "feature",
        "name": "PostgreSQL",
        "data": {
            "host": PARAMS["host"],
            "port": int(PARAMS["port"]),
            "dbname": PARAMS["dbname"],
            "user": PARAMS["user"],
            "password": PARAMS["password"],
            "search_path": ["public"],
        },
        "id_field": "fid",
        "table": table,
        "geom_field": "geom",
        "storage_crs": STORAGE_CRS,
        "crs": CRS_LIST,
    }


def _collection(title: str, description: str, keywords: list[str], provider: dict) -> dict:
    return {
        "type": "collection",
        "title": title,
        "description": description,
        "keywords": keywords,
        "links": [],
        "extents": {"spatial": {"bbox": [9.96, 55.94, 10.09, 56.0], "crs": CRS_LIST[0]}},
        "providers": [provider],
    }


def write_config(folder: Path, port: int, parks_geojson: Path) -> Path:
    """pygeoapi's configuration (YAML is a superset of JSON) and a minimal OpenAPI document."""
    resources = {
        name: _collection(title, description, keywords, _postgis_provider(name))
        for name, (title, description, keywords) in POSTGIS_COLLECTIONS.items()
    }
    resources["parks_file"] = _collection(
        "Parks (file)",
        "Parks and green spaces, from a GeoJSON file.",
        ["green"],
        {"type": "feature", "name": "GeoJSON", "data": str(parks_geojson), "id_field": "fid"},
    )
    config = {
        "server": {
            "bind": {"host": "127.0.0.1", "port": port},
            "url": f"http://127.0.0.1:{port}",
            "mimetype": "application/json; charset=UTF-8",
            "encoding": "utf-8",
            "language": "en-US",
            "cors": False,
            "pretty_print": False,
            "limits": {"default_items": DEFAULT_ITEMS, "max_items": MAX_ITEMS},
            "map": {"url": "http://127.0.0.1/{z}/{x}/{y}.png", "attribution": "none"},
        },
        "logging": {"level": "ERROR"},
        "metadata": {
            "identification": {
                "title": "Elvbury open data",
                "description": "The demo town's layers as OGC API Features",
                "keywords": ["elvbury"],
                "keywords_type": "theme",
                "terms_of_service": "https://creativecommons.org/licenses/by/4.0/",
                "url": f"http://127.0.0.1:{port}",
            },
            "license": {"name": "CC-BY 4.0", "url": "https://creativecommons.org/licenses/by/4.0/"},
            "provider": {"name": "GeoGPT tests", "url": f"http://127.0.0.1:{port}"},
            "contact": {"name": "GeoGPT", "position": "tests", "email": "tests@example.invalid"},
        },
        "resources": resources,
    }
    config_path = folder / "pygeoapi.yml"
    config_path.write_text(json.dumps(config, indent=1), encoding="utf-8")
    openapi = {"openapi": "3.0.2", "info": {"title": "Elvbury", "version": "1"}, "paths": {}}
    (folder / "openapi.json").write_text(json.dumps(openapi), encoding="utf-8")
    return config_path


def export_parks(gpkg: Path, target: Path) -> Path:
    """The demo town's parks as a GeoJSON file in CRS84 (what pygeoapi's GeoJSON provider serves)."""
    from osgeo import gdal

    gdal.UseExceptions()
    options = {"format": "GeoJSON", "layers": ["parks"], "dstSRS": "EPSG:4326", "layerCreationOptions": ["RFC7946=YES"]}
    gdal.VectorTranslate(str(target), str(gpkg), **options)
    return target


class OgcServer:
    """The running server: its base URL, and its process (to stop it)."""

    def __init__(self, url: str, process: subprocess.Popen) -> None:
        self.url = url
        self.process = process


@contextmanager
def running_ogc_server(folder: Path, gpkg: Path) -> Iterator[OgcServer]:
    """Start pygeoapi on a free port of 127.0.0.1, wait until it answers, stop it afterwards."""
    port = free_port()
    config = write_config(folder, port, export_parks(gpkg, folder / "parks.geojson"))
    env = {**os.environ, "PYGEOAPI_CONFIG": str(config), "PYGEOAPI_OPENAPI": str(folder / "openapi.json")}
    log = (folder / "pygeoapi.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "harness.ogc_server", str(port)], cwd=REPO, env=env, stdout=log, stderr=log
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"pygeoapi exited: {(folder / 'pygeoapi.log').read_text()[-2000:]}")
            try:
                if httpx.get(f"{url}/conformance?f=json", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("pygeoapi did not start within 60 s")
            time.sleep(0.2)
        yield OgcServer(url, process)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def _serve(port: int) -> None:
    from pygeoapi.flask_app import APP
    from werkzeug.serving import make_server

    make_server("127.0.0.1", port, APP, threaded=True).serve_forever()


if __name__ == "__main__":
    _serve(int(sys.argv[1]))
