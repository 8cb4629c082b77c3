"""What runs is what was approved (issue 36): approvals bound to the layers, tables and files the card showed.

Through the conversation service the dock uses (real graph, real HTTP model
client, real QGIS and PostGIS), a hostile reply or a change made while the card
waits tries to turn an approval for one thing into a change of another: a layer
renamed or replaced, a table dropped and made again, a path swapped for a
symbolic link, a saved connection edited, an "always" stretched to a wider
call, a reply whose earlier calls change the project.  Each test checks, with
GDAL or psycopg2 reading the data directly, that what the card did not name is
unchanged.
"""

from __future__ import annotations

import contextvars
import hashlib
import os
import re
from pathlib import Path
from typing import Any

import pytest
from osgeo import ogr

from geogpt_qgis.agent.config import ModelConfig
from geogpt_qgis.core.approval import APPROVE, REJECT, Decision, current_approval, current_decision
from geogpt_qgis.core.events import ApprovalRequested, Notice
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.postgis.family import PostgisTools
from geogpt_qgis.tools.project.edits import EditTools
from tests.support.model_server import ToolCall, Turn
from tests.support.postgis import PARAMS, SUPER_PASSWORD, SUPER_USER, connect, saved_connection
from tests.support.runs import RunRecorder, call_in_thread

SCHEMA = f"geogpt_targets_{os.getpid()}"
OTHER_DB = f"geogpt_targets_other_{os.getpid()}"
NOT_RUN = "Not run: what this call would change is no longer what the user approved"
PRIMARY = "\"type\" = 'primary'"


@pytest.fixture
def config(model_server) -> ModelConfig:
    return ModelConfig(model="qwen3:8b", base_url=model_server.url, timeout=30)


# -- reading the data directly ------------------------------------------------------------------------------------
def gpkg_of(project: Any) -> str:
    (schools,) = project.mapLayersByName("schools")
    return schools.source().split("|")[0]


def stored_counts(path: str) -> dict[str, int]:
    """Features per table of the GeoPackage, read by GDAL (not through QGIS's layers or their edit buffers)."""
    source = ogr.Open(path)
    counts = {source.GetLayer(i).GetName(): source.GetLayer(i).GetFeatureCount() for i in range(source.GetLayerCount())}
    source = None
    return counts


def stored_features(path: str, table: str | None = None, where: str = "") -> dict[int, tuple[dict, bytes]]:
    """Each feature's fields and geometry by id, read by GDAL (``table`` None: the file's only table)."""
    source = ogr.Open(path)
    found = source.GetLayerByName(table) if table else source.GetLayer(0)
    if where:
        found.SetAttributeFilter(where)
    features = {f.GetFID(): (f.items(), bytes(f.GetGeometryRef().ExportToWkb())) for f in found}
    source = None
    return features


def stored_pupils(path: str) -> list[int]:
    source = ogr.Open(path)
    layer = source.GetLayerByName("schools")
    values = sorted(int(feature.GetField("pupils")) for feature in layer)
    source = None
    return values


def layer(project: Any, name: str) -> Any:
    (found,) = project.mapLayersByName(name)
    return found


def run_to_end(recorder: RunRecorder, run_id: int) -> tuple[str, list[dict[str, Any]]]:
    finished = recorder.wait(run_id, 60)
    assert finished.status in ("paused", "finished"), finished.error
    return finished.status, [event.request for event in recorder.of(run_id, ApprovalRequested)]


def last_run(recorder: RunRecorder) -> int:
    return max(recorder.finished)


def told(model_server) -> list[str]:
    """What the model was told by the tool calls of its last reply, in order."""
    return [m["content"] for m in model_server.chat_requests()[-1].tool_messages()]


def delete(layer_name: str, expression: str = "TRUE") -> ToolCall:
    return ToolCall("edit_features", {"layer": layer_name, "expression": expression, "delete": True})


def rename(old: str, new: str) -> ToolCall:
    return ToolCall("set_layer", {"layer": old, "name": new})


