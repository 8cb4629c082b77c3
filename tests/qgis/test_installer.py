"""The first-run installer with real pip runs: into the profile, never over numpy; offline, no pip, failures, Cancel.

pip reads only the environment these tests give it (no pip.conf), and finds its
packages in a folder of tiny wheels written on the spot, so the tests run offline.
A fake numpy wheel, pinned to QGIS's own numpy version, stands for what
``pip --target`` always drags in: it must not survive in the profile.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import threading
import time
from importlib import metadata
from pathlib import Path

import pytest
from qgis.PyQt.QtCore import QCoreApplication, QEvent, Qt
from qgis.PyQt.QtTest import QTest
from qgis.PyQt.QtWidgets import QLabel

from geogpt_qgis.gui.install_banner import InstallBanner, failure_message
from geogpt_qgis.toolbelt import dependencies
from geogpt_qgis.toolbelt.dependencies import missing_packages
from geogpt_qgis.toolbelt.installer import Installer, InstallError, make_plan
from geogpt_qgis.toolbelt.site_cleanup import protected_left
from tests.support.dock import close_dock, items_of, open_dock
from tests.support.net import free_port
from tests.support.runs import wait_until
from tests.support.wheels import make_wheel

NUMPY = metadata.version("numpy")
FAKE_NUMPY = "raise ImportError('a copy of numpy in the profile shadows the one QGIS ships')\n"


@pytest.fixture
def pip_env(monkeypatch, tmp_path):
    """pip with no configuration file and no index: only the wheels in ``tmp_path/wheels``."""
    for name in [key for key in os.environ if key.startswith("PIP_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "wheels"))
    monkeypatch.setattr(sys, "path", list(sys.path))  # the installed folder goes on it; restored afterwards
    (tmp_path / "wheels").mkdir()
    return tmp_path / "wheels"


@pytest.fixture
def tiny_requirements(pip_env, tmp_path) -> Path:
    """``geogpt-tiny``, which needs numpy: pip fetches the (fake) numpy pinned to QGIS's version too."""
    make_wheel(pip_env, "geogpt-tiny", "1.0", {"geogpt_tiny/__init__.py": "ANSWER = 42\n"}, ["numpy>=1.0"])
    make_wheel(pip_env, "numpy", NUMPY, {"numpy/__init__.py": FAKE_NUMPY, "numpy/core/__init__.py": ""})
    make_wheel(pip_env, "numpy", "99.0", {"numpy/__init__.py": FAKE_NUMPY})  # newer: the pin must win
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("# test\ngeogpt-tiny>=1\n")
    return requirements


def _run(plan, phases: list | None = None):
    installer = Installer(plan, (lambda p: phases.append(p.phase)) if phases is not None else None)
    return installer.run()


def test_packages_go_into_the_profile_and_numpy_stays_qgis_own(tmp_path, tiny_requirements):
    plan = make_plan(tmp_path / "profile" / "geogpt_qgis", tiny_requirements, modules=("geogpt_tiny",))
    phases: list[str] = []
    report = _run(plan, phases)

    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert plan.target == tmp_path / "profile/geogpt_qgis/python-packages" / version
    assert report.cleanup.removed_protected == ["numpy"]
    assert report.cleanup.kept == ["geogpt-tiny"]
    assert report.protected["numpy"] == NUMPY
    assert sorted(p.name for p in plan.target.iterdir()) == ["geogpt_tiny", "geogpt_tiny-1.0.dist-info"]
    assert protected_left(plan.target, ["numpy"]) == []
    assert list(dict.fromkeys(phases)) == ["checking", "collecting", "installing", "cleaning", "verifying"]
    log = plan.log_path.read_text()
    assert f"numpy=={NUMPY}" in plan.constraints_path.read_text()
    assert "Successfully installed geogpt-tiny-1.0 numpy-" + NUMPY in log
    assert "removed (QGIS ships them): numpy" in log

    # A fresh Python with the folder first on its path: numpy is QGIS's, geogpt_tiny the profile's.
    probe = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import numpy, geogpt_tiny; "
        "print(json.dumps([numpy.__version__, numpy.__file__, geogpt_tiny.__file__]))"
    )
    done = subprocess.run(
        [report.python, "-c", probe, str(plan.target)], capture_output=True, text=True, check=True, timeout=60
    )
    numpy_version, numpy_file, tiny_file = json.loads(done.stdout)
    assert (numpy_version, numpy_file) == (NUMPY, importlib.util.find_spec("numpy").origin)
    assert Path(tiny_file).parent.parent == plan.target


def test_installing_again_repairs_and_stays_clean(tmp_path, tiny_requirements):
    plan = make_plan(tmp_path / "data", tiny_requirements, modules=("geogpt_tiny",))
    _run(plan)
    (plan.target / "geogpt_tiny" / "__init__.py").unlink()  # a half-deleted folder
    report = _run(plan)
    assert (plan.target / "geogpt_tiny" / "__init__.py").is_file()
    assert report.cleanup.removed_protected == ["numpy"]
    assert protected_left(plan.target, ["numpy"]) == []


def test_offline_says_pypi_cannot_be_reached(tmp_path, pip_env, monkeypatch):
    monkeypatch.delenv("PIP_NO_INDEX")
    monkeypatch.delenv("PIP_FIND_LINKS")
    monkeypatch.setenv("PIP_INDEX_URL", f"http://127.0.0.1:{free_port()}/simple")  # nothing listens there
    monkeypatch.setenv("PIP_RETRIES", "0")
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("geogpt-tiny>=1\n")
    plan = make_plan(tmp_path / "data", requirements)
    with pytest.raises(InstallError) as raised:
        _run(plan)
    assert raised.value.kind == "offline"
    assert "No matching distribution found for geogpt-tiny" in raised.value.detail
    assert "FAILED (offline)" in plan.log_path.read_text()
    assert failure_message(raised.value).startswith("Cannot reach PyPI (pypi.org)")


