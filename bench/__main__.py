"""``make bench``: every benchmark, each in its own QGIS process; figures printed and saved.

    python -m bench            prints the figures and writes bench/results.json

- Start-up (``bench.startup``): ``classFactory`` + ``initGui`` in a fresh QGIS
  (median of several processes), the dock's first show, and the one-off cost
  of importing the agent stack on the worker; the first answer's first event
  after Send, with the agent stack preloaded in the background and without
  (``bench.first_answer``), goal <= 0.3 s.
- Responsiveness (``bench.responsiveness``): the longest main-thread stall while
  the dock streams answers and runs a heavy tool; rendering cost at 500 and
  2,000 tokens.
- Processing (``bench.processing``): run_algorithm versus ``processing.run`` on
  a 100,000-feature buffer, the main-thread stall meanwhile, and search speed.
- PostGIS (``bench.postgis``): a million-geometry query result as a layer versus
  a GeoJSON round trip; describing a ten-million-row table.
- Prompt budget (``bench.prompt_budget``): the tokens of system prompt and
  tool schemas in one call (Tekken tokens, and the agent's own estimate), with
  every tool family and without.
- Rasters (``bench.rasters``): describe_layer on a 10,000 x 10,000 compressed
  GeoTIFF (a Float32 surface and a Byte land cover, no overviews), goal <= 1 s.
- Conversations (``bench.conversations``): the per-step cost of checkpointing as
  a conversation grows to 200 messages, the store's size, and opening that
  conversation in the dock (total time, main-thread stall).
- Prompt cache (``bench.prompt_cache``): a 10-turn conversation through the real
  agent against a real llama.cpp server (llama-cpp-python, Gemma 3 270M, one
  thread; ``make llama`` builds it): per call the prompt tokens, the tokens the
  server reused from its cache and the time to the first token.

These machines are shared and noisy: compare ratios from one run, not absolute
times across runs.

    python -m bench --quick    every benchmark on small sizes (``make bench-quick``, part of
                               ``make test``): fails if any benchmark errors, never on timings;
                               the prompt cache runs beside the others (under a minute on 2 cores)
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time

from bench.common import QUICK_ENV, REPO, run_child, start_child
from bench.first_answer import bench_first_answer
from bench.startup import GOAL_STARTUP_MS, bench_startup
from harness.demo import ensure_demo

RESULTS = REPO / "bench" / "results.json"
RUN_LABELS = {
    "first_message_500_tokens": "first message (imports the agent stack on the worker)",
    "stream_500_tokens": "500 tokens",
    "stream_2000_tokens": "2,000 tokens",
    "tool_then_2000_tokens": "tool (200k-feature scan) + 2,000 tokens",
}


def startup_section(results: dict) -> None:
    startup = results["startup"] = bench_startup()
    print(
        f"start-up: classFactory+initGui median {startup['plugin_load_ms_median']} ms "
        f"(goal <= {GOAL_STARTUP_MS:g} ms); the dock's first show (builds the chat panel) "
        f"{startup['dock_first_show_ms_median']} ms; importing the agent stack "
        f"{startup['agent_stack_import_ms_median']} ms (on the worker, with the first message); "
        f"heavy modules at start: {startup['heavy_modules_at_start'] or 'none'}"
    )
    first = results["first_answer"] = bench_first_answer()
    cold = f"{first['cold']['first_event_seconds_median']} s" if "cold" in first else "not run in --quick"
    print(
        f"first answer: its first event {first['preloaded']['first_event_seconds_median']} s after Send with the "
        f"agent stack preloaded (goal <= {first['goal_seconds']:g} s; the preload took "
        f"{first['preload_seconds_median']} s on a background thread, QGIS idle, the main thread's longest stall "
        f"meanwhile {first['preload_longest_stall_ms_median']} ms, idle {first['idle_longest_stall_ms_median']} ms); "
        f"without the preload: {cold} (medians of {first['runs']} fresh QGIS processes)"
    )


def responsiveness_section(results: dict) -> None:
    r = results["responsiveness"] = run_child("bench.responsiveness")
    print(
        f"rendering on the main thread: 500 tokens {r['render_500_tokens_ms']} ms, "
        f"2,000 tokens {r['render_2000_tokens_ms']} ms; ratio {r['render_ratio_2000_vs_500']} "
        f"(linear 4, quadratic 16); in the live dock (medians): {r['stream_500_tokens']['render_ms']} ms "
        f"and {r['stream_2000_tokens']['render_ms']} ms"
    )
    print(
        f"longest main-thread stall (median of {r['repeats']}): "
        + ", ".join(f"{label} {r[name]['longest_stall_ms']} ms" for name, label in RUN_LABELS.items())
        + f" (goal <= {r['goal_stall_ms']:g} ms; the same heartbeat with nothing running: "
        f"{r['idle_longest_stall_ms']} ms)"
    )
    failed = [name for name in RUN_LABELS if set(r[name].get("statuses") or [r[name].get("status")]) != {"finished"}]
    if failed:
        raise RuntimeError(f"runs that did not finish: {', '.join(failed)}")


def processing_section(results: dict) -> None:
    p = results["processing"] = run_child("bench.processing")
    print(
        f"processing: buffer of {p['features']:,} features: run_algorithm {p['median_tool_seconds']} s vs "
        f"processing.run {p['median_direct_seconds']} s (medians of {p['rounds']}); overhead "
        f"{p['tool_overhead']:+.1%} fastest vs fastest, {p['tool_overhead_of_medians']:+.1%} median vs median "
        f"(goal < {p['goal_overhead']:.0%}); the result read from its GeoPackage "
        f"{p['median_stored_seconds']} s after the call began (stored while the model reads it); longest "
        "main-thread stall during a tool run: median "
        f"{p['median_longest_stall_ms_per_run']} ms, worst {p['longest_stall_ms_during_tool_runs']} ms "
        f"(goal <= {p['goal_stall_ms']:g} ms; idle: {p['idle_longest_stall_ms']} ms)"
    )
    before = p["search_before"]
    print(
        f"search ({p['search_ranker']}): the expected algorithm in the top 5 for {p['search_top5_hits']} of "
        f"{p['search_queries']} queries ({p['search_top5_accuracy']:.1%}; goal >= {p['goal_top5_accuracy']:.0%}); "
        f"ranking {p['algorithms_indexed']} algorithms takes {p['search_mean_ms']} ms on average, "
        f"{p['search_max_ms']} ms at most (median of {p['search_repeats']} runs per query; "
        f"goal < {p['goal_search_ms']:g} ms); the index once: {p['index_read_ms']} ms on the main thread, "
        f"{p['index_build_ms']} ms on the first search's; before ({before['ranker']}): "
        f"{before['search_top5_accuracy']:.1%}, {before['search_mean_ms']} ms on average, {before['search_max_ms']} ms "
        f"at most, index {before['index_build_ms_main_thread']} ms on the main thread"
    )


def postgis_section(results: dict) -> None:
    g = results["postgis"] = run_child("bench.postgis", timeout=1800)
    print(
        f"postgis: a query returning {g['result_rows']:,} geometries added as a layer backed by the query in "
        f"{g['median_query_layer_seconds']} s (median of {g['rounds']}; goal <= {g['goal_seconds']:g} s); "
        f"exporting the same result to GeoJSON and loading the file: {g['median_geojson_seconds']} s "
        f"({g['geojson_vs_query_layer_ratio']}x slower); describing a {g['table_rows']:,}-row table: "
        f"{g['median_describe_10m_seconds']} s (goal <= {g['goal_seconds']:g} s)"
    )


def rasters_section(results: dict) -> None:
    r = results["rasters"] = run_child("bench.rasters")
    print(
        f"rasters: describe_layer on a {r['size']:,} x {r['size']:,} GeoTIFF: Float32 {r['dem']['median_seconds']} s, "
        f"Byte classes {r['cover']['median_seconds']} s (medians of {r['rounds']}; goal <= {r['goal_seconds']:g} s); "
        f"{r['dem']['statistics']} Against numpy over every pixel: the Float32 mean off by "
        f"{r['dem']['mean_error_percent']}%, Byte classes {r['cover']['classes_found']} found, shares within "
        f"{r['cover']['largest_share_error_points']} percentage points"
    )


def conversations_section(results: dict) -> None:
    c = results["conversations"] = run_child("bench.conversations")
    steps = c["checkpoint_step"]
    print(
        "conversations: a checkpoint (serialise, write, commit) costs "
        + ", ".join(f"{v['median_ms']} ms at {k} messages ({v['kilobytes']} KB)" for k, v in steps.items())
        + f"; the store holds {c['store_kilobytes']} KB for {c['messages']} messages (keeping every checkpoint "
        f"would be {c['all_checkpoints_kilobytes']} KB); opening the {c['messages']}-message conversation in the "
        f"dock: {c['open_median_ms']} ms until all {c['items_shown']} items are shown, {c['open_widgets_median_ms']} "
        f"ms of it making widgets on the main thread, longest stall {c['open_longest_stall_median_ms']} ms "
        f"(medians of 5; idle: {c['idle_longest_stall_ms']} ms)"
    )


def prompt_budget_section(results: dict) -> None:
    b = results["prompt_budget"] = run_child("bench.prompt_budget")
    for label, key in (("every tool family", "every_family"), ("a plain project", "plain_project")):
        m = b[key]
        print(
            f"prompt budget with {label}: system prompt {m['system_prompt_tokens']} + tool schemas "
            f"{m['schema_tokens']} = {m['total_tokens']} {b['tokenizer']} tokens (goal <= {b['goal_tokens']}; "
            f"the agent's own estimate, on the high side: {m['estimated_total_tokens']}); by family: "
            + ", ".join(f"{k} {v}" for k, v in m["families"].items())
        )
    tools = b["every_family"]["per_tool"]
    print("  by tool: " + ", ".join(f"{name} {tokens}" for name, tokens in tools.items()))
    full, compact = b["profiles"]["full"], b["profiles"]["compact"]
    print(
        f"  tool profiles, system prompt + tool block without the project brief: full {full['total_tokens']} "
        f"({len(full['tools'])} tools), compact {compact['system_prompt_tokens']} + {compact['schema_tokens']} = "
        f"{compact['total_tokens']} {b['tokenizer']} tokens ({len(compact['tools'])} tools; goal <= "
        f"{b['profiles']['compact_goal_tokens']}: {'met' if b['profiles']['compact_meets_goal'] else 'NOT met'})"
    )


def prompt_cache_section(results: dict) -> None:
    c = results["prompt_cache"] = run_child("bench.prompt_cache", timeout=3600)
    turns = c["turns"]
    print(
        f"prompt cache ({c['model']}, llama-cpp-python on 1 thread, {turns} turns, medians of {c['repeats']}; "
        "per call: prompt tokens, % from the cache, time to the first token):"
    )
    print(
        "  "
        + "; ".join(
            f"turn {row['turn']}: {row['prompt_tokens']} tok, {row['cached_pct']:g}%, {row['first_token_s']} s"
            for row in c["per_call"]
        )
    )
    cache_goal = "met" if c["meets_cache_goal"] else "NOT met"
    ttft_goal = "met" if c["meets_first_token_goal"] else "NOT met"
    second = c["new_conversation_first_call"]
    print(
        f"  lowest share from the cache after the first call {c['lowest_cached_pct_after_first']}% "
        f"(goal >= {c['goal_cached_pct']:g}%: {cache_goal}); first token at turn {turns} "
        f"{c[f'first_token_turn_{turns}_s']} s vs turn 1 {c['first_token_turn_1_s']} s, ratio "
        f"{c['first_token_ratio']} (goal <= {c['goal_first_token_ratio']:g}: {ttft_goal}); a new conversation's "
        f"first call on the warm server: {second['cached_pct']:g}% from the cache, first token in "
        f"{second['first_token_s']} s"
    )


SECTIONS = (
    ("start-up", startup_section),
    ("responsiveness", responsiveness_section),
    ("processing", processing_section),
    ("postgis", postgis_section),
    ("rasters", rasters_section),
    ("conversations", conversations_section),
    ("prompt budget", prompt_budget_section),
    ("prompt cache", prompt_cache_section),
)


def main(argv: list[str] | None = None) -> int:
    """Run every benchmark (each one even when another fails); non-zero exit if any failed.

    ``--quick`` runs the same code on small sizes (``bench.common.sized``) and
    writes no results: it only proves that every benchmark still works.
    """
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("--quick", action="store_true", help="small sizes, no results file: does every benchmark run?")
    args = parser.parse_args(argv)
    if args.quick:
        os.environ[QUICK_ENV] = "1"  # read by this process's modules and inherited by every child
        # Figures are not kept here, so the prompt cache, which mostly waits on its one-thread model server (about
        # 40 s), runs beside the other benchmarks instead of after them; the demo data they share is made first.
        ensure_demo()
        start_child("bench.prompt_cache", timeout=3600)
    started = time.monotonic()
    results: dict = {
        "date": datetime.date.today().isoformat(),
        "machine": {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count()},
    }
    failed: list[str] = []
    for name, section in SECTIONS:
        try:
            section(results)
        except Exception as exc:  # noqa: BLE001 - reported, and the exit status says so
            failed.append(name)
            print(f"FAILED: the {name} benchmark: {type(exc).__name__}: {exc}", file=sys.stderr)
    took = f"{time.monotonic() - started:.0f} s"
    if failed:
        print(f"{len(failed)} of {len(SECTIONS)} benchmarks failed ({', '.join(failed)}) in {took}", file=sys.stderr)
        return 1
    if args.quick:
        print(f"all {len(SECTIONS)} benchmarks ran on small sizes in {took} (figures not kept)")
        return 0
    RESULTS.write_text(json.dumps(results, indent=2))
    print(f"wrote {RESULTS.relative_to(REPO)} ({took})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
