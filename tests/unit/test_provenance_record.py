"""The provenance record without QGIS: what it says, what it never says (credentials, keys, secrets the plugin
knows), and a results table's metadata copied with the table between two GeoPackages (plain SQLite)."""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path

import pytest

from geogpt_qgis.core import gpkg_metadata, secrets_scrub
from geogpt_qgis.core.provenance import (
    HEADER,
    MAX_QUESTION_CHARS,
    InputSource,
    Provenance,
    RunOrigin,
    abstract,
    clean_source,
    history_entry,
    merged_abstract,
    server_address,
)

WHEN = dt.datetime(2026, 11, 28, 9, 30, 5, 123456, tzinfo=dt.UTC)


@pytest.fixture(autouse=True)
def _no_secrets_left():
    yield
    secrets_scrub.forget_all()


def record(**changes) -> Provenance:
    values = {
        "tool": "run_algorithm",
        "time": WHEN,
        "plugin_version": "1.2.3",
        "origin": RunOrigin.of("Buffer the rivers\nby 100 m", "qwen3:8b", "http://localhost:11434", "ollama"),
        "algorithm": "native:buffer",
        "parameters": {"INPUT": "rivers", "DISTANCE": 100},
        "inputs": (InputSource("rivers", "/data/town.gpkg|layername=rivers"),),
    }
    return Provenance(**{**values, **changes})


def test_provenance_abstract_has_one_line_per_item():
    assert abstract(record()).splitlines() == [
        f"{HEADER} 1.2.3, 2026-11-28T09:30:05Z.",
        'Question: "Buffer the rivers by 100 m"',
        "Tool: run_algorithm",
        "Algorithm: native:buffer",
        'Parameters: {"DISTANCE": 100, "INPUT": "rivers"}',
        "Inputs:",
        "- rivers (/data/town.gpkg|layername=rivers)",
        "Model: qwen3:8b at http://localhost:11434 (ollama)",
        "Time (UTC): 2026-11-28T09:30:05Z",
        "Plugin version: 1.2.3",
    ]


def test_provenance_time_is_utc_whatever_the_zone_it_was_taken_in():
    paris = dt.timezone(dt.timedelta(hours=1))
    assert record(time=WHEN.astimezone(paris)).timestamp == "2026-11-28T09:30:05Z"


def test_provenance_of_a_tool_without_algorithm_lists_its_arguments_and_tables():
    made = record(
        tool="run_sql",
        algorithm="",
        parameters={},
        arguments={"sql": "SELECT * FROM schools"},
        inputs=(InputSource("public.schools (town)", "", "table"),),
        origin=None,
    )
    lines = abstract(made).splitlines()
    assert 'Arguments: {"sql": "SELECT * FROM schools"}' in lines
    assert "- table public.schools (town) (unknown source)" in lines
    assert not any(line.startswith(("Algorithm", "Parameters")) for line in lines)
    assert "Question: (not recorded: the tool was called outside a chat)" in lines
    assert "Model: (not recorded)" in lines
    entry = history_entry(made)
    assert entry.startswith(f"2026-11-28T09:30:05Z {HEADER} 1.2.3 | tool run_sql | arguments ")


def test_provenance_history_entry_is_one_line():
    entry = history_entry(record())
    assert "\n" not in entry
    assert entry == (
        f"2026-11-28T09:30:05Z {HEADER} 1.2.3 | tool run_algorithm | algorithm native:buffer "
        '{"DISTANCE": 100, "INPUT": "rivers"} | inputs rivers (/data/town.gpkg|layername=rivers) | '
        'model qwen3:8b at http://localhost:11434 (ollama) | question "Buffer the rivers by 100 m"'
    )


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "dbname='town' host=db port=5432 user='ana' password='pa ss' sslmode=disable key='gid' table=\"x\" (geom)",
            "dbname='town' host=db port=5432 user='ana' password=*** sslmode=disable key='gid' table=\"x\" (geom)",
        ),
        (
            "https://ana:s3cret@tiles.example.com/{z}/{x}/{y}.png?key=ABC123&style=a",
            "https://tiles.example.com/{z}/{x}/{y}.png?key=***&style=a",
        ),
        (
            "url='https://h.example/ogc?apikey=XYZ&f=json' typename='x'",
            "url='https://h.example/ogc?apikey=***&f=json' typename='x'",
        ),
        ("/data/town.gpkg|layername=rivers", "/data/town.gpkg|layername=rivers"),
    ],
)
def test_provenance_sources_lose_their_credentials(source, expected):
    assert clean_source(source) == expected


