"""What one SQL text would do, decided from PostgreSQL's own grammar before anything runs.

The model is untrusted, so its SQL is judged by construction, never by its
spelling: ``pglast`` parses the text with PostgreSQL's parser (the same lexer
for ``E''`` escapes, dollar quotes, nested comments and quoted identifiers), the
text must be exactly one statement, and a *read* is one of a short list of
statement shapes (``SELECT`` without ``INTO`` or row locks, ``WITH`` whose
parts are all queries, ``VALUES``, ``TABLE``, ``SHOW``, plain ``EXPLAIN`` of a
read).  Everything else is a *write*, which only runs once the user approves
it; transaction control never runs.

A query can still act through the functions it calls, so every function,
operator, cast and view the parse tree names is checked in the connected
server's catalogue: functions that act outside the query (administration,
large objects, advisory locks, notifications, other databases, files,
settings, sequences) are refused by name, and any other function whose
``pg_proc.provolatile`` is ``v`` is refused unless it is on a short reviewed
allow-list of volatile functions that only compute or read.  The database's
``READ ONLY`` transaction stays underneath as a second wall.

Qt-free: the catalogue is reached through a ``rows(sql, params)`` callable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from pglast import ast, parse_sql
from pglast.parser import ParseError

from geogpt_qgis.core.long_lived import LongLivedThreads
from geogpt_qgis.tools.base import ToolError

Rows = Callable[[str, Sequence[Any]], list[tuple]]

WRITE_HINT = "If the user asked for this change, call run_sql again with write=true so they can approve it"

# Functions that act outside the query, refused whatever their volatility says. Keys are reasons.
_REFUSED_NAMES: dict[str, frozenset[str]] = {
    "administers the server or other sessions": frozenset(
        {
            "pg_terminate_backend",
            "pg_cancel_backend",
            "pg_reload_conf",
            "pg_rotate_logfile",
            "pg_rotate_logfile_old",
            "pg_promote",
            "pg_switch_wal",
            "pg_create_restore_point",
            "pg_backup_start",
            "pg_backup_stop",
            "pg_log_backend_memory_contexts",
            "pg_stat_reset",
            "pg_stat_reset_shared",
            "pg_stat_reset_single_table_counters",
            "pg_stat_reset_single_function_counters",
            "pg_stat_reset_slru",
            "pg_stat_reset_replication_slot",
            "pg_stat_reset_subscription_stats",
            "pg_wal_replay_pause",
            "pg_wal_replay_resume",
            "pg_import_system_collations",
            "pg_logical_emit_message",
        }
    ),
    "reads or writes large objects": frozenset({"loread", "lowrite"}),
    "takes advisory locks that outlive the query": frozenset(),
    "sends notifications to other sessions": frozenset({"pg_notify"}),
    "connects to other databases": frozenset(),
    "reads the server's files": frozenset(
        {"pg_read_file", "pg_read_file_old", "pg_read_binary_file", "pg_stat_file", "pg_current_logfile"}
    ),
    "changes session settings": frozenset({"set_config", "setseed"}),
    "advances a sequence (that is a write)": frozenset({"nextval", "setval"}),
    "runs SQL given as text": frozenset(
        {"query_to_xml", "query_to_xmlschema", "query_to_xml_and_xmlschema", "cursor_to_xml", "cursor_to_xmlschema"}
    ),
}
_REFUSED_PREFIXES: dict[str, str] = {
    "lo_": "reads or writes large objects",
    "pg_advisory": "takes advisory locks that outlive the query",
    "pg_try_advisory": "takes advisory locks that outlive the query",
    "dblink": "connects to other databases",
    "pg_ls_": "reads the server's files",
    "pg_replication_": "administers the server or other sessions",
    "pg_create_": "administers the server or other sessions",
    "pg_drop_replication": "administers the server or other sessions",
    "pg_copy_": "administers the server or other sessions",
    "pg_logical_slot": "administers the server or other sessions",
    "binary_upgrade_": "administers the server or other sessions",
}
# Reviewed: VOLATILE only because each call may return something new; they change nothing.
ALLOWED_VOLATILE_CORE = frozenset(
    {
        "random",
        "random_normal",
        "gen_random_uuid",
        "clock_timestamp",
        "timeofday",
        "pg_sleep",  # bounded by the statement timeout and Stop
        "pg_sleep_for",
        "pg_sleep_until",
        "currval",  # reads this session's sequence state
        "lastval",
        "pg_relation_size",
        "pg_table_size",
        "pg_indexes_size",
        "pg_total_relation_size",
        "pg_database_size",
        "pg_is_in_recovery",
    }
)
ALLOWED_VOLATILE_EXTENSION = {
    # PostGIS marks these VOLATILE for their random seeds (or by an old oversight); they only compute.
    "postgis": frozenset(
        {
            "st_generatepoints",
            "st_clusterkmeans",
            "st_symmetricdifference",
            # support functions of ST_Union, ST_Collect, ST_MakeLine, ST_Polygonize, ST_ClusterIntersecting/Within
            "pgis_geometry_accum_transfn",
            "pgis_geometry_collect_finalfn",
            "pgis_geometry_makeline_finalfn",
            "pgis_geometry_polygonize_finalfn",
            "pgis_geometry_clusterintersecting_finalfn",
            "pgis_geometry_clusterwithin_finalfn",
        }
    ),
    "uuid-ossp": frozenset({"uuid_generate_v1", "uuid_generate_v1mc", "uuid_generate_v4"}),
}
_KIND_NAMES = {
    "InsertStmt": "INSERT",
    "UpdateStmt": "UPDATE",
    "DeleteStmt": "DELETE",
    "MergeStmt": "MERGE",
    "CreateStmt": "CREATE TABLE",
    "CreateTableAsStmt": "CREATE TABLE AS",
    "ViewStmt": "CREATE VIEW",
    "DropStmt": "DROP",
    "TruncateStmt": "TRUNCATE",
    "AlterTableStmt": "ALTER TABLE",
    "CopyStmt": "COPY",
    "DoStmt": "DO",
    "CallStmt": "CALL",
    "CreateFunctionStmt": "CREATE FUNCTION",
    "IndexStmt": "CREATE INDEX",
    "GrantStmt": "GRANT/REVOKE",
    "VariableSetStmt": "SET",
    "PrepareStmt": "PREPARE",
    "ExecuteStmt": "EXECUTE",
    "ListenStmt": "LISTEN",
    "NotifyStmt": "NOTIFY",
    "LockStmt": "LOCK",
    "VacuumStmt": "VACUUM/ANALYZE",
    "RuleStmt": "CREATE RULE",
    "CreateTrigStmt": "CREATE TRIGGER",
    "CreateSchemaStmt": "CREATE SCHEMA",
    "RefreshMatViewStmt": "REFRESH MATERIALIZED VIEW",
    "DeclareCursorStmt": "DECLARE",
    "CommentStmt": "COMMENT",
    "VariableShowStmt": "SHOW",
    "ExplainStmt": "EXPLAIN",
}
_DML = ("InsertStmt", "UpdateStmt", "DeleteStmt", "MergeStmt")


@dataclass
class Classified:
    """One parsed statement: its own text, what kind it is, and what it names."""

    text: str
    kind: str  # SELECT, INSERT, DROP...
    read: bool
    problem: str = ""  # why it is not a read (empty for reads)
    functions: set[tuple[str, str]] = field(default_factory=set)  # (schema or "", name)
    operators: set[tuple[str, str]] = field(default_factory=set)
    types: set[tuple[str, str]] = field(default_factory=set)
    relations: list[tuple[str, str]] = field(default_factory=list)  # (schema or "", name): views are checked
    targets: list[str] = field(default_factory=list)  # what a write names (tables, views...)
    dml: bool = False  # a write whose plan EXPLAIN can estimate (INSERT/UPDATE/DELETE/MERGE, writing CTEs)
    tree: Any = None

    @property
    def tables(self) -> list[str]:
        """The relations it names, ``schema.name`` or ``name`` as written (CTE names too), first mention first."""
        return list(dict.fromkeys(".".join(p for p in relation if p) for relation in self.relations if relation[1]))


def parse_one(sql: str) -> Classified:
    """Parse ``sql``; it must be exactly one statement.  Raises ``ToolError`` with the parser's words."""
    text = sql or ""
    if "\x00" in text:  # the C parser would stop reading there; the server would never agree on the text
        raise ToolError(f"the SQL contains a NUL character (at position {text.index(chr(0)) + 1}); remove it")
    try:
        statements = _parse(text)
    except ParseError as exc:
        message, index = (*exc.args, None)[:2] if exc.args else (str(exc), None)
        position = int(index) + 1 if isinstance(index, int) else len(text.rstrip()) + 1
        pointer = caret(text, position)
        raise ToolError(f"{message} (position {position})\n{pointer}" if pointer else str(message)) from None
    if not statements:
        raise ToolError("the SQL is empty")
    if len(statements) > 1:
        kinds = ", ".join(_kind(s.stmt) for s in statements)
        raise ToolError(
            f"send one statement per call (got {len(statements)}: {kinds}); each call runs in its own transaction"
        )
    raw = statements[0]
    start = raw.stmt_location or 0
    own = text[start : start + raw.stmt_len] if raw.stmt_len else text[start:]
    return _classify(own.strip(), raw.stmt)


