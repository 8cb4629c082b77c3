"""First run, for real: the zip installed as users do into a QGIS whose Python lacks the packages → an answer.

QGIS desktop (Xvfb) runs with a clean environment: Debian's ``/usr/bin/python3``
as QGIS embeds it, no virtual environment, no PYTHONPATH, and a fresh profile
with no plugin in it.  Inside QGIS the built zip is installed by the Plugin
Manager's own Install from ZIP code (unpacked into the profile's
``python/plugins``, loaded, started and enabled in the profile's settings).  The
dock's Install button runs the real installer: QGIS's Python and pip,
``--target`` the profile, pins for what QGIS ships.  pip takes the wheels only
from a local folder (no index: ``PIP_NO_INDEX``), downloaded from PyPI once
(``pip download``, kept under ``.stamps`` while requirements and pins stay the
same; ``make test-matrix`` fills it before its chroots, which have no network).
Then the agent answers a scripted question through the packages just
installed, in the same QGIS session, and numpy, GDAL, pyproj and PyQt are
still QGIS's own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from geogpt_qgis.toolbelt.site_cleanup import protected_left, read_dists
from tests.support.demo import copy_demo
from tests.support.model_server import ToolCall, Turn
from tests.support.wheelhouse import ensure_wheelhouse

REPO = Path(__file__).resolve().parents[2]
SESSION = REPO / "tests" / "support" / "install_session.py"
QGIS_PYTHON = "/usr/bin/python3"
sys.path.insert(0, str(REPO / "scripts"))

from plugin_dist import package  # noqa: E402 - scripts/ is not a package

pytestmark = [pytest.mark.desktop, pytest.mark.slow]

ANSWER = "The project has **7 layers**, among them schools and rivers."


def _qgis_python(code: str) -> dict:
    """Run ``code`` in QGIS's Python, isolated from the development environment; it prints one JSON line."""
    done = subprocess.run(
        [QGIS_PYTHON, "-I", "-c", code],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin"},
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


NUMPY_PROBE = "import json, numpy; print(json.dumps({'version': numpy.__version__, 'file': numpy.__file__}))"
# Where QGIS's Python finds what it ships (GDAL's bindings are ``osgeo``); the plugin's packages may shadow none.
PROTECTED = ("numpy", "osgeo", "pyproj", "PyQt5")
PROTECTED_PROBE = (
    f"import json, importlib.util as u; print(json.dumps({{m: u.find_spec(m).origin for m in {PROTECTED!r}}}))"
)


def fresh_profile(profile: Path, settings: dict[str, str]) -> None:
    """A new user's profile: no plugins, no start-up network checks, and GeoGPT's model server set beforehand."""
    from qgis.PyQt.QtCore import QSettings

    ini = QSettings(str(profile / "QGIS" / "QGIS3.ini"), QSettings.Format.IniFormat)
    ini.setValue("app/plugin_installer/checkOnStart", False)  # no network calls at start
    ini.setValue("qgis/checkVersion", False)
    for key, value in settings.items():
        ini.setValue(f"geogpt_qgis/{key}", value)
    ini.sync()


@pytest.fixture(scope="module")
def wheelhouse() -> Path:
    """Every wheel the installer will ask for, from PyPI, for QGIS's Python and its pins; reused while they last."""
    return ensure_wheelhouse()


@pytest.mark.timeout(1200)
def test_first_run_installs_into_the_profile_and_the_agent_answers(tmp_path, model_server, wheelhouse):
    before = _qgis_python(NUMPY_PROBE)
    shipped_files = _qgis_python(PROTECTED_PROBE)
    missing = _qgis_python(
        "import json, importlib.util as u; "
        "print(json.dumps([m for m in ('langgraph', 'langchain_core', 'langchain_ollama') if u.find_spec(m)]))"
    )
    assert missing == [], "this test needs a QGIS Python without LangGraph"

    archive = package(tmp_path / "dist", bandit=False)
    profiles = tmp_path / "profiles"
    profile = profiles / "profiles" / "fresh"
    fresh_profile(profile, {"provider": "ollama", "ollama_url": model_server.url, "ollama_model": "qwen3:8b"})
    plugin = profile / "python" / "plugins" / "geogpt_qgis"
    model_server.script([Turn(tool_calls=[ToolCall("list_layers")]), Turn(text=ANSWER, chunk_delay=0.005)])
    project = copy_demo(tmp_path / "demo")
    home = tmp_path / "home"
    home.mkdir()
    out = tmp_path / "report.json"
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "GEOGPT_INSTALL_OUT": str(out),
        "GEOGPT_INSTALL_ZIP": str(archive),
        "GEOGPT_INSTALL_QUESTION": "What layers are in the project?",
        # pip reads no configuration file and no index: only the wheels downloaded from PyPI above.
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(wheelhouse),
    }
    command = ["xvfb-run", "-a", "-s", "-screen 0 1400x900x24", "qgis", "--profiles-path", str(profiles)]
    command += ["--profile", "fresh", "--nologo", "--noversioncheck", "--code", str(SESSION), str(project)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1100, cwd=tmp_path, check=False)
    assert out.is_file(), (
        f"QGIS wrote no report (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    report = json.loads(out.read_text())
    print(f"install took {report.get('install_seconds', 0):.1f} s in QGIS")  # shown with pytest -s / in the log

    assert report["errors"] == [], report
    # Installed from the zip inside QGIS, as the Plugin Manager does: unpacked, started, enabled in the profile.
    assert report["zip_plugin_before"] == {"folder": False, "active": False}
    assert report["zip_plugin_after"] == {"folder": str(plugin), "active": True, "enabled_setting": True}
    assert (plugin / "metadata.txt").is_file() and (plugin / "requirements.txt").is_file()
    assert report["plugin_active"] is True
    # Before: QGIS's Python cannot import the agent; the dock names what is missing.
    assert report["langgraph_before"] is False
    assert "langgraph" in report["missing_before"]
    assert "langgraph" in report["banner"] and "langchain-ollama" in report["banner"]
    # The install, with its progress shown, and no restart needed.
    assert report["install_ok"] is True, report["install_message"]
    assert report["install_message"].startswith("Installed in ")
    # QGIS's certifi, idna, packaging are too old for LangChain: the folder's copies shadow them, and those
    # QGIS had imported already are loaded at the next start; the banner says so (and only then stays).
    assert report["banner_visible_after"] is ("restart QGIS" in report["install_message"])
    assert report["missing_after"] == []
    statuses = "\n".join(report["statuses"])
    assert "Checking QGIS's Python…" in statuses and "Checking that everything imports…" in statuses
    assert "Looking up " in statuses or "Installing " in statuses
    private = Path(report["private_folder"])
    version = f"{sys.version_info.major}.{sys.version_info.minor}"  # QGIS's Python: the one this venv is made from
    assert private == profile / "geogpt_qgis" / "python-packages" / version
    assert report["sys_path"].index(str(private)) < report["sys_path"].index("/usr/lib/python3/dist-packages")
    # The agent answers through the packages just installed.
    assert report["status"] == "finished"
    assert report["tool_steps"] == [["list_layers", True]]
    assert report["answer"] == ANSWER
    assert Path(report["langgraph_file"]).is_relative_to(private)
    assert Path(report["shapely_file"]).is_relative_to(private)
    assert abs(report["shapely_buffer_area"] - 3.14) < 0.01
    # numpy is QGIS's, before and after, in the session and in a fresh QGIS Python.
    for seen in (report["numpy_before"], report["numpy_after"]):
        assert seen["version"] == before["version"]
        assert seen["origin"] == before["file"]
        assert seen["loaded_file"] in (None, before["file"])
    assert _qgis_python(NUMPY_PROBE) == before
    # GDAL, pyproj and PyQt too: found where QGIS's Python has them, before and after, and never in the folder.
    for name, shipped in shipped_files.items():
        assert shipped is not None and not Path(shipped).is_relative_to(private), name
        for seen in (report["protected_before"][name], report["protected_after"][name]):
            assert seen["origin"] == shipped, (name, seen)
            assert seen["loaded_file"] in (None, shipped), (name, seen)
    assert _qgis_python(PROTECTED_PROBE) == shipped_files
    # Nothing QGIS ships landed in the profile folder; the agent's packages did.
    shipped = [line.split("==")[0] for line in (wheelhouse / "constraints.txt").read_text().split()]
    assert {"numpy", "GDAL", "pyproj", "PyQt5"} <= set(shipped)  # what QGIS's Python has (shapely it lacks)
    assert protected_left(private, shipped) == []
    assert not (private / "numpy").exists() and not list(private.glob("numpy-*"))
    installed = read_dists([str(private)])
    assert {"langgraph", "langchain-core", "langchain-ollama", "langchain-openai", "keyring", "shapely"} <= set(
        installed
    )
    log = (profile / "geogpt_qgis" / "installer" / "install.log").read_text()
    assert "removed (QGIS ships them): numpy" in log
    assert f"numpy=={before['version']}" in log

    # After a restart: the plugin's own start-up code makes the folder importable, numpy still QGIS's.
    plugins, data = str(plugin.parent), str(private.parent.parent)
    after_restart = _qgis_python(
        f"import json, sys; sys.path.insert(0, {plugins!r}); from pathlib import Path; "
        "from geogpt_qgis.toolbelt.python_env import activate, packages_dir; "
        f"activate(packages_dir(Path({data!r}))); import numpy, langgraph.graph, langchain_ollama; "
        "import osgeo, pyproj, PyQt5; "
        "print(json.dumps({'numpy': numpy.__file__, 'version': numpy.__version__, "
        "'langgraph': langgraph.graph.__file__, "
        "'shipped': {m.__name__: m.__file__ for m in (numpy, osgeo, pyproj, PyQt5)}}))"
    )
    assert (after_restart["numpy"], after_restart["version"]) == (before["file"], before["version"])
    assert Path(after_restart["langgraph"]).is_relative_to(private)
    assert after_restart["shipped"] == shipped_files