def test_provenance_server_address_keeps_where_not_who():
    assert (
        server_address("https://ana:sk-123456@api.example.com:8443/v1?api-key=zz#x")
        == "https://api.example.com:8443/v1"
    )
    assert server_address("http://localhost:11434") == "http://localhost:11434"


def test_provenance_never_holds_a_secret_the_plugin_knows():
    secrets_scrub.register("hunter2-secret")
    made = record(
        origin=RunOrigin.of("use hunter2-secret to log in", "m", "http://h/"),
        parameters={"EXPRESSION": "'hunter2-secret'"},
        inputs=(InputSource("x", "/tmp/hunter2-secret.gpkg"),),
    )
    assert "hunter2-secret" not in abstract(made) + history_entry(made)


def test_provenance_question_is_one_line_and_bounded():
    long = "why " * MAX_QUESTION_CHARS
    (line,) = [x for x in abstract(record(origin=RunOrigin.of(long, "m", "http://h"))).splitlines() if "Question" in x]
    assert len(line) <= MAX_QUESTION_CHARS + len('Question: ""') and line.endswith('…"')


# -- the GeoPackage side, with plain SQLite -------------------------------------------------------------------
_SCHEMA = [
    "CREATE TABLE gpkg_contents (table_name TEXT PRIMARY KEY, data_type TEXT, identifier TEXT, description TEXT)",
    "CREATE TABLE gpkg_extensions (table_name TEXT, column_name TEXT, extension_name TEXT, definition TEXT, "
    "scope TEXT)",
]
_METADATA = [
    "CREATE TABLE gpkg_metadata (id INTEGER PRIMARY KEY, md_scope TEXT NOT NULL DEFAULT 'dataset', "
    "md_standard_uri TEXT NOT NULL, mime_type TEXT NOT NULL DEFAULT 'text/xml', metadata TEXT NOT NULL DEFAULT '')",
    "CREATE TABLE gpkg_metadata_reference (reference_scope TEXT NOT NULL, table_name TEXT, column_name TEXT, "
    "row_id_value INTEGER, timestamp DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')), "
    "md_file_id INTEGER NOT NULL, md_parent_id INTEGER)",
]
_EXTENSION = "http://www.geopackage.org/spec120/#extension_metadata"


def _geopackage(path: Path, with_metadata: bool) -> None:
    with sqlite3.connect(path) as db:
        for sql in _SCHEMA + (_METADATA if with_metadata else []):
            db.execute(sql)
        db.execute("INSERT INTO gpkg_contents VALUES ('a', 'features', 'a', 'GeoGPT result')")
        if with_metadata:
            for table in ("gpkg_metadata", "gpkg_metadata_reference"):
                db.execute(
                    "INSERT INTO gpkg_extensions VALUES (?, NULL, 'gpkg_metadata', ?, 'read-write')",
                    (table, _EXTENSION),
                )
            for md_id, (table, text) in enumerate([("a", "<qgis>a</qgis>"), ("b", "<qgis>b</qgis>")], start=1):
                db.execute(
                    "INSERT INTO gpkg_metadata VALUES (?, 'dataset', 'http://mrcc.com/qgis.dtd', 'text/xml', ?)",
                    (md_id, text),
                )
                db.execute(
                    "INSERT INTO gpkg_metadata_reference (reference_scope, table_name, md_file_id) "
                    "VALUES ('table', ?, ?)",
                    (table, md_id),
                )