def _parse(text: str) -> Any:
    """``pglast.parse_sql`` on one long-lived thread.

    libpg_query takes a pthread TLS key in every thread that parses and never
    gives it back; a process has about a thousand, and the agent calls tools
    on fresh threads, so parsing everywhere would abort QGIS after enough
    queries ("out of TLS keys").  One parser thread takes one key.
    """
    return _PARSER.run(parse_sql, text)


_PARSER = LongLivedThreads("geogpt-sql-parser", 1)


def classify(sql: str) -> Classified:
    """Like ``parse_one``, and transaction control is refused outright (it is never needed)."""
    found = parse_one(sql)
    if isinstance(found.tree, ast.TransactionStmt):
        raise ToolError(
            f"{found.kind} cannot be sent: every run_sql call runs in its own transaction (read-only for queries, "
            "committed after approval for writes); send the statement itself without BEGIN/COMMIT/ROLLBACK/SAVEPOINT"
        )
    return found


def require_read(sql: str) -> Classified:
    """The statement, if it is a plain read; else ``ToolError`` saying why and what to do."""
    found = classify(sql)
    if not found.read:
        raise ToolError(f"{found.problem}; run_sql without write=true only reads, so nothing ran. {WRITE_HINT}")
    return found


def _kind(node: Any) -> str:
    name = type(node).__name__
    if isinstance(node, ast.TransactionStmt) and node.kind is not None:
        return str(node.kind.name).removeprefix("TRANS_STMT_").replace("_", " ")
    if isinstance(node, ast.SelectStmt):
        return "VALUES" if node.valuesLists else "SELECT"
    return _KIND_NAMES.get(name, name.removesuffix("Stmt").upper())


