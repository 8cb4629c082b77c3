"""The tool fuzzer's calls sent to real headless processes: the MCP server (stdio) and ``ask`` (a scripted model).

The in-process fuzzer (``tests.support.fuzz_child``) calls the agent graph; here
the same hypothesis strategies feed the processes a user starts, through their
own front doors: JSON-RPC on the MCP server's stdin, tool calls in a model
server's replies to ``python -m geogpt_qgis ask``.  Their settings are saved
where they read them, the user's default QGIS profile under ``$XDG_DATA_HOME``
(``toolbelt.qgis_profile``): written by a child QGIS that opens that profile
as the command does (``python -m tests.support.process_fuzz --ogc-url URL
--postgis`` with ``$XDG_DATA_HOME`` set), so PostgreSQL connections are stored
the way each QGIS version stores them.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
CONNECTION = "h5_fuzz"  # the names the fuzzer's vocabulary uses (tests.support.fuzz_child)
OGC_SERVER = "Elvbury"
TIMEOUTS = ("sql_timeout", "ogc_timeout", "code_timeout")  # seconds, as a user might set them
HUNG_SECONDS = 60.0  # a call not answered by then is a hang


def child_env(data_home: Path) -> dict[str, str]:
    """A headless child's environment: its profile under ``data_home``, no key, offscreen, faulthandler on."""
    env = {k: v for k, v in os.environ.items() if k not in ("QGIS_CUSTOM_CONFIG_PATH", "OPENAI_API_KEY")}
    return {**env, "QT_QPA_PLATFORM": "offscreen", "XDG_DATA_HOME": str(data_home), "PYTHONFAULTHANDLER": "1"}


def save_profile(data_home: Path, ogc_url: str, postgis: bool = True, timeout: float = 3.0) -> None:
    """Save the OGC server, the PostgreSQL connection and short time limits where the commands read them."""
    command = [sys.executable, "-m", "tests.support.process_fuzz", "--ogc-url", ogc_url, "--timeout", str(timeout)]
    done = subprocess.run(
        [*command, *(["--postgis"] if postgis else [])],
        cwd=REPO,
        env=child_env(data_home),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]


def _write_profile(options: argparse.Namespace) -> int:
    """In the child: open the user's profile as ``ask`` does and save the settings through QGIS's own API."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from qgis.core import QgsApplication, QgsDataSourceUri, QgsProviderRegistry, QgsSettings

    from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
    from geogpt_qgis.toolbelt.qgis_profile import user_profile_folder
    from tests.support.postgis import PARAMS

    app = QgsApplication([], False, user_profile_folder(), "desktop")
    app.initQgis()
    if options.postgis:
        uri = QgsDataSourceUri()
        uri.setConnection(
            PARAMS["host"], PARAMS["port"], PARAMS["dbname"], PARAMS["user"], PARAMS["password"],
            QgsDataSourceUri.SslMode.SslDisable,
        )  # fmt: skip
        metadata = QgsProviderRegistry.instance().providerMetadata("postgres")
        connection = metadata.createConnection(uri.uri(False), {"saveUsername": True, "savePassword": True})
        metadata.saveConnection(connection, CONNECTION)
    PlgOptionsManager.set_value("ogc_servers", f"{OGC_SERVER} = {options.ogc_url}")
    for setting in TIMEOUTS:
        PlgOptionsManager.set_value(setting, options.timeout)
    QgsSettings().sync()
    app.exitQgis()
    return 0


# -- calls -------------------------------------------------------------------------------------------------------------
def vocabulary(project_file: Path) -> dict[str, list[str]]:
    """Names for the strategies: the demo project's layers and fields, real and near-miss tables and collections."""
    from qgis.core import QgsProject

    project = QgsProject()
    assert project.read(str(project_file)), project.error()
    layers = sorted({layer.name() for layer in project.mapLayers().values()})
    fields = sorted(
        {f.name() for layer in project.mapLayers().values() if hasattr(layer, "fields") for f in layer.fields()}
    )
    project.clear()
    tables = ["public.schools", "schools", "roads", "public.nope", "pg_catalog.pg_authid", "information_schema.tables"]
    return {
        "layers": [*layers, "schols", "nonexistent_layer", "place_nordby"],
        "fields": [*fields, "nme", "no_such_field"],
        "tables": tables,
        "collections": ["schools", "hospitals", "parks_file", "districts", "nope", "schols"],
    }