# -- the whole reply, previewed call by call ----------------------------------------------------------------------
def test_a_reply_that_renames_then_deletes_is_asked_about_the_layer_the_delete_will_hit(
    demo_project, worker, recorder, config, model_server
):
    """The issue's reply: the card for the delete is made after the renames ran, so it names the parks."""
    path = gpkg_of(demo_project)
    before = stored_counts(path)
    schools_id, parks_id = layer(demo_project, "schools").id(), layer(demo_project, "parks").id()
    model_server.script(
        [
            Turn(tool_calls=[rename("schools", "schools_old"), rename("parks", "schools"), delete("schools")]),
            Turn(text="I left it as it is."),
        ]
    )
    status, (request,) = run_to_end(recorder, worker.submit("tidy up the schools", config))
    assert status == "paused"
    # The renames ran before the delete was previewed: the card describes the project as the delete finds it.
    assert layer(demo_project, "schools_old").id() == schools_id and layer(demo_project, "schools").id() == parks_id
    (target,) = request["targets"]
    assert target["ident"] == parks_id and "layername=parks" in target["source"]
    assert target["state"].startswith(f"{before['parks']:,} features")
    assert request["action"] == f"Delete {before['parks']:,} features from 'schools'"
    assert "edit buffer" in request["details"]
    status, _ = run_to_end(recorder, worker.resume({"action": REJECT, "reason": "those are the parks"}, config))
    assert status == "finished"
    assert stored_counts(path) == before
    assert layer(demo_project, "schools").featureCount() == before["parks"]
    assert layer(demo_project, "schools_old").featureCount() == before["schools"]
    replies = told(model_server)
    assert replies[2].startswith("Not done: the user rejected this") and "those are the parks" in replies[2]


def test_an_approved_delete_on_a_file_layer_waits_in_the_edit_buffer_and_can_be_undone(
    demo_project, worker, recorder, config, model_server
):
    path = gpkg_of(demo_project)
    before = stored_counts(path)
    model_server.script([Turn(tool_calls=[delete("parks")]), Turn(text="Deleted; save the layer to keep it.")])
    status, (request,) = run_to_end(recorder, worker.submit("delete the parks", config))
    assert status == "paused" and "discard them to undo it" in request["details"]
    status, _ = run_to_end(recorder, worker.resume({"action": APPROVE}, config))
    assert status == "finished"
    parks = layer(demo_project, "parks")
    assert parks.isEditable() and parks.featureCount() == 0  # in QGIS, in the edit buffer
    assert stored_counts(path) == before  # the user's file: nothing saved
    assert "not saved to" in told(model_server)[0] and "edit buffer" in told(model_server)[0]
    assert parks.rollBack()  # the user discards the edits: every park is back
    assert parks.featureCount() == before["parks"] and stored_counts(path) == before


# -- a layer renamed or replaced while the card waits --------------------------------------------------------------
def swap_by_renaming(project: Any) -> None:
    layer(project, "schools").setName("schools_old")
    layer(project, "parks").setName("schools")


def swap_by_replacing(project: Any) -> None:
    from qgis.core import QgsVectorLayer

    path = gpkg_of(project)
    project.removeMapLayer(layer(project, "schools").id())
    replacement = QgsVectorLayer(f"{path}|layername=parks", "schools", "ogr")
    assert replacement.isValid()
    project.addMapLayer(replacement)


@pytest.mark.parametrize("swap", [swap_by_renaming, swap_by_replacing], ids=["renamed", "replaced"])
def test_a_layer_renamed_or_replaced_after_approval_was_asked_is_not_changed(
    swap, demo_project, worker, recorder, config, model_server
):
    path = gpkg_of(demo_project)
    before = stored_counts(path)
    model_server.script([Turn(tool_calls=[delete("schools", PRIMARY)]), Turn(text="The layer changed; nothing done.")])
    status, (request,) = run_to_end(recorder, worker.submit("delete the primary schools", config))
    assert status == "paused" and request["targets"][0]["name"] == "schools"
    swap(demo_project)  # while the card waits: the user, a plugin or an MCP client
    status, _ = run_to_end(recorder, worker.resume({"action": APPROVE, "call_id": request["call_id"]}, config))
    assert status == "finished"
    (answer,) = told(model_server)
    assert answer.startswith(NOT_RUN) and "call edit_features again" in answer
    assert stored_counts(path) == before
    assert layer(demo_project, "schools").featureCount() == before["parks"]
    assert not any(found.isEditable() for found in demo_project.mapLayers().values())


