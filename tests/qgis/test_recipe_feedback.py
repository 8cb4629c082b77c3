"""A thumbs-up under an answer keeps the run as a worked example; the options page lists and deletes them."""

from __future__ import annotations

import json

import pytest
from qgis.PyQt.QtCore import Qt
from qgis.PyQt.QtGui import QFontMetrics
from qgis.PyQt.QtTest import QTest

from geogpt_qgis.core.recipes import Recipe
from geogpt_qgis.gui.recipe_feedback import LikeButton
from geogpt_qgis.tools.examples import recipe_store
from geogpt_qgis.tools.examples.family import ExampleTools
from tests.support.dock import items_of, type_and_send
from tests.support.model_server import ToolCall, Turn
from tests.support.runs import call_in_thread, wait_until

QUESTION = "Which schools are within 400 m of the Elv river?"


@pytest.fixture
def library(tmp_path, monkeypatch):
    path = tmp_path / "profile" / "my_recipes.json"
    path.parent.mkdir()
    monkeypatch.setattr(recipe_store, "store_path", lambda: path)
    return path


def answer_with_a_tool(panel, model_server, question: str = QUESTION) -> None:
    model_server.script(
        [
            Turn(tool_calls=[ToolCall("find_examples", {"question": question})]),
            Turn(
                tool_calls=[
                    ToolCall(
                        "run_algorithm",
                        {
                            "algorithm": "native:extractwithindistance",
                            "parameters": {"INPUT": "schools", "REFERENCE": "rivers", "DISTANCE": 400},
                            "output_name": "schools_near_rivers",
                        },
                    )
                ]
            ),
            Turn(text="Eight schools are within 400 m of a river."),
        ]
    )
    type_and_send(panel, question)
    wait_until(lambda: panel.statuses == ["finished"], 120)


def drawable(button) -> bool:
    """Every character of the button's label is drawn by a font on this system (Qt's fallbacks included)."""
    metrics = QFontMetrics(button.font())
    return all(metrics.inFontUcs4(ord(char)) for char in button.text())


def test_a_thumbs_up_keeps_the_run_with_placeholders_and_find_examples_offers_it(
    panel, model_server, library, tool_ctx
):
    answer_with_a_tool(panel, model_server)
    (like,) = items_of(panel, LikeButton)
    assert drawable(like)  # the thumbs-up where a font has it, else "+1": never an empty box
    QTest.mouseClick(like, Qt.MouseButton.LeftButton)
    assert not like.isEnabled() and "Kept" in like.text() and drawable(like)

    stored = json.loads(library.read_text(encoding="utf-8"))["recipes"]
    assert len(stored) == 1
    recipe = stored[0]
    assert recipe["q"] == "Which <point layer> are within <distance> of the <place> <line layer>?"
    assert [name for name, _ in recipe["calls"]] == ["run_algorithm"]  # find_examples only looked for a method
    assert recipe["calls"][0][1]["parameters"] == {
        "INPUT": "<point layer>",
        "REFERENCE": "<line layer>",
        "DISTANCE": "<distance>",
    }
    # The layer the run made is named from its parts, not as a layer of its own.
    assert recipe["calls"][0][1]["output_name"] == "<point layer>_near_<line layer>"
    assert "schools" not in library.read_text(encoding="utf-8")

    # A restart: nothing cached, the file is all there is.
    recipe_store._cache.clear()
    text = call_in_thread(ExampleTools(tool_ctx).find_examples, "hospitals within 2 km of the roads").text
    assert text.split("Q: ")[1].startswith("Which <point layer> are within <distance> of the <place> <line layer>?")


def test_an_answer_without_tool_calls_gets_no_thumbs_up(panel, model_server, library):
    model_server.script([Turn(text="Hello! Ask me about your layers.")])
    type_and_send(panel, "hello")
    wait_until(lambda: panel.statuses == ["finished"], 120)
    assert items_of(panel, LikeButton) == []
    assert not library.exists()


def test_the_options_page_lists_the_users_examples_and_deletes_them(make_page, library):
    for n, question in enumerate(["count <point layer> per <polygon layer>", "buffer <layer> by <distance>"]):
        recipe_store.add_recipe(Recipe(id=f"mine-{n}", family="mine", question=question, calls=(("list_layers", {}),)))
    page = make_page()
    box = page.my_recipes
    assert [box.list.item(i).text() for i in range(box.list.count())] == [
        "buffer <layer> by <distance>",
        "count <point layer> per <polygon layer>",
    ]
    box.list.item(0).setSelected(True)
    QTest.mouseClick(box.delete_button, Qt.MouseButton.LeftButton)
    assert [r.id for r in recipe_store.user_recipes()] == ["mine-0"]
    assert box.list.count() == 1
