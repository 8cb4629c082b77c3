"""Whether a JSON schema admits a value: the yes/no the guided-reply and vocabulary tests ask of every schema."""

from __future__ import annotations

from typing import Any

import jsonschema


def admits(schema: dict[str, Any], value: Any) -> bool:
    """Whether ``value`` is valid against ``schema`` (JSON Schema, as jsonschema reads it)."""
    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError:
        return False
    return True
