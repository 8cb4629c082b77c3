"""The prompt cache of a real local server: how much of each prompt llama.cpp reuses, and the wait for the first token.

On a laptop CPU, processing the prompt dominates the wait.  llama.cpp (like
Ollama) keeps the KV cache of the previous request and processes only what
follows the longest common prefix of the two prompts, so a conversation stays
quick only if every request starts with the previous one, byte for byte after
the server's chat template: the system prompt, the tool block, every earlier
turn.  This drives a 10-turn conversation through the real agent (the
conversation service the dock and the CLI use) over the demo project, the user
adding a layer before turns 3, 6 and 9 (so state notes appear), against
llama-cpp-python's server running Gemma 3 270M on one thread (as the test
fixture does), answers bounded to ``ANSWER_TOKENS`` (their content does not
matter here).  Per model call it reports:

- prompt tokens and tokens served from the cache, from the server's verbose
  log (``N prefix-match hit, remaining M prompt tokens to eval``: N reused, N+M
  the prompt; this server puts no cache timings in its replies);
- time to the first token: from the request reaching a pass-through proxy in
  front of the server to the first streamed chunk carrying text or a tool call.

Goals: at least ``GOAL_CACHED_PCT`` % of the prompt from the cache on every
call after the first, and the first token at turn 10 within ``GOAL_TTFT_RATIO``
times that of turn 1.  Each repetition starts a fresh server, so turn 1
processes the whole prompt as the first question of a session does; after the
10 turns a second conversation's first call on the same server shows what a new
conversation costs once the system prompt and tool block are cached.  Medians
of ``REPEATS`` repetitions (the machine is shared).

The chat template: the GGUF carries none, and llama-cpp-python's ``gemma``
format drops system messages, tool schemas and tool results, while
``chatml-function-calling`` renders the tools only when a request names
``tool_choice`` (and then runs several completions per request), so neither
would show whether OUR request layout keeps the system prompt and tool block
a stable prefix.  The server is started with ``--chat_format
hf-tokenizer-config`` and ``CHAT_TEMPLATE``: Gemma's turn markers, the system
prompt and the tool block at the head of the first user turn (where Gemma 3's
own template puts the system prompt), tools, tool calls and tool results laid
out as Qwen 2.5's template (the layout most local tool-calling models use)
does.  Nothing in the agent's requests is edited.

    python -m bench.prompt_cache     prints one JSON line
"""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from bench.common import headless_qgis, quick, sized
from harness.llama_server import LocalProxy

TURNS = sized(10, 2)  # the quick run (make test): the cold first call, then one with a state note
REPEATS = sized(3, 1)
ADD_LAYER_BEFORE = sized((3, 6, 9), (2,))  # 1-based turns the user adds a layer before
# The quick run sends the compact tool profile (about 900 tokens instead of 2,100): the cold first call, which the
# one-thread server reads at some 60 tokens a second, takes half as long; the same agent, the same caching.
TOOL_PROFILE = sized("auto", "compact")
ANSWER_TOKENS = 64  # the smallest answer bound the agent accepts (ModelConfig.validate)
# The quick run's proxy lowers the bound it forwards to 8 tokens: the answers' content does not matter, and each
# of the three calls then generates in a fraction of a second instead of two (make bench forwards it untouched).
QUICK_ANSWER_TOKENS = sized(None, 8)
N_CTX = 8192
GOAL_CACHED_PCT = 95.0
GOAL_TTFT_RATIO = 1.2
RUN_TIMEOUT = 900.0  # one turn on a busy shared machine, the first one processing the whole prompt

QUESTIONS = [
    "Which layers does the project have?",
    "How many schools are there?",
    "What is the coordinate reference system of the project?",
    "Which layer has the most features?",
    "What fields does the roads layer have?",
    "Is there a layer with rivers?",
    "How large is the town?",
    "Which district has the most schools?",
    "What did I just add to the project?",
    "Summarise what we talked about.",
]

