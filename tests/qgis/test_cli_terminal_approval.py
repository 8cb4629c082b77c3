"""``ask --approval ask`` at a real terminal (a pseudo-terminal) against the scripted model.

The command runs as a subprocess whose standard input and error are the
slave side of a pty, as in a shell; the test reads the master side until the
approval question appears (a condition, never a pause) and types the answer.
The answer streams to standard output, a pipe, as before.
"""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from qgis.core import QgsProject

from tests.support.demo import copy_demo
from tests.support.model_server import ToolCall, Turn

REPO = Path(__file__).resolve().parents[2]
QUESTION = re.compile(r"Run it\? \[y\]es / \[n\]o \(a reason may follow\) / \[a\]lways for (\w+) in this run: ")
ANSWER = "Removed the parks and the largest schools; the rivers stayed."


class Terminal:
    """A command on a pseudo-terminal: ``expect`` reads its screen until a pattern shows, ``type`` answers."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()
        self.process = subprocess.Popen(
            command, cwd=REPO, env=env, stdin=slave, stderr=slave, stdout=subprocess.PIPE, text=True
        )
        os.close(slave)
        self.screen = ""  # everything the terminal showed (its \r\n made \n), typed echoes included
        self._seen = 0

    def expect(self, pattern: re.Pattern[str], timeout: float = 90) -> re.Match[str]:
        """Wait for ``pattern`` after what the last call matched; fail with the screen if the command ends first."""
        deadline = time.monotonic() + timeout
        while True:
            found = pattern.search(self.screen, self._seen)
            if found:
                self._seen = found.end()
                return found
            left = deadline - time.monotonic()
            if left <= 0 or not self._read(left):
                raise AssertionError(f"{pattern.pattern!r} never showed; the terminal read:\n{self.screen}")

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return False
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # EIO: the command closed the terminal (it ended)
            return False
        self.screen += chunk.decode("utf-8", "replace").replace("\r\n", "\n")
        return bool(chunk)

    def type(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())

    def finish(self, timeout: float = 60) -> tuple[int, str]:
        """The exit status and standard output; the rest of the screen is read in."""
        out, _ = self.process.communicate(timeout=timeout)
        while self._read(0.5):
            pass
        os.close(self.master)
        return self.process.returncode, out


@pytest.fixture(autouse=True)
def user_data(tmp_path, monkeypatch) -> Path:
    """Each command reads the QGIS profile under its own data folder, never the user's real one."""
    data = tmp_path / "user-data"
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    monkeypatch.delenv("QGIS_CUSTOM_CONFIG_PATH", raising=False)
    return data


def command(project: Path, server, *extra: str) -> list[str]:
    return [
        sys.executable,
        *("-m", "geogpt_qgis", "ask", "Tidy up the project", "--project", str(project)),
        *("--base-url", server.url, "--model", "qwen3:8b", "--approval", "ask", *extra),
    ]


def environment() -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}, "QT_QPA_PLATFORM": "offscreen"}


def remove(layer: str) -> Turn:
    return Turn(tool_calls=[ToolCall("remove_layer", {"layer": layer})])


def delete_schools(expression: str) -> Turn:
    return Turn(tool_calls=[ToolCall("edit_features", {"layer": "schools", "expression": expression, "delete": True})])


def pupils(gpkg: Path) -> list[int]:
    """The schools' pupil counts, read with GDAL's own OGR (not through QGIS)."""
    from osgeo import ogr

    source = ogr.Open(str(gpkg))
    values = sorted(feature.GetField("pupils") for feature in source.GetLayerByName("schools"))
    source = None
    return values


def layers_in(path: Path) -> list[str]:
    saved = QgsProject()
    assert saved.read(str(path))
    names = sorted(layer.name() for layer in saved.mapLayers().values())
    saved.clear()
    return names