def run_approved(tool: Any, request: Any, **args: Any) -> Any:
    """Call ``tool`` on a worker thread as the agent does for a call approved with ``request``."""
    current_decision.set(Decision(APPROVE))
    current_approval.set(request)
    context = contextvars.copy_context()
    current_decision.set(None)
    current_approval.set(None)
    return call_in_thread(context.run, tool, **args)


def test_the_edit_tool_itself_acts_only_on_the_approved_layer_id(demo_project, tool_ctx):
    """The second lock, without the toolkit's re-check: a rename between the check and the run changes nothing."""
    path = gpkg_of(demo_project)
    before = stored_counts(path)
    tools = EditTools(tool_ctx)
    args = {"layer": "schools", "expression": PRIMARY, "delete": True}
    request = call_in_thread(tools.preview_edit_features, **args)
    swap_by_renaming(demo_project)
    with pytest.raises(ToolError, match=r"not run: the user approved this for layer 'schools' .* now names layer"):
        run_approved(tools.edit_features, request, **args)
    assert stored_counts(path) == before
    assert layer(demo_project, "schools").featureCount() == before["parks"]
    # Other features matching the same filter are another contract, too.
    swap_by_renaming_back(demo_project)
    layer(demo_project, "schools").startEditing()
    feature = next(layer(demo_project, "schools").getFeatures(PRIMARY))
    layer(demo_project, "schools").changeAttributeValue(feature.id(), feature.fieldNameIndex("type"), "secondary")
    with pytest.raises(ToolError, match="the filter now matches"):
        run_approved(tools.edit_features, request, **args)
    layer(demo_project, "schools").rollBack()
    assert stored_counts(path) == before


def swap_by_renaming_back(project: Any) -> None:
    layer(project, "schools").setName("parks")
    layer(project, "schools_old").setName("schools")


# -- a path swapped for a symbolic link -----------------------------------------------------------------------------
def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_an_export_whose_path_became_a_symbolic_link_writes_nothing(
    demo_project, worker, recorder, config, model_server, tmp_path
):
    out = tmp_path / "exports"
    out.mkdir()
    precious = tmp_path / "thesis" / "figure.pdf"
    precious.parent.mkdir()
    precious.write_bytes(b"%PDF-1.4 the user's own figure\n")
    kept = digest(precious)
    target = out / "town.pdf"
    model_server.script(
        [Turn(tool_calls=[ToolCall("export_map", {"path": str(target), "title": "Elvbury"})]), Turn(text="No.")]
    )
    status, (request,) = run_to_end(recorder, worker.submit("export the map", config))
    assert status == "paused"
    (approved,) = request["targets"]
    assert approved["kind"] == "file" and approved["ident"] == str(target) and approved["state"] == "absent"
    target.symlink_to(precious)  # while the card waits
    status, _ = run_to_end(recorder, worker.resume({"action": APPROVE}, config))
    assert status == "finished"
    (answer,) = told(model_server)
    assert answer.startswith(NOT_RUN) and str(precious) in answer
    assert digest(precious) == kept and target.is_symlink()
    assert demo_project.layoutManager().layouts() == []


# -- PostGIS: a table dropped and made again, a connection edited, "always" then DROP -------------------------------
@pytest.fixture
def notes_table():
    """``SCHEMA.notes`` with three rows and a saved connection 'elvbury' to its database; yields the name."""
    with connect() as pg, pg.cursor() as cursor:
        cursor.execute(
            f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}; DROP TABLE IF EXISTS {SCHEMA}.notes;"
            f"CREATE TABLE {SCHEMA}.notes (id serial PRIMARY KEY, note text);"
            f"INSERT INTO {SCHEMA}.notes (note) VALUES ('one'), ('two'), ('three');"
        )
        pg.commit()
    with saved_connection("elvbury") as name:
        yield name
    with connect() as pg, pg.cursor() as cursor:
        cursor.execute(f"DROP SCHEMA {SCHEMA} CASCADE")
        pg.commit()


