"""The user guide's generated tables, and its offline check: an MkDocs hook (``mkdocs.yml``: ``hooks:``).

Figures are never typed into the guide by hand.  A page holds a marker such as
``<!-- geogpt-results: bench -->`` and this hook replaces it, at build time,
with tables made from the results file that ``make bench`` / ``make eval`` /
``make eval-real`` wrote (``bench/results.json``, ``evals/results.json``,
``evals/results-real.json``; not in git).  A missing file makes the page say so
plainly, and the build still passes in strict mode.  ``GEOGPT_RESULTS_ROOT``
points the hook at another folder holding ``bench/`` and ``evals/`` (the tests
use it).

After the build, every page is scanned: a script, stylesheet, image, frame or
CSS ``url()`` that would load from another host fails the build, so the guide
opens with no network (links in the text may point anywhere).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"<!--\s*geogpt-results:\s*([a-z-]+)\s*-->")
MISSING = "—"  # a figure the results file does not hold (an older format)

Row = tuple[str, Callable[[dict[str, Any]], str], Callable[[dict[str, Any]], str]]


def results_root() -> Path:
    return Path(os.environ.get("GEOGPT_RESULTS_ROOT") or REPO)


def load(relative: str) -> dict[str, Any] | str:
    """The results file's content, or a sentence saying why there is none."""
    path = results_root() / relative
    if not path.is_file():
        return "missing"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return f"`{relative}` could not be read ({type(exc).__name__}: {exc})."
    if not isinstance(data, dict):
        return f"`{relative}` does not hold a JSON object."
    return data


def num(value: Any, digits: int | None = None) -> str:
    """``1234567`` as ``1,234,567``; floats as measured (or rounded to ``digits``)."""
    if isinstance(value, bool) or value is None:
        raise TypeError(f"not a number: {value!r}")
    if isinstance(value, int):
        return f"{value:,}"
    if digits is not None:
        return f"{value:,.{digits}f}"
    return f"{value:,}" if abs(value) >= 1000 else f"{value:g}"


def pct(share: Any) -> str:
    """A share (0..1) as a percentage."""
    return f"{share * 100:.1f} %"


def met(flag: Any) -> str:
    return "" if flag is None else (" ✓" if flag else " ✗ (missed)")


def cell(make: Callable[[dict[str, Any]], str], data: dict[str, Any]) -> str:
    """One table cell; a figure this results file lacks (an older or partial run) reads as a dash."""
    try:
        return make(data).replace("|", "\\|")
    except (KeyError, TypeError, IndexError, ValueError, ZeroDivisionError):
        return MISSING


def table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _stall(run: dict[str, Any]) -> str:
    return f"{num(run['longest_stall_ms'])} ms"


