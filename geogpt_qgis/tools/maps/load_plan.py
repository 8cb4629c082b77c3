"""What ``load_data`` found out on the worker thread: how the main thread is to make the layer.

Probing a source (opening it with GDAL, reading a CSV's header, fetching
capabilities) is slow and runs on the worker; making the QGIS layer runs on
the main thread (``tools/thread_guard``), from this plan alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from geogpt_qgis.core.artifacts import TableRef

VECTOR, RASTER = "vector", "raster"


@dataclass(frozen=True)
class LoadPlan:
    """A layer to make: QGIS provider and URI, the name to give it, and what the answer should say."""

    kind: str  # VECTOR or RASTER
    provider: str  # "ogr", "gdal", "delimitedtext", "OAPIF", "wms", "postgres"
    uri: str
    name: str  # the base name (the model's ``name``, else one from the source)
    source: str  # the source as the answer names it (never credentials)
    notes: tuple[str, ...] = ()
    tables: tuple[TableRef, ...] = ()  # the database tables read, for the Sources list
    connection: str = ""  # saved PostgreSQL connection whose URI the main thread completes
    extra: dict[str, str] = field(default_factory=dict)  # provider details for the main thread