def _classify(text: str, node: Any) -> Classified:
    found = Classified(text=text, kind=_kind(node), read=False, tree=node)
    _collect(node, found)
    if isinstance(node, ast.SelectStmt):
        found.problem = _select_problem(node)
        found.read = not found.problem
        found.dml = bool(found.targets)
    elif isinstance(node, ast.VariableShowStmt):
        found.read = True
    elif isinstance(node, ast.ExplainStmt):
        inner = _classify("", node.query)
        analyze = any(
            isinstance(o, ast.DefElem) and o.defname == "analyze" and _truthy(o.arg) for o in node.options or ()
        )
        if analyze:
            found.problem = "EXPLAIN ANALYZE runs the statement; use EXPLAIN without ANALYZE to see the plan"
        elif not inner.read:
            found.problem = f"EXPLAIN of a statement that is not a read ({inner.problem})"
        found.read = not found.problem
        found.targets = inner.targets
    else:
        found.problem = f"{found.kind} changes the database or the session"
        found.dml = isinstance(node, tuple(getattr(ast, n) for n in _DML))
        found.targets += _write_targets(node)
    return found


def _truthy(arg: Any) -> bool:
    if arg is None:
        return True
    value = getattr(arg, "sval", getattr(arg, "boolval", getattr(arg, "ival", True)))
    return str(value).lower() not in ("false", "off", "0", "no")