BENCH_ROWS: list[Row] = [
    (
        "plugin start (`classFactory` + `initGui`), median",
        lambda r: (
            f"{num(r['startup']['plugin_load_ms_median'])} ms; heavy modules imported: "
            f"{', '.join(r['startup']['heavy_modules_at_start']) or 'none'}{met(r['startup']['meets_goal'])}"
        ),
        lambda r: f"≤ {num(r['startup']['goal_ms'])} ms, no heavy module",
    ),
    (
        "the dock's first show / importing the agent stack (worker thread), medians",
        lambda r: (
            f"{num(r['startup']['dock_first_show_ms_median'])} ms / "
            f"{num(r['startup']['agent_stack_import_ms_median'])} ms"
        ),
        lambda r: "",
    ),
    (
        "the first answer's first event after Send: agent stack preloaded in the background / not, medians",
        lambda r: (
            f"{num(r['first_answer']['preloaded']['first_event_seconds_median'])} s / "
            f"{num(r['first_answer']['cold']['first_event_seconds_median'])} s{met(r['first_answer']['meets_goal'])} "
            f"(the main thread's longest stall during the preload: "
            f"{num(r['first_answer']['preload_longest_stall_ms_median'])} ms)"
        ),
        lambda r: f"≤ {num(r['first_answer']['goal_seconds'])} s preloaded",
    ),
    (
        "longest main-thread stall while streaming 500 / 2,000 tokens",
        lambda r: (
            f"{_stall(r['responsiveness']['stream_500_tokens'])} / "
            f"{_stall(r['responsiveness']['stream_2000_tokens'])} (idle: "
            f"{num(r['responsiveness']['idle_longest_stall_ms'])} ms){met(r['responsiveness']['meets_stall_goal'])}"
        ),
        lambda r: f"≤ {num(r['responsiveness']['goal_stall_ms'])} ms",
    ),
    (
        "… a 200,000-feature scan, then 2,000 tokens",
        lambda r: _stall(r["responsiveness"]["tool_then_2000_tokens"]),
        lambda r: f"≤ {num(r['responsiveness']['goal_stall_ms'])} ms",
    ),
    (
        "rendering 500 / 2,000 tokens",
        lambda r: (
            f"{num(r['responsiveness']['render_500_tokens_ms'])} / "
            f"{num(r['responsiveness']['render_2000_tokens_ms'])} ms (ratio "
            f"{num(r['responsiveness']['render_ratio_2000_vs_500'])}; linear is 4, quadratic 16)"
        ),
        lambda r: "linear",
    ),
    (
        "`run_algorithm` vs `processing.run`, buffer (medians)",
        lambda r: (
            f"{num(r['processing']['median_tool_seconds'])} s vs "
            f"{num(r['processing']['median_direct_seconds'])} s on {num(r['processing']['features'])} features "
            f"(overhead {r['processing']['tool_overhead_of_medians']:+.0%})"
            + met(r["processing"]["meets_overhead_goal"])
        ),
        lambda r: f"< {r['processing']['goal_overhead']:.0%} overhead",
    ),
    (
        "longest main-thread stall during that tool run: median / worst",
        lambda r: (
            f"{num(r['processing']['median_longest_stall_ms_per_run'])} / "
            f"{num(r['processing']['longest_stall_ms_during_tool_runs'])} ms{met(r['processing']['meets_stall_goal'])}"
        ),
        lambda r: f"≤ {num(r['processing']['goal_stall_ms'])} ms",
    ),
    (
        "ranking the installed algorithms for a query: mean / worst",
        lambda r: (
            f"{num(r['processing']['search_mean_ms'])} / {num(r['processing']['search_max_ms'])} ms over "
            f"{num(r['processing']['algorithms_indexed'])} algorithms{met(r['processing']['meets_search_goal'])}"
        ),
        lambda r: f"< {num(r['processing']['goal_search_ms'])} ms",
    ),
    (
        "`run_sql` returning a million geometries as a layer (median)",
        lambda r: (
            f"{num(r['postgis']['median_query_layer_seconds'])} s for {num(r['postgis']['result_rows'])} rows; "
            f"GeoJSON export + load {num(r['postgis']['median_geojson_seconds'])} s"
            + met(r["postgis"]["meets_layer_goal"])
        ),
        lambda r: f"≤ {num(r['postgis']['goal_seconds'])} s",
    ),
    (
        "`describe_table` on a large table (median)",
        lambda r: (
            f"{num(r['postgis']['median_describe_10m_seconds'])} s for {num(r['postgis']['table_rows'])} rows"
            f"{met(r['postgis']['meets_describe_goal'])}"
        ),
        lambda r: f"≤ {num(r['postgis']['goal_seconds'])} s",
    ),
    (
        "`describe_layer` on a large GeoTIFF: Float32 / Byte classes (medians)",
        lambda r: (
            f"{num(r['rasters']['dem']['median_seconds'])} / {num(r['rasters']['cover']['median_seconds'])} s "
            f"({num(r['rasters']['size'])} x {num(r['rasters']['size'])} pixels)"
            f"{met(r['rasters']['dem']['meets_goal'] and r['rasters']['cover']['meets_goal'])}"
        ),
        lambda r: f"≤ {num(r['rasters']['goal_seconds'])} s",
    ),
    (
        "a checkpoint, by conversation length (medians)",
        lambda r: ", ".join(
            f"{num(v['median_ms'])} ms at {k} messages" for k, v in r["conversations"]["checkpoint_step"].items()
        ),
        lambda r: "",
    ),
    (
        "opening a long conversation in the dock",
        lambda r: (
            f"{num(r['conversations']['open_median_ms'])} ms for {num(r['conversations']['messages'])} "
            f"messages, longest stall {num(r['conversations']['open_longest_stall_median_ms'])} ms"
        ),
        lambda r: "",
    ),
    (
        "prompt budget: every tool family / a plain project",
        lambda r: (
            f"{num(r['prompt_budget']['every_family']['total_tokens'])} / "
            f"{num(r['prompt_budget']['plain_project']['total_tokens'])} {r['prompt_budget']['tokenizer']} tokens"
            f"{met(r['prompt_budget']['meets_goal'])}"
        ),
        lambda r: f"≤ {num(r['prompt_budget']['goal_tokens'])}",
    ),
    (
        "prompt cache: lowest share reused after the first call",
        lambda r: (
            f"{num(r['prompt_cache']['lowest_cached_pct_after_first'])} %" + met(r["prompt_cache"]["meets_cache_goal"])
        ),
        lambda r: f"≥ {num(r['prompt_cache']['goal_cached_pct'])} %",
    ),
    (
        "prompt cache: first token at the last turn / turn 1",
        lambda r: _first_token(r["prompt_cache"]),
        lambda r: f"≤ {num(r['prompt_cache']['goal_first_token_ratio'])}×",
    ),
]


