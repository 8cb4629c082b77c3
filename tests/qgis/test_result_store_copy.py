"""The result store's copy: one C++ loop from the snapshot to the GeoPackage, stopped midway by Stop,
and counted on disk by SQLite (never by the loop that wrote it)."""

from __future__ import annotations

import sqlite3

import pytest
from qgis.core import (
    QgsExpression,
    QgsField,
    QgsProject,
    QgsVectorLayer,
    qgsfunction,
)

from geogpt_qgis.core import result_files
from geogpt_qgis.core.cancel import CancelToken, RunCancelled
from geogpt_qgis.tools.result_store import ResultStore, keep_result_now, set_result_store, stage_result
from tests.support.memory_layers import numbered_points

COUNT = 5000
STOP_AT = 1200


@pytest.fixture
def project(qgis_app, tmp_path):
    project = QgsProject.instance()
    project.clear()
    store = ResultStore(tmp_path / "scratch")
    set_result_store(project, store)
    keep_result_now(project, QgsVectorLayer("Point?crs=EPSG:25832", "first", "memory"), "first")  # the file exists
    yield project, store
    project.clear()
    set_result_store(project, None)


def test_stop_in_the_middle_of_a_copy_ends_it_and_leaves_no_table(project):
    project_, store = project
    layer = numbered_points("many", COUNT)
    cancel = CancelToken()
    read: list[int] = []

    # An expression field is computed as the copy reads each feature: Stop is pressed at the 1,200th.
    @qgsfunction(args="auto", group="Custom", register=True)
    def geogpt_test_press_stop(n, feature, parent):
        read.append(n)
        if len(read) == STOP_AT:
            cancel.cancel()
        return n

    try:
        whole = QgsField(layer.fields()[0])  # an integer field, on Qt 5 and 6 alike
        whole.setName("seen")
        layer.addExpressionField("geogpt_test_press_stop(n)", whole)
        _store, staged = stage_result(project_, layer, "many")
        with pytest.raises(RunCancelled):
            store.write(staged, cancel)
    finally:
        QgsExpression.unregisterFunction("geogpt_test_press_stop")
    assert STOP_AT <= len(read) < COUNT  # the loop stopped soon after Stop, not at the end
    assert not staged.path.exists()  # no part of a file left
    assert {path.name for path in result_files.result_files_in(store.scratch_folder)} == {"first.gpkg"}


def test_the_copy_is_counted_on_disk_and_holds_every_feature(project):
    project_, store = project
    _store, staged = stage_result(project_, numbered_points("many", COUNT), "counted")
    store.write(staged)
    assert staged.count == staged.expected == COUNT
    with sqlite3.connect(staged.path) as db:
        rows = db.execute(f'SELECT n FROM "{staged.table}" ORDER BY n').fetchall()
        assert db.execute(
            "SELECT count(*) FROM gpkg_extensions WHERE table_name = ? AND extension_name = 'gpkg_rtree_index'",
            (staged.table,),
        ).fetchone() == (1,)
        assert db.execute(f'SELECT count(*) FROM "rtree_{staged.table}_geom"').fetchone() == (COUNT,)
    assert [n for (n,) in rows] == list(range(COUNT))
    assert result_files.row_count(staged.path, staged.table) == COUNT
    with pytest.raises(ValueError, match="not a table name"):
        result_files.row_count(staged.path, 'counted" WHERE 0 --')
