"""Saving a project as QGIS's Save / Save As does, with the plugin's result hooks listening."""

from __future__ import annotations

from pathlib import Path

from qgis.core import QgsProject

from geogpt_qgis.tools.result_store import ResultStore, SaveHooks, result_store


def save(project: QgsProject, store: ResultStore | None = None, file_name: Path | None = None) -> list[Path]:
    """Save ``project`` (under ``file_name``: a Save As) with ``SaveHooks`` on its store; returns what it was told.

    QGIS gives a project its new name before it writes it, which is when the hooks move the results.
    """
    told: list[Path] = []
    hooks = SaveHooks(project, store or result_store(project), told.append)
    try:
        if file_name is not None:
            project.setFileName(str(file_name))
        assert project.write(), project.error()
    finally:
        hooks.disconnect()
    return told
