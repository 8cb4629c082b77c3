"""Pick the model in the dock: provider, model (from the server's list), URL and key.

A minimal, always-at-hand picker; the full options page is its own piece
(``options_page``): when it saves, the picker re-reads the settings.
Every network or keychain call runs in the background; the widget only
shows results.
"""

from __future__ import annotations

from qgis.PyQt.QtCore import pyqtSignal
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
from geogpt_qgis.gui.background import run_in_background
from geogpt_qgis.gui.server_queries import (
    connection_test_text,
    explain_server_error,
    fetch_models,
    key_saved_text,
    model_info,
    no_tools_warning,
    store_key,
)
from geogpt_qgis.gui.settings_events import settings_events
from geogpt_qgis.toolbelt.i18n import tr
from geogpt_qgis.toolbelt.preferences import PROVIDER_OLLAMA, PROVIDER_OPENAI, PlgOptionsManager, PlgSettings


class ModelBar(QWidget):
    """Provider and model combos, a refresh button, and a fold-out for URL, key and test."""

    config_changed = pyqtSignal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.settings: PlgSettings = PlgOptionsManager.get_plg_settings()
        self._refreshed_once = False

        self.provider_combo = QComboBox()
        self.provider_combo.addItem("Ollama", PROVIDER_OLLAMA)
        self.provider_combo.addItem(tr("OpenAI-compatible"), PROVIDER_OPENAI)
        self.model_combo = QComboBox()
        self.model_combo.setEditable(True)
        self.model_combo.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.model_combo.setToolTip(tr("The model to use; the list comes from the server"))
        self.refresh_button = QToolButton()
        self.refresh_button.setText("⟳")
        self.refresh_button.setToolTip(tr("Reload the server's model list"))
        self.settings_button = QToolButton()
        self.settings_button.setText("⚙")
        self.settings_button.setCheckable(True)
        self.settings_button.setToolTip(tr("Server URL, API key and connection test"))

        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.provider_combo)
        top.addWidget(self.model_combo, 1)
        top.addWidget(self.refresh_button)
        top.addWidget(self.settings_button)

        self.url_edit = QLineEdit()
        self.key_edit = QLineEdit()
        self.key_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.test_button = QPushButton(tr("Test connection"))
        self.status_label = QLabel()
        self.status_label.setWordWrap(True)
        self.panel = QWidget()
        form = QFormLayout(self.panel)
        form.setContentsMargins(0, 0, 0, 0)
        form.addRow(tr("Server URL"), self.url_edit)
        self.key_label = QLabel(tr("API key"))
        form.addRow(self.key_label, self.key_edit)
        form.addRow(self.test_button)
        self.panel.setVisible(False)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.panel)
        layout.addWidget(self.status_label)

        self._load_from_settings()
        self.provider_combo.currentIndexChanged.connect(self._provider_changed)
        self.model_combo.currentTextChanged.connect(self._model_changed)
        self.url_edit.editingFinished.connect(self._url_changed)
        self.key_edit.editingFinished.connect(self._key_changed)
        self.refresh_button.clicked.connect(self.refresh_models)
        self.test_button.clicked.connect(self.test_connection)
        self.settings_button.toggled.connect(self.panel.setVisible)
        settings_events().changed.connect(self.reload_settings)

    # -- settings <-> widgets ------------------------------------------------
    def _load_from_settings(self) -> None:
        s = self.settings
        self.provider_combo.blockSignals(True)
        self.provider_combo.setCurrentIndex(max(0, self.provider_combo.findData(s.provider)))
        self.provider_combo.blockSignals(False)
        self.url_edit.setText(s.base_url)
        self.model_combo.blockSignals(True)
        self.model_combo.clear()
        if s.model:
            self.model_combo.addItem(s.model)
        self.model_combo.setEditText(s.model)
        self.model_combo.blockSignals(False)
        is_openai = s.provider == PROVIDER_OPENAI
        self.key_label.setVisible(is_openai)
        self.key_edit.setVisible(is_openai)
        self.key_edit.clear()
        self.key_edit.setPlaceholderText(tr("stored in the system keychain; type to replace"))

    def reload_settings(self) -> None:
        """Show settings saved elsewhere (the options page) and ask the server again (URL or key may be new)."""
        self.settings = PlgOptionsManager.get_plg_settings()
        self._load_from_settings()
        self.config_changed.emit()
        self.refresh_models()

    def _provider_changed(self) -> None:
        PlgOptionsManager.set_value("provider", self.provider_combo.currentData())
        self.settings = PlgOptionsManager.get_plg_settings()
        self._load_from_settings()
        self.config_changed.emit()
        self.refresh_models()

    def _model_changed(self, text: str) -> None:
        key = "ollama_model" if self.settings.provider == PROVIDER_OLLAMA else "openai_model"
        PlgOptionsManager.set_value(key, text.strip())
        self.settings = PlgOptionsManager.get_plg_settings()
        self.config_changed.emit()
        self._check_tool_support()

    def _url_changed(self) -> None:
        url = self.url_edit.text().strip().rstrip("/")
        key = "ollama_url" if self.settings.provider == PROVIDER_OLLAMA else "openai_base_url"
        if url == self.settings.base_url:
            return
        PlgOptionsManager.set_value(key, url)
        self.settings = PlgOptionsManager.get_plg_settings()
        self.config_changed.emit()
        self.refresh_models()

    def _key_changed(self) -> None:
        key = self.key_edit.text().strip()
        if not key:
            return
        self.key_edit.clear()  # the key lives on only in the background call that stores it
        self.show_status(tr("Saving the API key…"))
        url = self.settings.base_url
        run_in_background(lambda: store_key(url, key), self._key_stored)

    def _key_stored(self, where: str | None, error: BaseException | None) -> None:
        if error is not None:
            self.show_status(str(error), error=True)
        else:
            self.show_status(key_saved_text(where or ""))

    def current_config(self) -> ModelConfig:
        """The model settings for the next run (the key is looked up by the worker)."""
        self.settings = PlgOptionsManager.get_plg_settings()
        return model_config_from_settings(self.settings)

    # -- server queries (background) ---------------------------------------
    def showEvent(self, event) -> None:  # noqa: ANN001 - Qt event
        super().showEvent(event)
        if not self._refreshed_once:
            self._refreshed_once = True
            self.refresh_models()

    def refresh_models(self) -> None:
        """Ask the server for its models; fill the list when it answers."""
        provider, url = self.settings.provider, self.settings.base_url
        self.refresh_button.setEnabled(False)
        run_in_background(lambda: fetch_models(provider, url), self._models_arrived)

    def _models_arrived(self, models: list[str] | None, error: BaseException | None) -> None:
        self.refresh_button.setEnabled(True)
        if error is not None:
            self.show_status(explain_server_error(error, self.settings.provider, self.settings.base_url), error=True)
            return
        current = self.model_combo.currentText()
        self.model_combo.blockSignals(True)
        self.model_combo.clear()
        self.model_combo.addItems(models or [])
        if current:
            self.model_combo.setEditText(current)
        elif models:
            self.model_combo.setCurrentIndex(0)
        self.model_combo.blockSignals(False)
        if not current and models:
            self._model_changed(models[0])
        if not models:
            self.show_status(tr("The server has no models installed."), error=True)
        else:
            self.show_status("")
            self._check_tool_support()

    def _check_tool_support(self) -> None:
        model = self.model_combo.currentText().strip()
        if self.settings.provider != PROVIDER_OLLAMA or not model:
            return
        url = self.settings.base_url
        run_in_background(lambda: model_info(url, model), self._tool_support_arrived)

    def _tool_support_arrived(self, info, error: BaseException | None) -> None:  # noqa: ANN001 - ModelInfo, imported lazily
        if error is None and info is not None and info.supports_tools is False:
            self.show_status(no_tools_warning(), error=True)

    def test_connection(self) -> None:
        provider, url = self.settings.provider, self.settings.base_url
        self.show_status(tr("Testing…"))
        run_in_background(lambda: fetch_models(provider, url), self._test_finished)

    def _test_finished(self, models: list[str] | None, error: BaseException | None) -> None:
        provider, url = self.settings.provider, self.settings.base_url
        self.show_status(connection_test_text(models, error, provider, url), error=error is not None)

    def show_status(self, text: str, error: bool = False) -> None:
        self.status_label.setText(text)
        self.status_label.setStyleSheet("color: #a94442;" if error else "")
        self.status_label.setVisible(bool(text))