def _select_problem(node: Any) -> str:
    """Why a SELECT (at any depth, CTEs included) is not a plain read; empty when it is."""
    for item in walk(node):
        if isinstance(item, ast.SelectStmt):
            if item.intoClause is not None:
                return "SELECT ... INTO creates a table (use CREATE TABLE ... AS with write=true, or drop INTO)"
            if item.lockingClause:
                return "FOR UPDATE/FOR SHARE locks rows, which a read does not need: remove the locking clause"
        if isinstance(item, ast.CommonTableExpr) and not isinstance(item.ctequery, ast.SelectStmt):
            return f"the WITH query {item.ctename!r} is a {_kind(item.ctequery)}, which changes the database"
    return ""


def walk(value: Any) -> Iterator[Any]:
    """Every node under ``value`` (itself included), depth first."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, ast.Node):
            yield item
            stack.extend(getattr(item, name, None) for name in item)  # a node iterates over its field names
        elif isinstance(item, (tuple, list)):
            stack.extend(item)


def _names(parts: Any) -> tuple[str, str]:
    """``(schema, name)`` from a parse tree's qualified name (a catalog prefix is ignored)."""
    words = [getattr(p, "sval", "") for p in parts or ()]
    if not words:
        return "", ""
    return (words[-2] if len(words) > 1 else ""), words[-1]


def _relation(node: Any) -> str:
    return ".".join(p for p in (node.schemaname, node.relname) if p)


def _collect(node: Any, found: Classified) -> None:
    for item in walk(node):
        if isinstance(item, ast.FuncCall):
            found.functions.add(_names(item.funcname))
        elif isinstance(item, ast.A_Expr) and item.name:
            schema, name = _names(item.name)
            if name and not name.isalpha():  # BETWEEN and friends are grammar, not operators
                found.operators.add((schema, name))
        elif isinstance(item, ast.TypeCast) and item.typeName is not None:
            found.types.add(_names(item.typeName.names))
        elif isinstance(item, ast.RangeVar):
            found.relations.append((item.schemaname or "", item.relname or ""))
        elif isinstance(item, ast.CommonTableExpr) and not isinstance(item.ctequery, ast.SelectStmt):
            found.targets += _write_targets(item.ctequery)


def _write_targets(node: Any) -> list[str]:
    """What a write names: the relation of INSERT/UPDATE/DELETE/MERGE/COPY..., the objects of DROP."""
    relation = getattr(node, "relation", None)
    if isinstance(relation, ast.RangeVar):
        return [_relation(relation)]
    into = getattr(node, "into", None)
    if isinstance(into, ast.IntoClause) and into.rel is not None:
        return [_relation(into.rel)]
    if isinstance(node, ast.DropStmt):
        names = []
        for obj in node.objects or ():
            parts = obj if isinstance(obj, (tuple, list)) else getattr(obj, "objname", None) or [obj]
            names.append(".".join(getattr(p, "sval", "") for p in parts if getattr(p, "sval", "")))
        return [n for n in names if n]
    if isinstance(node, ast.TruncateStmt):
        return [_relation(r) for r in node.relations or ()]
    return []


def caret(statement: str, position: int) -> str:
    """The line of ``statement`` holding character ``position`` (1-based), with a caret under it."""
    if position < 1 or position > len(statement) + 1:
        return ""
    offset = position - 1
    start = statement.rfind("\n", 0, offset) + 1
    end = statement.find("\n", offset)
    line = statement[start : end if end >= 0 else len(statement)]
    return f"{line}\n{' ' * (offset - start)}^"


# -- the server's catalogue -------------------------------------------------------------------------
def refused_reason(name: str) -> str:
    """Why a function is never called by a read, by its name alone (empty if it is not on the list)."""
    for reason, names in _REFUSED_NAMES.items():
        if name in names:
            return reason
    return next((reason for prefix, reason in _REFUSED_PREFIXES.items() if name.startswith(prefix)), "")


