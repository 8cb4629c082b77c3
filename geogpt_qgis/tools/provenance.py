"""Provenance on every layer a tool call added: its QGIS metadata, and its table's metadata in its result GeoPackage.

The toolkit calls ``ProvenanceRecorder`` once after each call whose artifact
names added layers (``agent.toolkit``), so every result path (processing
outputs, loaded data, query results, OGC copies, places, rasters, code) is
covered by one hook instead of one per family.  The record itself is
composed Qt-free (``core.provenance``) from the call's typed artifact: the
inputs it read (layers by id, tables, collections), the algorithm and its
parameters, and the run's question and model (``current_origin``).

On the main thread (short): the inputs' sources are read and each added
layer gets the abstract and a history item (``QgsLayerMetadata``), which the
project saves in its file.

A result kept in a result GeoPackage is recorded earlier, by the store
(``tools.result_store``): the same record goes into the GeoPackage metadata
extension (the document QGIS itself writes there) together with the table,
before QGIS opens it, and onto the layer that reads it, which is marked
(``RECORDED_PROPERTY``) so that it is not recorded twice.  Written after
QGIS had opened the table, the document made GDAL's reads of that GeoPackage
fail now and then: "database disk image is malformed" or "attempt to write a
readonly database" in 9 to 12 of 45 eval tasks run in a row (QGIS 3.22), none
once it went in with the table; on QGIS 3.40/3.44 the eval suite met empty
results beside such GDAL errors.  Data the user loaded from their own files
is never written to.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from qgis.core import Qgis, QgsLayerMetadata, QgsProject
from qgis.PyQt.QtXml import QDomDocument, QDomImplementation

from geogpt_qgis.__about__ import VERSION
from geogpt_qgis.core.artifacts import AlgorithmRun, ToolArtifact
from geogpt_qgis.core.provenance import (
    InputSource,
    Provenance,
    RunOrigin,
    current_call,
    current_origin,
    history_entry,
    merged_abstract,
)
from geogpt_qgis.tools.thread_guard import assert_main_thread

# The standard URI QGIS registers its layer metadata under in a GeoPackage's gpkg_metadata.
QGIS_METADATA_URI = "http://mrcc.com/qgis.dtd"
# A custom property of a stored result whose record was written with its table (tools.result_store).
RECORDED_PROPERTY = "geogpt/provenance_stored"

if TYPE_CHECKING:
    from geogpt_qgis.tools.base import ToolContext


class ProvenanceRecorder:
    """Records where the layers of each call came from (the toolkit's ``after_call``; worker thread)."""

    def __init__(self, ctx: ToolContext) -> None:
        self.ctx = ctx

    def __call__(self, tool: str, arguments: Mapping[str, Any], artifact: ToolArtifact) -> None:
        if not artifact.added:
            return
        origin = current_origin.get()
        call = current_call.get()
        when = call.time if call is not None else dt.datetime.now(dt.UTC)
        self.ctx.on_main(record_on_layers, self.ctx.project, tool, arguments, artifact, origin, when)


def provenance_of(
    tool: str,
    arguments: Mapping[str, Any],
    algorithm: AlgorithmRun | None,
    inputs: tuple[InputSource, ...],
    origin: RunOrigin | None,
    when: dt.datetime,
) -> Provenance:
    """The record of one call: its algorithm and parameters, or (no algorithm ran) its arguments."""
    return Provenance(
        tool=tool,
        time=when,
        plugin_version=VERSION,
        origin=origin,
        algorithm=algorithm.id if algorithm is not None else "",
        parameters=dict(algorithm.parameters) if algorithm is not None else {},
        arguments={} if algorithm is not None else dict(arguments),
        inputs=inputs,
    )


def record_on_layers(
    project: QgsProject,
    tool: str,
    arguments: Mapping[str, Any],
    artifact: ToolArtifact,
    origin: RunOrigin | None,
    when: dt.datetime,
) -> None:
    """Give each added layer its provenance (main thread), but for stored results, which got it with their table."""
    assert_main_thread("provenance was written on result layers")
    record = provenance_of(tool, arguments, artifact.algorithm, inputs_of(project, artifact), origin, when)
    for ref in artifact.added:
        layer = project.mapLayer(ref.layer_id) if ref.layer_id else None
        if layer is None or layer.customProperty(RECORDED_PROPERTY):
            continue  # removed meanwhile (or a reference stored without its id), or recorded when stored
        layer.setMetadata(with_record(layer.metadata(), record))


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


def metadata_document(metadata: QgsLayerMetadata) -> str:
    """The layer metadata as QGIS's own XML document (``<!DOCTYPE qgis ...><qgis version=...>``)."""
    doctype = QDomImplementation().createDocumentType("qgis", QGIS_METADATA_URI, "SYSTEM")
    document = QDomDocument(doctype)
    root = document.createElement("qgis")
    root.setAttribute("version", Qgis.version())
    document.appendChild(root)
    metadata.writeMetadataXml(root, document)
    return str(document.toString())
