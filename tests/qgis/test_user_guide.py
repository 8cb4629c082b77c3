"""The user guide (issue 38): built strict and offline, tables generated from the results files, opened from QGIS.

The guide is built for real with MkDocs, as ``make docs`` builds it, into a
temporary folder; results files are planted through ``GEOGPT_RESULTS_ROOT``
(the real ones are not in git).  The eval results are made by the evals' own
``summarise`` functions, so a change of their format shows here.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from html import unescape
from pathlib import Path

import pytest
from qgis.PyQt.QtCore import QObject, QUrl, pyqtSlot
from qgis.PyQt.QtGui import QDesktopServices

from evals.robustness import KINDS, ReplayResult, summarise_replays
from evals.runner import TaskResult, summarise

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))

import docs_results  # noqa: E402 - scripts/ is not a package

BENCH = {
    "date": "2026-11-24",
    "machine": {"python": "3.11.2", "platform": "Linux-test", "cpus": 2},
    "startup": {
        "plugin_load_ms_median": 32.1,
        "dock_first_show_ms_median": 85.4,
        "agent_stack_import_ms_median": 760.2,
        "heavy_modules_at_start": [],
        "goal_ms": 50.0,
        "meets_goal": True,
    },
    "responsiveness": {
        "stream_500_tokens": {"longest_stall_ms": 8.4},
        "stream_2000_tokens": {"longest_stall_ms": 10.9},
        "tool_then_2000_tokens": {"longest_stall_ms": 11.9},
        "idle_longest_stall_ms": 8.1,
        "goal_stall_ms": 50.0,
        "meets_stall_goal": True,
        "render_500_tokens_ms": 31.0,
        "render_2000_tokens_ms": 133.0,
        "render_ratio_2000_vs_500": 4.3,
    },
    "processing": {
        "features": 100000,
        "median_tool_seconds": 3.24,
        "median_direct_seconds": 1.04,
        "tool_overhead_of_medians": 2.115,
        "goal_overhead": 0.05,
        "meets_overhead_goal": False,
        "median_longest_stall_ms_per_run": 26.0,
        "longest_stall_ms_during_tool_runs": 27.0,
        "goal_stall_ms": 50.0,
        "meets_stall_goal": True,
        "search_mean_ms": 2.4,
        "search_max_ms": 5.6,
        "algorithms_indexed": 641,
        "goal_search_ms": 50.0,
        "meets_search_goal": True,
    },
    # postgis, rasters and conversations left out: an older or partial results file
    "prompt_budget": {
        "tokenizer": "Tekken",
        "goal_tokens": 2500,
        "meets_goal": True,
        "every_family": {"system_prompt_tokens": 700, "schema_tokens": 1791, "total_tokens": 2491},
        "plain_project": {"total_tokens": 1963},
    },
    "prompt_cache": {
        "model": "gemma-3-270m-q4_k_m.gguf",
        "n_ctx": 8192,
        "answer_tokens": 64,
        "turns": 2,
        "repeats": 3,
        "layers_added_before_turns": [2],
        "per_call": [
            {
                "turn": 1,
                "prompt_tokens": 1933,
                "cached_tokens": 0,
                "cached_pct": 0.0,
                "first_token_s": 64.0,
                "total_s": 71.3,
            },
            {
                "turn": 2,
                "prompt_tokens": 2013,
                "cached_tokens": 1996,
                "cached_pct": 99.2,
                "first_token_s": 1.0,
                "total_s": 7.9,
            },
        ],
        "lowest_cached_pct_after_first": 99.2,
        "goal_cached_pct": 95.0,
        "meets_cache_goal": True,
        "first_token_turn_1_s": 64.0,
        "first_token_turn_2_s": 1.0,
        "first_token_ratio": 0.016,
        "goal_first_token_ratio": 1.2,
        "meets_first_token_goal": True,
        "dock_first_text_turn_2_s": 1.07,
        "new_conversation_first_call": {"prompt_tokens": 1970, "cached_pct": 93.2, "first_token_s": 4.4},
    },
}


def _eval_results() -> dict:
    tasks = [
        TaskResult(
            "count_schools", "inspection", True, prompt=[{"system": 700, "tools": 1791, "history": 20, "total": 2511}]
        ),
        TaskResult("buffer_rivers", "single algorithm", False, ["the answer says 12 schools; shapely counts 14"]),
        TaskResult("sql_districts", "SQL", True),
    ]
    report = summarise(tasks)
    report["robustness"] = summarise_replays(
        [
            ReplayResult(KINDS[0], "run_algorithm", True, "did you mean native:buffer"),
            ReplayResult(KINDS[1], "x", False, "no"),
        ]
    )
    report["prompt_budget"] = BENCH["prompt_budget"]
    return report


def _trap_results() -> dict:
    """What the trap suite writes (tests/traps/harness.summary) for three traps and their twins."""
    from tests.traps.harness import summary

    outcomes = [
        {"case": "a", "family": "linear units", "kind": "trap", "outcome": "right"},
        {"case": "a", "family": "linear units", "kind": "twin", "outcome": "complete"},
        {"case": "b", "family": "overlaps", "kind": "trap", "outcome": "silent"},
        {"case": "b", "family": "overlaps", "kind": "twin", "outcome": "complete"},
        {"case": "c", "family": "overlaps", "kind": "trap", "outcome": "warned"},
        {"case": "c", "family": "overlaps", "kind": "twin", "outcome": "false-alarm"},
    ]
    return summary(outcomes)


def _build(root: Path, out: Path, config: Path = REPO / "mkdocs.yml") -> subprocess.CompletedProcess:
    env = {**os.environ, "GEOGPT_RESULTS_ROOT": str(root), "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",  # as make docs runs it (not --quiet, which hides warnings from strict mode)
            "-f",
            str(config),
            "-d",
            str(out),
        ],
        cwd=config.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _text(page: Path) -> str:
    """The page's visible text, tags dropped, spaces folded."""
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", page.read_text(encoding="utf-8"))).split())