# Gemma's turns; the system prompt and the tool block head the first user turn; tools, tool calls and tool
# results laid out as Qwen 2.5 does.  llama-cpp-python's hf-tokenizer-config handler appends an empty assistant
# message instead of passing add_generation_prompt: that last message opens the model's turn.
CHAT_TEMPLATE = """{{ bos_token }}
{%- set first_user = namespace(done=false) -%}
{%- for message in messages -%}
{%- if message.role == 'system' -%}
{%- elif message.role == 'user' -%}
<start_of_turn>user
{% if not first_user.done -%}
{%- set first_user.done = true -%}
{%- if messages[0].role == 'system' %}{{ messages[0].content }}

{% endif -%}
{%- if tools %}# Tools

You may call one or more functions. Their signatures are within <tools></tools> XML tags:
<tools>
{% for tool in tools %}{{ tool | tojson }}
{% endfor %}</tools>

For each function call, return a JSON object with the function's name and arguments within \
<tool_call></tool_call> XML tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call>

{% endif -%}
{%- endif -%}
{{ message.content }}<end_of_turn>
{% elif message.role == 'assistant' and loop.last and not message.content and not message.tool_calls -%}
<start_of_turn>model
{% elif message.role == 'assistant' -%}
<start_of_turn>model
{{ message.content or '' }}
{%- for call in message.tool_calls or [] %}
<tool_call>
{"name": "{{ call.function.name }}", "arguments": {{ call.function.arguments }}}
</tool_call>
{%- endfor %}<end_of_turn>
{% elif message.role == 'tool' -%}
<start_of_turn>user
<tool_response>
{{ message.content }}
</tool_response><end_of_turn>
{% endif -%}
{%- endfor -%}
"""

_PREFIX_HIT = re.compile(r"Llama\.generate: (\d+) prefix-match hit, remaining (\d+) prompt tokens to eval")
_PROMPT_EVAL = re.compile(r"prompt eval time =\s*[\d.]+ ms /\s*(\d+) tokens")


@dataclass
class Call:
    """One chat request as the server saw it."""

    turn: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    first_token_s: float | None = None  # request in -> first streamed text or tool call out
    total_s: float = 0.0
    answer: str = ""

    @property
    def cached_pct(self) -> float:
        return round(100.0 * self.cached_tokens / self.prompt_tokens, 1) if self.prompt_tokens else 0.0

    def row(self) -> dict[str, Any]:
        return {**asdict(self), "cached_pct": self.cached_pct}


def read_cache_log(text: str) -> tuple[int, int]:
    """(prompt tokens, tokens reused from the cache) of one request, from the server's log of it.

    A request after a cached one logs the prefix match; the first request of a
    server logs no match, and its prompt size is in llama.cpp's timing line.
    """
    hit = _PREFIX_HIT.search(text)
    if hit:
        reused, remaining = int(hit.group(1)), int(hit.group(2))
        return reused + remaining, reused
    evaluated = _PROMPT_EVAL.search(text)
    if evaluated:
        return int(evaluated.group(1)), 0
    raise RuntimeError(f"the server logged no prompt size for a request:\n{text[-1500:]}")


def first_token_in(line: bytes) -> bool:
    """Whether a server-sent event line carries generated text or a tool call."""
    if not line.startswith(b"data: ") or line[6:].strip() == b"[DONE]":
        return False
    with contextlib.suppress(ValueError):
        for choice in json.loads(line[6:]).get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content") or delta.get("tool_calls"):
                return True
    return False


