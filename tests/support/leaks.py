"""Find a planted secret in files: plain bytes, and inside zip archives (a .qgz project is one)."""

from __future__ import annotations

import io
import os
import zipfile
from collections.abc import Iterable
from pathlib import Path

_MAX_BYTES = 200_000_000
# Folders of the machinery that runs these sessions, not written by QGIS or the plugin.
_SKIP_PREFIXES = ("bash_jobs",)


def _contains(data: bytes, secret: bytes) -> bool:
    if secret in data:
        return True
    if data[:4] == b"PK\x03\x04":
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                return any(_contains(archive.read(name), secret) for name in archive.namelist())
        except (zipfile.BadZipFile, OSError, RuntimeError):
            return False
    return False


def files_under(roots: Iterable[Path], since: float | None = None) -> list[Path]:
    """Every regular file under ``roots`` (modified at or after ``since``, if given)."""
    found: dict[Path, None] = {}
    for root in roots:
        if root.is_file():
            found[root] = None
            continue
        for folder, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith(_SKIP_PREFIXES)]
            for name in names:
                path = Path(folder) / name
                try:
                    stat = path.stat()
                except OSError:
                    continue
                if not path.is_file() or stat.st_size > _MAX_BYTES:
                    continue
                if since is not None and stat.st_mtime < since:
                    continue
                found[path] = None
    return list(found)


def files_containing(secret: str, files: Iterable[Path]) -> list[Path]:
    """The files whose bytes (or zipped members) contain ``secret`` (UTF-8 or UTF-16)."""
    needles = [secret.encode("utf-8"), secret.encode("utf-16-le")]
    hits = []
    for path in files:
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if any(_contains(data, needle) for needle in needles):
            hits.append(path)
    return hits
