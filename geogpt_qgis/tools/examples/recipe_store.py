"""The profile's own recipe library: runs the user marked as good, kept as worked examples.

A JSON file in the plugin's folder of the QGIS user profile (not in the
plugin's folder, so it survives plugin upgrades; never sent anywhere but to
the user's own model as examples). Written whole through a temporary file and
a rename, so a crash never leaves half a library. Read again only when the
file changed.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path

from geogpt_qgis.core.recipes import Recipe

log = logging.getLogger(__name__)
FILE_NAME = "my_recipes.json"
MAX_RECIPES = 500

_lock = threading.Lock()
_cache: dict[Path, tuple[float, tuple[Recipe, ...]]] = {}


def store_path() -> Path:
    """Where the profile's recipes live."""
    from geogpt_qgis.toolbelt.paths import profile_data_dir

    return profile_data_dir() / FILE_NAME


def user_recipes(path: Path | None = None) -> tuple[Recipe, ...]:
    """The stored recipes, newest first (none if the file is missing or unreadable)."""
    where = path or store_path()
    with _lock:
        try:
            stamp = where.stat().st_mtime_ns
        except OSError:
            return ()
        cached = _cache.get(where)
        if cached and cached[0] == stamp:
            return cached[1]
        try:
            data = json.loads(where.read_text(encoding="utf-8"))
            recipes = tuple(Recipe.from_json(item) for item in data.get("recipes", []))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("the recipe library %s cannot be read: %s", where, exc)
            return ()
        _cache[where] = (stamp, recipes)
        return recipes


def add_recipe(recipe: Recipe, path: Path | None = None) -> None:
    """Store ``recipe`` first in the library (replacing one with the same question)."""
    kept = [r for r in user_recipes(path) if r.question != recipe.question and r.id != recipe.id]
    _write([recipe, *kept][:MAX_RECIPES], path or store_path())


def delete_recipe(recipe_id: str, path: Path | None = None) -> bool:
    """Remove the recipe ``recipe_id``; whether there was one."""
    recipes = user_recipes(path)
    kept = [r for r in recipes if r.id != recipe_id]
    if len(kept) == len(recipes):
        return False
    _write(kept, path or store_path())
    return True


def _write(recipes: list[Recipe], where: Path) -> None:
    data = {"recipes": [r.to_json() for r in recipes]}
    temporary = where.with_suffix(".tmp")
    temporary.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    os.replace(temporary, where)
    with _lock:
        _cache.pop(where, None)