@pytest.fixture(scope="module")
def guide_with_results(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("results")
    (root / "bench").mkdir()
    (root / "evals").mkdir()
    (root / "bench" / "results.json").write_text(json.dumps(BENCH))
    (root / "evals" / "results.json").write_text(json.dumps(_eval_results()))
    (root / "evals" / "traps.json").write_text(json.dumps(_trap_results()))
    out = tmp_path_factory.mktemp("site")
    done = _build(root, out)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def test_the_tables_come_from_the_results_files(guide_with_results):
    bench = _text(guide_with_results / "benchmarks.html")
    assert "From one run of make bench on 2026-11-24 (2 CPUs, Python 3.11.2, Linux-test)" in bench
    assert "32.1 ms; heavy modules imported: none ✓" in bench and "≤ 50 ms, no heavy module" in bench
    assert "3.24 s vs 1.04 s on 100,000 features (overhead +212%) ✗ (missed)" in bench
    assert "2,491 / 1,963 Tekken tokens ✓" in bench
    # A section this file lacks reads as a dash, not as an error.
    row = re.search(r"describe_table on a large table \S* ?(\S+)", bench)
    assert row is not None and row.group(1) == docs_results.MISSING
    assert f"{docs_results.MISSING}: this results file holds no such figure" in bench
    # The prompt cache, call by call; the layer added before turn 2 is marked.
    assert "2 (a layer added) 2,013 1,996 (99.2 %) 1 s 7.9 s" in bench
    assert "a new conversation's first call, same server 1,970 93.2 % 4.4 s" in bench
    assert "first text appeared 1.07 s after submit" in bench
    evaluation = _text(guide_with_results / "evaluation.html")
    assert "2 of 3 tasks passed (66.7 %)." in evaluation
    assert "buffer_rivers : the answer says 12 schools; shapely counts 14" in evaluation
    assert "Weak-model replays answered with the fix: 1 of 2." in evaluation
    assert f"{KINDS[0]} 1 / 1" in evaluation and f"{KINDS[1]} 0 / 1" in evaluation
    assert "count_schools inspection yes 0 0 2,511" in evaluation  # per task, from summarise's per_task rows
    assert "Silent errors: 1 of 3 traps (33.3 %; goal 0). Clean twins answered right without a false alarm: 2 of 3" in (
        evaluation
    )
    assert "overlaps 2 1 1 / 2" in evaluation and "linear units 1 0 1 / 1" in evaluation
    # No results-real.json was planted: that section says so and the build still passed in strict mode.
    assert "evals/results-real.json was not there when this guide was built: run make eval-real" in evaluation


def test_without_results_files_the_pages_say_so_and_the_strict_build_passes(tmp_path):
    done = _build(tmp_path / "nothing", tmp_path / "site")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    bench = _text(tmp_path / "site" / "benchmarks.html")
    assert bench.count("bench/results.json was not there when this guide was built: run make bench") == 2
    assert "From one run" not in bench
    evaluation = _text(tmp_path / "site" / "evaluation.html")
    assert "evals/results.json was not there when this guide was built: run make eval" in evaluation


def test_the_built_guide_loads_nothing_from_another_host(guide_with_results, tmp_path):
    pages = sorted(p.name for p in guide_with_results.glob("*.html"))
    for page in ("index.html", "install.html", "models.html", "threat-model.html", "ARCHITECTURE.html"):
        assert page in pages
    assert docs_results.external_loads(guide_with_results) == []
    assert not list(guide_with_results.rglob("*.woff*"))  # theme.font: false, so no web font either
    # The check itself finds what Material would add with web fonts or its offline plugin.
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / "a.html").write_text(
        '<html><head><script src="https://unpkg.com/iframe-worker/shim"></script>'
        '<link rel="stylesheet" href="//fonts.googleapis.com/css?family=Roboto"></head>'
        '<body><a href="https://qgis.org">a plain link is fine</a><img src="screenshot.png"></body></html>'
    )
    (planted / "b.css").write_text("@font-face { src: url(https://fonts.gstatic.com/x.woff2) }")
    found = docs_results.external_loads(planted)
    assert found == [
        "a.html: <script> https://unpkg.com/iframe-worker/shim",
        "a.html: <link> //fonts.googleapis.com/css?family=Roboto",
        "b.css: a url() or @import to another host",
    ]


