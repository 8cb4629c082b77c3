"""The SQL classifier's parse-level decisions (no database), and its parser thread."""

from __future__ import annotations

import ctypes
import threading

import pytest

from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.safety.sql import classify, parse_one, require_read


def _next_tls_key() -> int:
    libc = ctypes.CDLL("libc.so.6")
    key = ctypes.c_uint()
    assert libc.pthread_key_create(ctypes.byref(key), None) == 0
    libc.pthread_key_delete(key)
    return key.value


def test_parsing_on_many_threads_takes_no_tls_key_each():
    """libpg_query takes a TLS key per parsing thread; the agent's fresh threads must not exhaust them."""
    parse_one("SELECT 1")
    before = _next_tls_key()
    for _ in range(40):
        thread = threading.Thread(target=parse_one, args=("SELECT 1",))
        thread.start()
        thread.join()
    assert _next_tls_key() - before < 5


@pytest.mark.parametrize(
    ("sql", "kind", "read"),
    [
        ("SELECT 1", "SELECT", True),
        ("VALUES (1)", "VALUES", True),
        ("TABLE schools", "SELECT", True),
        ("WITH a AS (SELECT 1) SELECT * FROM a", "SELECT", True),
        ("SHOW search_path", "SHOW", True),
        ("EXPLAIN SELECT 1", "EXPLAIN", True),
        ("EXPLAIN ANALYSE SELECT 1", "EXPLAIN", False),
        ("SELECT 1 INTO t", "SELECT", False),
        ("SELECT 1 FOR UPDATE", "SELECT", False),
        ("WITH d AS (DELETE FROM t RETURNING 1) SELECT 1", "SELECT", False),
        ("DELETE FROM t", "DELETE", False),
        ("DO $$ BEGIN END $$", "DO", False),
    ],
)
def test_statement_kinds(sql, kind, read):
    found = classify(sql)
    assert (found.kind, found.read) == (kind, read)


def test_the_statement_text_excludes_the_semicolon_and_names_what_a_write_targets():
    assert parse_one("  SELECT 'é' ;  ").text == "SELECT 'é'"
    assert classify("DROP TABLE a, s.b").targets == ["a", "s.b"]
    assert classify("WITH d AS (DELETE FROM s.t RETURNING 1) SELECT 1").targets == ["s.t"]


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT E'\\''; COMMIT; DELETE FROM t", "send one statement per call (got 3: SELECT, COMMIT, DELETE)"),
        ("SELEC 1", 'syntax error at or near "SELEC" (position 1)\nSELEC 1\n^'),
        ("COMMIT", "COMMIT cannot be sent"),
        ("", "the SQL is empty"),
        ("SELECT 1\x00", "NUL character (at position 9)"),
    ],
)
def test_refusals_say_why(sql, message):
    with pytest.raises(ToolError) as info:
        require_read(sql)
    assert message in str(info.value)