@pytest.mark.timeout(240)
def test_y_runs_the_step_n_refuses_it_and_always_approves_the_tools_later_steps(model_server, tmp_path):
    project, out = copy_demo(tmp_path / "demo"), tmp_path / "out.qgz"
    gpkg = project.with_suffix(".gpkg")
    before = pupils(gpkg)
    assert any(p > 900 for p in before) and any(800 < p <= 900 for p in before)  # both deletes find schools
    model_server.script(
        [
            remove("parks"),
            remove("rivers"),
            delete_schools('"pupils" > 900'),
            delete_schools('"pupils" > 800'),  # the same tool on the same layer, doing no more: no question
            Turn(text=ANSWER),
        ]
    )
    terminal = Terminal(command(project, model_server, "--save", str(out)), environment())

    # y: the step runs.
    terminal.expect(re.compile(r"Approval needed: Remove layer 'parks' from the project\n"))
    terminal.expect(QUESTION)
    terminal.type("y")
    terminal.expect(re.compile(r"Removed layer 'parks' from the project\."))
    # n, with a reason: the step does not run and the model reads why.
    terminal.expect(re.compile(r"Approval needed: Remove layer 'rivers' from the project\n"))
    terminal.expect(QUESTION)
    terminal.type("n the rivers stay")
    terminal.expect(re.compile(r"Refused; the assistant is told why\."))
    # always: this step runs, and so does the tool's next one, without a question.
    terminal.expect(re.compile(r"Approval needed: Delete \d+ features from 'schools'\n"))
    assert terminal.expect(QUESTION).group(1) == "edit_features"
    terminal.type("always")
    code, stdout = terminal.finish()
    screen = terminal.screen

    assert code == 0, screen
    assert stdout == ANSWER + "\n"  # the answer alone on standard output; the questions went to the terminal
    assert screen.count("Run it?") == 3  # parks, rivers, the first delete: the second was covered by "always"
    assert screen.count("Approval needed: Delete ") == 1
    assert "Approved automatically (you chose always for edit_features in this conversation): Delete " in screen
    told = [m["content"] for m in model_server.chat_requests()[-1].tool_messages()]
    assert told[0] == "Removed layer 'parks' from the project."
    assert told[1].startswith("Not done: the user rejected this (remove layer 'rivers' from the project).")
    assert "Their reason: the rivers stay" in told[1]
    assert len(told) == 4 and len(model_server.chat_requests()) == 5
    expected = ["districts", "elevation", "hospitals", "landcover", "landuse", "rivers", "roads", "schools"]
    assert layers_in(out) == expected
    # Both deletes ran, each on the schools its filter selects (counted here with OGR, not QGIS); whether the
    # edits are saved to the file or wait in the layer's edit buffer is the edit tool's business.
    assert f"deleted {sum(p > 900 for p in before)} features" in told[2]
    assert f"deleted {sum(800 < p <= 900 for p in before)} features" in told[3]


@pytest.mark.timeout(120)
def test_without_a_terminal_ask_refuses_as_never_and_says_so(model_server, tmp_path):
    project, out = copy_demo(tmp_path / "demo"), tmp_path / "out.qgz"
    model_server.script([remove("parks"), Turn(text="I could not remove it.")])
    done = subprocess.run(
        command(project, model_server, "--save", str(out)),
        cwd=REPO,
        env=environment(),
        stdin=subprocess.DEVNULL,  # not a terminal (pytest's own input may be one)
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert done.returncode == 0, done.stderr
    assert "--approval ask needs a terminal to answer on, and standard input is not one" in done.stderr
    assert "refused, as with --approval never" in done.stderr
    assert "Run it?" not in done.stderr
    assert "Not allowed by your approval policy: Remove layer 'parks'" in done.stderr
    told = model_server.chat_requests()[-1].tool_messages()[-1]["content"]
    assert "not allowed by the user's approval policy (never allow)" in told
    assert "parks" in layers_in(out)


@pytest.mark.timeout(120)
def test_ctrl_c_at_the_question_stops_the_command_and_runs_nothing(model_server, tmp_path):
    project = copy_demo(tmp_path / "demo")
    model_server.script([remove("parks"), Turn(text="never sent")])
    terminal = Terminal(command(project, model_server), environment())
    terminal.expect(QUESTION)
    terminal.process.send_signal(signal.SIGINT)
    code, stdout = terminal.finish()
    assert code == 130, terminal.screen
    assert terminal.screen.rstrip().endswith("Stopped.")
    assert stdout == ""
    assert len(model_server.chat_requests()) == 1  # the model never heard back: the step neither ran nor was refused