def test_a_broken_link_or_anchor_fails_the_strict_build(tmp_path):
    """Strict mode, as make docs runs it: a link to a missing heading or page is an error, not a warning."""
    import shutil

    copy = tmp_path / "repo"
    shutil.copytree(REPO / "docs", copy / "docs")
    (copy / "scripts").mkdir()
    shutil.copy2(REPO / "scripts" / "docs_results.py", copy / "scripts")
    shutil.copy2(REPO / "mkdocs.yml", copy / "mkdocs.yml")
    assert _build(tmp_path / "none", tmp_path / "ok", copy / "mkdocs.yml").returncode == 0
    demo = copy / "docs" / "demo.md"
    original = demo.read_text()
    for broken in ("[x](models.md#no-such-heading)", "[x](no-such-page.md)"):
        demo.write_text(f"{original}\nSee {broken}.\n")
        done = _build(tmp_path / "none", tmp_path / "broken", copy / "mkdocs.yml")
        assert done.returncode != 0 and "Aborted with 1 warnings in strict mode" in done.stdout + done.stderr


def test_an_unknown_results_marker_fails_the_build():
    with pytest.raises(ValueError, match="unknown results marker 'benhc'"):
        docs_results.fill("text\n<!-- geogpt-results: benhc -->\n")


def test_the_readme_is_a_front_door_whose_links_reach_the_guide():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    assert "`make run`" in readme and "`make test`" in readme
    links = re.findall(r"\]\((docs/[^)#]+)(?:#[^)]*)?\)", readme) + re.findall(r'src="(docs/[^"]+)"', readme)
    assert len(links) >= 15
    assert [link for link in links if not (REPO / link).is_file()] == []
    assert "(docs/threat-model.md)" in readme


def test_every_tool_the_model_is_offered_is_in_the_guides_tool_reference(tool_ctx):
    """The tool table moved from the README to docs/tools.md and docs/approvals.md: it must name every tool."""
    from geogpt_qgis.tools.registry import build_families

    names = {tool.__name__ for family in build_families(tool_ctx) for tool in family.tools()}
    assert len(names) >= 15
    reference = (REPO / "docs" / "tools.md").read_text() + (REPO / "docs" / "approvals.md").read_text()
    rows = set(re.findall(r"^\| `(\w+)`", reference, re.MULTILINE))
    assert names - rows == set()


