"""SQL text is composed in one place: names quoted whatever they hold, values as literals, psycopg loaded late."""

from __future__ import annotations

import sqlite3
import subprocess
import sys

from geogpt_qgis.core.sqlite_text import quote_name, sqlite_query
from geogpt_qgis.tools.postgis.sql_text import as_text, compose, embedded, ident, join, literal


def test_sqlite_names_with_quotes_and_spaces_reach_their_columns():
    database = sqlite3.connect(":memory:")
    database.execute('CREATE TABLE "t ""x""" ("we""ird" TEXT, "n" INTEGER)')
    database.execute('INSERT INTO "t ""x""" VALUES (?, ?)', ("a", 1))
    query = sqlite_query("SELECT {}, {}, {} FROM {}", 'we"ird', None, "n", 't "x"')
    assert query == 'SELECT "we""ird", NULL, "n" FROM "t ""x"""'
    assert database.execute(query).fetchall() == [("a", None, 1)]
    assert quote_name('"; DROP TABLE t; --') == '"""; DROP TABLE t; --"'


def test_postgresql_names_values_and_checked_text_compose_without_a_connection():
    names = join(", ", [ident('a"b'), ident("é")])
    query = compose(
        "SELECT {} FROM {} WHERE {} = {} LIMIT {}", names, ident("s", "t"), ident("c"), literal("it's"), literal(5)
    )
    assert as_text(query) == """SELECT "a""b", "é" FROM "s"."t" WHERE "c" = 'it''s' LIMIT 5"""
    statement = "SELECT 1 AS {not_a_placeholder}"  # braces in checked text are not read as a template
    assert as_text(compose("({}\n) AS src", embedded(statement))) == "(SELECT 1 AS {not_a_placeholder}\n) AS src"


def test_psycopg_is_imported_by_the_first_composition_not_by_the_module():
    code = (
        "import sys; import geogpt_qgis.tools.postgis.sql_text as t; before = 'psycopg' in sys.modules; "
        "t.ident('x'); print(before, 'psycopg' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.split() == ["False", "True"]
