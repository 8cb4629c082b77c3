"""Scratch results of sessions that never saved: a folder each (a single file before), pruned once a week old."""

from __future__ import annotations

import os
import time
from pathlib import Path

from geogpt_qgis.core import result_files

WEEK_AND_A_DAY = 8 * 86400


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_old_scratch_folders_and_files_go_new_ones_and_the_current_one_stay(tmp_path):
    old_folder = tmp_path / "results-20261101-000000-aaaaaaaa"
    old_folder.mkdir()
    (old_folder / "buffer.gpkg").write_bytes(b"x")
    _age(old_folder / "buffer.gpkg", WEEK_AND_A_DAY)
    _age(old_folder, WEEK_AND_A_DAY)
    touched = tmp_path / "results-20261101-000000-bbbbbbbb"  # old folder, but a result in it changed today
    touched.mkdir()
    (touched / "fresh.gpkg").write_bytes(b"x")
    _age(touched, WEEK_AND_A_DAY)
    legacy = tmp_path / "results-20261101-000000-cccccccc.gpkg"  # a session's single file, from before
    legacy.write_bytes(b"x")
    _age(legacy, WEEK_AND_A_DAY)
    current = tmp_path / "results-20261101-000000-dddddddd"
    current.mkdir()
    _age(current, WEEK_AND_A_DAY)
    own = tmp_path / "results-notes.txt"  # not a scratch result: never touched
    own.write_text("mine")
    _age(own, WEEK_AND_A_DAY)

    removed = result_files.prune_scratch(tmp_path, keep=current)

    assert sorted(removed) == sorted([old_folder, legacy])
    assert not old_folder.exists() and not legacy.exists()
    assert touched.is_dir() and current.is_dir() and own.is_file()


def test_names_of_results_are_plain_and_unique_in_their_folder(tmp_path):
    (tmp_path / "Roads.gpkg").touch()
    (tmp_path / "notes.txt").touch()
    assert result_files.file_name("roads", tmp_path) == tmp_path / "roads_2.gpkg"  # file names ignore case too
    assert result_files.file_name("notes", tmp_path) == tmp_path / "notes.gpkg"  # not a result's name
    assert result_files.file_name("x", tmp_path / "missing") == tmp_path / "missing" / "x.gpkg"