def notes(dsn: str | None = None) -> list[str]:
    with connect(dsn) if dsn else connect() as pg, pg.cursor() as cursor:
        cursor.execute(f"SELECT note FROM {SCHEMA}.notes ORDER BY id")
        return [row[0] for row in cursor.fetchall()]


def sql_call(connection: str, sql: str) -> ToolCall:
    return ToolCall("run_sql", {"connection": connection, "sql": sql})


def recreate_notes() -> None:
    """Drop the table and make another under the same name, holding other rows."""
    with connect() as pg, pg.cursor() as cursor:
        cursor.execute(
            f"DROP TABLE {SCHEMA}.notes; CREATE TABLE {SCHEMA}.notes (id serial PRIMARY KEY, note text);"
            f"INSERT INTO {SCHEMA}.notes (note) VALUES ('payroll'), ('contracts');"
        )
        pg.commit()


@pytest.mark.postgis
def test_a_table_dropped_and_made_again_after_approval_was_asked_is_not_written(
    notes_table, demo_project, worker, recorder, config, model_server
):
    sql = f"DELETE FROM {SCHEMA}.notes"
    model_server.script([Turn(tool_calls=[sql_call(notes_table, sql)]), Turn(text="-")])
    status, (request,) = run_to_end(recorder, worker.submit("empty the notes", config))
    assert status == "paused"
    (table,) = request["targets"]
    assert table["kind"] == "table" and table["state"].startswith("oid ") and table["ops"] == ["delete"]
    recreate_notes()  # while the card waits
    status, _ = run_to_end(recorder, worker.resume({"action": APPROVE}, config))
    assert status == "finished"
    (answer,) = told(model_server)
    assert answer.startswith(NOT_RUN) and "changed since approval" in answer
    assert notes() == ["payroll", "contracts"]


@pytest.mark.postgis
def test_run_sql_itself_checks_the_approved_tables_in_its_write_transaction(notes_table, tool_ctx):
    """The second lock: the oid is compared in the write's own transaction, whatever the toolkit checked."""
    tools = PostgisTools(tool_ctx)
    args = {"connection": notes_table, "sql": f"DELETE FROM {SCHEMA}.notes"}
    request = call_in_thread(tools.preview_run_sql, **args)
    recreate_notes()
    with pytest.raises(ToolError, match="changed since approval"):
        run_approved(tools.run_sql, request, **args)
    assert notes() == ["payroll", "contracts"]


@pytest.fixture
def other_database():
    """A second database on the same server holding its own ``SCHEMA.notes``; yields its DSN."""
    import psycopg2

    admin = psycopg2.connect(
        host=PARAMS["host"], port=PARAMS["port"], dbname="postgres", user=SUPER_USER, password=SUPER_PASSWORD
    )
    admin.autocommit = True
    with admin.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {OTHER_DB} WITH (FORCE)")
        cursor.execute(f"CREATE DATABASE {OTHER_DB} OWNER {PARAMS['user']}")
    dsn = " ".join(f"{k}={v}" for k, v in {**PARAMS, "dbname": OTHER_DB}.items())
    with connect(dsn) as pg, pg.cursor() as cursor:
        cursor.execute(
            f"CREATE SCHEMA {SCHEMA}; CREATE TABLE {SCHEMA}.notes (id serial PRIMARY KEY, note text);"
            f"INSERT INTO {SCHEMA}.notes (note) VALUES ('archive'), ('ledger');"
        )
        pg.commit()
    yield dsn
    with admin.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {OTHER_DB} WITH (FORCE)")
    admin.close()


def point_connection_at(name: str, database: str) -> None:
    """Edit the saved connection as the Data Source Manager would: same name, another database."""
    from qgis.core import QgsDataSourceUri, QgsProviderRegistry

    uri = QgsDataSourceUri()
    ssl = QgsDataSourceUri.SslMode.SslDisable
    uri.setConnection(PARAMS["host"], PARAMS["port"], database, PARAMS["user"], PARAMS["password"], ssl)
    metadata = QgsProviderRegistry.instance().providerMetadata("postgres")
    connection = metadata.createConnection(uri.uri(False), {"saveUsername": True, "savePassword": True})
    metadata.saveConnection(connection, name)


