"""Small readings of SQL text for messages: the tables a query names, and a caret under an error.

Only for wording (naming a result layer, suggesting columns, pointing at a
syntax error); whether SQL may run is decided from PostgreSQL's own parse
tree in ``tools/safety/sql.py``, never from text.  Qt-free.
"""

from __future__ import annotations

import re

from geogpt_qgis.tools.safety.sql import caret

__all__ = ["caret", "referenced_tables"]

_TABLE_REF = re.compile(r'\b(?:from|join)\s+((?:"[^"]+"|[\w$]+)(?:\.(?:"[^"]+"|[\w$]+))?)', re.IGNORECASE)


def referenced_tables(statement: str) -> list[str]:
    """Table names after FROM/JOIN, as written (``schools``, ``public.schools``), unquoted."""
    return [name.replace('"', "") for name in _TABLE_REF.findall(statement)]