def _allowed_volatile(name: str, schema: str, extension: str) -> bool:
    if schema == "pg_catalog" and name in ALLOWED_VOLATILE_CORE:
        return True
    return name in ALLOWED_VOLATILE_EXTENSION.get(extension, frozenset())


_FUNCTIONS_SQL = (
    "SELECT p.proname, n.nspname, p.provolatile, coalesce(e.extname, ''), n.nspname = ANY(current_schemas(true)) "
    "FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
    "LEFT JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e' "
    "LEFT JOIN pg_extension e ON e.oid = d.refobjid WHERE p.proname = ANY(%s)"
)
_OPERATORS_SQL = (
    "SELECT o.oprname, n.nspname, p.proname, pn.nspname, p.provolatile, coalesce(e.extname, ''), "
    "n.nspname = ANY(current_schemas(true)) FROM pg_operator o JOIN pg_namespace n ON n.oid = o.oprnamespace "
    "JOIN pg_proc p ON p.oid = o.oprcode JOIN pg_namespace pn ON pn.oid = p.pronamespace "
    "LEFT JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e' "
    "LEFT JOIN pg_extension e ON e.oid = d.refobjid WHERE o.oprname = ANY(%s)"
)
_CASTS_SQL = (
    "SELECT t.typname, tn.nspname, p.proname, pn.nspname, p.provolatile, coalesce(e.extname, ''), "
    "tn.nspname = ANY(current_schemas(true)) FROM pg_type t JOIN pg_namespace tn ON tn.oid = t.typnamespace "
    "JOIN pg_proc p ON p.oid = t.typinput OR p.oid IN (SELECT castfunc FROM pg_cast WHERE casttarget = t.oid) "
    "JOIN pg_namespace pn ON pn.oid = p.pronamespace "
    "LEFT JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e' "
    "LEFT JOIN pg_extension e ON e.oid = d.refobjid WHERE t.typname = ANY(%s)"
)
_AGGREGATES_SQL = (
    "SELECT p.proname, n.nspname, f.proname, fn.nspname, f.provolatile, coalesce(e.extname, ''), "
    "n.nspname = ANY(current_schemas(true)) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
    "JOIN pg_aggregate a ON a.aggfnoid = p.oid JOIN pg_proc f ON f.oid IN (a.aggtransfn, a.aggfinalfn, "
    "a.aggcombinefn, a.aggserialfn, a.aggdeserialfn, a.aggmtransfn, a.aggminvtransfn, a.aggmfinalfn) "
    "JOIN pg_namespace fn ON fn.oid = f.pronamespace "
    "LEFT JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = f.oid AND d.deptype = 'e' "
    "LEFT JOIN pg_extension e ON e.oid = d.refobjid WHERE p.proname = ANY(%s)"
)
# Functions (and operators' functions) that views' rules and row-level policies call, views within views included.
_RELATIONS_SQL = (
    "WITH RECURSIVE rels(oid) AS ("
    " SELECT c FROM (SELECT to_regclass(CASE WHEN s = '' THEN quote_ident(r)"
    " ELSE quote_ident(s) || '.' || quote_ident(r) END)"
    " FROM unnest(%s::text[], %s::text[]) AS x(s, r)) AS found(c) WHERE c IS NOT NULL"
    " UNION SELECT d.refobjid::regclass FROM rels JOIN pg_rewrite r ON r.ev_class = rels.oid"
    " JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid"
    " AND d.refclassid = 'pg_class'::regclass AND d.refobjid <> rels.oid),"
    " used(rel, kind, ref) AS ("
    " SELECT r.ev_class, d.refclassid, d.refobjid FROM pg_rewrite r JOIN pg_depend d"
    " ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid"
    " UNION ALL SELECT pol.polrelid, d.refclassid, d.refobjid FROM pg_policy pol JOIN pg_depend d"
    " ON d.classid = 'pg_policy'::regclass AND d.objid = pol.oid)"
    " SELECT DISTINCT rels.oid::regclass::text, p.proname, pn.nspname, p.provolatile, coalesce(e.extname, '')"
    " FROM rels JOIN used u ON u.rel = rels.oid"
    " JOIN pg_proc p ON (u.kind = 'pg_proc'::regclass AND p.oid = u.ref)"
    " OR (u.kind = 'pg_operator'::regclass AND p.oid = (SELECT oprcode FROM pg_operator WHERE oid = u.ref))"
    " JOIN pg_namespace pn ON pn.oid = p.pronamespace"
    " LEFT JOIN pg_depend x ON x.classid = 'pg_proc'::regclass AND x.objid = p.oid AND x.deptype = 'e'"
    " LEFT JOIN pg_extension e ON e.oid = x.refobjid"
)


