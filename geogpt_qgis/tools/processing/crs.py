"""Pick a local metric CRS (the UTM zone) for a layer in geographic coordinates.

Distances and areas need metres; a layer in EPSG:4326 has degrees.  The UTM
zone covering the layer's centre is the usual analyst's choice: pyproj's CRS
database picks it (falling back to the zone arithmetic when pyproj is absent).
"""

from __future__ import annotations

import math

from qgis.core import QgsCoordinateReferenceSystem, QgsCoordinateTransform, QgsMapLayer, QgsProject

from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.thread_guard import assert_main_thread

WGS84 = "EPSG:4326"
UTM_LATITUDE_LIMIT = 84.0


def utm_zone_code(longitude: float, latitude: float) -> str:
    """``EPSG:326NN`` (north) or ``EPSG:327NN`` (south) for a WGS 84 position."""
    zone = min(math.floor((longitude + 180.0) / 6.0) + 1, 60)
    return f"EPSG:{32600 + zone if latitude >= 0 else 32700 + zone}"


def _pyproj_utm(west: float, south: float, east: float, north: float) -> str | None:
    try:
        from pyproj.aoi import AreaOfInterest
        from pyproj.database import query_utm_crs_info
    except ImportError:
        return None
    found = query_utm_crs_info(
        datum_name="WGS 84",
        area_of_interest=AreaOfInterest(
            west_lon_degree=west, south_lat_degree=south, east_lon_degree=east, north_lat_degree=north
        ),
    )
    return f"{found[0].auth_name}:{found[0].code}" if found else None


def utm_crs_for_layer(layer: QgsMapLayer) -> tuple[QgsCoordinateReferenceSystem, str]:
    """The UTM CRS for the layer's centre, and a description of the choice."""
    assert_main_thread("the project's transform context was read")
    extent = layer.extent()
    transform = QgsCoordinateTransform(layer.crs(), QgsCoordinateReferenceSystem(WGS84), QgsProject.instance())
    box = transform.transformBoundingBox(extent)
    centre_lon, centre_lat = box.center().x(), box.center().y()
    if abs(centre_lat) > UTM_LATITUDE_LIMIT:
        raise ToolError(
            f"{layer.name()!r} lies near a pole (latitude {centre_lat:.1f}), where UTM zones do not exist; "
            "reproject it to a polar metric CRS (e.g. EPSG:3413 or EPSG:3031) with native:reprojectlayer first."
        )
    # A point area of interest picks the zone of the centre rather than every zone the extent touches.
    code = _pyproj_utm(centre_lon, centre_lat, centre_lon, centre_lat) or utm_zone_code(centre_lon, centre_lat)
    crs = QgsCoordinateReferenceSystem(code)
    span = box.width()
    note = crs.description()
    if span > 12:
        note += f"; the layer spans {span:.0f}° of longitude, so distances far from the zone are distorted"
    return crs, note