def _first_token(cache: dict[str, Any]) -> str:
    last = cache[f"first_token_turn_{cache['turns']}_s"]
    return (
        f"{num(last)} s / {num(cache['first_token_turn_1_s'])} s (ratio {num(cache['first_token_ratio'])})"
        f"{met(cache['meets_first_token_goal'])}"
    )


def _not_yet(relative: str, command: str) -> str:
    return (
        f'!!! note "No figures in this build"\n    `{relative}` was not there when this guide was built: '
        f"run `{command}` (it writes the file), then `make docs`."
    )


def _provenance(data: dict[str, Any], command: str) -> str:
    machine = data.get("machine") or {}
    where = ", ".join(
        part
        for part in (
            f"{machine['cpus']} CPUs" if machine.get("cpus") else "",
            f"Python {machine['python']}" if machine.get("python") else "",
            str(machine.get("platform") or ""),
        )
        if part
    )
    when = f" on {data['date']}" if data.get("date") else ""
    return f"From one run of `{command}`{when}" + (f" ({where})" if where else "") + "."


def render_bench() -> str:
    data = load("bench/results.json")
    if data == "missing":
        return _not_yet("bench/results.json", "make bench")
    if isinstance(data, str):
        return data
    rows = [(label, cell(result, data), cell(goal, data)) for label, result, goal in BENCH_ROWS]
    lacking = any(row[1] == MISSING for row in rows)
    return (
        _provenance(data, "make bench")
        + " Goals marked ✗ were missed in that run.\n\n"
        + table(("measure", "result", "goal"), rows)
        + (
            f"\n\n{MISSING}: this results file holds no such figure (an older `make bench` wrote it)."
            if lacking
            else ""
        )
    )


def render_prompt_cache() -> str:
    data = load("bench/results.json")
    if data == "missing":
        return _not_yet("bench/results.json", "make bench")
    if isinstance(data, str):
        return data
    cache = data.get("prompt_cache")
    if not isinstance(cache, dict) or not isinstance(cache.get("per_call"), list):
        return "This `bench/results.json` holds no prompt-cache figures."
    rows = [
        (
            cell(lambda c, row=row: f"{row['turn']}" + _added(c, row), cache),
            cell(lambda _c, row=row: num(row["prompt_tokens"]), cache),
            cell(lambda _c, row=row: f"{num(row['cached_tokens'])} ({num(row['cached_pct'])} %)", cache),
            cell(lambda _c, row=row: f"{num(row['first_token_s'])} s", cache),
            cell(lambda _c, row=row: f"{num(row['total_s'])} s", cache),
        )
        for row in cache["per_call"]
    ]
    second = cache.get("new_conversation_first_call") or {}
    rows.append(
        (
            "a new conversation's first call, same server",
            cell(lambda _c: num(second["prompt_tokens"]), cache),
            cell(lambda _c: f"{num(second['cached_pct'])} %", cache),
            cell(lambda _c: f"{num(second['first_token_s'])} s", cache),
            MISSING,
        )
    )
    setup = cell(
        lambda c: (
            f"{c['model']}, n_ctx {num(c['n_ctx'])}, answers bounded to {num(c['answer_tokens'])} tokens, "
            f"medians of {num(c['repeats'])} runs"
        ),
        cache,
    )
    dock = cell(_dock_first_text, cache)
    note = "" if dock == MISSING else f"\n\n{dock}"
    return (
        f"{_provenance(data, 'make bench')} {setup}.\n\n"
        + table(("turn", "prompt tokens", "from the cache", "first token", "whole call"), rows)
        + note
    )


def _dock_first_text(cache: dict[str, Any]) -> str:
    dock, server = cache[f"dock_first_text_turn_{cache['turns']}_s"], cache[f"first_token_turn_{cache['turns']}_s"]
    return (
        f"In the dock, the first text appeared {num(dock)} s after submit at the last turn "
        f"(the server's first token: {num(server)} s)."
    )


def _added(cache: dict[str, Any], row: dict[str, Any]) -> str:
    return " (a layer added)" if row["turn"] in cache.get("layers_added_before_turns", []) else ""


