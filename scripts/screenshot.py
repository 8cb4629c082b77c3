"""Make docs/screenshot.png: the GeoGPT dock inside the real QGIS, under Xvfb.

QGIS starts with the plugin and the demo project; a scripted model server
inside QGIS plays a short, truthful conversation (the numbers come from the
demo data), and the main window is grabbed once the answer has streamed in.

    .venv/bin/python scripts/screenshot.py docs/screenshot.png
"""

from __future__ import annotations

import json
import sqlite3
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.demo import GPKG, copy_demo, ensure_demo  # noqa: E402 - after the path set-up
from tests.support.desktop import run_qgis_session  # noqa: E402 - after the path set-up
from tests.support.net import free_port  # noqa: E402 - after the path set-up

QUESTION = "Which schools have more than 500 pupils? Select them and zoom to them."


def conversation() -> list[dict]:
    with sqlite3.connect(GPKG) as db:
        rows = db.execute(
            "SELECT type, count(*), sum(pupils) FROM schools WHERE pupils > 500 GROUP BY type ORDER BY count(*) DESC"
        ).fetchall()
    total = sum(count for _, count, _ in rows)
    table = "\n".join(f"| {kind} | {count} | {pupils:,} |" for kind, count, pupils in rows)
    answer = (
        f"**{total} schools** in Elvbury have more than 500 pupils. I selected them in *schools* "
        "and zoomed the map to them.\n\n"
        f"| type | schools | pupils |\n|---|---|---|\n{table}\n\n"
        "Secondary schools dominate: most primary schools are smaller. "
        "Ask me to compare them with the district populations next."
    )
    expression = '"pupils" > 500'
    return [
        {"tool_calls": [{"name": "describe_layer", "arguments": {"layer": "schools"}}]},
        {"tool_calls": [{"name": "select_features", "arguments": {"layer": "schools", "expression": expression}}]},
        {"tool_calls": [{"name": "set_layer", "arguments": {"layer": "schools", "zoom": True}}]},
        {"text": answer, "chunk_delay": 0.005},
    ]


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else REPO / "docs" / "screenshot.png").resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    ensure_demo()
    with tempfile.TemporaryDirectory() as work:
        workdir = Path(work)
        project = copy_demo(workdir / "demo")
        port = free_port()
        report = run_qgis_session(
            workdir,
            project,
            {"provider": "ollama", "ollama_url": f"http://127.0.0.1:{port}", "ollama_model": "qwen3:8b"},
            {
                "GEOGPT_DESKTOP_PORT": str(port),
                "GEOGPT_DESKTOP_QUESTION": QUESTION,
                "GEOGPT_DESKTOP_SCRIPT": json.dumps(conversation()),
                "GEOGPT_DESKTOP_SCREENSHOT": str(out),
            },
        )
    if report.get("errors") or report.get("status") != "finished" or not out.is_file():
        print(json.dumps(report, indent=2), file=sys.stderr)
        return 1
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
