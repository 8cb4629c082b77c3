"""A read-only, time-limited, cancellable session on one saved connection (worker thread).

Every statement goes through PostgreSQL's *extended* query protocol (psycopg 3
with ``prepare=True``): one statement per message, so text that smuggles a
``COMMIT`` or a second statement is a syntax error, never a second command.
Reads run inside ``BEGIN READ ONLY`` with a statement timeout (and standard
conforming strings, so the server reads quotes the way the classifier did),
so the database itself refuses writes that slip past the classifier (say, a
function mislabelled STABLE) and runaway queries.  Stop cancels the running
statement on the server.  Errors become messages the model can act on:
PostgreSQL's text, the position of a syntax error, the closest names for
unknown tables and columns.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from geogpt_qgis.core.cancel import CancelToken, RunCancelled
from geogpt_qgis.core.fuzzy import closest_names
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.postgis.backends import application_name, watch_client
from geogpt_qgis.tools.postgis.connections import SavedConnection
from geogpt_qgis.tools.safety.sql import Classified, FunctionJudge, caret, parse_one, require_read

if TYPE_CHECKING:
    from psycopg.sql import Composable

CONNECT_TIMEOUT = 5
log = logging.getLogger(__name__)

# SQLSTATE codes that get their own explanation.
SYNTAX_ERROR = "42601"
UNDEFINED_TABLE = "42P01"
UNDEFINED_COLUMN = "42703"
UNDEFINED_FUNCTION = "42883"
INSUFFICIENT_PRIVILEGE = "42501"
READ_ONLY_TRANSACTION = "25006"
QUERY_CANCELED = "57014"

WRITE_REFUSED = (
    "this statement writes to the database (or calls a function that does) and ran read-only, so nothing "
    "changed; if the user wants this write, call run_sql again with write=true to ask for their approval"
)


class Database:
    """Use as a context manager around the statements of one tool call."""

    def __init__(
        self, connection: SavedConnection, cancel: CancelToken, timeout_seconds: float, read_only: bool = True
    ) -> None:
        self.connection = connection
        self.read_only = read_only
        self.cancel = cancel
        self.timeout_ms = max(1, int(timeout_seconds * 1000))
        self._pg: Any = None
        self._release = lambda: None
        self._judge: FunctionJudge | None = None

    def __enter__(self) -> Database:
        import psycopg

        self.cancel.raise_if_cancelled()
        try:
            self._pg = psycopg.connect(
                self.connection.conninfo, connect_timeout=CONNECT_TIMEOUT, application_name=application_name()
            )
            watch_client(self._pg)  # the server ends our query soon after this process dies
        except psycopg.OperationalError as exc:
            raise ToolError(
                f"cannot connect to {self.connection.name!r} ({self.connection.label}): {_first_line(str(exc))}"
            ) from None
        self._pg.read_only = self.read_only  # psycopg opens each transaction with BEGIN READ ONLY
        self._release = self.cancel.on_cancel(self._cancel_server_side)
        self._start()
        return self

    def _start(self) -> None:
        """Settings of the transaction just begun: the timeout, and quotes read as the classifier reads them."""
        self.execute(
            "SELECT set_config('statement_timeout', %s, true), set_config('standard_conforming_strings', 'on', true)",
            [str(self.timeout_ms)],
        )

    def check_read(self, sql: str) -> Classified:
        """The model's ``sql`` if it is one plain read whose functions act only inside the query.

        Parsed by PostgreSQL's grammar, then its functions, operators, casts and
        views are checked in this server's catalogue (cached for the session).
        """
        found = require_read(sql)
        if self._judge is None:
            self._judge = FunctionJudge(lambda text, params: self.rows(text, params))
        self._judge.check(found)
        return found

    def __exit__(self, *exc: object) -> None:
        self._release()
        if self._pg is not None:
            try:
                self._pg.rollback()
                self._pg.close()
            except Exception as exc:  # noqa: BLE001 - the connection may already be gone; nothing is left to undo
                log.debug("closing the session on %r: %s", self.connection.name, exc)
            self._pg = None

    def commit(self) -> None:
        """Make an approved write permanent (only sessions opened with ``read_only=False`` can write)."""
        self._pg.commit()

    def _cancel_server_side(self) -> None:
        pg = self._pg
        if pg is not None:
            with contextlib.suppress(Exception):  # the connection may already be gone
                pg.cancel_safe(timeout=2.0)

    # -- statements ----------------------------------------------------------
    def execute(
        self, sql: str | Composable, params: Sequence[Any] | None = None, statement: str | None = None, offset: int = 0
    ) -> Any:
        """Run ``sql`` (fixed text, or composed by ``sql_text``) as one prepared statement; return the cursor.

        ``statement`` is the user's SQL, embedded in ``sql`` after ``offset``
        characters, so a syntax error's position can be shown in it.
        """
        import psycopg

        cursor = self._pg.cursor()
        try:
            cursor.execute(sql, params, prepare=True)
        except psycopg.Error as exc:
            self._raise(exc, statement, offset)
        return cursor

    @contextlib.contextmanager
    def server_cursor(self, sql: Composable, batch_rows: int) -> Iterator[Any]:
        """A binary server-side cursor over ``sql`` in this session (so read-only and time-limited like the rest).

        Rows are read ``batch_rows`` at a time with ``fetch``, each batch one
        statement under the timeout; the cursor is closed afterwards.
        """
        import psycopg

        cursor = self._pg.cursor(name="geogpt_rows", binary=True)
        cursor.itersize = batch_rows
        try:
            try:
                cursor.execute(sql)
            except psycopg.Error as exc:
                self._raise(exc, None)
            yield cursor
        finally:
            with contextlib.suppress(Exception):  # gone already when an error rolled the transaction back
                cursor.close()

    def fetch(self, cursor: Any, batch_rows: int) -> list[tuple[Any, ...]]:
        """The next ``batch_rows`` rows of a ``server_cursor`` (fewer at the end, none after it)."""
        import psycopg

        try:
            rows: list[tuple[Any, ...]] = cursor.fetchmany(batch_rows)
        except psycopg.Error as exc:
            self._raise(exc, None)
        return rows

    def rows(self, sql: str | Composable, params: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
        fetched: list[tuple[Any, ...]] = self.execute(sql, params).fetchall()
        return fetched

    def _raise(self, exc: Exception, statement: str | None, offset: int = 0) -> NoReturn:
        import psycopg

        code = getattr(exc, "sqlstate", None)
        if code == QUERY_CANCELED:
            if self.cancel.cancelled:
                raise RunCancelled("stopped by the user") from None
            raise ToolError(
                f"the query ran longer than {self.timeout_ms / 1000:g} s (the statement timeout) and was stopped; "
                "make it cheaper: filter before joining or aggregating, add a LIMIT, use indexed columns"
            ) from None
        lost = code is None or code.startswith(("08", "57P"))  # connection failure, server or admin shutdown
        if isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError)) and lost:
            if self.cancel.cancelled:
                raise RunCancelled("stopped by the user") from None
            raise ToolError(
                f"the connection to {self.connection.name!r} was lost: {_first_line(str(exc))}; try again"
            ) from None
        diag = getattr(exc, "diag", None)
        message = _first_line(getattr(diag, "message_primary", None) or str(exc)).removeprefix("ERROR:").strip()
        if self._pg is not None and not self._pg.closed:
            self._pg.rollback()
            self._start()
        hint = getattr(diag, "message_hint", None)
        if code == READ_ONLY_TRANSACTION:
            raise ToolError(f"{WRITE_REFUSED} (PostgreSQL: {message})") from None
        if code == SYNTAX_ERROR and statement:
            position = int(getattr(diag, "statement_position", None) or 0) - offset
            pointer = caret(statement, position)
            raise ToolError(f"{message} (position {position})\n{pointer}" if pointer else message) from None
        if code == UNDEFINED_TABLE:
            raise ToolError(f"{message}; {self._table_suggestion(message)}") from None
        if code == UNDEFINED_COLUMN:
            raise ToolError(f"{message}; {self._column_suggestion(message, statement or '')}") from None
        if code == INSUFFICIENT_PRIVILEGE:
            raise ToolError(f"{message}: the database role of {self.connection.name!r} may not read this") from None
        raise ToolError(message + (f" (hint: {hint})" if hint else "")) from None

    # -- suggestions -----------------------------------------------------------
    def readable_tables(self) -> list[str]:
        """``schema.table`` for every table or view this role can read (system schemas excluded)."""
        return [
            f"{schema}.{name}"
            for schema, name in self.rows(
                "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE c.relkind IN ('r','v','m','f','p') AND n.nspname NOT IN ('pg_catalog','information_schema') "
                "AND n.nspname NOT LIKE 'pg_toast%%' AND has_table_privilege(c.oid, 'SELECT') ORDER BY 1, 2"
            )
        ]

    def _table_suggestion(self, message: str) -> str:
        wanted = _quoted(message) or ""
        tables = self.readable_tables()
        bare = {t.split(".", 1)[1]: t for t in tables}
        close = closest_names(wanted.split(".")[-1], list(bare), 3)
        if close:
            return "did you mean " + " or ".join(bare[c] for c in close) + "?"
        return "readable tables: " + ", ".join(tables[:15]) + (", ..." if len(tables) > 15 else "")

    def _column_suggestion(self, message: str, statement: str) -> str:
        wanted = (_quoted(message) or "").split(".")[-1]
        try:
            tables = parse_one(statement).tables  # it reached the server, so it parses
        except ToolError:
            tables = []
        columns: list[str] = []
        for table in tables:
            oid = self.rows("SELECT to_regclass(%s)::oid", [table])[0][0]
            if oid is not None:
                columns += [
                    f"{table}.{name}"
                    for (name,) in self.rows(
                        "SELECT attname FROM pg_attribute WHERE attrelid = %s AND attnum > 0 AND NOT attisdropped",
                        [oid],
                    )
                ]
        short = {c.split(".")[-1]: c for c in columns}
        close = closest_names(wanted, list(short), 3)
        if close:
            return "did you mean " + " or ".join(short[c] for c in close) + "?"
        if columns:
            return "columns of " + ", ".join(tables) + ": " + ", ".join(short)
        return "check the column names with describe_table"


def _quoted(message: str) -> str | None:
    start = message.find('"')
    end = message.find('"', start + 1)
    return message[start + 1 : end] if 0 <= start < end else None


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), text.strip())
