"""Install the plugin's Python packages into its private folder in the QGIS profile, with pip.

One blocking call, :meth:`Installer.run`, meant for a background thread (the
dock's install banner runs it on one): it finds QGIS's Python and checks that it
has pip, pins every package QGIS ships (numpy, GDAL, pyproj, PyQt...) to the
version already there, runs::

    python -m pip install --target <folder> --upgrade --upgrade-strategy only-if-needed
        --disable-pip-version-check -c <pins> -r requirements.txt

reporting pip's progress line by line, takes out of the folder whatever QGIS's
Python already provides (:mod:`site_cleanup`), and finally imports the agent's
modules in a fresh process with the folder on its path, checking that numpy and
the other protected packages still come from QGIS.  Everything pip and the checks
print goes to a log file in the profile.  Qt-free: failures are
:class:`InstallError` with a ``kind`` the GUI turns into a translated message.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlparse

from geogpt_qgis.toolbelt import network, site_cleanup
from geogpt_qgis.toolbelt.dependencies import REQUIRED_MODULES, protected_versions
from geogpt_qgis.toolbelt.python_env import find_python_candidates, packages_dir

LOG_FILE = "install.log"
TAIL_LINES = 15

# pip's words for "the network is not there" (urllib3, requests, socket errors on every OS).
OFFLINE_MARKERS = (
    "NewConnectionError",
    "Failed to establish a new connection",
    "Temporary failure in name resolution",
    "Name or service not known",
    "nodename nor servname provided",
    "getaddrinfo failed",
    "No route to host",
    "Network is unreachable",
    "ConnectTimeoutError",
    "Connection refused",
    "ProxyError",
    "Max retries exceeded",
    "Could not fetch URL",
)

# Run by QGIS's Python: which version it is and whether it has pip (no other import).
PROBE = """\
import json, sys
try:
    import pip
    pip_version = pip.__version__
except Exception:
    pip_version = None
print(json.dumps({"version": list(sys.version_info[:2]), "pip": pip_version, "executable": sys.executable}))
"""

# Run by QGIS's Python with the folder first on its path: where the protected packages come from, and
# whether the agent's modules import.  Arguments: folder, JSON {protected name: version}, modules...
VERIFY = """\
import importlib, json, sys
from importlib import metadata
from pathlib import Path
folder = Path(sys.argv[1]).resolve()
sys.path.insert(0, str(folder))
report = {"protected": {}, "imports": {}}
for name in json.loads(sys.argv[2]):
    dist = next(iter(metadata.distributions(name=name)), None)
    home = Path(str(dist.locate_file(""))).resolve() if dist is not None else None
    report["protected"][name] = [dist.version if dist else None, str(home) if home else None,
                                 bool(home) and (home == folder or folder in home.parents)]
for module in sys.argv[3:]:
    try:
        loaded = importlib.import_module(module)
        report["imports"][module] = [True, str(getattr(loaded, "__file__", ""))]
    except BaseException as exc:
        report["imports"][module] = [False, type(exc).__name__ + ": " + str(exc)]
