"""Threads: QGIS work on the main thread only, Stop within a second, no query left running on the server.

- The debug guard (``tools.thread_guard``, on for the whole suite) fails a tool that makes a layer off
  the main thread.
- A whole OGC API Features collection that fits in one page (the path that built QGIS's OAPIF provider
  on the worker and could kill QGIS) through the real toolkit and through ``python -m geogpt_qgis ask``.
- Stop through the real worker ends a long processing run and a long SQL query within a second, and the
  query is cancelled on the server.
- A killed process leaves no query behind: the server notices (``client_connection_check_interval``),
  and the next start cancels what an older server would keep running (``application_name`` carries the pid).
"""

from __future__ import annotations

import asyncio
import faulthandler
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from qgis.core import QgsProject, QgsVectorLayer

from geogpt_qgis.agent.config import ModelConfig
from geogpt_qgis.agent.toolkit import Toolkit
from geogpt_qgis.core.events import ToolStarted
from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
from geogpt_qgis.tools.base import ToolFamily, ToolFunction
from geogpt_qgis.tools.layers import add_result_layer
from geogpt_qgis.tools.ogc.family import OgcTools
from geogpt_qgis.tools.ogc.layers import linked_layer
from geogpt_qgis.tools.postgis.backends import application_name, cancel_orphans, owner_pid
from geogpt_qgis.tools.thread_guard import ENV_VAR, WrongThread, assert_main_thread, take_violations, vector_layer
from tests.support.big_layers import write_big_points
from tests.support.demo import copy_demo
from tests.support.model_server import ToolCall, Turn
from tests.support.ogc_server import MAX_ITEMS
from tests.support.postgis import DSN, connect, saved_connection
from tests.support.runs import RunRecorder, ask, call_in_thread, wait_until

REPO = Path(__file__).resolve().parents[2]
CONNECTION = "h4_threads"
ASK = [sys.executable, "-m", "geogpt_qgis", "ask"]


def model_args(model_server) -> list[str]:
    return ["--base-url", model_server.url, "--model", "qwen3:8b"]


def run_call(toolkit: Toolkit, name: str, args: dict):
    """One call through the toolkit on a worker thread, as the agent runs it."""
    return call_in_thread(lambda: asyncio.run(toolkit.run(name, args)), timeout=60)


def sql(query: str, *args: object) -> list[tuple]:
    with connect() as conn, conn.cursor() as cursor:
        cursor.execute(query, args)
        return cursor.fetchall()


def active(marker: str) -> list[tuple[int, str]]:
    """(backend pid, application_name) of the queries running now whose text holds ``marker``."""
    return sql(
        "SELECT pid, application_name FROM pg_stat_activity WHERE state = 'active' AND query LIKE %s "
        "AND pid <> pg_backend_pid()",
        f"%{marker}%",
    )


def tool_code_running() -> bool:
    """Whether any thread but this one is still inside the plugin's tools (a tool that ignored Stop)."""
    names = {t.ident: t.name for t in threading.enumerate()}
    for ident, frame in sys._current_frames().items():
        if ident == threading.get_ident() or names.get(ident, "").startswith("geogpt-pg-sweep"):
            continue
        while frame is not None:
            if "/geogpt_qgis/tools/" in frame.f_code.co_filename.replace("\\", "/"):
                return True
            frame = frame.f_back
    return False


# -- the guard -----------------------------------------------------------------------------
class _Scratch(ToolFamily):
    """A family with one careless tool and one that goes through the bridge."""

    name = "scratch"

    def tools(self) -> list[ToolFunction]:
        return [self.scratch_on_worker, self.scratch_on_main]

    def scratch_on_worker(self) -> str:
        """Make a scratch layer (wrongly, on the worker)."""
        layer = vector_layer("Point?crs=EPSG:4326", "scratch", "memory")
        return add_result_layer(self.ctx.project, layer, "scratch")

    def scratch_on_main(self) -> str:
        """Make a scratch layer through the bridge."""
        return self.ctx.on_main(lambda: add_result_layer(self.ctx.project, vector_layer("Point", "x", "memory"), "ok"))


def test_a_tool_that_makes_a_layer_on_the_worker_fails_and_the_bridge_way_works(tool_ctx):
    toolkit = Toolkit(_Scratch(tool_ctx).tools())
    outcome = run_call(toolkit, "scratch_on_worker", {})
    assert not outcome.ok
    assert "WrongThread" in outcome.text and "a memory vector layer was created" in outcome.text
    found = take_violations()  # consumed here, so the suite-wide check does not fail this test
    assert len(found) == 1 and "not QGIS's main thread" in found[0]
    assert not tool_ctx.project.mapLayersByName("scratch")

    outcome = run_call(toolkit, "scratch_on_main", {})
    assert outcome.ok and outcome.text == "ok"
    assert len(tool_ctx.project.mapLayersByName("ok")) == 1
    assert take_violations() == []