class TimingProxy(LocalProxy):
    """Passes every request to the server untouched (but ``QUICK_ANSWER_TOKENS``) and times each chat request.

    One request at a time (the agent sends one), so the server's log lines
    written meanwhile belong to it.
    """

    def __init__(self, server: Any) -> None:
        self.calls: list[Call] = []
        self.turn = 0
        super().__init__(server, "timing-proxy")

    def _log_size(self) -> int:
        return self.server.log_path.stat().st_size

    def _log_since(self, offset: int) -> str:
        with self.server.log_path.open("rb") as handle:
            handle.seek(offset)
            return handle.read().decode("utf-8", "replace")

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                self._forward(None)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if QUICK_ANSWER_TOKENS is not None and self.path.endswith("/chat/completions"):
                    request = json.loads(body)
                    request["max_tokens"] = QUICK_ANSWER_TOKENS
                    body = json.dumps(request).encode()
                self._forward(body)

            def _forward(self, body: bytes | None) -> None:
                chat = self.command == "POST" and self.path.endswith("/chat/completions")
                offset, started = proxy._log_size(), time.perf_counter()
                call = Call(turn=proxy.turn)
                upstream = http.client.HTTPConnection("127.0.0.1", proxy.server.port, timeout=RUN_TIMEOUT)
                kept = ("content-type", "accept", "authorization")
                upstream.request(
                    self.command,
                    self.path,
                    body=body,
                    headers={k: v for k, v in self.headers.items() if k.lower() in kept},
                )
                response = upstream.getresponse()
                self.send_response(response.status)
                for name, value in response.getheaders():
                    if name.lower() not in ("transfer-encoding", "content-length", "connection"):
                        self.send_header(name, value)
                self.send_header("Connection", "close")
                self.end_headers()
                pending = b""
                with contextlib.suppress(OSError, http.client.HTTPException):
                    while data := response.read1(65536):
                        if chat:
                            pending += data
                            *lines, pending = pending.split(b"\n")
                            for line in lines:
                                if call.first_token_s is None and first_token_in(line.strip()):
                                    call.first_token_s = round(time.perf_counter() - started, 3)
                                with contextlib.suppress(ValueError, IndexError, AttributeError):
                                    delta = json.loads(line.strip()[6:])["choices"][0]["delta"]
                                    call.answer += delta.get("content") or ""
                        self.wfile.write(data)
                        self.wfile.flush()
                upstream.close()
                self.close_connection = True
                if chat:
                    call.total_s = round(time.perf_counter() - started, 3)
                    call.prompt_tokens, call.cached_tokens = proxy._cache_figures(offset)
                    proxy.calls.append(call)

        return Handler

    def _cache_figures(self, offset: int) -> tuple[int, int]:
        """The request's prompt and cache figures; the timing line may follow the last streamed byte."""
        deadline = time.monotonic() + 5
        while True:
            text = self._log_since(offset)
            try:
                return read_cache_log(text)
            except RuntimeError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)


class FirstText:
    """When each run's first streamed text reached the main thread (where the dock shows it), after submit."""

    def __init__(self, worker: Any) -> None:
        self.worker = worker
        self.submitted: dict[int, float] = {}
        self.first: dict[int, float] = {}
        worker.event.connect(self._event)

    def submit(self, text: str, config: Any, note: str = "") -> int:
        started = time.perf_counter()
        run_id = self.worker.submit(text, config, note=note)
        self.submitted[run_id] = started
        return run_id

    def _event(self, run_id: int, event: object) -> None:
        from geogpt_qgis.core.events import TextDelta

        if isinstance(event, TextDelta) and run_id not in self.first:
            self.first[run_id] = time.perf_counter()

    def seconds(self, run_id: int) -> float | None:
        if run_id not in self.first:
            return None
        return round(self.first[run_id] - self.submitted[run_id], 3)


def user_adds_layer(project: Any, turn: int) -> None:
    """What a user does between two questions: a new layer (two features) appears in the project."""
    from qgis.core import QgsFeature, QgsGeometry, QgsPointXY, QgsVectorLayer

    layer = QgsVectorLayer("Point?crs=EPSG:25832&field=name:string", f"wells_{turn}", "memory")
    features = []
    for i in range(2):
        feature = QgsFeature(layer.fields())
        feature.setAttributes([f"well {i + 1}"])
        feature.setGeometry(QgsGeometry.fromPointXY(QgsPointXY(500000 + 100 * i, 6700000)))
        features.append(feature)
    layer.dataProvider().addFeatures(features)
    layer.updateExtents()
    project.addMapLayer(layer)