@pytest.mark.postgis
def test_a_connection_edited_after_approval_was_asked_writes_to_neither_database(
    notes_table, other_database, demo_project, worker, recorder, config, model_server
):
    sql = f"DELETE FROM {SCHEMA}.notes WHERE note <> 'one'"
    model_server.script([Turn(tool_calls=[sql_call(notes_table, sql)]), Turn(text="-")])
    status, (request,) = run_to_end(recorder, worker.submit("keep only the first note", config))
    assert status == "paused"
    assert f"database '{PARAMS['dbname']}'" in request["targets"][0]["source"]
    point_connection_at(notes_table, OTHER_DB)  # while the card waits
    status, _ = run_to_end(recorder, worker.resume({"action": APPROVE}, config))
    assert status == "finished"
    (answer,) = told(model_server)
    assert answer.startswith(NOT_RUN) and OTHER_DB in answer
    assert notes() == ["one", "two", "three"]
    assert notes(other_database) == ["archive", "ledger"]


# -- "always" bound to targets --------------------------------------------------------------------------------------
def test_always_for_updates_of_one_layer_does_not_cover_a_delete_nor_another_layer(
    demo_project, worker, recorder, config, model_server
):
    path = gpkg_of(demo_project)
    before, pupils = stored_counts(path), stored_pupils(path)
    update = {"layer": "schools", "field": "pupils", "value": "1"}
    model_server.script(
        [
            Turn(tool_calls=[ToolCall("edit_features", {**update, "expression": '"pupils" > 900'})]),
            Turn(tool_calls=[ToolCall("edit_features", {**update, "expression": '"pupils" > 800'})]),  # covered
            Turn(tool_calls=[delete("schools", '"pupils" > 700')]),  # a wider operation: asks
            Turn(text="I left the schools."),
            Turn(tool_calls=[delete("parks", "TRUE")]),  # another layer: asks
            Turn(text="I left the parks."),
        ]
    )
    status, (first,) = run_to_end(recorder, worker.submit("lower the pupils", config))
    assert status == "paused" and first["targets"][0]["ops"] == ["update pupils"]
    status, (wider,) = run_to_end(recorder, worker.resume({"action": APPROVE, "always": True}, config))
    assert status == "paused" and wider["action"].startswith("Delete") and wider["targets"][0]["ops"] == ["delete"]
    notices = [n.text for n in recorder.of(last_run(recorder), Notice)]
    assert any("you chose always for edit_features" in text for text in notices)  # the second update ran unasked
    status, _ = run_to_end(recorder, worker.resume({"action": REJECT}, config))
    assert status == "finished"
    status, (other,) = run_to_end(recorder, worker.submit("and the parks", config))
    assert status == "paused" and other["targets"][0]["ident"] == layer(demo_project, "parks").id()
    status, _ = run_to_end(recorder, worker.resume({"action": REJECT}, config))
    schools = layer(demo_project, "schools")
    assert schools.featureCount() == before["schools"]  # no school deleted
    assert layer(demo_project, "parks").featureCount() == before["parks"]
    assert sorted(int(f["pupils"]) for f in schools.getFeatures()) == sorted(1 if p > 800 else p for p in pupils)
    assert stored_counts(path) == before and stored_pupils(path) == pupils  # the file: nothing saved


@pytest.mark.postgis
def test_always_for_an_insert_does_not_cover_a_drop(notes_table, demo_project, worker, recorder, config, model_server):
    insert = f"INSERT INTO {SCHEMA}.notes (note) VALUES ('four')"
    model_server.script(
        [
            Turn(tool_calls=[ToolCall("run_sql", {"connection": notes_table, "sql": insert})]),
            Turn(tool_calls=[ToolCall("run_sql", {"connection": notes_table, "sql": insert})]),  # covered
            Turn(tool_calls=[ToolCall("run_sql", {"connection": notes_table, "sql": f"DROP TABLE {SCHEMA}.notes"})]),
            Turn(text="I kept the table."),
        ]
    )
    status, (first,) = run_to_end(recorder, worker.submit("add a note twice", config))
    assert status == "paused" and first["targets"][0]["ops"] == ["insert"]
    status, (drop,) = run_to_end(recorder, worker.resume({"action": APPROVE, "always": True}, config))
    assert status == "paused" and drop["targets"][0]["ops"] == ["drop"]
    status, _ = run_to_end(recorder, worker.resume({"action": REJECT}, config))
    assert status == "finished"
    assert notes() == ["one", "two", "three", "four", "four"]


