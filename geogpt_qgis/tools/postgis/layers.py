"""Layers whose source is a query in the database: the features stay in PostgreSQL.

The layer declares its geometry column, type, SRID, a unique key and its
extent (all learned in the query's single counting pass), so QGIS does not
scan the result again to learn them.
"""

from __future__ import annotations

from qgis.core import QgsDataSourceUri, QgsRectangle, QgsVectorLayer, QgsWkbTypes

from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.postgis.connections import SavedConnection
from geogpt_qgis.tools.postgis.query import UID, QueryResult


def query_layer(connection: SavedConnection, result: QueryResult, name: str) -> QgsVectorLayer:
    """A postgres layer reading ``result``'s query (geometry result, or a plain table)."""
    uri = QgsDataSourceUri(connection.uri)
    geometry = result.geometry
    uri.setDataSource("", f"({result.layer_sql()})", geometry.layer_column if geometry else "", "", UID)
    uri.setKeyColumn(UID)
    uri.setUseEstimatedMetadata(True)
    uri.setParam("checkPrimaryKeyUnicity", "0")  # row_number() is unique; do not make QGIS scan to check
    if geometry:
        uri.setSrid(str(geometry.srid))
        uri.setWkbType(QgsWkbTypes.parseType(geometry.wkb_type))
    else:
        uri.setWkbType(QgsWkbTypes.parseType("NoGeometry"))
    layer = QgsVectorLayer(uri.uri(False), name, "postgres")
    if not layer.isValid():
        raise ToolError(f"QGIS could not open the query as a layer: {layer.error().summary() or 'unknown error'}")
    if result.extent:
        layer.setExtent(QgsRectangle(*result.extent))  # known already: QGIS need not scan for it
    return layer