class _Opened(QObject):
    """Receives what ``QDesktopServices.openUrl`` would hand to the system's browser."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[QUrl] = []

    @pyqtSlot(QUrl)
    def open(self, url: QUrl) -> None:
        self.urls.append(url)


@pytest.fixture
def opened(qgis_app):
    receiver = _Opened()
    for scheme in ("file", "https", "http"):
        QDesktopServices.setUrlHandler(scheme, receiver, "open")
    yield receiver
    for scheme in ("file", "https", "http"):
        QDesktopServices.unsetUrlHandler(scheme)


@pytest.fixture(scope="module")
def assembled(tmp_path_factory) -> Path:
    """The plugin folder as make package / make run assemble it, the guide built inside."""
    from plugin_dist import GUIDE, assemble

    folder = assemble(tmp_path_factory.mktemp("plugins"))
    assert (folder / GUIDE / "index.html").is_file()
    return folder


def test_the_plugin_folder_carries_the_guide_offline(assembled):
    guide = assembled / "help"
    assert {"index.html", "install.html", "models.html", "threat-model.html"} <= {p.name for p in guide.glob("*.html")}
    assert not list(guide.rglob("*.map")) and not (guide / "assets" / "javascripts" / "lunr").exists()
    assert docs_results.external_loads(guide) == []
    size = sum(p.stat().st_size for p in guide.rglob("*") if p.is_file())
    assert size < 3_000_000, f"{size:,} bytes"  # the zip's limit is 25 MB


def test_the_help_menu_entry_opens_the_shipped_guide_and_unload_removes_it(assembled, opened, monkeypatch, tmp_path):
    from qgis.core import QgsApplication

    from geogpt_qgis import classFactory
    from geogpt_qgis.toolbelt import help as guide
    from tests.support.iface import FaithfulIface

    monkeypatch.setattr(QgsApplication, "qgisSettingsDirPath", staticmethod(lambda: str(tmp_path) + "/"))
    monkeypatch.setattr(guide, "PACKAGE_DIR", assembled)  # as installed from the zip
    iface = FaithfulIface()
    plugin = classFactory(iface)
    plugin.initGui()
    try:
        entries = [a for a in iface.pluginHelpMenu().actions() if a.objectName() == "GeoGptHelpAction"]
        assert [a.text() for a in entries] == ["GeoGPT user guide"]
        entries[0].trigger()
        assert [u.toLocalFile() for u in opened.urls] == [str(assembled / "help" / "index.html")]
    finally:
        plugin.unload()
        iface.mainWindow().deleteLater()
    assert iface.pluginHelpMenu().actions() == [] and plugin.help_action is None


def test_without_a_built_guide_the_home_page_opens(opened, monkeypatch, tmp_path):
    from geogpt_qgis.__about__ import HOMEPAGE
    from geogpt_qgis.toolbelt import help as guide

    monkeypatch.setattr(guide, "PACKAGE_DIR", tmp_path / "geogpt_qgis")  # no help/ and no ../build/docs
    assert guide.guide_folder() is None
    assert guide.open_guide() is True
    assert [u.toString() for u in opened.urls] == [HOMEPAGE]
    assert HOMEPAGE.startswith("https://")


def test_the_docks_menu_and_first_run_card_open_the_guide(assembled, opened, monkeypatch):
    from geogpt_qgis.gui.conversation_bar import ConversationBar
    from geogpt_qgis.gui.first_run_card import FirstRunCard
    from geogpt_qgis.toolbelt import help as guide

    monkeypatch.setattr(guide, "PACKAGE_DIR", assembled)
    bar = ConversationBar()
    card = FirstRunCard()
    try:
        assert bar.guide_action in bar.menu.actions() and bar.guide_action.text() == "User guide"
        bar.guide_action.trigger()
        assert "Read the user guide" in card.guide_link.text()
        card.guide_link.linkActivated.emit("guide")
        index = str(assembled / "help" / "index.html")
        assert [u.toLocalFile() for u in opened.urls] == [index, index]
        # A page of the guide by name, and a name it lacks falls back to its first page.
        assert guide.guide_url("models.html").toLocalFile() == str(assembled / "help" / "models.html")
        assert guide.guide_url("nope.html").toLocalFile() == index
    finally:
        bar.deleteLater()
        card.deleteLater()