def start_server(workdir: Path) -> Any:
    """A fresh server for one repetition, started but not waited for (``one_repetition`` waits)."""
    from harness.llama_server import start_llama_server

    config_path = workdir / "tokenizer_config.json"
    config_path.write_text(
        json.dumps({"chat_template": CHAT_TEMPLATE, "bos_token": "<bos>", "eos_token": "<end_of_turn>"})
    )
    options = {
        "n_ctx": N_CTX,
        "chat_format": "hf-tokenizer-config",
        "extra_args": ("--hf_tokenizer_config_path", str(config_path)),
    }
    return start_llama_server(workdir / "server", wait=False, **options)


def one_repetition(workdir: Path, bridge: Any, server: Any) -> dict[str, Any]:
    """On ``server`` (stopped at the end), one 10-turn conversation, then a new conversation's first question."""
    from qgis.core import QgsProject

    from geogpt_qgis.agent.config import ModelConfig
    from geogpt_qgis.agent.conversation import Conversation
    from geogpt_qgis.tools.base import ToolContext
    from geogpt_qgis.tools.project_watch import ProjectWatcher
    from harness.demo import copy_demo
    from harness.llama_server import MODEL_ALIAS
    from harness.runs import RunRecorder

    project = QgsProject.instance()
    project.clear()
    project.read(str(copy_demo(workdir / "demo")))
    with contextlib.ExitStack() as stack:
        stack.callback(server.stop)
        server.wait_ready()
        proxy = stack.enter_context(TimingProxy(server))
        worker = Conversation(ToolContext(project=project, bridge=bridge), store_path=workdir / "store.sqlite")
        recorder = RunRecorder(worker)
        shown = FirstText(worker)
        watcher = ProjectWatcher(project, bridge)
        config = ModelConfig(
            provider="openai",
            base_url=proxy.base_url,
            model=MODEL_ALIAS,
            temperature=0.0,
            context_limit=N_CTX,
            timeout=RUN_TIMEOUT,
            max_steps=4,
            max_tokens=ANSWER_TOKENS,
            tool_profile=TOOL_PROFILE,
        )
        statuses, turn_runs = [], []
        try:
            for turn in range(1, TURNS + 1):
                if turn in ADD_LAYER_BEFORE:
                    user_adds_layer(project, turn)
                proxy.turn = turn
                run = shown.submit(QUESTIONS[turn - 1], config, note=watcher.drain() if turn > 1 else "")
                turn_runs.append(run)
                statuses.append(recorder.wait(run, RUN_TIMEOUT * 2).status)
            conversation = list(proxy.calls)
            # A second conversation on the same server: its system prompt and tool block are cached already.
            worker.new_conversation()
            proxy.turn = 1
            run = worker.submit(QUESTIONS[0], config)
            statuses.append(recorder.wait(run, RUN_TIMEOUT * 2).status)
            second = proxy.calls[len(conversation)]
        finally:
            watcher.close()
            worker.shutdown()
            project.clear()
    if set(statuses) != {"finished"}:
        raise RuntimeError(f"runs that did not finish: {statuses}")
    return {
        "server_start_s": round(server.started_seconds, 1),
        "dock_first_text_s": [shown.seconds(run_id) for run_id in turn_runs],
        "calls": [call.row() for call in conversation],
        "new_conversation_first_call": second.row(),
    }


def first_of_turn(calls: list[dict[str, Any]], turn: int) -> dict[str, Any]:
    return next(call for call in calls if call["turn"] == turn)