def render_eval() -> str:
    data = load("evals/results.json")
    if data == "missing":
        return _not_yet("evals/results.json", "make eval")
    if isinstance(data, str):
        return data
    summary = cell(lambda d: f"**{num(d['passed'])} of {num(d['tasks'])} tasks passed ({pct(d['pass_rate'])}).**", data)
    groups = [
        (str(group), cell(lambda _d, g=g: f"{num(g['passed'])} / {num(g['tasks'])}", data))
        for group, g in (data.get("groups") or {}).items()
    ]
    failures = data.get("failures") or {}
    failed = "\n".join(f"- `{task}`: " + "; ".join(map(str, why)) for task, why in failures.items())
    robust = data.get("robustness") or {}
    kinds = [
        (str(kind), cell(lambda _d, k=k: f"{num(k['fixed'])} / {num(k['replays'])}", data))
        for kind, k in (robust.get("kinds") or {}).items()
    ]
    budget = cell(_eval_budget, data)
    parts = [
        "From the last run of `make eval` (scripted model, real agent, tools, QGIS and PostGIS).",
        summary,
        table(("group", "passed"), groups),
        "Failed tasks and why:\n\n" + failed if failed else "No task failed.",
        "Weak-model replays answered with the fix: "
        + cell(lambda d: f"{num(d['robustness']['fixed'])} of {num(d['robustness']['replays'])}.", data),
        table(("mistake replayed", "answered with the fix"), kinds),
        "Per task: model calls, tool calls, and the largest prompt sent (system prompt + tool schemas + history, "
        "in Tekken tokens):",
        table(("task", "group", "passed", "model calls", "tool calls", "largest prompt"), _per_task(data)),
    ]
    if budget != MISSING:
        parts.append(budget)
    return "\n\n".join(parts)


def _per_task(data: dict[str, Any]) -> list[tuple[str, ...]]:
    return [
        (
            cell(lambda _d, r=row: f"`{r['id']}`", data),
            cell(lambda _d, r=row: str(r["group"]), data),
            cell(lambda _d, r=row: "yes" if r["passed"] else "no", data),
            cell(lambda _d, r=row: num(r["model_calls"]), data),
            cell(lambda _d, r=row: num(r["tool_calls"]), data),
            cell(lambda _d, r=row: num(r["largest_prompt"]), data),
        )
        for row in data.get("per_task") or []
    ]


def _eval_budget(data: dict[str, Any]) -> str:
    budget, every = data["prompt_budget"], data["prompt_budget"]["every_family"]
    return (
        f"The prompt of a call with every tool family: {num(every['system_prompt_tokens'])} tokens of system prompt "
        f"+ {num(every['schema_tokens'])} of tool schemas = {num(every['total_tokens'])} {budget['tokenizer']} tokens "
        f"(goal ≤ {num(budget['goal_tokens'])})."
    )


def render_eval_real() -> str:
    """One line per run of ``make eval-real`` (model, tool-call mode, profile), then each task's result per run."""
    data = load("evals/results-real.json")
    if data == "missing":
        return _not_yet("evals/results-real.json", "make eval-real")
    if isinstance(data, str):
        return data
    runs = [run for run in data.get("runs") or [] if isinstance(run, dict)]
    if not runs:
        return "`evals/results-real.json` holds no runs (an older format): run `make eval-real` again."
    summary = table(
        ("model", "server", "tool calls", "profile", "passed", "tasks with a tool call", "time"),
        [
            (
                cell(lambda r: r["model"], run),
                cell(lambda r: r["server"], run),
                cell(lambda r: r["mode"], run),
                cell(lambda r: r["profile"], run),
                cell(lambda r: f"**{num(r['passed'])} of {num(r['tasks'])}**", run),
                cell(lambda r: f"{num(r['tasks_with_a_tool_call'])} of {num(r['tasks'])}", run),
                cell(lambda r: f"{num(r['seconds'])} s", run),
            )
            for run in runs
        ],
    )
    head = cell(lambda d: f"From the last run of `make eval-real` ({num(d['seconds'])} s in all):", data)
    sections = [head, summary]
    for run in runs:
        rows = [
            (
                cell(lambda _d, t=t: f"`{t['id']}`", run),
                cell(lambda _d, t=t: "yes" if t["passed"] else "no", run),
                cell(lambda _d, t=t: ", ".join(t["tool_calls"]) or "none", run),
                cell(lambda _d, t=t: "; ".join(t["failures"]) or "", run),
            )
            for t in run.get("results") or []
        ]
        title = cell(lambda r: f"**{r['model']}, {r['mode']} calls, {r['profile']} profile**", run)
        sections += [title, table(("task", "passed", "tool calls", "why it failed"), rows)]
    return "\n\n".join(sections)


