"""The GeoGPT page in Settings > Options: model server, agent behaviour, data sources, debugging.

The page edits a copy of the settings and writes them only on ``apply()``
(OK in the options dialog); it then tells the dock (``settings_events``) to
re-read them.  The Model group is the same server/model picker the dock
shows (``server_picker``), here as a draft; the data-source group's
connection choice is ``connections_chooser``.  The API key goes to the
keychain (or QGIS's authentication database), never to QSettings.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from qgis.gui import QgsOptionsPageWidget
from qgis.PyQt import sip
from qgis.PyQt.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QPlainTextEdit,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from geogpt_qgis.__about__ import TITLE
from geogpt_qgis.agent.config import (
    PROFILE_AUTO,
    PROFILE_COMPACT,
    PROFILE_FULL,
    TOOL_CALLS_AUTO,
    TOOL_CALLS_GUIDED,
    TOOL_CALLS_NATIVE,
)
from geogpt_qgis.core.approval import POLICY_ASK, POLICY_NEVER, POLICY_TRUST
from geogpt_qgis.gui.background import run_in_background
from geogpt_qgis.gui.connections_chooser import ConnectionsChooser
from geogpt_qgis.gui.recipe_feedback import MyRecipesBox
from geogpt_qgis.gui.server_picker import ERROR_STYLE, ServerPicker, set_label
from geogpt_qgis.gui.server_queries import key_saved_text, store_key
from geogpt_qgis.gui.settings_events import settings_events
from geogpt_qgis.gui.wheel_guard import guard_wheel
from geogpt_qgis.toolbelt.i18n import tr
from geogpt_qgis.toolbelt.log import logger
from geogpt_qgis.toolbelt.preferences import PlgOptionsManager

if TYPE_CHECKING:
    from qgis.gui import QgisInterface


class OptionsPage(QgsOptionsPageWidget):
    """Every GeoGPT setting on one page; nothing is written before ``apply()``."""

    def __init__(self, parent: QWidget | None = None, iface: QgisInterface | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("GeoGptOptionsPage")
        self.iface = iface
        self._build_ui()
        self.load()

    # -- layout --------------------------------------------------------------
    def _build_ui(self) -> None:
        self.picker = ServerPicker(self)
        model_box = QGroupBox(tr("Model"))
        QVBoxLayout(model_box).addWidget(self.picker)

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
        self.answer_spin = QSpinBox()
        self.answer_spin.setRange(64, 65_536)
        self.answer_spin.setSingleStep(256)
        self.answer_spin.setSuffix(tr(" tokens"))
        self.answer_spin.setToolTip(tr("The longest reply the model may write; a model stuck in a loop stops there"))
        self.policy_combo = QComboBox()
        for key, label in (
            (POLICY_ASK, tr("Ask before changes")),
            (POLICY_TRUST, tr("Trust this conversation")),
            (POLICY_NEVER, tr("Never allow changes")),
        ):
            self.policy_combo.addItem(label, key)
        self.policy_combo.setToolTip(tr("Before running code, changing data or writing files"))
        self.tool_calls_combo = QComboBox()
        for key, label in (
            (TOOL_CALLS_AUTO, tr("Auto")),
            (TOOL_CALLS_NATIVE, tr("Native")),
            (TOOL_CALLS_GUIDED, tr("Guided")),
        ):
            self.tool_calls_combo.addItem(label, key)
        self.tool_calls_combo.setToolTip(
            tr(
                "Native: the server's own tool calling. Guided: each reply is held to a JSON schema of the tools, "
                "for models that cannot call tools. Auto: guided only where native calls are missing or fail"
            )
        )
        self.tool_profile_combo = QComboBox()
        for key, label in ((PROFILE_AUTO, tr("Auto")), (PROFILE_FULL, tr("Full")), (PROFILE_COMPACT, tr("Compact"))):
            self.tool_profile_combo.addItem(label, key)
        self.tool_profile_combo.setToolTip(
            tr(
                "Full: every tool. Compact: 8 tools and a shorter prompt, for small models (the rest stay reachable). "
                "Auto: compact for models under 4 B parameters or 8,192 tokens of context. Kept per conversation"
            )
        )
        agent_box = QGroupBox(tr("Agent"))
        form = QFormLayout(agent_box)
        form.addRow(tr("Temperature"), self.temperature_spin)
        form.addRow(tr("Context limit"), self.context_spin)
        form.addRow(tr("Answer length limit"), self.answer_spin)
        form.addRow(tr("Approval"), self.policy_combo)
        form.addRow(tr("Tool calls"), self.tool_calls_combo)
        form.addRow(tr("Tool profile"), self.tool_profile_combo)

        self.ogc_edit = QPlainTextEdit()
        self.ogc_edit.setPlaceholderText(tr("One per line: Name = URL, e.g.\nCity data = https://example.org/ogcapi"))
        self.ogc_edit.setMaximumHeight(90)
        self.ogc_status = QLabel()
        self.ogc_status.setWordWrap(True)
        self.ogc_status.setStyleSheet(ERROR_STYLE)
        self.connections = ConnectionsChooser()
        data_box = QGroupBox(tr("Data sources"))
        form = QFormLayout(data_box)
        form.addRow(tr("OGC API Features servers"), self.ogc_edit)
        form.addRow("", self.ogc_status)
        form.addRow(tr("PostgreSQL connections the agent may use"), self.connections)

        self.debug_check = QCheckBox(tr("Debug logging (Log Messages panel, GeoGPT tab)"))
        debug_box = QGroupBox(tr("Troubleshooting"))
        QVBoxLayout(debug_box).addWidget(self.debug_check)
        from geogpt_qgis.gui.mcp_options import McpOptionsBox

        self.mcp_box = McpOptionsBox()

        self.my_recipes = MyRecipesBox()

        content = QWidget()
        column = QVBoxLayout(content)
        for box in (model_box, agent_box, data_box, self.my_recipes, self.mcp_box, debug_box):
            column.addWidget(box)
        column.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(content)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(scroll)
        self.ogc_edit.textChanged.connect(self._validate_ogc)
        # Scrolling the page must not change the values passing under the pointer.
        picker = self.picker
        wheeled = (
            self.temperature_spin,
            self.context_spin,
            self.answer_spin,
            self.policy_combo,
            self.tool_calls_combo,
            self.tool_profile_combo,
        )
        self.wheel_guard = guard_wheel(self, *wheeled, picker.provider_combo, picker.model_combo)

    # -- settings <-> widgets ------------------------------------------------
    def load(self) -> None:
        """Show the saved settings (the picker asks the server for its models once shown)."""
        s = PlgOptionsManager.get_plg_settings()
        self.picker.load()
        self.temperature_spin.setValue(s.temperature)
        self.context_spin.setValue(s.context_limit)
        self.answer_spin.setValue(s.max_answer_tokens)
        self.policy_combo.setCurrentIndex(max(0, self.policy_combo.findData(s.approval_policy)))
        self.tool_calls_combo.setCurrentIndex(max(0, self.tool_calls_combo.findData(s.tool_calls)))
        self.tool_profile_combo.setCurrentIndex(max(0, self.tool_profile_combo.findData(s.tool_profile)))
        self.ogc_edit.setPlainText(s.ogc_servers)
        self.connections.load(s.postgis_connections)
        self.debug_check.setChecked(s.debug_mode)
        self.mcp_box.load(s)
        self.my_recipes.reload()

    def apply(self) -> None:
        """Write the page's settings (OK in the options dialog), store a typed key, and tell the dock."""
        values = {
            **self.picker.values(),
            "temperature": self.temperature_spin.value(),
            "context_limit": self.context_spin.value(),
            "max_answer_tokens": self.answer_spin.value(),
            "approval_policy": self.policy_combo.currentData(),
            "tool_calls": self.tool_calls_combo.currentData(),
            "tool_profile": self.tool_profile_combo.currentData(),
            "ogc_servers": self.ogc_edit.toPlainText().strip(),
            "postgis_connections": self.connections.setting(),
            "debug_mode": self.debug_check.isChecked(),
            **self.mcp_box.values(),
        }
        for key, value in values.items():
            PlgOptionsManager.set_value(key, value)
        logger.setLevel(logging.DEBUG if values["debug_mode"] else logging.INFO)
        logger.debug("settings saved from the options page")
        self._save_key()
        settings_events().changed.emit()
        from geogpt_qgis.mcp_server.service import current_service

        service = current_service()
        if service is not None:  # switched on or off, moved: the server follows (off the main thread)
            service.apply(PlgOptionsManager.get_plg_settings())

    def _save_key(self) -> None:
        """Store a typed key; the report outlives the page (OK closes the dialog)."""
        key = self.picker.typed_key()
        if not key:
            return
        self.picker.key_edit.clear()  # from here on the key lives only in the background call that stores it
        url = self.picker.server_url()
        set_label(self.picker.key_status, tr("Saving the API key…"))
        picker, iface = self.picker, self.iface

        def report(where: str | None, error: BaseException | None) -> None:
            # The options dialog may be closed (and this page deleted) by now: say it where it is seen.
            text = key_saved_text(where or "") if error is None else str(error)
            if not sip.isdeleted(picker):
                set_label(picker.key_status, text, error is not None)
            if error is None:
                settings_events().changed.emit()  # the dock may now list the server's models with the key
            else:
                logger.warning("%s", text)
                if iface is not None:
                    iface.messageBar().pushWarning(TITLE, text)

        run_in_background(lambda: store_key(url, key), report)

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