def draw_calls(schemas: dict[str, dict[str, Any]], words: dict[str, list[str]], count: int, seed: int) -> list:
    """``count`` calls ``(tool, arguments)`` over the tools of ``schemas``, generated as the in-process fuzzer does."""
    from hypothesis import HealthCheck, Phase, given, settings, strategies
    from hypothesis import seed as seeded

    from tests.support.fuzz_child import strategies as call_strategies

    call_for = call_strategies(words)
    names = sorted(schemas)
    calls = strategies.sampled_from(names).flatmap(lambda name: call_for(schemas[name]).map(lambda args: (name, args)))
    drawn: list[tuple[str, Any]] = []

    @seeded(seed)
    @settings(
        max_examples=count,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(call=calls)
    def collect(call: tuple[str, Any]) -> None:
        drawn.append(call)

    collect()
    return drawn[:count]


def json_text(value: Any) -> Any:
    """``value`` with lone surrogates made U+FFFD (no JSON parser of a real client or SDK takes them)."""
    if isinstance(value, str):
        return "".join("\ufffd" if "\ud800" <= char <= "\udfff" else char for char in value)
    if isinstance(value, list):
        return [json_text(item) for item in value]
    if isinstance(value, dict):
        return {json_text(key): json_text(item) for key, item in value.items()}
    return value


def shown(args: Any, limit: int = 300) -> str:
    text = ascii(args)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


# -- the MCP server as a process ---------------------------------------------------------------------------------------
class ProcessDied(AssertionError):
    """The process ended (or stopped answering) while a call was under way."""


class StdioProcess:
    """A process spoken to in JSON lines on stdin/stdout; its stderr goes to a file (with faulthandler's report)."""

    def __init__(self, command: list[str], env: dict[str, str], stderr_path: Path) -> None:
        self.stderr_path = stderr_path
        with stderr_path.open("wb") as stderr:
            self.process = subprocess.Popen(
                command, cwd=REPO, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr
            )
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._read, name="fuzz-stdout", daemon=True).start()
        self._next_id = 0

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in iter(self.process.stdout.readline, b""):
            self._lines.put(line)
        self._lines.put(None)  # end of output: the process closed stdout or died

    def stderr_tail(self) -> str:
        text = self.stderr_path.read_text(errors="replace")
        fault = text.find("Fatal Python error")
        return text[fault : fault + 3000] if fault >= 0 else text[-3000:]

    def died(self, during: str) -> ProcessDied:
        try:
            code: int | None = self.process.wait(5)
        except subprocess.TimeoutExpired:
            code = None
        how = "still running but silent" if code is None else f"exit {code}"
        return ProcessDied(f"the process ended or hung ({how}) during {during}:\n{self.stderr_tail()}")

    def send(self, message: Any) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(message).encode() + b"\n")
            self.process.stdin.flush()
        except (BrokenPipeError, ValueError) as exc:
            raise self.died(f"sending {shown(message)}") from exc

    def request(self, method: str, params: Any, during: str, timeout: float = HUNG_SECONDS) -> dict[str, Any]:
        """Send one JSON-RPC request and wait for its answer (lines for other ids are skipped)."""
        self._next_id += 1
        wanted = self._next_id
        self.send({"jsonrpc": "2.0", "id": wanted, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise self.died(f"{during} (no answer within {timeout:g} s)") from None
            if line is None:
                raise self.died(during)
            answer = json.loads(line)
            if answer.get("id") == wanted:
                return answer

    def close(self, timeout: float = 30) -> int:
        """Hang up (close stdin) and wait for the process to end; its exit status."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise


def start_mcp(project_file: Path, data_home: Path, stderr_path: Path) -> StdioProcess:
    """``python -m geogpt_qgis mcp PROJECT`` (refusing gated steps), initialised and ready for calls."""
    command = [sys.executable, "-X", "faulthandler", "-m", "geogpt_qgis", "mcp", str(project_file)]
    server = StdioProcess(command, child_env(data_home), stderr_path)
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}}
    server.request("initialize", hello, "initialize", timeout=120)
    server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return server


def main() -> int:
    parser = argparse.ArgumentParser(description="save the fuzzer's settings in the user's QGIS profile")
    parser.add_argument("--ogc-url", required=True)
    parser.add_argument("--postgis", action="store_true")
    parser.add_argument("--timeout", type=float, default=3.0)
    return _write_profile(parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