def render_traps() -> str:
    """The trap suite's two figures (``tests/traps``, in ``make test``) and its traps per family."""
    data = load("evals/traps.json")
    if data == "missing":
        return _not_yet("evals/traps.json", "make test")
    if isinstance(data, str):
        return data
    summary = cell(
        lambda d: (
            f"**Silent errors: {num(d['silent_errors'])} of {num(d['traps'])} traps ({pct(d['silent_error_rate'])}; "
            f"goal 0). Clean twins answered right without a false alarm: {num(d['twins_complete'])} of "
            f"{num(d['twins'])} ({pct(d['twin_completion'])}; goal 100 %).**"
        ),
        data,
    )
    families = [
        (
            str(name),
            cell(lambda _d, f=f: f"{num(f['traps'])}", data),
            cell(lambda _d, f=f: f"{num(f['silent'])}", data),
            cell(lambda _d, f=f: f"{num(f['complete'])} / {num(f['twins'])}", data),
        )
        for name, f in sorted((data.get("families") or {}).items())
    ]
    return "\n\n".join(
        [
            "From the last run of the trap suite (`tests/traps`, part of `make test`): "
            + cell(lambda d: str(d["project"]), data)
            + ".",
            summary,
            table(("family", "traps", "silent errors", "twins answered"), families),
        ]
    )


RENDERERS: dict[str, Callable[[], str]] = {
    "bench": render_bench,
    "prompt-cache": render_prompt_cache,
    "eval": render_eval,
    "eval-real": render_eval_real,
    "traps": render_traps,
}


def fill(markdown: str) -> str:
    """The page with every results marker replaced by its tables; an unknown marker is an error."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in RENDERERS:
            raise ValueError(f"unknown results marker {name!r} (known: {', '.join(RENDERERS)})")
        return RENDERERS[name]()

    return MARKER.sub(replace, markdown)


# What would make a page load something: tag attributes, and url() in inline styles.
LOADING_ATTRIBUTES = {"script": "src", "img": "src", "iframe": "src", "source": "src", "audio": "src", "video": "src"}
CSS_URL = re.compile(r"url\(\s*['\"]?(https?:)?//", re.IGNORECASE)


class _ExternalLoads(HTMLParser):
    """Collects every resource a page would fetch from another host."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        urls = []
        if tag in LOADING_ATTRIBUTES:
            urls.append(values.get(LOADING_ATTRIBUTES[tag], ""))
            urls.extend(part.split()[0] for part in values.get("srcset", "").split(",") if part.strip())
        if tag == "link" and values.get("rel", "").lower() not in ("", "canonical"):
            urls.append(values.get("href", ""))  # stylesheets, icons, preloads, preconnects
        if tag == "object":
            urls.append(values.get("data", ""))
        self.found += [f"<{tag}> {url}" for url in urls if is_external(url)]
        if CSS_URL.search(values.get("style", "")):
            self.found.append(f"<{tag} style> {values['style']}")

    def handle_data(self, data: str) -> None:
        if self.lasttag == "style" and CSS_URL.search(data):
            self.found.append("<style> url() to another host")


def is_external(url: str) -> bool:
    return bool(re.match(r"^\s*(https?:)?//", url, re.IGNORECASE))


def external_loads(site: Path) -> list[str]:
    """``page: what it would fetch`` for every page of the built site, and every CSS file's remote url()/@import."""
    found = []
    for page in sorted(site.rglob("*.html")):
        parser = _ExternalLoads()
        parser.feed(page.read_text(encoding="utf-8"))
        found += [f"{page.relative_to(site)}: {item}" for item in parser.found]
    for sheet in sorted(site.rglob("*.css")):
        text = sheet.read_text(encoding="utf-8", errors="replace")
        if CSS_URL.search(text) or re.search(r"@import\s+['\"]?(https?:)?//", text, re.IGNORECASE):
            found.append(f"{sheet.relative_to(site)}: a url() or @import to another host")
    return found


# MkDocs hook entry points.


def on_page_markdown(markdown: str, **_: Any) -> str:
    return fill(markdown)


def on_post_build(config: Any, **_: Any) -> None:
    from mkdocs.exceptions import PluginError

    found = external_loads(Path(config["site_dir"]))
    if found:
        raise PluginError("the guide would fetch from other hosts (it must open offline):\n" + "\n".join(found))