def test_a_pip_failure_shows_its_last_lines(tmp_path, pip_env):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("geogpt-no-such-package==1.0\n")
    plan = make_plan(tmp_path / "data", requirements)
    with pytest.raises(InstallError) as raised:
        _run(plan)
    assert raised.value.kind == "pip-failed"
    last = raised.value.detail.splitlines()[-1]
    assert last == "ERROR: No matching distribution found for geogpt-no-such-package==1.0"


def test_a_python_without_pip_is_named(tmp_path, pip_env, tiny_requirements):
    venv = tmp_path / "nopip"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    plan = make_plan(tmp_path / "data", tiny_requirements)
    plan.pythons = (venv / "bin" / "python",)
    with pytest.raises(InstallError) as raised:
        _run(plan)
    assert (raised.value.kind, raised.value.detail) == ("no-pip", str(venv / "bin" / "python"))
    assert "has no pip" in failure_message(raised.value)


def test_no_python_found(tmp_path, tiny_requirements):
    plan = make_plan(tmp_path / "data", tiny_requirements)
    plan.pythons = (tmp_path / "qgis-bin.exe",)
    with pytest.raises(InstallError) as raised:
        _run(plan)
    assert raised.value.kind == "no-python"
    assert "qgis-bin.exe" in raised.value.detail


def test_cancel_stops_the_install_at_once(tmp_path, tiny_requirements):
    slow, running = tmp_path / "python3", tmp_path / "running"
    # A shell whose child holds the output pipe, like a wheel build; it says when it runs.
    slow.write_text(f"#!/bin/sh\ntouch '{running}'\nsleep 60\n")
    slow.chmod(0o755)
    plan = make_plan(tmp_path / "data", tiny_requirements)
    plan.pythons = (slow,)
    installer = Installer(plan)
    errors: list[InstallError] = []

    def run() -> None:
        try:
            installer.run()
        except InstallError as error:
            errors.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 60
    while not running.exists():  # cancelled while the child runs, however late it starts on a loaded machine
        assert thread.is_alive() and time.monotonic() < deadline, errors
        time.sleep(0.01)
    started = time.monotonic()
    installer.cancel()
    thread.join(10)
    assert not thread.is_alive()
    assert time.monotonic() - started < 5
    assert [e.kind for e in errors] == ["cancelled"]


def test_the_dock_offers_the_install_and_the_agent_can_run_after_it(
    qgis_iface, demo_project, tmp_path, tiny_requirements, monkeypatch
):
    monkeypatch.setitem(dependencies.REQUIRED_MODULES, "geogpt_tiny", "geogpt-tiny")
    assert missing_packages() == ["geogpt-tiny"]
    dock = open_dock(qgis_iface, demo_project, tmp_path / "store.sqlite")
    try:
        panel = dock.panel
        banner = panel.install_banner
        assert banner is not None and banner.isVisible()
        assert "geogpt-tiny" in banner.message.text()
        plan = make_plan(tmp_path / "profile" / "geogpt_qgis", tiny_requirements, modules=("geogpt_tiny",))
        banner.plan_factory = lambda: plan
        outcomes: list[tuple[bool, str]] = []
        banner.finished.connect(lambda ok, message: outcomes.append((ok, message)))

        wait_until(lambda: banner.install_button.height() > 0)  # laid out: a click lands on it
        QTest.mouseClick(banner.install_button, Qt.MouseButton.LeftButton)
        assert banner.running and not banner.install_button.isEnabled() and banner.progress.isVisible()
        wait_until(lambda: outcomes, 120)

        assert outcomes[0][0] is True, outcomes
        assert outcomes[0][1].startswith("Installed in ")
        assert not banner.isVisible()
        assert missing_packages() == []  # importable in this QGIS now, without a restart
        assert str(plan.target) in sys.path
        import geogpt_tiny

        assert geogpt_tiny.ANSWER == 42
        notices = [w.text() for w in items_of(panel, QLabel) if w.property("level") == "info"]
        assert "The Python packages are installed: ask away." in notices
    finally:
        sys.modules.pop("geogpt_tiny", None)
        close_dock(dock)


def test_the_banner_shows_a_failure_and_its_log(qgis_app, tmp_path, pip_env):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("geogpt-no-such-package==1.0\n")
    banner = InstallBanner(["geogpt-no-such-package"], plan_factory=lambda: make_plan(tmp_path / "data", requirements))
    outcomes: list[tuple[bool, str]] = []
    banner.finished.connect(lambda ok, message: outcomes.append((ok, message)))
    banner.show()
    assert banner.start_install() is True
    assert banner.start_install() is False  # one at a time
    wait_until(lambda: outcomes, 60)
    ok, message = outcomes[0]
    assert not ok
    assert message.startswith("pip could not install the packages:")
    assert "No matching distribution found for geogpt-no-such-package" in message
    assert banner.status.property("level") == "error"
    assert banner.install_button.text() == "Try again" and banner.install_button.isEnabled()
    assert banner.log_button.isVisible()
    banner.show_log()
    assert "geogpt-no-such-package" in banner.dialogs[-1].markdown
    banner.dialogs[-1].close()
    banner.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)  # gone now, not at QGIS's exit