class FunctionJudge:
    """Checks a statement's functions against one connection's catalogue; answers are cached per name."""

    def __init__(self, rows: Rows) -> None:
        self._rows = rows
        self._functions: dict[str, list[tuple]] = {}

    def check(self, found: Classified) -> None:
        """Raise ``ToolError`` for the first function, operator, cast or view that would act outside the query."""
        for _schema, name in sorted(found.functions):
            reason = refused_reason(name)
            if reason:
                raise ToolError(_refused_message(name, reason))
        self._check_functions(found.functions)
        if found.functions:  # an aggregate's own entry says little: its support functions do the work
            self._check_indirect(
                _AGGREGATES_SQL, found.functions, lambda row: f"the aggregate {row[0]}() calls {row[2]}()"
            )
        if found.operators:
            self._check_indirect(_OPERATORS_SQL, found.operators, lambda row: f"operator {row[0]} calls {row[2]}()")
        if found.types:
            self._check_indirect(_CASTS_SQL, found.types, lambda row: f"converting to type {row[0]} calls {row[2]}()")
        relations = [r for r in dict.fromkeys(found.relations) if r[1]]
        if relations:
            for relation, name, schema, volatility, extension in self._rows(
                _RELATIONS_SQL, [[s for s, _r in relations], [r for _s, r in relations]]
            ):
                self._judge(name, schema, volatility, extension, f"the view or policy of {relation} calls {name}()")

    def _check_functions(self, calls: set[tuple[str, str]]) -> None:
        missing = sorted({name for _schema, name in calls if name not in self._functions})
        if missing:
            for name in missing:
                self._functions[name] = []
            for row in self._rows(_FUNCTIONS_SQL, [missing]):
                self._functions[row[0]].append(row)
        for schema, name in sorted(calls):
            for _proname, nspname, volatility, extension, on_path in self._functions.get(name, []):
                if (nspname == schema) if schema else on_path:
                    self._judge(name, nspname, volatility, extension, f"{name}()")

    def _check_indirect(self, sql: str, names: set[tuple[str, str]], label: Callable[[tuple], str]) -> None:
        rows = self._rows(sql, [sorted({name for _schema, name in names})])
        for row in rows:
            own_name, own_schema, name, schema, volatility, extension, on_path = row
            if any(n == own_name and ((s == own_schema) if s else on_path) for s, n in names):
                self._judge(name, schema, volatility, extension, label(row))

    def _judge(self, name: str, schema: str, volatility: str, extension: str, label: str) -> None:
        reason = refused_reason(name)
        if reason:
            raise ToolError(_refused_message(name, reason, label))
        if volatility == "v" and not _allowed_volatile(name, schema, extension):
            raise ToolError(
                f"{label} is refused: {schema}.{name}() is VOLATILE in this database, so it may change data or "
                "session state, and a read-only query never calls it; nothing ran. Compute the value without it. "
                f"{WRITE_HINT}"
            )


def _refused_message(name: str, reason: str, label: str = "") -> str:
    where = f"{label}: " if label and label != f"{name}()" else ""
    return (
        f"{where}{name}() {reason}, so run_sql never calls it in a query; nothing ran. "
        "Answer from the data with plain SELECTs instead; if the user explicitly asked for this action, "
        "it needs run_sql with write=true and their approval"
    )
