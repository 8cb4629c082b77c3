"""Provenance on every layer a tool call added: its QGIS metadata, and its table's metadata in the results GeoPackage.

The toolkit calls ``ProvenanceRecorder`` once after each call whose artifact
names added layers (``agent.toolkit``), so every result path (processing
outputs, loaded data, query results, OGC copies, places, rasters, code) is
covered by one hook instead of one per family.  The record itself is
composed Qt-free (``core.provenance``) from the call's typed artifact: the
inputs it read (layers by id, tables, collections), the algorithm and its
parameters, and the run's question and model (``current_origin``).

On the main thread (short): the inputs' sources are read and each added
layer gets the abstract and a history item (``QgsLayerMetadata``), which the
project saves in its file.  On the algorithm thread (file I/O, and QGIS
builds CRSs while writing metadata): a layer stored in the results
GeoPackage gets the same metadata written into the GeoPackage metadata
extension (the document QGIS itself writes there), so the
file alone still says where each table came from.  Data the user loaded from
their own files is never written to.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qgis.core import Qgis, QgsLayerMetadata, QgsMapLayer, QgsProject, QgsProviderRegistry, QgsVectorLayer
from qgis.PyQt.QtXml import QDomDocument, QDomImplementation

from geogpt_qgis.__about__ import VERSION
from geogpt_qgis.core import gpkg_metadata, result_files
from geogpt_qgis.core.artifacts import ToolArtifact
from geogpt_qgis.core.provenance import (
    InputSource,
    Provenance,
    RunOrigin,
    current_origin,
    history_entry,
    merged_abstract,
)
from geogpt_qgis.tools.processing.algorithm_thread import run_on_algorithm_thread
from geogpt_qgis.tools.thread_guard import assert_main_thread

# The standard URI QGIS registers its layer metadata under in a GeoPackage's gpkg_metadata.
QGIS_METADATA_URI = "http://mrcc.com/qgis.dtd"

if TYPE_CHECKING:
    from geogpt_qgis.tools.base import ToolContext


@dataclass(frozen=True)
class StoredMetadata:
    """A result table's metadata, to be written into its GeoPackage (off the main thread)."""

    uri: str
    path: Path
    table: str
    metadata: QgsLayerMetadata


class ProvenanceRecorder:
    """Records where the layers of each call came from (the toolkit's ``after_call``; worker thread)."""

    def __init__(self, ctx: ToolContext) -> None:
        self.ctx = ctx

    def __call__(self, tool: str, arguments: Mapping[str, Any], artifact: ToolArtifact) -> None:
        if not artifact.added:
            return
        origin = current_origin.get()
        when = dt.datetime.now(dt.UTC)
        stored = self.ctx.on_main(record_on_layers, self.ctx.project, tool, arguments, artifact, origin, when)
        for item in stored:
            if _new_result_table(item):
                run_on_algorithm_thread(save_in_geopackage, item)


def record_on_layers(
    project: QgsProject,
    tool: str,
    arguments: Mapping[str, Any],
    artifact: ToolArtifact,
    origin: RunOrigin | None,
    when: dt.datetime,
) -> list[StoredMetadata]:
    """Give each added layer its provenance (main thread); returns those stored in a GeoPackage."""
    assert_main_thread("provenance was written on result layers")
    algorithm = artifact.algorithm
    record = Provenance(
        tool=tool,
        time=when,
        plugin_version=VERSION,
        origin=origin,
        algorithm=algorithm.id if algorithm is not None else "",
        parameters=dict(algorithm.parameters) if algorithm is not None else {},
        arguments={} if algorithm is not None else dict(arguments),
        inputs=inputs_of(project, artifact),
    )
    stored = []
    for ref in artifact.added:
        layer = project.mapLayer(ref.layer_id) if ref.layer_id else None
        if layer is None:
            continue  # removed meanwhile, or a reference stored without its id
        metadata = with_record(layer.metadata(), record)
        layer.setMetadata(metadata)
        where = _geopackage_table(layer)
        if where is not None:
            stored.append(StoredMetadata(layer.source(), *where, QgsLayerMetadata(metadata)))
    return stored


def with_record(metadata: QgsLayerMetadata, record: Provenance) -> QgsLayerMetadata:
    """``metadata`` with the record as its abstract (after an abstract of the data's own) and a history item."""
    updated = QgsLayerMetadata(metadata)
    updated.setAbstract(merged_abstract(metadata.abstract(), record))
    updated.addHistoryItem(history_entry(record))
    return updated


def inputs_of(project: QgsProject, artifact: ToolArtifact) -> tuple[InputSource, ...]:
    """What the call read: project layers with their sources (no password), tables, collections (main thread)."""
    found = []
    for ref in artifact.layers:
        layer = project.mapLayer(ref.layer_id) if ref.layer_id else None
        source = layer.publicSource() if layer is not None else ""  # publicSource: without the password
        found.append(InputSource(ref.name, str(source)))
    found += [InputSource(table.label, "", "table") for table in artifact.tables]
    found += [InputSource(c.label, c.url, "collection") for c in artifact.collections]
    return tuple(found)


def save_in_geopackage(item: StoredMetadata) -> None:
    """Write the metadata into the table's GeoPackage as QGIS writes it, where a fresh layer reads it back.

    Not through ``QgsProviderRegistry.saveLayerMetadata``: on QGIS 3.22 it left
    the project's open layer on that GeoPackage unable to read ("unable to
    open database file"), so the next step of the run read 0 features from
    the result it had just made (tests/qgis/test_provenance.py).  It also set
    the table's description, the store's mark, to the abstract; this leaves
    the description alone.
    """
    gpkg_metadata.add_table_document(item.path, item.table, QGIS_METADATA_URI, metadata_document(item.metadata))


def metadata_document(metadata: QgsLayerMetadata) -> str:
    """The layer metadata as QGIS's own XML document (``<!DOCTYPE qgis ...><qgis version=...>``)."""
    doctype = QDomImplementation().createDocumentType("qgis", QGIS_METADATA_URI, "SYSTEM")
    document = QDomDocument(doctype)
    root = document.createElement("qgis")
    root.setAttribute("version", Qgis.version())
    document.appendChild(root)
    metadata.writeMetadataXml(root, document)
    return str(document.toString())


def _new_result_table(item: StoredMetadata) -> bool:
    """A table the store wrote (never a user's own data) that has no metadata yet: the one this call made.

    A results table loaded again (another project's results) keeps the provenance it was made with.
    """
    return item.table in result_files.result_tables(item.path) and not gpkg_metadata.table_metadata(
        item.path, item.table
    )


def _geopackage_table(layer: QgsMapLayer) -> tuple[Path, str] | None:
    """The GeoPackage and table ``layer`` reads, if it reads one table of a local GeoPackage."""
    if not isinstance(layer, QgsVectorLayer) or layer.providerType() != "ogr":
        return None
    parts = QgsProviderRegistry.instance().decodeUri("ogr", layer.source())
    path, table = str(parts.get("path") or ""), str(parts.get("layerName") or "")
    if not path.lower().endswith(".gpkg") or not table:
        return None
    return Path(path), table