print("GEOGPT-VERIFY " + json.dumps(report))
"""


class InstallError(Exception):
    """The install did not complete.

    ``kind``: ``no-python``, ``no-pip``, ``offline``, ``pip-failed``, ``cancelled``
    or ``check-failed``; ``detail``: the facts (paths, the failing lines of pip's log).
    """

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind
        self.detail = detail


@dataclass(frozen=True)
class Progress:
    """What pip is doing: ``phase`` is ``checking``, ``collecting``, ``downloading``, ``installing``,
    ``cleaning`` or ``verifying``; ``count`` the packages collected so far (or to install)."""

    phase: str
    detail: str = ""
    count: int = 0


@dataclass
class InstallPlan:
    """Everything an install needs, decided up front (and shown in the log)."""

    target: Path
    work_dir: Path
    requirements: Path
    modules: tuple[str, ...] = tuple(REQUIRED_MODULES)
    pythons: tuple[Path, ...] = ()
    base_path: tuple[str, ...] = ()

    @property
    def log_path(self) -> Path:
        return self.work_dir / LOG_FILE

    @property
    def constraints_path(self) -> Path:
        return self.work_dir / "constraints.txt"


@dataclass
class InstallReport:
    """A finished install: the Python used, what the folder holds now, and how long it took."""

    python: str
    target: Path
    log_path: Path
    cleanup: site_cleanup.CleanupResult
    protected: dict[str, str]
    restart_needed: list[str] = field(default_factory=list)
    seconds: float = 0.0


def make_plan(plugin_data_dir: Path, requirements: Path, modules: tuple[str, ...] | None = None) -> InstallPlan:
    """The plan for this QGIS: its profile's folder, the Pythons to try, its ``sys.path`` minus the folder."""
    target = packages_dir(plugin_data_dir)
    base = tuple(p for p in sys.path if p and Path(p).resolve() != target.resolve())
    return InstallPlan(
        target=target,
        work_dir=plugin_data_dir / "installer",
        requirements=requirements,
        modules=modules if modules is not None else tuple(REQUIRED_MODULES),
        pythons=tuple(find_python_candidates()),
        base_path=base,
    )


def pip_command(python: Path, plan: InstallPlan) -> list[str]:
    """The pip command line (constraints pin what QGIS ships; ``--upgrade`` repairs a half-done folder)."""
    return [
        str(python),
        "-m",
        "pip",
        "install",
        "--target",
        str(plan.target),
        "--upgrade",
        "--upgrade-strategy",
        "only-if-needed",
        "--disable-pip-version-check",
        "--no-input",
        "--no-warn-script-location",
        "--progress-bar",
        "off",
        "-c",
        str(plan.constraints_path),
        "-r",
        str(plan.requirements),
    ]


def requirement_lines(requirements: Path) -> list[str]:
    """The requirement lines of a requirements file (no comments, no options)."""
    lines = []
    for raw in requirements.read_text(encoding="utf-8").splitlines():
        line = raw.split(" #", 1)[0].strip()
        if line and not line.startswith(("#", "-")):
            lines.append(line)
    return lines


def parse_progress(line: str, count: int) -> Progress | None:
    """Turn one line of pip's output into progress (``count``: packages collected before it).

    pip says ``Collecting name...`` for a package it looks up in an index (then
    ``Downloading file`` or ``Using cached file``) and ``Processing file`` for one it
    takes from a local file or link.
    """
    text = line.strip()
    words = text.split()
    if text.startswith("Collecting ") and len(words) > 1:
        return Progress("collecting", re.split(r"[<>=!~\[;( ]", words[1])[0], count + 1)
    if text.startswith("Processing ") and len(words) > 1:
        file = words[1].rstrip("/").rsplit("/", 1)[-1]
        return Progress("collecting", file.split("-")[0], count + 1)
    if text.startswith(("Downloading ", "Using cached ")):
        file = words[2 if text.startswith("Using cached ") else 1] if len(words) > 2 else words[-1]
        return Progress("downloading", file.rsplit("/", 1)[-1], count)
    if text.startswith("Installing collected packages:"):
        names = [n.strip() for n in text.split(":", 1)[1].split(",") if n.strip()]
        return Progress("installing", ", ".join(names), len(names))
    return None


def classify_failure(lines: list[str]) -> InstallError:
    """Why pip failed, from its output: offline, pip missing, or anything else (with its last lines)."""
    joined = "\n".join(lines)
    errors = [line for line in lines if line.startswith("ERROR:")]
    tail = "\n".join((errors or lines)[-TAIL_LINES:])
    if "No module named pip" in joined:
        return InstallError("no-pip", tail)
    if any(marker in joined for marker in OFFLINE_MARKERS):
        return InstallError("offline", tail)
    return InstallError("pip-failed", tail)


def index_reachable(lines: list[str], timeout: float = 5.0) -> bool:
    """Whether the package index pip used (PyPI unless its output names others) accepts connections.

    Behind a proxy (``HTTPS_PROXY``...) a direct connection proves nothing: assumed reachable.
    """
    if any(os.environ.get(name) for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy")):
        return True
    urls = ["https://pypi.org/simple"]
    for line in lines:
        if line.startswith("Looking in indexes:"):
            urls = [url.strip() for url in line.split(":", 1)[1].split(",")]
    for url in urls:
        parts = urlparse(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            continue
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            socket.create_connection((parts.hostname, port), timeout=timeout).close()
        except OSError:
            continue
        return True
    return False


class Installer:
    """Runs one install (:meth:`run`, blocking) and can be cancelled from another thread."""

    def __init__(self, plan: InstallPlan, on_progress: Callable[[Progress], None] | None = None) -> None:
        self.plan = plan
        self.on_progress = on_progress or (lambda _progress: None)
        self._process: subprocess.Popen[str] | None = None
        self._cancelled = threading.Event()
        self._lock = threading.Lock()
        self._log: IO[str] | None = None
        self._proxy_env: dict[str, str] = {}  # QGIS's proxy for pip (network.proxy_environment)

    def cancel(self) -> None:
        """Stop pip (or the checks) now; :meth:`run` then raises ``InstallError("cancelled")``."""
        self._cancelled.set()
        with self._lock:
            if self._process is not None and self._process.poll() is None:
                _stop(self._process)

    def run(self) -> InstallReport:
        started = time.monotonic()
        plan = self.plan
        plan.work_dir.mkdir(parents=True, exist_ok=True)
        with plan.log_path.open("w", encoding="utf-8") as self._log:
            self._write(f"GeoGPT dependency install, {time.strftime('%Y-%m-%d %H:%M:%S')}")
            self._write(f"target: {plan.target}\nrequirements: {plan.requirements}")
            try:
                report = self._run(started)
            except InstallError as error:
                self._write(f"\nFAILED ({error.kind})\n{error.detail}")
                raise
            except Exception as error:  # a bug or a full disk: still a clear failure, with a log
                self._write(f"\nFAILED: {type(error).__name__}: {error}")
                raise InstallError("pip-failed", f"{type(error).__name__}: {error}") from error
            finally:
                self._log.flush()
            self._write(f"\nDone in {report.seconds:.1f} s.")
        self._log = None
        return report

    def _run(self, started: float) -> InstallReport:
        plan = self.plan
        self.on_progress(Progress("checking"))
        python = self._find_python()
        protected = protected_versions(list(plan.base_path))
        pins = "".join(f"{name}=={version}\n" for name, version in protected.items())
        plan.constraints_path.write_text(
            "# What QGIS's Python ships: pip may not install other versions.\n" + pins, encoding="utf-8"
        )
        self._write(f"constraints:\n{pins}")
        plan.target.mkdir(parents=True, exist_ok=True)
        command = pip_command(python, plan)
        proxy = network.proxy_config()
        index = os.environ.get("PIP_INDEX_URL") or "https://pypi.org/simple/"
        self._proxy_env = network.proxy_environment(index, proxy)
        if "https_proxy" in self._proxy_env:
            self._write(f"proxy (QGIS's network settings): {proxy.describe()}")
        self._write("$ " + " ".join(command))
        count = 0

        def progress(line: str) -> None:
            nonlocal count
            found = parse_progress(line, count)
            if found is not None:
                count = found.count if found.phase != "installing" else count
                self.on_progress(found)

        code, lines = self._execute(command, progress)
        if code != 0:
            error = classify_failure(lines)
            nothing_found = any("(from versions: none)" in line for line in lines)
            proxied = "https_proxy" in self._proxy_env  # a direct connection would prove nothing
            # pip told to use no index (PIP_NO_INDEX: local wheels only) found nothing there, whatever the network.
            no_index = os.environ.get("PIP_NO_INDEX", "").strip().lower() in {"1", "true", "yes", "on"}
            if (
                error.kind == "pip-failed"
                and nothing_found
                and not proxied
                and not no_index
                and not index_reachable(lines)
            ):
                # With retries off pip does not say why it found nothing: the index was not there.
                error = InstallError("offline", error.detail)
            raise error

        self.on_progress(Progress("cleaning"))
        cleanup = site_cleanup.clean(plan.target, list(plan.base_path), protected, requirement_lines(plan.requirements))
        self._write(
            f"removed (QGIS ships them): {', '.join(cleanup.removed_protected) or '-'}\n"
            f"removed (QGIS's Python has a fitting version): {', '.join(cleanup.deduplicated) or '-'}\n"
            f"kept: {', '.join(cleanup.kept) or '-'}\n"
            f"kept although QGIS's Python has them (too old for GeoGPT): {', '.join(cleanup.shadowing) or '-'}"
        )
        left = site_cleanup.protected_left(plan.target, protected)
        if left:
            raise InstallError("check-failed", f"still in {plan.target}: {', '.join(left)}")

        self.on_progress(Progress("verifying"))
        self._verify(python, protected)
        return InstallReport(
            python=str(python),
            target=plan.target,
            log_path=plan.log_path,
            cleanup=cleanup,
            protected=protected,
            restart_needed=site_cleanup.loaded_modules_of(plan.target, cleanup.shadowing),
            seconds=time.monotonic() - started,
        )

    def _find_python(self) -> Path:
        """The first candidate that runs, is this Python's version, and has pip."""
        probe = self.plan.work_dir / "probe.py"
        probe.write_text(PROBE, encoding="utf-8")
        without_pip = None
        for candidate in self.plan.pythons:
            try:
                code, lines = self._execute([str(candidate), str(probe)], quiet=True)
            except OSError as error:  # missing, not executable, not a program
                code, lines = -1, [str(error)]
            found = _last_json(lines)
            if code != 0 or found is None:
                self._write(f"{candidate}: does not run ({' '.join(lines[-2:])})")
                continue
            if tuple(found["version"]) != tuple(sys.version_info[:2]):
                self._write(f"{candidate}: Python {found['version']}, not QGIS's {sys.version_info[:2]}")
                continue
            if not found["pip"]:
                self._write(f"{candidate}: no pip")
                without_pip = without_pip or candidate
                continue
            self._write(f"python: {candidate} (pip {found['pip']})")
            return candidate
        if without_pip is not None:
            raise InstallError("no-pip", str(without_pip))
        tried = ", ".join(str(p) for p in self.plan.pythons) or "-"
        raise InstallError("no-python", f"sys.executable={sys.executable}; tried: {tried}")

    def _verify(self, python: Path, protected: dict[str, str]) -> None:
        """Import the agent's modules in a fresh process, and check where numpy & co. come from."""
        script = self.plan.work_dir / "verify.py"
        script.write_text(VERIFY, encoding="utf-8")
        command = [str(python), str(script), str(self.plan.target), json.dumps(sorted(protected))]
        code, lines = self._execute([*command, *self.plan.modules], quiet=True)
        found = next((line for line in reversed(lines) if line.startswith("GEOGPT-VERIFY ")), None)
        if code != 0 or found is None:
            raise InstallError("check-failed", "\n".join(lines[-TAIL_LINES:]))
        report = json.loads(found.split(" ", 1)[1])
        problems = []
        for name, (version, home, in_folder) in report["protected"].items():
            if version != protected[name] or in_folder:
                problems.append(f"{name} {version} from {home} (QGIS has {protected[name]})")
        problems += [f"import {module}: {detail}" for module, (ok, detail) in report["imports"].items() if not ok]
        if problems:
            raise InstallError("check-failed", "\n".join(problems))

    def _execute(
        self, command: list[str], on_line: Callable[[str], None] | None = None, quiet: bool = False
    ) -> tuple[int, list[str]]:
        """Run ``command``, logging its output line by line; return its exit code and last lines."""
        if self._cancelled.is_set():
            raise InstallError("cancelled")
        env = {**os.environ, **self._proxy_env, "PYTHONIOENCODING": "utf-8", "PYTHONUNBUFFERED": "1"}
        env["PIP_NO_INPUT"] = "1"
        env.pop("PIP_REQUIRE_VIRTUALENV", None)
        flags = getattr(subprocess, "CREATE_NO_WINDOW", 0)  # no console window popping up on Windows
        with self._lock:
            self._process = subprocess.Popen(  # noqa: S603  # nosec B603 # QGIS's own Python, fixed argv, no shell
                command,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.plan.work_dir,  # nothing importable there: sys.path[0] stays harmless
                env=env,
                text=True,
                encoding="utf-8",
                errors="replace",
                creationflags=flags,
                start_new_session=os.name != "nt",  # its own process group: Cancel stops pip's children too
            )
            process = self._process
            if self._cancelled.is_set():  # cancelled while it was starting
                _stop(process)
        lines: deque[str] = deque(maxlen=400)
        for raw in process.stdout or ():  # PIPE was asked for, so there is one
            line = raw.rstrip()
            lines.append(line)
            if not quiet or line:
                self._write(line)
            if on_line is not None:
                on_line(line)
        code = process.wait()
        with self._lock:
            self._process = None
        if self._cancelled.is_set():
            raise InstallError("cancelled")
        return code, list(lines)

    def _write(self, text: str) -> None:
        if self._log is not None:
            self._log.write(text + "\n")
            self._log.flush()


def _stop(process: subprocess.Popen[str]) -> None:
    """Terminate a process and, on POSIX, the children it started (a wheel build holds the output pipe open)."""
    if os.name == "nt":
        process.terminate()
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGTERM)


def _last_json(lines: list[str]) -> dict[str, Any] | None:
    for line in reversed(lines):
        if line.startswith("{"):
            try:
                found: dict[str, Any] = json.loads(line)  # a line starting with "{" parses to an object
                return found
            except ValueError:
                return None
    return None
