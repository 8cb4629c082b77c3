"""What the user typed decides which files and URLs a tool may use unasked (core.user_named, Qt-free)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from geogpt_qgis.core.cancel import current_conversation
from geogpt_qgis.core.user_named import UserNamed, url_key


@contextmanager
def conversation(name: str) -> Iterator[None]:
    """Run as conversation ``name``, and leave the context as it was (tests share the main thread)."""
    token = current_conversation.set(name)
    try:
        yield
    finally:
        current_conversation.reset(token)


def test_url_keys_resolve_dot_segments_and_drop_queries():
    assert url_key("HTTP://Example.org/data/../private/x.geojson?leak=1") == "http://example.org/private/x.geojson"
    assert url_key("https://example.org/a/./b/") == "https://example.org/a/b"
    assert url_key("https://example.org") == url_key("https://example.org/") == "https://example.org"


def test_a_url_below_the_one_given_is_trusted_and_one_beside_it_is_not():
    named = UserNamed()
    with conversation("c-urls"):
        named.notice("the data is at https://example.org/data please")
        assert named.url_given("https://example.org/data/wells.geojson")
        assert not named.url_given("https://example.org/data/../private/admin.geojson")
        assert not named.url_given("https://example.org/database")  # a longer name is not below the path
        assert named.url_given("https://ogc.example.net/collections/x", also=["https://ogc.example.net/"])


@pytest.mark.parametrize("said", ["schools / parks", "look in ~/ now", "maybe ../ or ./", "C:\\ drive"])
def test_words_too_broad_to_name_a_folder_trust_nothing_outside_the_project(tmp_path, said):
    named = UserNamed()
    project, outside = tmp_path / "project", tmp_path / "private" / "secret.csv"
    project.mkdir()
    with conversation("c-broad"):
        named.notice(said)
        assert not named.file_named(outside, str(project))
        assert not named.file_named(Path.home() / "secret.csv", str(project))


def test_a_named_folder_a_named_file_and_a_bare_name(tmp_path):
    named = UserNamed()
    data, project = tmp_path / "data", tmp_path / "project"
    with conversation("c-files"):
        named.notice(f"files in '{data}/', also {tmp_path}/one.gpkg|layername=a and notes.csv")
        assert named.file_named(data / "deep" / "x.csv", str(project))
        assert named.file_named(tmp_path / "one.gpkg", str(project))
        assert not named.file_named(tmp_path / "two.gpkg", str(project))
        assert named.file_named(tmp_path / "anywhere" / "notes.csv", str(project))  # the file named by name
        assert named.file_named(project / "sub" / "z.tif", str(project))  # the project's folder
    with conversation("c-other"):  # another conversation knows none of it
        assert not named.file_named(data / "deep" / "x.csv", str(project))
