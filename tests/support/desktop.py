"""Start the real QGIS desktop under Xvfb with the plugin installed and a scripted session."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SESSION = REPO / "tests" / "support" / "desktop_session.py"


def run_qgis_session(
    workdir: Path,
    project: Path,
    settings: dict[str, str],
    env: dict[str, str],
    timeout: float = 270,
    size: str = "1500x950",
    session: Path = SESSION,
) -> dict:
    """Install the plugin in a fresh profile under ``workdir``, run QGIS with the session script; return its report."""
    sys.path.insert(0, str(REPO / "scripts"))
    from plugin_dist import install

    profiles = workdir / "profiles"
    install(profiles, "geogpt-test", settings)
    out = workdir / "report.json"
    environment = {
        **os.environ,
        # QGIS's Python gets the plugin's dependencies from the project's virtual environment.
        "PYTHONPATH": os.pathsep.join([sysconfig.get_paths()["purelib"], os.environ.get("PYTHONPATH", "")]).rstrip(
            os.pathsep
        ),
        "GEOGPT_REPO": str(REPO),
        "GEOGPT_DESKTOP_OUT": str(out),
        **env,
    }
    environment.pop("QT_QPA_PLATFORM", None)  # a real (virtual) screen
    xvfb = shutil.which("xvfb-run")
    if xvfb is None:
        raise RuntimeError("xvfb-run is missing (Debian package xvfb); make test installs it")
    command = [
        xvfb,
        "-a",
        "-s",
        f"-screen 0 {size}x24",
        "qgis",
        "--profiles-path",
        str(profiles),
        "--profile",
        "geogpt-test",
        "--nologo",
        "--noversioncheck",
        "--code",
        str(session),
        str(project),
    ]
    done = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=timeout, cwd=workdir)
    if not out.is_file():
        raise AssertionError(
            f"QGIS wrote no report (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    report = json.loads(out.read_text())
    report["exit_code"] = done.returncode
    report["stderr_tail"] = done.stderr[-3000:]
    return report


if __name__ == "__main__":
    print(json.dumps(run_qgis_session(Path(sys.argv[1]), Path(sys.argv[2]), {}, {}), indent=2))
