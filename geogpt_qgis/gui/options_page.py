"""The GeoGPT page in Settings > Options: model server, agent behaviour, data sources, debugging.

The page edits a copy of the settings and writes them only on ``apply()``
(OK in the options dialog); it then tells the dock (``settings_events``) to
re-read them.  Server queries (model list, tool support, connection test)
and storing the API key run in the background through the same helpers as
the dock's model picker.  The API key goes to the keychain (or QGIS's
authentication database), never to QSettings.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from qgis.gui import QgsOptionsPageWidget, QgsOptionsWidgetFactory
from qgis.PyQt import sip
from qgis.PyQt.QtCore import Qt, QTimer
from qgis.PyQt.QtGui import QIcon
from qgis.PyQt.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from geogpt_qgis.__about__ import TITLE
from geogpt_qgis.core.approval import POLICY_ASK, POLICY_NEVER, POLICY_TRUST
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
from geogpt_qgis.toolbelt.log import logger
from geogpt_qgis.toolbelt.paths import icon_path
from geogpt_qgis.toolbelt.preferences import PROVIDER_OLLAMA, PROVIDER_OPENAI, PlgOptionsManager

if TYPE_CHECKING:
    from qgis.gui import QgisInterface

ALL_CONNECTIONS = "*"
_ERROR_STYLE = "color: #a94442;"
_OK_STYLE = "color: #2b7a0b;"
# Wait this long after the last keystroke in the model name before asking the server about it.
_MODEL_CHECK_DELAY_MS = 400
_ROLES_CHECK_DELAY_MS = 300  # after the last change of the connection choice


def _tagged(tag: object, work: Callable[[], Any]) -> Callable[[], tuple[object, Any, BaseException | None]]:
    """Wrap background work so its result (or error) comes back with the request it answers."""

    def run() -> tuple[object, Any, BaseException | None]:
        try:
            return tag, work(), None
        except Exception as exc:  # noqa: BLE001 - handed to the page with its tag
            return tag, None, exc

    return run


class GeoGptOptionsFactory(QgsOptionsWidgetFactory):
    """Registered with ``iface.registerOptionsWidgetFactory``; QGIS asks it for a page each time the dialog opens."""

    def __init__(self, iface: QgisInterface | None = None) -> None:
        super().__init__(TITLE, QIcon(str(icon_path("geogpt.svg"))))
        self.iface = iface

    def createWidget(self, parent: QWidget | None = None) -> OptionsPage:  # noqa: N802 - Qt override
        return OptionsPage(parent, self.iface)


class OptionsPage(QgsOptionsPageWidget):
    """Every GeoGPT setting on one page; nothing is written before ``apply()``."""

    def __init__(self, parent: QWidget | None = None, iface: QgisInterface | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("GeoGptOptionsPage")
        self.iface = iface
        self._models_request = 0
        self._tools_request = 0
        self._model_check = QTimer(self)
        self._model_check.setSingleShot(True)
        self._model_check.setInterval(_MODEL_CHECK_DELAY_MS)
        self._model_check.timeout.connect(self.check_tool_support)
        self._build_ui()
        self.load()

    # -- layout --------------------------------------------------------------
    def _build_ui(self) -> None:
        self.provider_combo = QComboBox()
        self.provider_combo.addItem(tr("Ollama"), PROVIDER_OLLAMA)
        self.provider_combo.addItem(tr("OpenAI-compatible"), PROVIDER_OPENAI)
        self.url_edit = QLineEdit()
        self.url_edit.setToolTip(tr("Ollama: http://localhost:11434 · OpenAI-compatible: the URL ending in /v1"))
        self.model_combo = QComboBox()
        self.model_combo.setEditable(True)
        self.model_combo.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.refresh_button = QToolButton()
        self.refresh_button.setText("⟳")
        self.refresh_button.setToolTip(tr("Reload the server's model list"))
        model_row = QHBoxLayout()
        model_row.addWidget(self.model_combo, 1)
        model_row.addWidget(self.refresh_button)
        self.model_status = QLabel()
        self.model_status.setWordWrap(True)
        self.model_status.setObjectName("geogptModelStatus")
        self.key_label = QLabel(tr("API key"))
        self.key_edit = QLineEdit()
        self.key_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.key_status = QLabel()
        self.key_status.setWordWrap(True)
        self.test_button = QPushButton(tr("Test connection"))
        self.test_label = QLabel()
        self.test_label.setWordWrap(True)
        self.test_label.setObjectName("geogptTestResult")
        test_row = QHBoxLayout()
        test_row.addWidget(self.test_button)
        test_row.addWidget(self.test_label, 1)

        model_box = QGroupBox(tr("Model"))
        form = QFormLayout(model_box)
        form.addRow(tr("Provider"), self.provider_combo)
        form.addRow(tr("Server URL"), self.url_edit)
        form.addRow(tr("Model"), model_row)
        form.addRow("", self.model_status)
        form.addRow(self.key_label, self.key_edit)
        form.addRow("", self.key_status)
        form.addRow(test_row)

        self.temperature_spin = QDoubleSpinBox()
        self.temperature_spin.setRange(0.0, 2.0)
        self.temperature_spin.setSingleStep(0.05)
        self.temperature_spin.setDecimals(2)
        self.temperature_spin.setToolTip(tr("Lower is more predictable; GeoGPT works best at 0-0.3"))
        self.context_spin = QSpinBox()
        self.context_spin.setRange(1024, 1_048_576)
        self.context_spin.setSingleStep(1024)
        self.context_spin.setSuffix(tr(" tokens"))
        self.context_spin.setToolTip(tr("The most the model is sent at once; capped by the model's own window"))
        self.policy_combo = QComboBox()
        for key, label in (
            (POLICY_ASK, tr("Ask before changes")),
            (POLICY_TRUST, tr("Trust this conversation")),
            (POLICY_NEVER, tr("Never allow changes")),
        ):
            self.policy_combo.addItem(label, key)
        self.policy_combo.setToolTip(tr("Before running code, changing data or writing files"))
        agent_box = QGroupBox(tr("Agent"))
        form = QFormLayout(agent_box)
        form.addRow(tr("Temperature"), self.temperature_spin)
        form.addRow(tr("Context limit"), self.context_spin)
        form.addRow(tr("Approval"), self.policy_combo)

        self.ogc_edit = QPlainTextEdit()
        self.ogc_edit.setPlaceholderText(tr("One per line: Name = URL, e.g.\nCity data = https://example.org/ogcapi"))
        self.ogc_edit.setMaximumHeight(90)
        self.ogc_status = QLabel()
        self.ogc_status.setWordWrap(True)
        self.ogc_status.setStyleSheet(_ERROR_STYLE)
        self.all_connections = QCheckBox(tr("All saved connections, including ones added later"))
        self.connections_list = QListWidget()
        self.connections_list.setMaximumHeight(110)
        self.connections_hint = QLabel()
        self.connections_hint.setWordWrap(True)
        self.roles_warning = QLabel()  # the chosen connections' roles that could write
        self.roles_warning.setWordWrap(True)
        self.roles_warning.setStyleSheet(_ERROR_STYLE)
        self.roles_warning.setVisible(False)
        self._roles_check = QTimer(self)
        self._roles_check.setSingleShot(True)
        self._roles_check.setInterval(_ROLES_CHECK_DELAY_MS)
        self._roles_check.timeout.connect(self.check_connection_roles)
        self._roles_request: object = None
        data_box = QGroupBox(tr("Data sources"))
        form = QFormLayout(data_box)
        form.addRow(tr("OGC API Features servers"), self.ogc_edit)
        form.addRow("", self.ogc_status)
        connections = QVBoxLayout()
        connections.addWidget(self.all_connections)
        connections.addWidget(self.connections_list)
        connections.addWidget(self.connections_hint)
        connections.addWidget(self.roles_warning)
        form.addRow(tr("PostgreSQL connections the agent may use"), connections)

        self.debug_check = QCheckBox(tr("Debug logging (Log Messages panel, GeoGPT tab)"))
        debug_box = QGroupBox(tr("Troubleshooting"))
        QVBoxLayout(debug_box).addWidget(self.debug_check)

        content = QWidget()
        column = QVBoxLayout(content)
        for box in (model_box, agent_box, data_box, debug_box):
            column.addWidget(box)
        column.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(content)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(scroll)

        self.provider_combo.currentIndexChanged.connect(self._provider_changed)
        self.url_edit.editingFinished.connect(self._url_edited)
        self.model_combo.currentTextChanged.connect(lambda _text: self._model_check.start())
        self.refresh_button.clicked.connect(self.refresh_models)
        self.test_button.clicked.connect(self.test_connection)
        self.all_connections.toggled.connect(self._all_connections_toggled)
        self.all_connections.toggled.connect(lambda _on: self._roles_check.start())
        self.connections_list.itemChanged.connect(lambda _item: self._roles_check.start())
        self.ogc_edit.textChanged.connect(self._validate_ogc)

    # -- settings <-> widgets ------------------------------------------------
    def load(self) -> None:
        """Show the saved settings (and ask the server for its models)."""
        s = PlgOptionsManager.get_plg_settings()
        self._urls = {PROVIDER_OLLAMA: s.ollama_url, PROVIDER_OPENAI: s.openai_base_url}
        self._models = {PROVIDER_OLLAMA: s.ollama_model, PROVIDER_OPENAI: s.openai_model}
        self._provider = s.provider if s.provider in self._urls else PROVIDER_OLLAMA
        self.provider_combo.blockSignals(True)
        self.provider_combo.setCurrentIndex(max(0, self.provider_combo.findData(self._provider)))
        self.provider_combo.blockSignals(False)
        self._show_provider()
        self.temperature_spin.setValue(s.temperature)
        self.context_spin.setValue(s.context_limit)
        self.policy_combo.setCurrentIndex(max(0, self.policy_combo.findData(s.approval_policy)))
        self.ogc_edit.setPlainText(s.ogc_servers)
        self._load_connections(s.postgis_connections)
        self.debug_check.setChecked(s.debug_mode)
        self.refresh_models()

    def _show_provider(self) -> None:
        """Fill the URL, model and key fields for the provider shown."""
        self.url_edit.setText(self._urls[self._provider])
        self.model_combo.blockSignals(True)
        self.model_combo.clear()
        model = self._models[self._provider]
        if model:
            self.model_combo.addItem(model)
        self.model_combo.setEditText(model)
        self.model_combo.blockSignals(False)
        is_openai = self._provider == PROVIDER_OPENAI
        for widget in (self.key_label, self.key_edit, self.key_status):
            widget.setVisible(is_openai)
        self.key_edit.clear()
        self.key_edit.setPlaceholderText(tr("type a key to store it in the system keychain"))
        self.key_status.clear()
        self._set_label(self.model_status, "")
        self._set_label(self.test_label, "")
        if is_openai:
            url = self.server_url()
            run_in_background(_tagged(url, lambda: _has_key(url)), self._key_state_arrived)

    def _stash(self) -> None:
        self._urls[self._provider] = self.server_url()
        self._models[self._provider] = self.model_combo.currentText().strip()

    def _load_connections(self, setting: str) -> None:
        from geogpt_qgis.tools.postgis.connections import saved_connection_names

        wanted = {n.strip() for n in (setting or "").split(",") if n.strip()}
        everything = ALL_CONNECTIONS in wanted
        self.connections_list.clear()
        names = saved_connection_names()
        for name in names:
            item = QListWidgetItem(name)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked if everything or name in wanted else Qt.CheckState.Unchecked)
            self.connections_list.addItem(item)
        self.all_connections.setChecked(everything)
        self._all_connections_toggled(everything)
        self.connections_hint.setText(
            "" if names else tr("No PostgreSQL connection is saved in QGIS yet (Data Source Manager > PostgreSQL).")
        )
        self.connections_hint.setVisible(not names)
        self._roles_check.start()

    def _all_connections_toggled(self, everything: bool) -> None:
        self.connections_list.setEnabled(not everything)
        if everything:
            for row in range(self.connections_list.count()):
                self.connections_list.item(row).setCheckState(Qt.CheckState.Checked)

    def postgis_setting(self) -> str:
        """``*`` or the checked connection names, separated by commas (the ``postgis_connections`` setting)."""
        if self.all_connections.isChecked():
            return ALL_CONNECTIONS
        items = [self.connections_list.item(row) for row in range(self.connections_list.count())]
        return ",".join(i.text() for i in items if i.checkState() == Qt.CheckState.Checked)

    def server_url(self) -> str:
        return self.url_edit.text().strip().rstrip("/")

    def provider(self) -> str:
        return self.provider_combo.currentData()

    def apply(self) -> None:
        """Write the page's settings (OK in the options dialog), store a typed key, and tell the dock."""
        self._stash()
        values = {
            "provider": self._provider,
            "ollama_url": self._urls[PROVIDER_OLLAMA],
            "openai_base_url": self._urls[PROVIDER_OPENAI],
            "ollama_model": self._models[PROVIDER_OLLAMA],
            "openai_model": self._models[PROVIDER_OPENAI],
            "temperature": self.temperature_spin.value(),
            "context_limit": self.context_spin.value(),
            "approval_policy": self.policy_combo.currentData(),
            "ogc_servers": self.ogc_edit.toPlainText().strip(),
            "postgis_connections": self.postgis_setting(),
            "debug_mode": self.debug_check.isChecked(),
        }
        for key, value in values.items():
            PlgOptionsManager.set_value(key, value)
        logger.setLevel(logging.DEBUG if values["debug_mode"] else logging.INFO)
        logger.debug("settings saved from the options page")
        self._save_key()
        settings_events().changed.emit()

    def _save_key(self) -> None:
        key = self.key_edit.text().strip()
        if not key or self._provider != PROVIDER_OPENAI:
            return
        self.key_edit.clear()  # from here on the key lives only in the background call that stores it
        url = self._urls[PROVIDER_OPENAI]
        self.key_status.setText(tr("Saving the API key…"))
        page, iface = self, self.iface

        def report(where: str | None, error: BaseException | None) -> None:
            # The options dialog may be closed (and this page deleted) by now: say it where it is seen.
            text = key_saved_text(where or "") if error is None else str(error)
            if not sip.isdeleted(page):
                page._set_label(page.key_status, text, error is not None)
            if error is None:
                settings_events().changed.emit()  # the dock may now list the server's models with the key
            if error is not None:
                logger.warning("%s", text)
                if iface is not None:
                    iface.messageBar().pushWarning(TITLE, text)

        run_in_background(lambda: store_key(url, key), report)

    # -- reactions -------------------------------------------------------------
    def _provider_changed(self) -> None:
        self._stash()
        self._provider = self.provider()
        self._show_provider()
        self.refresh_models()

    def _url_edited(self) -> None:
        if self.server_url() != self._urls[self._provider]:
            self._urls[self._provider] = self.server_url()
            self.refresh_models()

    def _validate_ogc(self) -> None:
        from geogpt_qgis.tools.base import ToolError
        from geogpt_qgis.tools.ogc.servers import landing_url

        problems = []
        for number, line in enumerate(self.ogc_edit.toPlainText().splitlines(), start=1):
            entry = line.strip()
            if not entry or entry.startswith("#"):
                continue
            url = entry.rpartition("=")[2] if "=" in entry.split("://")[0] else entry
            try:
                landing_url(url)
            except ToolError:
                problems.append(tr("Line {n}: {u!r} is not an http(s) URL.").format(n=number, u=url.strip()))
        self.ogc_status.setText("\n".join(problems))
        self.ogc_status.setVisible(bool(problems))

    # -- server queries (background) -------------------------------------------
    def _typed_key(self) -> str | None:
        return (self.key_edit.text().strip() or None) if self._provider == PROVIDER_OPENAI else None

    def refresh_models(self) -> None:
        """Ask the server shown for its models; fill the list when it answers."""
        self._models_request += 1
        provider, url, key = self._provider, self.server_url(), self._typed_key()
        self.refresh_button.setEnabled(False)
        work = _tagged(self._models_request, lambda: fetch_models(provider, url, key))
        run_in_background(work, self._models_arrived)

    def _models_arrived(self, tagged: tuple, _error: BaseException | None) -> None:
        request, models, error = tagged
        if request != self._models_request:
            return  # an older answer, for another provider or URL
        self.refresh_button.setEnabled(True)
        if error is not None:
            self._set_label(self.model_status, explain_server_error(error, self._provider, self.server_url()), True)
            return
        current = self.model_combo.currentText().strip()
        self.model_combo.blockSignals(True)
        self.model_combo.clear()
        self.model_combo.addItems(models or [])
        if current:
            self.model_combo.setEditText(current)
        elif models:
            self.model_combo.setCurrentIndex(0)
        self.model_combo.blockSignals(False)
        if not models:
            self._set_label(self.model_status, tr("The server has no models installed."), True)
            return
        self._set_label(self.model_status, "")
        self.check_tool_support()

    def check_tool_support(self) -> None:
        """Ask an Ollama server whether the chosen model can call tools; warn if it cannot."""
        self._model_check.stop()
        self._tools_request += 1
        model = self.model_combo.currentText().strip()
        if self._provider != PROVIDER_OLLAMA or not model:
            return
        url = self.server_url()
        run_in_background(_tagged(self._tools_request, lambda: model_info(url, model)), self._tool_support_arrived)

    def _tool_support_arrived(self, tagged: tuple, _error: BaseException | None) -> None:
        request, info, error = tagged
        if request != self._tools_request:
            return
        if error is not None or info is None or info.supports_tools is None:
            self._set_label(self.model_status, "")
        elif info.supports_tools:
            self._set_label(self.model_status, tr("✓ This model can call tools."))
        else:
            self._set_label(self.model_status, no_tools_warning(), True)

    def test_connection(self) -> None:
        """Ask the server shown (with the key typed, else the stored one) for its models; show the outcome."""
        provider, url, key = self._provider, self.server_url(), self._typed_key()
        self.test_button.setEnabled(False)
        self._set_label(self.test_label, tr("Testing…"))
        run_in_background(_tagged((provider, url), lambda: fetch_models(provider, url, key)), self._test_finished)

    def _test_finished(self, tagged: tuple, _error: BaseException | None) -> None:
        (provider, url), models, error = tagged
        self.test_button.setEnabled(True)
        self._set_label(self.test_label, connection_test_text(models, error, provider, url), error is not None)
        if error is None:
            self.test_label.setStyleSheet(_OK_STYLE)

    def _key_state_arrived(self, tagged: tuple, _error: BaseException | None) -> None:
        url, stored, error = tagged
        if url != self.server_url() or self._provider != PROVIDER_OPENAI or error is not None:
            return
        self.key_edit.setPlaceholderText(
            tr("a key is stored; type a new one to replace it")
            if stored
            else tr("no key stored ($OPENAI_API_KEY is used if set); type one to store it")
        )

    # -- database roles (background) ---------------------------------------------
    def chosen_connections(self) -> list[str]:
        """The saved connections the agent would be allowed to use with the page as it is."""
        items = [self.connections_list.item(row) for row in range(self.connections_list.count())]
        return [i.text() for i in items if self.all_connections.isChecked() or i.checkState() == Qt.CheckState.Checked]

    def check_connection_roles(self) -> None:
        """Ask each chosen connection's server, in the background, whether its role could change data."""
        from geogpt_qgis.tools.postgis.connections import resolve_connection

        self._roles_check.stop()
        names = self.chosen_connections()
        self._roles_request = request = tuple(names)
        self.roles_warning.setVisible(False)
        if not names:
            return
        try:
            targets = [(name, resolve_connection(name, names).conninfo) for name in names]  # main thread: QGIS API
        except Exception as exc:  # noqa: BLE001 - a broken saved connection: say so, do not fail the page
            self._set_label(self.roles_warning, tr("Could not read the saved connections: {}").format(exc), True)
            return
        run_in_background(_tagged(request, lambda: _role_warnings(targets)), self._roles_arrived)

    def _roles_arrived(self, tagged: tuple, _error: BaseException | None) -> None:
        request, lines, error = tagged
        if request != self._roles_request:
            return  # the choice changed since
        if error is not None:
            lines = [tr("Could not check the connections' roles: {}").format(error)]
        self._set_label(self.roles_warning, "\n".join(lines), bool(lines))

    @staticmethod
    def _set_label(label: QLabel, text: str, error: bool = False) -> None:
        label.setText(text)
        label.setStyleSheet(_ERROR_STYLE if error else "")
        label.setVisible(bool(text))


def _role_warnings(targets: list[tuple[str, str]]) -> list[str]:
    """One warning per connection whose role could change something (background thread)."""
    from geogpt_qgis.tools.postgis.privileges import write_powers

    lines = []
    for name, conninfo in targets:
        try:
            role, powers = write_powers(conninfo)
        except Exception as exc:  # noqa: BLE001 - one unreachable server must not hide the others
            lines.append(tr("⚠ Could not check the role of '{}': {}").format(name, str(exc).strip().splitlines()[0]))
            continue
        if powers:
            lines.append(
                tr(
                    "⚠ '{}' connects as role '{}', which {}. GeoGPT's SQL runs read-only and writes need your "
                    "approval, but a role that may only SELECT is the safest choice for the agent."
                ).format(name, role, "; ".join(powers))
            )
    return lines


def _has_key(url: str) -> bool:
    from geogpt_qgis.toolbelt.secrets import has_stored_key

    return has_stored_key(url)
