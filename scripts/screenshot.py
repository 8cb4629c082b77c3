"""Make the pictures of the dock in docs/: the GeoGPT dock inside the real QGIS, under Xvfb.

QGIS starts with the plugin and the demo project and takes the layout tour
(tests/support/layout_tour.py, the same one the narrow-dock desktop test
takes): first run with no model server, then a scripted server inside QGIS
plays a short, truthful conversation (the numbers come from the demo data), an
approval card and a stopped answer.  Saved in the output folder:

- ``screenshot.png``: the whole window, dock at 450 px after the answer (the README's picture);
- ``dock-<stage>-300.png`` for each stage (first-run, answer, approval, stopped);
- ``dock-answer-450.png`` and ``dock-answer-800.png``.

    .venv/bin/python scripts/screenshot.py docs
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.demo import copy_demo, ensure_demo  # noqa: E402 - after the path set-up
from tests.support.desktop import run_qgis_session  # noqa: E402 - after the path set-up
from tests.support.net import free_port  # noqa: E402 - after the path set-up

SCREEN = "2000x1000"


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else REPO / "docs").resolve()
    if out.suffix == ".png":  # the former interface named the README's picture
        out = out.parent
    out.mkdir(parents=True, exist_ok=True)
    ensure_demo()
    with tempfile.TemporaryDirectory() as work:
        workdir = Path(work)
        project = copy_demo(workdir / "demo")
        report = run_qgis_session(
            workdir,
            project,
            {"provider": "ollama", "ollama_url": f"http://127.0.0.1:{free_port()}", "ollama_model": "qwen3:8b"},
            {"GEOGPT_DESKTOP_SHOTS": str(out)},
            session=REPO / "tests" / "support" / "desktop_layout_session.py",
            size=SCREEN,
        )
    if report.get("errors") or not (out / "screenshot.png").is_file():
        print(json.dumps(report, indent=2), file=sys.stderr)
        return 1
    for shot in report["shots"]:
        print(f"wrote {shot} ({shrink(Path(shot)):,} bytes)")
    return 0


def shrink(picture: Path) -> int:
    """256 colours and an optimised PNG: the pictures live in git, a third of their size with no visible change."""
    try:
        from PIL import Image
    except ImportError:  # Pillow is Debian's python3-pil here; without it the pictures stay as QGIS saved them
        return picture.stat().st_size
    with Image.open(picture) as image:
        rgb = image.convert("RGB")
    try:
        reduced = rgb.quantize(256, method=Image.Quantize.LIBIMAGEQUANT)
    except ValueError:  # a Pillow built without libimagequant
        reduced = rgb.quantize(256, method=Image.Quantize.MEDIANCUT)
    reduced.save(picture, optimize=True)
    return picture.stat().st_size


if __name__ == "__main__":
    sys.exit(main())
