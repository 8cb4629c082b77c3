"""Conversations: opening a 200-message conversation in the dock, and what each checkpoint costs.

A conversation of about 200 messages (questions and answers; every third
question also has a describe_layer call and its result) is built through the
real agent, worker and scripted model server into an SQLite store, timing
every checkpoint the LangGraph saver writes on the way (serialise, write,
commit) against the length of the history it holds.  A fresh dock on the
same store then opens the conversation several times: the time until the
whole history is shown (the newest items first, older ones slipped in
above in short slices), the main-thread time spent making its widgets, and
the longest main-thread stall meanwhile.

    python -m bench.conversations     prints one JSON line
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import Heartbeat, headless_qgis, idle_stall_ms, sized

MESSAGES = sized(200, 12)
OPEN_REPEATS = sized(5, 1)
LAYERS = ["schools", "districts", "roads", "rivers", "parks", "hospitals", "landuse"]


def question(i: int) -> str:
    return f"Question {i}: tell me about the {LAYERS[i % len(LAYERS)]} layer and how it compares with before."


def answer(i: int) -> str:
    return (
        f"**Answer {i}.** The {LAYERS[i % len(LAYERS)]} layer is in EPSG:25832.\n\n"
        "| field | values |\n|---|---|\n| name | 31 distinct |\n| type | primary 52%, secondary 39% |\n\n"
        + "It covers the whole town; the districts differ in density and in the age of their buildings. "
        * 3
    )


def analyst(body: dict[str, Any]) -> Any:
    from harness.model_server import ToolCall, Turn

    messages = body["messages"]
    users = [m for m in messages if m["role"] == "user"]
    i = int(users[-1]["content"].split("Question ", 1)[1].split(":", 1)[0])
    if messages[-1]["role"] == "user" and i % 3 == 0:
        return Turn(tool_calls=[ToolCall("describe_layer", {"layer": LAYERS[i % len(LAYERS)]})])
    return Turn(text=answer(i))


def timed_checkpoints() -> list[tuple[int, float, int]]:
    """Wrap the SQLite saver's ``aput``: (messages held, seconds, serialised bytes) per checkpoint."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    samples: list[tuple[int, float, int]] = []
    original = AsyncSqliteSaver.aput

    async def aput(self: Any, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        started = time.perf_counter()
        result = await original(self, config, checkpoint, metadata, new_versions)
        seconds = time.perf_counter() - started
        messages = checkpoint["channel_values"].get("messages", [])
        size = len(self.serde.dumps_typed(checkpoint)[1])
        samples.append((len(messages), seconds, size))
        return result

    AsyncSqliteSaver.aput = aput  # type: ignore[method-assign]
    return samples


def build_conversation(project: Any, store: Path, server: Any) -> tuple[str, list[tuple[int, float, int]]]:
    from geogpt_qgis.agent.config import ModelConfig
    from geogpt_qgis.agent.conversation import Conversation
    from geogpt_qgis.toolbelt.main_thread import MainThreadBridge
    from geogpt_qgis.tools.base import ToolContext
    from harness.runs import RunRecorder

    samples = timed_checkpoints()
    bridge = MainThreadBridge()
    worker = Conversation(ToolContext(project=project, bridge=bridge, iface=None), store_path=store)
    recorder = RunRecorder(worker)
    config = ModelConfig(model="qwen3:8b", base_url=server.url, timeout=30)
    i = 0
    try:
        while True:
            history = samples[-1][0] if samples else 0
            if history >= MESSAGES:
                break
            run = worker.submit(question(i), config)
            if recorder.wait(run, 60).status != "finished":
                raise RuntimeError(f"turn {i} did not finish")
            i += 1
        return worker.thread_id, list(samples)
    finally:
        worker.shutdown()
        bridge.close()


def step_costs(samples: list[tuple[int, float, int]]) -> dict[str, Any]:
    """Median checkpoint time and size for histories near 20, 100 and 200 messages."""
    buckets: dict[str, Any] = {}
    for target in (20, 100, 200):
        near = [(s, b) for n, s, b in samples if abs(n - target) <= 10]
        if near:
            buckets[str(target)] = {
                "median_ms": round(statistics.median(s for s, _ in near) * 1000, 2),
                "kilobytes": round(statistics.median(b for _, b in near) / 1024, 1),
                "samples": len(near),
            }
    return buckets


def open_in_dock(project: Any, store: Path, thread_id: str) -> dict[str, Any]:
    from qgis.PyQt.QtCore import QCoreApplication

    from geogpt_qgis.gui.dock import ChatDock
    from harness.runs import wait_until

    dock = ChatDock(None, project, store_path=store)
    dock.resize(420, 800)
    dock.show()
    panel = dock.panel
    opened: list[str] = []
    panel.conversation_opened.connect(opened.append)
    panel.view.open_conversation(thread_id)  # once first, not counted: it starts the agent thread and its imports
    wait_until(lambda: bool(opened), 60)
    # Main-thread time making the history's widgets (the rest of opening happens on the agent thread).
    from geogpt_qgis.gui import chat_view

    render = [0.0]
    make = chat_view._entry_widget

    def timed_make(entry: Any) -> Any:
        started = time.perf_counter()
        widget = make(entry)
        render[0] += time.perf_counter() - started
        return widget

    chat_view._entry_widget = timed_make
    renders = []
    totals, stalls = [], []
    try:
        for repeat in range(OPEN_REPEATS):
            render[0] = 0.0
            with Heartbeat() as heartbeat:
                started = time.perf_counter()
                panel.view.open_conversation(thread_id)
                wait_until(lambda n=repeat: len(opened) > n + 1, 60)
                totals.append(time.perf_counter() - started)
            stalls.append(heartbeat.longest_stall_ms or 0.0)
            renders.append(render[0])
        items = len(panel.chat.items())
    finally:
        dock.shutdown()
        dock.deleteLater()
        QCoreApplication.processEvents()
    return {
        "open_median_ms": round(statistics.median(totals) * 1000, 1),
        "open_widgets_median_ms": round(statistics.median(renders) * 1000, 1),
        "open_longest_stall_median_ms": round(statistics.median(stalls), 1),
        "items_shown": items,
    }


def main() -> dict[str, Any]:
    from qgis.core import QgsProject

    from harness.demo import copy_demo
    from harness.model_server import ScriptedModelServer

    with headless_qgis(), tempfile.TemporaryDirectory() as tmp:
        project = QgsProject.instance()
        project.read(str(copy_demo(Path(tmp) / "demo")))
        store = Path(tmp) / "conversations.sqlite"
        with ScriptedModelServer(analyst) as server:
            thread_id, samples = build_conversation(project, store, server)
            requests = len(server.chat_requests())
        result = {
            "messages": samples[-1][0],
            "model_calls": requests,
            "checkpoints_written": len(samples),
            "checkpoint_step": step_costs(samples),
            "store_kilobytes": round(sum(p.stat().st_size for p in Path(tmp).glob("conversations.sqlite*")) / 1024),
            "last_checkpoint_kilobytes": round(samples[-1][2] / 1024, 1),
            # What keeping every checkpoint (LangGraph's default) would have stored instead of pruning.
            "all_checkpoints_kilobytes": round(sum(size for _, _, size in samples) / 1024),
            **open_in_dock(project, store, thread_id),
            "idle_longest_stall_ms": idle_stall_ms(),
        }
        project.clear()
    return result


if __name__ == "__main__":
    print(json.dumps(main()))
