"""Tiny wheels written on the spot, so pip can install real packages from a local folder, offline."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def make_wheel(folder: Path, name: str, version: str, files: dict[str, str], requires: list[str] = ()) -> Path:
    """Write ``<name>-<version>-py3-none-any.whl`` holding ``files`` (path: text) into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{name.replace('-', '_')}-{version}"
    info = f"{stem}.dist-info"
    metadata = "\n".join(
        ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}", *[f"Requires-Dist: {r}" for r in requires]]
    )
    entries = {
        **{path: text.encode() for path, text in files.items()},
        f"{info}/METADATA": (metadata + "\n").encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: geogpt-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [f"{path},{_digest(data)},{len(data)}" for path, data in entries.items()] + [f"{info}/RECORD,,"]
    wheel = folder / f"{stem}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zipped:
        for path, data in entries.items():
            zipped.writestr(path, data)
        zipped.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return wheel
