"""Reading SQL text without a parser: statements, the leading keyword, identifiers, error carets.

Enough to refuse several statements at once, to tell a query from a write
before the database does, and to point at the spot a syntax error names.
PostgreSQL itself remains the judge of what a statement does.  Qt-free.
"""

from __future__ import annotations

import re

READ_KEYWORDS = frozenset({"select", "with", "values", "table", "show", "explain"})
# Statements that change data, schema, permissions or the session: never run without approval.
WRITE_KEYWORDS = frozenset(
    {
        "insert",
        "update",
        "delete",
        "merge",
        "upsert",
        "create",
        "alter",
        "drop",
        "truncate",
        "grant",
        "revoke",
        "copy",
        "vacuum",
        "analyze",
        "analyse",
        "cluster",
        "reindex",
        "comment",
        "lock",
        "call",
        "do",
        "refresh",
        "set",
        "reset",
        "begin",
        "start",
        "commit",
        "rollback",
        "savepoint",
        "release",
        "prepare",
        "execute",
        "discard",
        "listen",
        "notify",
        "unlisten",
        "load",
        "import",
        "security",
        "declare",
        "fetch",
        "move",
        "close",
    }
)
_TABLE_REF = re.compile(r'\b(?:from|join)\s+((?:"[^"]+"|[\w$]+)(?:\.(?:"[^"]+"|[\w$]+))?)', re.IGNORECASE)


def split_statements(sql: str) -> list[str]:
    """The statements of ``sql``, split on ``;`` outside quotes, comments and dollar-quoted strings."""
    statements: list[str] = []
    current: list[str] = []
    index, length = 0, len(sql)
    while index < length:
        char = sql[index]
        if char in ("'", '"'):
            end = index + 1
            while end < length:
                if sql[end] == char:
                    if end + 1 < length and sql[end + 1] == char:  # doubled quote
                        end += 2
                        continue
                    break
                end += 1
            current.append(sql[index : end + 1])
            index = end + 1
        elif sql.startswith("--", index):
            end = sql.find("\n", index)
            end = length if end < 0 else end
            index = end
        elif sql.startswith("/*", index):
            end = sql.find("*/", index + 2)
            index = length if end < 0 else end + 2
            current.append(" ")
        elif char == "$":
            match = re.match(r"\$[A-Za-z_]*\$", sql[index:])
            if match:
                tag = match.group(0)
                end = sql.find(tag, index + len(tag))
                end = length if end < 0 else end + len(tag)
                current.append(sql[index:end])
                index = end
            else:
                current.append(char)
                index += 1
        elif char == ";":
            statements.append("".join(current))
            current = []
            index += 1
        else:
            current.append(char)
            index += 1
    statements.append("".join(current))
    return [s.strip() for s in statements if s.strip()]


def leading_keyword(statement: str) -> str:
    """The statement's first word, lower case (``select``, ``insert``...), after any parentheses."""
    match = re.match(r"[\s(]*([A-Za-z]+)", statement)
    return match.group(1).lower() if match else ""


def is_write_statement(statement: str) -> bool:
    """Whether the statement starts like a write or a session command.

    A statement that starts like a query can still write (a data-modifying CTE,
    a function with side effects): the database decides those.
    """
    return leading_keyword(statement) in WRITE_KEYWORDS


def referenced_tables(statement: str) -> list[str]:
    """Table names after FROM/JOIN, as written (``schools``, ``public.schools``), unquoted."""
    return [name.replace('"', "") for name in _TABLE_REF.findall(statement)]


def caret(statement: str, position: int) -> str:
    """The line of ``statement`` holding character ``position`` (1-based), with a caret under it."""
    if position < 1 or position > len(statement) + 1:
        return ""
    offset = position - 1
    start = statement.rfind("\n", 0, offset) + 1
    end = statement.find("\n", offset)
    line = statement[start : end if end >= 0 else len(statement)]
    return f"{line}\n{' ' * (offset - start)}^"