def test_the_guard_covers_the_oapif_provider_and_the_project(tool_ctx):
    """The exact call that killed QGIS (an OAPIF layer made on the worker) is refused before QGIS runs it."""
    with pytest.raises(WrongThread, match="OAPIF vector layer was created"):
        call_in_thread(linked_layer, "http://127.0.0.1:9", "schools", "schools")
    with pytest.raises(WrongThread, match="a layer was added to the project"):
        call_in_thread(add_result_layer, tool_ctx.project, QgsVectorLayer("Point", "p", "memory"), "p")
    assert len(take_violations()) == 2
    assert_main_thread("anything")  # the main thread itself is fine


def test_the_guard_is_off_unless_asked(monkeypatch):
    monkeypatch.delenv(ENV_VAR)
    call_in_thread(assert_main_thread, "the project's layers were read")
    assert take_violations() == []


# -- OGC API Features: a whole collection in one page ------------------------------------------
@pytest.mark.postgis
def test_a_whole_collection_in_one_page_through_the_toolkit(tool_ctx, ogc_server):
    (total,) = sql("SELECT count(*) FROM schools")[0]
    assert 0 < total <= MAX_ITEMS  # fits in one page of the server
    PlgOptionsManager.set_value("ogc_servers", f"Elvbury = {ogc_server.url}")
    assert faulthandler.is_enabled()  # pytest's faulthandler: a segfault prints every thread's stack
    toolkit = Toolkit(OgcTools(tool_ctx).tools())
    outcome = run_call(toolkit, "query_ogc_collection", {"collection": "schools"})
    assert outcome.ok, outcome.text
    assert f"Added layer 'schools_2' (linked to the server (QGIS's OGC API Features provider)): {total} features" in (
        outcome.text
    )
    assert "pages" not in outcome.text
    (layer,) = tool_ctx.project.mapLayersByName("schools_2")
    assert layer.providerType() == "OAPIF" and layer.isValid()
    assert layer.featureCount() == total
    assert layer.thread() is tool_ctx.bridge.thread()