def _median(values: list[float | None]) -> float | None:
    known = [value for value in values if value is not None]
    return round(statistics.median(known), 2) if known else None


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians per call position across repetitions, and the goals checked on every repetition's calls."""
    width = min(len(run["calls"]) for run in runs)
    per_call = []
    for index in range(width):
        rows = [run["calls"][index] for run in runs]
        ttfts = [row["first_token_s"] for row in rows if row["first_token_s"] is not None]
        per_call.append(
            {
                "turn": rows[0]["turn"],
                "prompt_tokens": round(statistics.median(row["prompt_tokens"] for row in rows)),
                "cached_tokens": round(statistics.median(row["cached_tokens"] for row in rows)),
                "cached_pct": statistics.median(row["cached_pct"] for row in rows),
                "first_token_s": round(statistics.median(ttfts), 2) if ttfts else None,
                "total_s": round(statistics.median(row["total_s"] for row in rows), 2),
            }
        )
    later = [call["cached_pct"] for run in runs for call in run["calls"][1:]]
    first = [first_of_turn(run["calls"], 1)["first_token_s"] for run in runs]
    last = [first_of_turn(run["calls"], TURNS)["first_token_s"] for run in runs]
    ratio = statistics.median(b / a for a, b in zip(first, last, strict=True) if a and b)
    dock = [[run["dock_first_text_s"][turn - 1] for run in runs] for turn in (1, TURNS)]
    second = [run["new_conversation_first_call"] for run in runs]
    second_ttft = statistics.median(call["first_token_s"] for call in second if call["first_token_s"])
    return {
        "per_call": per_call,
        "lowest_cached_pct_after_first": min(later) if later else None,
        "first_token_turn_1_s": round(statistics.median(a for a in first if a), 2),
        f"first_token_turn_{TURNS}_s": round(statistics.median(b for b in last if b), 2),
        "first_token_ratio": round(ratio, 3),
        # The same, seen in the dock: submit to the first text on the main thread (the agent's own work included).
        "dock_first_text_turn_1_s": _median(dock[0]),
        f"dock_first_text_turn_{TURNS}_s": _median(dock[1]),
        "new_conversation_first_call": {
            "prompt_tokens": round(statistics.median(call["prompt_tokens"] for call in second)),
            "cached_pct": statistics.median(call["cached_pct"] for call in second),
            "first_token_s": round(second_ttft, 2),
        },
        f"first_token_turn_{TURNS}_vs_new_conversation": round(
            statistics.median(b for b in last if b) / second_ttft, 2
        ),
        "meets_cache_goal": bool(later) and min(later) >= GOAL_CACHED_PCT,
        "meets_first_token_goal": ratio <= GOAL_TTFT_RATIO,
    }


def main() -> dict[str, Any]:
    from harness.llama_server import MODEL_PATH

    with contextlib.ExitStack() as stack:
        workdirs = [
            Path(stack.enter_context(tempfile.TemporaryDirectory(prefix=f"geogpt-bench-cache-{repeat}-")))
            for repeat in range(REPEATS)
        ]
        # The quick run starts its one server before QGIS, which starts while the model loads (about 3 s saved);
        # make bench starts each server after the last one stopped (their start-up times stay their own).
        early = start_server(workdirs[0]) if quick() else None
        if early is not None:
            stack.callback(early.stop)
        with headless_qgis():
            from geogpt_qgis.toolbelt.main_thread import MainThreadBridge
            from harness.demo import ensure_demo

            ensure_demo()
            bridge = MainThreadBridge()
            runs = []
            try:
                for repeat, workdir in enumerate(workdirs):
                    server = early if repeat == 0 and early is not None else start_server(workdir)
                    runs.append(one_repetition(workdir, bridge, server))
            finally:
                bridge.close()
    return {
        "model": MODEL_PATH.name,
        "server": "llama-cpp-python server, 1 thread, --chat_format hf-tokenizer-config (bench.prompt_cache)",
        "n_ctx": N_CTX,
        "answer_tokens": ANSWER_TOKENS,
        "turns": TURNS,
        "repeats": REPEATS,
        "layers_added_before_turns": list(ADD_LAYER_BEFORE),
        "goal_cached_pct": GOAL_CACHED_PCT,
        "goal_first_token_ratio": GOAL_TTFT_RATIO,
        **summarise(runs),
        "runs": runs,
    }


if __name__ == "__main__":
    print(json.dumps(main()))
