"""Every shipped recipe's calls run against the demo town through the real toolkit, and give what it says.

A recipe teaches the model a method; a recipe whose algorithm was renamed, whose
parameters are wrong or whose SQL does not run would teach it a mistake. Each
call goes through ``Toolkit.run`` (argument checks, the tool on a worker thread,
the main-thread bridge), as the agent runs it; PostGIS recipes run against the
demo database, OGC API ones against pygeoapi on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from typing import Any

import pytest

from geogpt_qgis.agent.toolkit import Toolkit, ToolOutcome
from geogpt_qgis.core.recipes import PLACEHOLDER, Recipe, load
from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
from geogpt_qgis.tools.base import ToolContext
from geogpt_qgis.tools.registry import build_families
from tests.support.demo import copy_demo
from tests.support.postgis import saved_connection
from tests.support.runs import call_in_thread

RECIPES = load()
FAMILIES_WANTED = {
    *("inspection", "selection", "proximity", "overlay", "aggregation"),
    *("nearest", "reprojection", "sql", "ogc"),
}
pytestmark = pytest.mark.postgis


def test_the_library_covers_every_family_with_at_least_60_recipes():
    assert len(RECIPES) >= 60
    assert {r.family for r in RECIPES} == FAMILIES_WANTED
    assert len({r.id for r in RECIPES}) == len(RECIPES), "recipe ids are unique"
    for recipe in RECIPES:
        used = {m for _, args in recipe.calls for m in PLACEHOLDER.findall(repr(args))}
        assert used <= set(recipe.demo), f"{recipe.id}: no demo value for {used - set(recipe.demo)}"
        assert recipe.expect, f"{recipe.id}: says nothing about its result"


@pytest.fixture(scope="module")
def town(qgis_app, tmp_path_factory) -> Iterator[tuple[ToolContext, Toolkit]]:
    """One copy of the demo town and one toolkit for every recipe (their results never collide: each call's
    artifact names the layer it added), with the demo database saved as a QGIS connection."""
    from qgis.core import QgsProject

    from geogpt_qgis.toolbelt.main_thread import MainThreadBridge

    project = QgsProject.instance()
    project.clear()
    assert project.read(str(copy_demo(tmp_path_factory.mktemp("town")))), project.error()
    bridge = MainThreadBridge()
    ctx = ToolContext(project=project, bridge=bridge)
    try:
        with saved_connection("elvbury"):
            yield ctx, Toolkit([tool for family in build_families(ctx) for tool in family.tools()])
    finally:
        bridge.close()
        project.clear()


@pytest.fixture
def toolkit(town, request) -> Iterator[Toolkit]:
    """The shared toolkit, with the layers a recipe added removed after it, so that every recipe meets the
    demo town as shipped whatever ran before it (a listing of 26 layers is cut to the model's budget)."""
    recipe: Recipe = request.node.callspec.params["recipe"]
    if recipe.family == "ogc":
        server = request.getfixturevalue("ogc_server")
        PlgOptionsManager.set_value("ogc_servers", f"Elvbury = {server.url}")
    project = town[0].project
    before = set(project.mapLayers())
    yield town[1]
    added = [layer_id for layer_id in project.mapLayers() if layer_id not in before]
    if added:
        project.removeMapLayers(added)


def run(toolkit: Toolkit, name: str, args: dict[str, Any]) -> ToolOutcome:
    return call_in_thread(lambda: asyncio.run(toolkit.run(name, args)))


def table_rows(text: str) -> int:
    """Rows of the markdown table (read_features) in ``text``."""
    lines = [line for line in text.splitlines() if line.startswith("|")]
    return max(0, len(lines) - 2)


def sql_rows(text: str) -> int:
    found = re.search(r"(\d+) rows?", text)
    return int(found.group(1)) if found else -1


@pytest.mark.parametrize("recipe", RECIPES, ids=[r.id for r in RECIPES])
def test_recipe_runs_on_the_demo_town(recipe: Recipe, toolkit: Toolkit, town):
    project = town[0].project
    outcomes = [run(toolkit, name, args) for name, args in recipe.bound_calls()]
    for (name, _), outcome in zip(recipe.calls, outcomes, strict=True):
        assert outcome.ok, f"{recipe.id}: {name} failed: {outcome.text}"
    last = outcomes[-1]
    want = recipe.expect
    for needle in want.get("contains", ()):
        assert needle in last.text, f"{recipe.id}: {needle!r} not in {last.text[:600]}"
    if "rows" in want or "rows_at_least" in want:
        rows = table_rows(last.text)
        shown = f"{recipe.id}: {last.text[:600]}"
        assert rows == want.get("rows", rows) and rows >= want.get("rows_at_least", 0), shown
    if "features" in want or "features_at_least" in want:
        added = last.artifact.added if last.artifact else ()
        assert added, f"{recipe.id}: no layer added: {last.text[:300]}"
        made = project.mapLayer(added[-1].layer_id) or project.mapLayersByName(added[-1].name)[0]
        count = made.featureCount()
        assert count == want.get("features", count) and count >= want.get("features_at_least", 1), recipe.id
    if "sql_rows" in want:
        assert sql_rows(last.text) == want["sql_rows"], f"{recipe.id}: {last.text[:600]}"
