"""The prompt budget: what the system prompt and the tool schemas cost in every model call.

Counted offline twice: with the estimator the agent uses (``core.tokens``,
about a quarter high on prose and JSON) and in real tokens of Mistral's
Tekken tokenizer (``bench.real_tokens``); the goal is in real tokens.  On the
demo project, with every tool family enabled (a saved PostGIS connection
allowed, an OGC API server configured), and with only the families a plain
project offers.  Schemas are counted as the providers send them (OpenAI
function format, compacted as the agent sends them).  The compact tool profile
(``agent.profiles``, for small models) is counted too, with every family on:
its system prompt and the schemas it sends, without the project's brief (its
goal, ``COMPACT_BUDGET_TOKENS``, is for the prompt and the tool block), beside
the full profile counted the same way.

    python -m bench.prompt_budget     prints one JSON line
"""

from __future__ import annotations

import json
from typing import Any

from bench.common import REPO, headless_qgis
from bench.real_tokens import TOKENIZER_NAME, real_counter

GOAL_TOKENS = 2500


def measure(families: list[Any], brief: str) -> dict[str, Any]:
    """What one model call pays before any history: the system prompt and the tool schemas."""
    from geogpt_qgis.agent.prompts import build_system_prompt
    from geogpt_qgis.agent.toolkit import Toolkit
    from geogpt_qgis.core.tokens import estimate_tokens

    real = real_counter()
    # The project's state is a note at the head of the first message now (the system prompt never changes),
    # but every conversation still pays for it once: counted with the system prompt, as before.
    prompt = build_system_prompt(tuple(f.prompt_hint for f in families if f.prompt_hint)) + "\n\n" + brief
    toolkit = Toolkit([tool for family in families for tool in family.tools()])
    schemas_json = json.dumps(toolkit.schemas, ensure_ascii=False)
    per_tool = {s["function"]["name"]: real(json.dumps(s, ensure_ascii=False)) for s in toolkit.schemas}
    per_family = {f.name: sum(per_tool[tool.__name__] for tool in f.tools()) for f in families}
    system, schemas = real(prompt), real(schemas_json)
    return {
        "system_prompt_tokens": system,
        "schema_tokens": schemas,
        "total_tokens": system + schemas,
        "estimated_total_tokens": estimate_tokens(prompt) + toolkit.schema_tokens,
        "tools": len(per_tool),
        "families": per_family,
        "per_tool": per_tool,
        "largest_schemas": sorted(per_tool.items(), key=lambda kv: -kv[1])[:5],
    }


def measure_profiles(families: list[Any]) -> dict[str, Any]:
    """The full and the compact profile's system prompt and tool block, in Tekken tokens (no project brief)."""
    from geogpt_qgis.agent.config import PROFILE_COMPACT, PROFILE_FULL
    from geogpt_qgis.agent.profiles import COMPACT_BUDGET_TOKENS, offered_names, system_prompt
    from geogpt_qgis.agent.toolkit import Toolkit

    real = real_counter()
    tools = [tool for family in families for tool in family.tools()]
    figures: dict[str, Any] = {}
    for profile in (PROFILE_FULL, PROFILE_COMPACT):
        offered = offered_names(profile, [tool.__name__ for tool in tools])
        toolkit = Toolkit(tools, offered)
        prompt = real(system_prompt(profile, families, offered))
        schemas = real(json.dumps(toolkit.schemas, ensure_ascii=False))
        figures[profile] = {
            "system_prompt_tokens": prompt,
            "schema_tokens": schemas,
            "total_tokens": prompt + schemas,
            "tools": toolkit.offered,
        }
    figures["compact_goal_tokens"] = COMPACT_BUDGET_TOKENS
    figures["compact_meets_goal"] = figures[PROFILE_COMPACT]["total_tokens"] <= COMPACT_BUDGET_TOKENS
    return figures


def main() -> dict[str, Any]:
    with headless_qgis():
        from qgis.core import QgsDataSourceUri, QgsProject, QgsProviderRegistry

        from geogpt_qgis.toolbelt.main_thread import MainThreadBridge
        from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
        from geogpt_qgis.tools.base import ToolContext
        from geogpt_qgis.tools.project.family import project_brief
        from geogpt_qgis.tools.registry import active_families, build_families

        project = QgsProject.instance()
        project.read(str(REPO / "demo" / "elvbury.qgz"))
        families = build_families(ToolContext(project=project, bridge=MainThreadBridge()))
        brief = project_brief(project)
        PlgOptionsManager.set_value("ogc_servers", "")
        plain = measure(active_families(families), brief)
        # Every family: a saved PostgreSQL connection and an OGC API server (nothing is contacted).
        metadata = QgsProviderRegistry.instance().providerMetadata("postgres")
        uri = QgsDataSourceUri()
        uri.setConnection("127.0.0.1", "5432", "geogpt_demo", "geogpt", "geogpt")
        metadata.saveConnection(metadata.createConnection(uri.uri(False), {}), "bench-budget")
        PlgOptionsManager.set_value("ogc_servers", "bench = http://127.0.0.1:9")
        try:
            everything = measure(active_families(families), brief)
            profiles = measure_profiles(active_families(families))
        finally:
            metadata.deleteConnection("bench-budget")
            PlgOptionsManager.set_value("ogc_servers", "")
        return {
            "tokenizer": TOKENIZER_NAME,
            "goal_tokens": GOAL_TOKENS,
            "meets_goal": everything["total_tokens"] <= GOAL_TOKENS,
            "plain_project": plain,
            "every_family": everything,
            "profiles": profiles,
        }


if __name__ == "__main__":
    print(json.dumps(main()))