def test_headless_an_approved_delete_is_saved_at_once_and_the_card_says_so(demo_project, bridge):
    """The command line and the stdio MCP server have no window to save an edit buffer from."""
    from geogpt_qgis.tools.base import ToolContext

    path = gpkg_of(demo_project)
    before = stored_counts(path)
    tools = EditTools(ToolContext(project=demo_project, bridge=bridge, iface=None))
    args = {"layer": "schools", "expression": PRIMARY, "delete": True}
    request = call_in_thread(tools.preview_edit_features, **args)
    assert "saved to ogr: " in request.details and "at once" in request.details
    deleted = int(request.action.split()[1])
    assert "copied, as they are now, to a GeoPackage in" in request.details
    originals = stored_features(path, "schools", "type = 'primary'")
    result = run_approved(tools.edit_features, request, **args)
    assert "saved to" in result.text and not layer(demo_project, "schools").isEditable()
    assert stored_counts(path) == {**before, "schools": before["schools"] - deleted}  # the parks untouched
    # The undo: the deleted features, every field as it was, in the copy the result names.
    copy = re.search(r"kept in (\S+\.gpkg)", result.text)
    assert copy is not None and len(originals) == deleted
    assert stored_features(copy.group(1)) == originals


def test_the_export_itself_checks_the_path_just_before_writing(demo_project, tool_ctx, tmp_path):
    """The second lock: a link made after the toolkit's check still writes nothing (checked before the write)."""
    from geogpt_qgis.tools.maps.export import ExportPart

    precious = tmp_path / "figure.pdf"
    precious.write_bytes(b"%PDF-1.4 the user's own figure\n")
    kept = digest(precious)
    target = tmp_path / "town.pdf"
    tools = ExportPart(tool_ctx)
    request = call_in_thread(tools.preview_export_map, path=str(target), title="Elvbury")
    target.symlink_to(precious)
    with pytest.raises(ToolError, match="Nothing was written"):
        run_approved(tools.export_map, request, path=str(target), title="Elvbury")
    assert digest(precious) == kept


def test_a_copy_short_of_any_feature_refuses_the_change_before_it_is_made(demo_project):
    """The undo copy is read back before the change: one that would miss a feature stops it, nothing changed."""
    from geogpt_qgis.tools.project.edits import _keep_copy

    schools = layer(demo_project, "schools")
    path = gpkg_of(demo_project)
    before = stored_counts(path)
    ids = sorted(schools.allFeatureIds())[:3]
    kept = _keep_copy(schools, ids)
    assert sorted(stored_features(str(kept))) == ids
    with pytest.raises(ToolError, match=r"3 of the 4 features could be read from 'schools'. Nothing was changed"):
        _keep_copy(schools, [*ids, max(schools.allFeatureIds()) + 1000])  # a feature that is not there
    assert stored_counts(path) == before and not schools.isEditable()


def test_features_that_no_longer_read_once_opened_for_editing_stop_the_change(demo_project):
    """Headless, the file is reopened for editing after the copy: a short read there is reopened once, then refused."""
    from geogpt_qgis.tools.project.edits import _check_readable

    schools = layer(demo_project, "schools")
    path = gpkg_of(demo_project)
    before = stored_counts(path)
    ids = sorted(schools.allFeatureIds())[:3]
    assert schools.startEditing()
    _check_readable(schools, ids)  # all there: the session stays open for the change
    assert schools.isEditable()
    with pytest.raises(ToolError, match=r"\(3 of the 4 features\); nothing was changed"):
        _check_readable(schools, [*ids, max(schools.allFeatureIds()) + 1000])
    assert not schools.isEditable() and stored_counts(path) == before
