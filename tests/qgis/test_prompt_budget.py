"""The prompt budget (issue 23): system prompt, project brief and every tool schema within 2,500 Tekken tokens.

Measured as ``make bench`` measures it (``bench.prompt_budget.measure``, real
Tekken tokens), with every family on: a saved PostgreSQL connection and an OGC
API server configured (nothing is contacted).  Merged tools' old names are
routed by the toolkit and never sent.
"""

from __future__ import annotations

import pytest

from bench.prompt_budget import GOAL_TOKENS, measure
from geogpt_qgis.agent.aliases import ALIASES
from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
from geogpt_qgis.tools.project.family import project_brief
from geogpt_qgis.tools.registry import active_families, build_families
from tests.support.postgis import saved_connection

pytestmark = pytest.mark.postgis


@pytest.fixture
def every_family(tool_ctx, demo_project):
    with saved_connection("budget_elvbury"):
        PlgOptionsManager.set_value("ogc_servers", "budget = http://127.0.0.1:9")
        try:
            families = active_families(build_families(tool_ctx))
            yield families, measure(families, project_brief(demo_project))
        finally:
            PlgOptionsManager.set_value("ogc_servers", "")


def test_every_family_fits_the_budget_counted_per_family_and_per_tool(every_family):
    families, budget = every_family
    names = {family.name for family in families}
    assert {"project", "edit", "processing", "postgis", "ogc", "code", "insights", "examples", "help"} <= names
    assert budget["total_tokens"] == budget["system_prompt_tokens"] + budget["schema_tokens"]
    assert budget["total_tokens"] <= GOAL_TOKENS, f"{budget['total_tokens']} tokens; by tool: {budget['per_tool']}"
    # Per family and per tool, as make bench prints them: every tool counted once, in its family.
    assert set(budget["families"]) == names
    tools = {tool.__name__: family.name for family in families for tool in family.tools()}
    assert set(budget["per_tool"]) == set(tools)
    for family in names:
        assert budget["families"][family] == sum(n for t, n in budget["per_tool"].items() if tools[t] == family)
    # The list of schemas costs about what its parts cost (a token or two at each seam).
    assert sum(budget["per_tool"].values()) == pytest.approx(budget["schema_tokens"], abs=2 * len(tools))
    # The merges of issue 23 freed a whole schema each: search_algorithms + describe_algorithm (75 + 78)
    # became find_algorithm, list_tables (80) went into describe_table (279 and 308 tokens before).
    assert budget["families"]["processing"] <= 279 - 75
    assert budget["families"]["postgis"] <= 308 - 72


def test_merged_tools_are_not_sent_and_neither_the_prompt_nor_a_schema_names_them(every_family, tool_ctx):
    from geogpt_qgis.agent.prompts import build_system_prompt
    from geogpt_qgis.agent.toolkit import Toolkit

    families, _ = every_family
    toolkit = Toolkit([tool for family in families for tool in family.tools()])
    sent = " ".join(str(schema) for schema in toolkit.schemas)
    prompt = build_system_prompt(tuple(f.prompt_hint for f in families if f.prompt_hint))
    for old in ALIASES:
        assert old not in toolkit.names and old not in sent and old not in prompt, old
    assert {"describe_layer", "find_algorithm", "describe_table"} <= set(toolkit.names)
