"""The prompt budget: what the system prompt and the tool schemas cost in every model call.

Counted offline with the estimator the agent uses (``core.tokens``, on the
high side for JSON), on the demo project, with every tool family enabled (a
saved PostGIS connection allowed, an OGC API server configured), and with
only the families a plain project offers.  Schemas are counted as the
providers send them (OpenAI function format).

    python -m bench.prompt_budget     prints one JSON line
"""

from __future__ import annotations

import json
from typing import Any

from bench.common import REPO, headless_qgis

GOAL_TOKENS = 2500


def _schema_tokens(functions: list[Any]) -> dict[str, int]:
    from geogpt_qgis.agent.toolkit import Toolkit

    return Toolkit(functions).schema_tokens_by_tool()


def measure(families: list[Any], brief: str) -> dict[str, Any]:
    from geogpt_qgis.agent.prompts import build_system_prompt
    from geogpt_qgis.core.tokens import estimate_tokens

    prompt = build_system_prompt(brief, "", tuple(f.prompt_hint for f in families if f.prompt_hint))
    per_family = {f.name: _schema_tokens(f.tools()) for f in families}
    schemas = sum(sum(tools.values()) for tools in per_family.values())
    system = estimate_tokens(prompt)
    return {
        "system_prompt_tokens": system,
        "schema_tokens": schemas,
        "total_tokens": system + schemas,
        "families": {name: sum(tools.values()) for name, tools in per_family.items()},
        "largest_schemas": sorted(
            ((name, n) for tools in per_family.values() for name, n in tools.items()), key=lambda kv: -kv[1]
        )[:5],
    }


def main() -> dict[str, Any]:
    with headless_qgis():
        from qgis.core import QgsDataSourceUri, QgsProject, QgsProviderRegistry

        from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
        from geogpt_qgis.tools.base import ToolContext
        from geogpt_qgis.tools.bridge import MainThreadBridge
        from geogpt_qgis.tools.project import project_brief
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
        finally:
            metadata.deleteConnection("bench-budget")
            PlgOptionsManager.set_value("ogc_servers", "")
        return {"goal_tokens": GOAL_TOKENS, "plain_project": plain, "every_family": everything}


if __name__ == "__main__":
    print(json.dumps(main()))
