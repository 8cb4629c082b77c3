"""Resolve what a gated call names into ``core.targets.Target``s: layer ids and sources, real paths, feature sets.

A preview lists these on its request; the call, when it runs, resolves them
again and must find the same (``core.targets.broken_contract``).  Layer
targets are made on the main thread (they read ``QgsMapLayer``); file targets
only stat the file system.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from urllib.parse import urlsplit

from qgis.core import QgsMapLayer, QgsProject

from geogpt_qgis.core.targets import FILE, LAYER, URL, Target, broken_contract
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.layers import resolve_layer


def layer_source(layer: QgsMapLayer) -> str:
    """The layer's provider and data source without credentials (``publicSource``)."""
    return f"{layer.providerType()}: {layer.publicSource()}"


def layer_target(layer: QgsMapLayer, ops: Iterable[str], state: str = "") -> Target:
    """``layer`` by its id and data source (main thread)."""
    return Target(LAYER, layer.name(), layer.id(), layer_source(layer), state, tuple(ops))


def named_layer_targets(project: QgsProject, ref: str, ops: Iterable[str]) -> list[Target]:
    """The layer ``ref`` names, as the one target of a call on it (main thread).

    None when ``ref`` names no layer: the call then fails on its own, with
    the closest names, whether or not it was approved.
    """
    try:
        layer = resolve_layer(project, ref)
    except ToolError:
        return []
    return [layer_target(layer, ops)]


def features_state(ids: Iterable[int]) -> str:
    """Which features: their number and a digest of their ids (another set of features is another contract)."""
    ordered = sorted(int(i) for i in ids)
    digest = hashlib.sha256(",".join(map(str, ordered)).encode()).hexdigest()[:12]
    return f"{len(ordered):,} features (ids {digest})"


def file_state(path: str) -> str:
    """What the file is now: absent, or its inode, size and modification time (a swap or rewrite changes it)."""
    try:
        stat = os.stat(path)
    except OSError:
        return "absent"
    return f"inode {stat.st_ino}, {stat.st_size:,} bytes, modified {stat.st_mtime_ns}"


def file_target(path: str, ops: Iterable[str]) -> Target:
    """``path`` by where it really leads (symbolic links and ``..`` resolved) and its state there."""
    real = os.path.realpath(os.path.expanduser(path))
    return Target(FILE, path, real, "", file_state(real), tuple(ops))


def url_target(url: str, ops: Iterable[str]) -> Target:
    """``url`` as the call would request it, its host (without any user or password) as where it lives."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:  # not a number: the URL as given still names it
        port = None
    host = parts.hostname or ""
    where = f"{host}:{port}" if port else host
    return Target(URL, url, url, where, "", tuple(ops))


def require_approved_file(approved: list[Target], path: str, ops: Iterable[str], tool: str) -> None:
    """Refuse to write ``path`` unless it still leads where ``approved`` said (call just before writing).

    ``approved`` is ``approved_targets(FILE)`` read on the call's own thread (the
    approval lives in its context).  Nothing to check when the call was
    approved without file targets (an edited call, or a caller that is not the agent).
    """
    if not approved:
        return
    problem = broken_contract(approved, [file_target(path, ops)])
    if problem is not None:
        raise ToolError(
            f"not run: {problem}. Nothing was written. If it is still wanted, call {tool} again: "
            "the user will be asked about it as it is now."
        )
