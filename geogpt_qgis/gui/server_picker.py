"""The one server/model picker: provider, server URL, model (from the server's list), API key, connection test.

Used twice: compact at the top of the dock (``live``: every change is saved at
once, and settings saved elsewhere are followed) and as the Model group of
the options page (a draft the page writes with ``values()`` on OK).  Every
network or keychain call runs in the background through ``LatestAnswers``:
switching provider or URL drops the answers still under way, so a slow server
the user left can never overwrite the list of the one they chose.
"""

from __future__ import annotations

import contextlib
import re
from html import escape

from qgis.PyQt.QtCore import Qt, QTimer, pyqtSignal
from qgis.PyQt.QtWidgets import (
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from geogpt_qgis.agent.config import ModelConfig, model_config_from_settings
from geogpt_qgis.gui import server_state as states
from geogpt_qgis.gui.background import LatestAnswers
from geogpt_qgis.gui.responsive import narrow_combo
from geogpt_qgis.gui.server_queries import (
    connection_test_text,
    explain_server_error,
    fetch_models,
    has_key,
    key_saved_text,
    model_info,
    no_tools_warning,
    store_key,
)
from geogpt_qgis.gui.server_state import ServerState, ServerStatus
from geogpt_qgis.gui.settings_events import settings_events
from geogpt_qgis.toolbelt.i18n import tr
from geogpt_qgis.toolbelt.preferences import PROVIDER_OLLAMA, PROVIDER_OPENAI, PlgOptionsManager

ERROR_STYLE = "color: #a94442;"
OK_STYLE = "color: #2b7a0b;"
# Wait this long after the last keystroke in the model name before asking the server about it.
MODEL_CHECK_DELAY_MS = 400
_URL_KEYS = {PROVIDER_OLLAMA: "ollama_url", PROVIDER_OPENAI: "openai_base_url"}
_MODEL_KEYS = {PROVIDER_OLLAMA: "ollama_model", PROVIDER_OPENAI: "openai_model"}


def set_label(label: QLabel, text: str, error: bool = False) -> None:
    """Show ``text`` (red if ``error``; `code` spans as code, never as backticks); an empty label hides."""
    label.setTextFormat(Qt.TextFormat.RichText if "`" in text else Qt.TextFormat.PlainText)
    label.setText(re.sub(r"`([^`]+)`", r"<code>\1</code>", escape(text)) if "`" in text else text)
    label.setStyleSheet(ERROR_STYLE if error else "")
    label.setVisible(bool(text))


class ServerPicker(QWidget):
    """Provider and model combos, server URL, API key and connection test, over a draft of the settings."""

    edited = pyqtSignal()  # the user changed the provider, the URL or the model
    state_changed = pyqtSignal(object)  # a ServerState: what the server last said about the chosen model

    def __init__(self, parent: QWidget | None = None, live: bool = False) -> None:
        super().__init__(parent)
        self.live = live
        self.answers = LatestAnswers(self)
        self._refreshed_once = False
        self.state = states.checking("")
        self._key_note = ""  # what storing a key said, last
        self._model_note = ""  # what the model queries said, last: the only line a later model list may clear
        self._model_check = QTimer(self)
        self._model_check.setSingleShot(True)
        self._model_check.setInterval(MODEL_CHECK_DELAY_MS)
        self._model_check.timeout.connect(self.check_tool_support)
        self._build_widgets()
        if live:
            self._lay_out_compact()
        else:
            self._lay_out_form()
        self.load()
        self.provider_combo.currentIndexChanged.connect(self._provider_changed)
        self.url_edit.editingFinished.connect(self._url_edited)
        self.model_combo.currentTextChanged.connect(self._model_edited)
        self.refresh_button.clicked.connect(self.refresh_models)
        self.test_button.clicked.connect(self.test_connection)
        # A key typed: the dock stores it, the options page keeps it in the draft; either asks the server again.
        self.key_edit.editingFinished.connect(self.store_typed_key if live else self._key_typed)
        if live:
            settings_events().changed.connect(self.reload_settings)

    # -- layout --------------------------------------------------------------
    def _build_widgets(self) -> None:
        self.provider_combo = narrow_combo(QComboBox(), 6)
        self.provider_combo.addItem("Ollama", PROVIDER_OLLAMA)
        self.provider_combo.addItem(tr("OpenAI-compatible"), PROVIDER_OPENAI)
        self.url_edit = QLineEdit()
        self.url_edit.setToolTip(tr("Ollama: http://localhost:11434 · OpenAI-compatible: the URL ending in /v1"))
        self.model_combo = narrow_combo(QComboBox())
        self.model_combo.setEditable(True)
        self.model_combo.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.model_combo.setToolTip(tr("The model to use; the list comes from the server"))
        self.refresh_button = QToolButton()
        self.refresh_button.setText("⟳")
        self.refresh_button.setToolTip(tr("Reload the server's model list"))
        self.key_label = QLabel(tr("API key"))
        self.key_edit = QLineEdit()
        self.key_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.test_button = QPushButton(tr("Test connection"))

    def _lay_out_compact(self) -> None:
        """The dock: one row (model, reload, fold-out button), the rest (provider too) folded; one status line."""
        self.settings_button = QToolButton()
        self.settings_button.setText("⚙")
        self.settings_button.setCheckable(True)
        self.settings_button.setToolTip(tr("Provider, server URL, API key and connection test"))
        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.model_combo, 1)
        top.addWidget(self.refresh_button)
        top.addWidget(self.settings_button)
        self.panel = QWidget()
        form = QFormLayout(self.panel)
        form.setContentsMargins(0, 0, 0, 0)
        form.addRow(tr("Provider"), self.provider_combo)
        form.addRow(tr("Server URL"), self.url_edit)
        form.addRow(self.key_label, self.key_edit)
        form.addRow(self.test_button)
        self.panel.setVisible(False)
        self.settings_button.toggled.connect(self.panel.setVisible)
        self.status_label = QLabel()
        self.status_label.setWordWrap(True)
        # One line says everything in the dock: model list, key and connection test.
        self.model_status = self.key_status = self.test_label = self.status_label
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.panel)
        layout.addWidget(self.status_label)

    def _lay_out_form(self) -> None:
        """The options page: one row per field, each with its own status line."""
        self.model_status, self.key_status, self.test_label = QLabel(), QLabel(), QLabel()
        self.model_status.setObjectName("geogptModelStatus")
        self.test_label.setObjectName("geogptTestResult")
        for label in (self.model_status, self.key_status, self.test_label):
            label.setWordWrap(True)
        model_row = QHBoxLayout()
        model_row.addWidget(self.model_combo, 1)
        model_row.addWidget(self.refresh_button)
        test_row = QHBoxLayout()
        test_row.addWidget(self.test_button)
        test_row.addWidget(self.test_label, 1)
        form = QFormLayout(self)
        form.setContentsMargins(0, 0, 0, 0)
        form.addRow(tr("Provider"), self.provider_combo)
        form.addRow(tr("Server URL"), self.url_edit)
        form.addRow(tr("Model"), model_row)
        form.addRow("", self.model_status)
        form.addRow(self.key_label, self.key_edit)
        form.addRow("", self.key_status)
        form.addRow(test_row)

    # -- the draft <-> widgets ------------------------------------------------
    def load(self) -> None:
        """Show the saved settings (the draft starts from them)."""
        s = PlgOptionsManager.get_plg_settings()
        self._urls = {PROVIDER_OLLAMA: s.ollama_url, PROVIDER_OPENAI: s.openai_base_url}
        self._models = {PROVIDER_OLLAMA: s.ollama_model, PROVIDER_OPENAI: s.openai_model}
        self._provider = s.provider if s.provider in self._urls else PROVIDER_OLLAMA
        self.provider_combo.blockSignals(True)
        self.provider_combo.setCurrentIndex(max(0, self.provider_combo.findData(self._provider)))
        self.provider_combo.blockSignals(False)
        self._show_provider()

    def _show_provider(self) -> None:
        """Fill the URL, model and key fields for the provider shown; answers about the former one are dropped."""
        self.answers.forget()
        self._model_check.stop()
        self.refresh_button.setEnabled(True)
        self.test_button.setEnabled(True)
        self.url_edit.setText(self._urls[self._provider])
        self.model_combo.blockSignals(True)
        self.model_combo.clear()
        model = self._models[self._provider]
        if model:
            self.model_combo.addItem(model)
        self.model_combo.setEditText(model)
        self.model_combo.blockSignals(False)
        is_openai = self._provider == PROVIDER_OPENAI
        for widget in {self.key_label, self.key_edit, self.key_status}:
            widget.setVisible(is_openai)
        self.key_edit.clear()
        for label in {self.model_status, self.key_status, self.test_label}:
            set_label(label, "")
        if is_openai:
            self.key_edit.setPlaceholderText(tr("type a key to store it in the system keychain"))
            url = self.server_url()
            self.answers.ask("key", lambda: has_key(url), self._key_state_arrived)

    def values(self) -> dict[str, str]:
        """The draft as settings: provider, both URLs, both models."""
        self._urls[self._provider] = self.server_url()
        self._models[self._provider] = self.model()
        values = {"provider": self._provider}
        for provider in (PROVIDER_OLLAMA, PROVIDER_OPENAI):
            values[_URL_KEYS[provider]] = self._urls[provider]
            values[_MODEL_KEYS[provider]] = self._models[provider]
        return values

    def provider(self) -> str:
        return self._provider

    def server_url(self) -> str:
        url: str = self.url_edit.text().strip().rstrip("/")
        return url

    def model(self) -> str:
        name: str = self.model_combo.currentText().strip()
        return name

    def typed_key(self) -> str | None:
        """A key typed but not stored yet (only OpenAI-compatible servers take one)."""
        return (self.key_edit.text().strip() or None) if self._provider == PROVIDER_OPENAI else None

    def current_config(self) -> ModelConfig:
        """The model settings for the next run, as saved (the key is looked up by the worker)."""
        return model_config_from_settings(PlgOptionsManager.get_plg_settings())

    def reload_settings(self) -> None:
        """Settings saved elsewhere (the options page): show them and ask the server again (URL or key may be new)."""
        self.load()
        self.refresh_models()

    def _save_live(self) -> None:
        """The dock saves at once, and only what is shown (the other provider's settings may be newer)."""
        if self.live:
            PlgOptionsManager.set_value("provider", self._provider)
            PlgOptionsManager.set_value(_URL_KEYS[self._provider], self.server_url())
            PlgOptionsManager.set_value(_MODEL_KEYS[self._provider], self.model())

    # -- reactions -------------------------------------------------------------
    def _provider_changed(self) -> None:
        if self.live:
            PlgOptionsManager.set_value("provider", self.provider_combo.currentData())
            self.load()  # the dock shows the saved settings of the provider chosen
        else:
            self.values()  # keep what was typed for the provider left
            self._provider = self.provider_combo.currentData()
            self._show_provider()
        self.edited.emit()
        self.refresh_models()

    def _url_edited(self) -> None:
        if self.server_url() == self._urls[self._provider]:
            return
        self._urls[self._provider] = self.server_url()
        self.answers.forget()  # whatever the former server still answers is not about this one
        self.refresh_button.setEnabled(True)
        for label in {self.model_status, self.test_label}:
            set_label(label, "")
        self._save_live()
        self.edited.emit()
        self.refresh_models()

    def _model_edited(self, _text: str) -> None:
        self._models[self._provider] = self.model()
        self._save_live()
        self.edited.emit()
        self._model_check.start()

    def store_typed_key(self) -> None:
        """Store the key typed for the server shown (background: the keychain may be slow or ask to unlock)."""
        key = self.typed_key()
        if not key:
            return
        self.key_edit.clear()  # from here on the key lives only in the background call that stores it
        set_label(self.key_status, tr("Saving the API key…"))
        url = self.server_url()
        self.answers.ask("store", lambda: store_key(url, key), self._key_stored)

    def _key_stored(self, where: str | None, error: BaseException | None) -> None:
        self._key_note = key_saved_text(where or "") if error is None else str(error)  # kept by the refresh below
        set_label(self.key_status, self._key_note, error is not None)
        if error is None:
            self.refresh_models()

    def _key_typed(self) -> None:
        if self.typed_key() and self.state.status == ServerStatus.NEEDS_KEY:
            self.refresh_models()

    # -- server queries (background) ---------------------------------------------
    def showEvent(self, event) -> None:  # noqa: ANN001 - Qt override
        super().showEvent(event)
        if not self._refreshed_once:
            self._refreshed_once = True
            self.refresh_models()

    def refresh_models(self) -> None:
        """Ask the server shown for its models; fill the list when it answers."""
        self._refreshed_once = True
        provider, url, key = self._provider, self.server_url(), self.typed_key()
        self.refresh_button.setEnabled(False)
        self._set_state(states.checking(url))
        self.answers.ask("models", lambda: fetch_models(provider, url, key), self._models_arrived)

    def _models_arrived(self, models: list[str] | None, error: BaseException | None) -> None:
        self.refresh_button.setEnabled(True)
        if error is not None and getattr(error, "key_needed", False):  # a step still to take: said calmly
            self._say_model(explain_server_error(error, self._provider, self.server_url()))
            return self._set_state(states.needs_key(self.server_url()))
        if error is not None:
            detail = explain_server_error(error, self._provider, self.server_url())
            self._say_model(detail, True)
            url = self.server_url()
            unanswered = getattr(error, "unreachable", False)
            self._set_state(states.unreachable(self._provider, url) if unanswered else states.failed(detail))
            return
        current = self.model()
        self.model_combo.blockSignals(True)
        self.model_combo.clear()
        self.model_combo.addItems(models or [])
        if current:
            self.model_combo.setEditText(current)
        elif models:
            self.model_combo.setCurrentIndex(0)
        self.model_combo.blockSignals(False)
        if not models:
            self._say_model(tr("The server has no models installed."), True)
            self._set_state(states.no_model(self._provider))
            return
        # Only a stale model message goes: in the dock one line also says where the key went and how a
        # connection test ended, and this list may arrive after either of them.
        if self.model_status.text() == self._model_note:
            self._say_model("")
        if not current:
            self._model_edited(self.model())  # the first model listed becomes the choice
        self.check_tool_support()

    def check_tool_support(self) -> None:
        """Ask an Ollama server whether the chosen model can call tools; warn if it cannot."""
        self._model_check.stop()
        model, url = self.model(), self.server_url()
        if not model:
            self._set_state(states.no_model(self._provider))
            return
        if self._provider != PROVIDER_OLLAMA:  # an OpenAI-compatible server does not say whether a model calls tools
            if self.state.status not in (ServerStatus.UNREACHABLE, ServerStatus.FAILED, ServerStatus.NEEDS_KEY):
                self._set_state(states.ready(model, url))
            return
        self._set_state(states.checking(url))
        self.answers.ask("tools", lambda: model_info(url, model), self._tool_support_arrived)

    def _tool_support_arrived(self, info, error: BaseException | None) -> None:  # noqa: ANN001 - ModelInfo, lazy
        self._set_state(states.model_state(self._provider, self.server_url(), self.model(), info, error))
        if error is None and info is not None and info.supports_tools is False:
            self._say_model(no_tools_warning(), True)
        elif self.live:
            return  # the dock's one status line keeps what it says; only a problem is worth replacing it
        elif error is None and info is not None and info.supports_tools:
            self._say_model(tr("✓ This model can call tools."))
        else:
            self._say_model("")

    def _say_model(self, text: str, error: bool = False) -> None:
        self._model_note = text
        set_label(self.model_status, text, error)

    def _set_state(self, state: ServerState) -> None:
        if state != self.state:
            self.state = state
            self.state_changed.emit(state)

    def test_connection(self) -> None:
        """Ask the server shown (with the key typed, else the stored one) for its models; show the outcome."""
        provider, url, key = self._provider, self.server_url(), self.typed_key()
        self.test_button.setEnabled(False)
        set_label(self.test_label, tr("Testing…"))

        def finished(models: list[str] | None, error: BaseException | None) -> None:
            self.test_button.setEnabled(True)
            set_label(self.test_label, connection_test_text(models, error, provider, url), error is not None)
            if error is None and not self.live:
                self.test_label.setStyleSheet(OK_STYLE)

        self.answers.ask("test", lambda: fetch_models(provider, url, key), finished)

    def _key_state_arrived(self, stored: bool | None, error: BaseException | None) -> None:
        if error is not None:
            return
        self.key_edit.setPlaceholderText(
            tr("a key is stored; type a new one to replace it")
            if stored
            else tr("no key stored ($OPENAI_API_KEY is used if set); type one to store it")
        )

    def shutdown(self) -> None:
        """Stop following saved settings (the dock is going away)."""
        if self.live:
            with contextlib.suppress(TypeError):  # not connected
                settings_events().changed.disconnect(self.reload_settings)