@pytest.mark.postgis
def test_a_whole_collection_in_one_page_through_the_command(model_server, ogc_server, tmp_path):
    (total,) = sql("SELECT count(*) FROM schools")[0]
    project = copy_demo(tmp_path / "demo")
    out = tmp_path / "out.qgz"
    model_server.script(
        [Turn(tool_calls=[ToolCall("query_ogc_collection", {"collection": "schools"})]), Turn(text="Done.")]
    )
    # Its own settings folder: only the URL in the question names a server.
    question = f"Load the schools from {ogc_server.url}"
    done = ask(
        question,
        "--project",
        str(project),
        *model_args(model_server),
        "--save",
        str(out),
        env={"PYTHONFAULTHANDLER": "1", "XDG_DATA_HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"{total} features from schools" in done.stderr, done.stderr[-3000:]
    # What QGIS printed when the provider was built on a plain Python thread:
    assert "Timers can only be used with threads started with QThread" not in done.stderr
    assert "Fatal Python error" not in done.stderr
    saved = QgsProject()
    try:
        assert saved.read(str(out))
        (layer,) = saved.mapLayersByName("schools_2")
        assert layer.providerType() == "OAPIF"
        assert layer.featureCount() == total
    finally:
        saved.clear()


# -- Stop through the real worker -------------------------------------------------------------
def _config(model_server) -> ModelConfig:
    return ModelConfig(provider="ollama", base_url=model_server.url, model="qwen3:8b", timeout=30)


def _stop_when_under_way(worker, recorder: RunRecorder, run: int, under_way) -> float:
    """Press Stop once ``under_way()``; the run must end, and the tool's code stop, within a second."""
    wait_until(lambda: bool(recorder.of(run, ToolStarted)), 30)
    wait_until(under_way, 15)
    pressed = time.monotonic()
    worker.cancel(run)
    assert recorder.wait(run, 5).status == "cancelled"
    assert recorder.finished_at[run] - pressed < 1.0
    wait_until(lambda: not tool_code_running(), 1.0)
    return time.monotonic() - pressed


def test_stop_ends_a_long_processing_run_within_a_second(model_server, worker, demo_project, tmp_path):
    big = QgsVectorLayer(f"{write_big_points(tmp_path / 'big.gpkg')}|layername=big", "big", "ogr")
    demo_project.addMapLayer(big)
    before = sorted(demo_project.mapLayers())
    call = ToolCall("run_algorithm", {"algorithm": "native:buffer", "parameters": {"INPUT": "big", "DISTANCE": 5}})
    model_server.script([Turn(tool_calls=[call]), Turn(text="x")])
    recorder = RunRecorder(worker)
    run = worker.submit("buffer the big points", _config(model_server))
    started: list[float] = []

    def under_way() -> bool:
        if tool_code_running():
            started.append(time.monotonic())
        return bool(started) and time.monotonic() - started[0] > 0.5

    assert _stop_when_under_way(worker, recorder, run, under_way) < 1.0
    stopped = time.monotonic()
    wait_until(lambda: time.monotonic() - stopped > 0.3)  # let any stray main-thread job arrive
    assert sorted(demo_project.mapLayers()) == before


@pytest.mark.postgis
def test_stop_ends_a_long_query_within_a_second_and_cancels_it_on_the_server(model_server, worker):
    marker = "h4_threads_stop"
    statement = f"SELECT pg_sleep(29) AS {marker}"
    with saved_connection(CONNECTION):
        call = ToolCall("run_sql", {"connection": CONNECTION, "sql": statement})
        model_server.script([Turn(tool_calls=[call]), Turn(text="x")])
        recorder = RunRecorder(worker)
        run = worker.submit("sleep in the database", _config(model_server))
        assert _stop_when_under_way(worker, recorder, run, lambda: bool(active(marker))) < 1.0
        wait_until(lambda: not active(marker), 1.0)  # the server stopped it, not just the client


# -- a killed process leaves no query behind --------------------------------------------------
@pytest.mark.postgis
def test_sigkill_of_the_command_mid_query_ends_the_query_on_the_server(model_server, tmp_path):
    marker = "h4_threads_killed"
    project = copy_demo(tmp_path / "demo")
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_DATA_HOME": str(tmp_path / "data")}
    # The command reads the QGIS profile this process uses ($QGIS_CUSTOM_CONFIG_PATH), so it sees the connection.
    with saved_connection(CONNECTION):
        call = ToolCall("run_sql", {"connection": CONNECTION, "sql": f"SELECT pg_sleep(60) AS {marker}"})
        model_server.script([Turn(tool_calls=[call]), Turn(text="x")])
        child = subprocess.Popen(
            [*ASK, "sleep", "--project", str(project), *model_args(model_server)],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
        )
        try:
            wait_until(lambda: bool(active(marker)) or child.poll() is not None, 60)
            assert child.poll() is None, child.stderr.read().decode()[-2000:]
            ((_backend, name),) = active(marker)
            assert owner_pid(name) == child.pid  # the session is named after the process that opened it
            os.kill(child.pid, signal.SIGKILL)
            child.wait(10)
            killed = time.monotonic()
            wait_until(lambda: not active(marker), 5)
            assert time.monotonic() - killed < 3.0  # the server noticed the dead client, not the 60 s
        finally:
            if child.poll() is None:
                child.kill()
                child.wait(10)
            child.stderr.close()


ORPHAN = """
import sys
import psycopg
from geogpt_qgis.tools.postgis.backends import application_name
conn = psycopg.connect(sys.argv[1], application_name=application_name())
print("connected", flush=True)
conn.execute("SELECT pg_sleep(60) AS h4_threads_orphan")
"""


@pytest.mark.postgis
def test_the_next_start_cancels_a_query_a_killed_process_left_on_an_older_server():
    """Without the server's client check (PostgreSQL < 14), a killed process's query runs on; the sweep ends it."""
    marker = "h4_threads_orphan"
    child = subprocess.Popen([sys.executable, "-c", ORPHAN, DSN], cwd=REPO, stdout=subprocess.PIPE)
    try:
        wait_until(lambda: bool(active(marker)), 20)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
        time.sleep(1.5)
        ((backend, name),) = active(marker)  # still running: the server has not noticed
        assert owner_pid(name) == child.pid

        # A live process's query (this one's) is left alone.
        live_done = threading.Event()

        def live_query() -> None:
            import psycopg

            with psycopg.connect(DSN, application_name=application_name()) as conn:
                conn.execute("SELECT pg_sleep(2) AS h4_threads_live")
            live_done.set()

        thread = threading.Thread(target=live_query)
        thread.start()
        wait_until(lambda: bool(active("h4_threads_live")), 10)
        assert cancel_orphans(DSN) == [backend]
        wait_until(lambda: not active(marker), 1.0)
        assert active("h4_threads_live")  # still sleeping
        thread.join(10)
        assert live_done.is_set()  # finished normally, not cancelled
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
        child.stdout.close()