def test_provenance_metadata_is_copied_with_its_table_under_the_new_name(tmp_path):
    source, target = tmp_path / "source.gpkg", tmp_path / "target.gpkg"
    _geopackage(source, with_metadata=True)
    _geopackage(target, with_metadata=False)
    assert gpkg_metadata.copy_table_metadata(source, target, {"a": "a_2"}) == 1
    assert gpkg_metadata.table_metadata(target, "a_2") == [
        ("dataset", "http://mrcc.com/qgis.dtd", "text/xml", "<qgis>a</qgis>")
    ]
    assert gpkg_metadata.table_metadata(target, "b") == []  # only the tables copied
    with sqlite3.connect(target) as db:
        registered = db.execute("SELECT table_name FROM gpkg_extensions ORDER BY 1").fetchall()
    assert registered == [("gpkg_metadata",), ("gpkg_metadata_reference",)]
    # Copied again (another table into the same file): the extension is registered once, the documents add up.
    assert gpkg_metadata.copy_table_metadata(source, target, {"b": "b"}) == 1
    with sqlite3.connect(target) as db:
        assert db.execute("SELECT count(*) FROM gpkg_extensions").fetchone() == (2,)
        assert db.execute("SELECT count(*) FROM gpkg_metadata").fetchone() == (2,)


def test_provenance_document_is_added_without_touching_the_tables_mark(tmp_path):
    path = tmp_path / "r.gpkg"
    _geopackage(path, with_metadata=False)
    gpkg_metadata.add_table_document(path, "a", "http://mrcc.com/qgis.dtd", "<qgis>first</qgis>")
    gpkg_metadata.add_table_document(path, "b", "http://mrcc.com/qgis.dtd", "<qgis>other</qgis>")
    assert gpkg_metadata.table_metadata(path, "a") == [
        ("dataset", "http://mrcc.com/qgis.dtd", "text/xml", "<qgis>first</qgis>")
    ]
    with sqlite3.connect(path) as db:
        marks = db.execute("SELECT table_name, description FROM gpkg_contents ORDER BY 1").fetchall()
        registered = db.execute("SELECT table_name FROM gpkg_extensions ORDER BY 1").fetchall()
    assert marks == [("a", "GeoGPT result")]  # the store's mark stays
    assert registered == [("gpkg_metadata",), ("gpkg_metadata_reference",)]  # registered once


def test_provenance_arguments_keep_expressions_but_not_url_credentials():
    made = record(
        algorithm="",
        parameters={},
        arguments={"source": "https://ana:pw@data.example/x.geojson?apikey=K123&f=json", "filter": '"token" = 5'},
    )
    (line,) = [x for x in abstract(made).splitlines() if x.startswith("Arguments: ")]
    assert "pw" not in line and "K123" not in line
    assert "https://data.example/x.geojson?apikey=***&f=json" in line and '\\"token\\" = 5' in line


def test_provenance_abstract_keeps_the_datas_own_abstract_and_replaces_an_earlier_record():
    first, second = record(), record(tool="load_data", algorithm="", parameters={})
    assert merged_abstract("", first) == abstract(first)
    noted = merged_abstract("Served in EPSG:25832; filter: pupils > 200", first)
    assert noted == f"Served in EPSG:25832; filter: pupils > 200\n\n{abstract(first)}"
    # Loaded again: the data's note stays, the earlier record gives way to the new one (the history keeps both).
    assert merged_abstract(noted, second) == f"Served in EPSG:25832; filter: pupils > 200\n\n{abstract(second)}"
    assert merged_abstract(abstract(first), second) == abstract(second)
    mentioned = f"A layer about {HEADER} itself"  # the words inside a line are the user's, not a record
    assert merged_abstract(mentioned, first).startswith(mentioned + "\n\n")
