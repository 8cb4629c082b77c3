"""Translations: QGIS in Norwegian Bokmål shows a Norwegian dock; the .ts is complete and the .qm up to date."""

from __future__ import annotations

import re
import string
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from qgis.PyQt.QtCore import QCoreApplication, QLocale, QSettings, QTranslator

from geogpt_qgis.toolbelt.i18n import CONTEXT, install_translator, qgis_locale, tr, translation_file
from tests.support.dock import close_dock, configure, open_dock
from tests.support.runs import wait_until

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))

import update_translations  # noqa: E402 - scripts/ is not a package

TS = update_translations.ts_path("nb")
QM = TS.with_suffix(".qm")
LOCALE_KEYS = ("locale/userLocale", "locale/overrideFlag")


def nb_messages() -> dict[str, update_translations.Message]:
    return update_translations.read_ts(TS)


def nb(source: str) -> str:
    """The Bokmål translation of ``source`` according to the .ts."""
    return nb_messages()[source].translation


@pytest.fixture
def qgis_in_norwegian(qgis_app) -> Iterator[None]:
    """QGIS settings as after choosing Norsk bokmål in Settings > Options > General (override the system locale)."""
    settings = QSettings()
    saved = {key: settings.value(key) for key in LOCALE_KEYS if settings.contains(key)}
    settings.setValue("locale/userLocale", "nb_NO")
    settings.setValue("locale/overrideFlag", True)
    yield
    for key in LOCALE_KEYS:
        if key in saved:
            settings.setValue(key, saved[key])
        else:
            settings.remove(key)


@pytest.fixture
def nb_translator(qgis_in_norwegian) -> Iterator[QTranslator]:
    """The plugin's translator, installed as ``initGui`` does; removed afterwards so other tests stay English."""
    translator = install_translator()
    assert translator is not None, "no Norwegian translation was loaded for locale nb_NO"
    yield translator
    QCoreApplication.removeTranslator(translator)
    assert tr("Send") == "Send" and tr("New conversation") == "New conversation"


def test_the_plugin_follows_the_locale_qgis_runs_in(qgis_in_norwegian):
    assert qgis_locale() == "nb_NO"
    assert translation_file("nb_NO") == translation_file("nb") == translation_file("no") == QM
    assert translation_file("de_DE") is None and translation_file("en_US") is None
    # Without the override QGIS runs in the system locale (and writes it to locale/userLocale).
    QSettings().setValue("locale/overrideFlag", False)
    assert qgis_locale() == QLocale.system().name()


def test_the_dock_speaks_norwegian(nb_translator, qgis_iface, demo_project, model_server, tmp_path):
    assert tr("New conversation") == "Ny samtale"
    configure(model_server)
    dock = open_dock(qgis_iface, demo_project, tmp_path / "store.sqlite")
    try:
        panel = dock.panel
        assert panel.send_button.text() == nb("Send")
        placeholder = "Ask about your map… (Enter sends, Shift+Enter for a new line)"
        assert panel.input.placeholderText() == nb(placeholder)
        assert panel.input.placeholderText().startswith("Spør om kartet ditt…")
        assert panel.policy.toolTip() == nb("Before running code, changing data or writing files")
        assert [panel.policy.itemText(i) for i in range(panel.policy.count())] == [
            "Spør før endringer",
            "Stol på denne samtalen",
            "Tillat aldri endringer",
        ]
        bar = panel.conversation_bar
        assert bar.new_button.toolTip() == "Ny samtale"  # the full label, also when the row is short of room
        dock.resize(900, 700)  # room for the full labels (a narrow dock shows "+", gui/responsive.py)
        wait_until(lambda: not bar.compact, 120)
        assert bar.new_button.text() == "Ny samtale"
        assert bar.list_button.toolTip() == nb("Your conversations: resume, rename, delete, export")
        assert bar.more_button.toolTip() == nb("More for this conversation")
        models = panel.model_bar
        assert models.refresh_button.toolTip() == "Last inn modellisten fra tjeneren på nytt"
        assert models.model_combo.toolTip() == nb("The model to use; the list comes from the server")
        assert models.provider_combo.itemText(1) == "OpenAI-kompatibel"
    finally:
        close_dock(dock)


def test_every_tr_string_has_a_bokmal_translation():
    found, problems = update_translations.extract()
    assert problems == [], "tr() must get one plain string literal, or the string cannot be translated"
    messages = nb_messages()
    missing = [source for source in found if source not in messages or not messages[source].translation]
    assert missing == [], "run make translations and translate these in i18n/geogpt_qgis_nb.ts"
    unfinished = [m.source for m in messages.values() if m.kind not in ("", "obsolete") or not m.translation]
    assert unfinished == []
    assert len(found) >= 150


def _placeholders(text: str) -> list[str]:
    fields = sorted(
        f"{{{name}{'!' + conversion if conversion else ''}{':' + spec if spec else ''}}}"
        for _, name, spec, conversion in string.Formatter().parse(text)
        if name is not None
    )
    return fields + sorted(re.findall(r"%\w%|\$\w+", text))


def test_placeholders_survive_translation():
    wrong = {
        source: message.translation
        for source, message in nb_messages().items()
        if _placeholders(source) != _placeholders(message.translation)
    }
    assert wrong == {}
    assert _placeholders("Running {tool}… {percent:.0f}%") == ["{percent:.0f}", "{tool}"]


def test_the_compiled_qm_matches_the_ts():
    translator = QTranslator()
    assert translator.load(str(QM))
    stale = {
        source: message.translation
        for source, message in nb_messages().items()
        if message.kind != "obsolete" and translator.translate(CONTEXT, source.encode()) != message.translation
    }
    assert stale == {}, "run make translations to recompile i18n/geogpt_qgis_nb.qm"
