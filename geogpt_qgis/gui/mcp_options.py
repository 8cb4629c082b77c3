"""The MCP server's group on the options page: switch, address, port, and what a client needs (URL, token, config).

Off by default.  The address is checked as it is typed (``mcp_server.binding``):
a wildcard or host name is refused, an explicit non-loopback address shows a
warning.  URL, token and the client configuration come from the running
service; the token is made when the server first starts, so until then the
page says so.
"""

from __future__ import annotations

from typing import Any

from qgis.PyQt.QtWidgets import (
    QApplication,
    QCheckBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QWidget,
)

from geogpt_qgis.gui.server_picker import ERROR_STYLE
from geogpt_qgis.mcp_server.binding import BindRefused, check_bind, server_url
from geogpt_qgis.mcp_server.client_config import client_config
from geogpt_qgis.mcp_server.service import ServerState, current_service
from geogpt_qgis.toolbelt.i18n import tr
from geogpt_qgis.toolbelt.preferences import PlgSettings


class McpOptionsBox(QGroupBox):
    """Edits ``mcp_enabled``, ``mcp_host`` and ``mcp_port``; shows the running server's URL, token and config."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(tr("MCP server (other assistants)"), parent)
        self.enable_check = QCheckBox(tr("Serve GeoGPT's tools to MCP clients (desktop assistants, editors)"))
        self.host_edit = QLineEdit()
        self.host_edit.setToolTip(tr("127.0.0.1 keeps the server on this machine"))
        self.port_spin = QSpinBox()
        self.port_spin.setRange(1024, 65535)
        self.bind_note = QLabel()
        self.bind_note.setWordWrap(True)
        self.bind_note.setStyleSheet(ERROR_STYLE)
        self.url_edit = QLineEdit()
        self.url_edit.setReadOnly(True)
        self.token_edit = QLineEdit()
        self.token_edit.setReadOnly(True)
        self.token_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.copy_token = QPushButton(tr("Copy"))
        self.config_edit = QPlainTextEdit()
        self.config_edit.setReadOnly(True)
        self.config_edit.setMaximumHeight(130)
        self.copy_config = QPushButton(tr("Copy configuration"))
        self.status = QLabel()
        self.status.setWordWrap(True)
        token_row = QHBoxLayout()
        token_row.addWidget(self.token_edit)
        token_row.addWidget(self.copy_token)
        form = QFormLayout(self)
        form.addRow(self.enable_check)
        form.addRow(tr("Address"), self.host_edit)
        form.addRow(tr("Port"), self.port_spin)
        form.addRow("", self.bind_note)
        form.addRow(tr("URL"), self.url_edit)
        form.addRow(tr("Token"), token_row)
        form.addRow(tr("Client configuration"), self.config_edit)
        form.addRow("", self.copy_config)
        form.addRow("", self.status)
        self.host_edit.textChanged.connect(self._check_address)
        self.port_spin.valueChanged.connect(self._check_address)
        self.copy_token.clicked.connect(lambda: QApplication.clipboard().setText(self.token_edit.text()))
        self.copy_config.clicked.connect(lambda: QApplication.clipboard().setText(self.config_edit.toPlainText()))
        service = current_service()
        if service is not None:
            service.state_changed.connect(self.show_state)

    def load(self, settings: PlgSettings) -> None:
        self.enable_check.setChecked(settings.mcp_enabled)
        self.host_edit.setText(settings.mcp_host)
        self.port_spin.setValue(settings.mcp_port)
        service = current_service()
        self.show_state(service.state if service is not None else ServerState(False))

    def values(self) -> dict[str, Any]:
        return {
            "mcp_enabled": self.enable_check.isChecked(),
            "mcp_host": self.host_edit.text().strip(),
            "mcp_port": self.port_spin.value(),
        }

    def _check_address(self) -> None:
        try:
            warning = check_bind(self.host_edit.text(), self.port_spin.value())
        except BindRefused as exc:
            self.bind_note.setText(tr("Refused: {}").format(exc))
            return
        self.bind_note.setText(warning or "")

    def show_state(self, state: ServerState) -> None:
        """The running server's URL, token and client configuration, or why there is none."""
        if state.running:
            self.url_edit.setText(state.url)
            self.token_edit.setText(state.token)
            self.config_edit.setPlainText(client_config(state.url, state.token))
            self.status.setText(tr("Serving at {}").format(state.url))
        else:
            url = server_url(self.host_edit.text().strip() or "127.0.0.1", self.port_spin.value())
            self.url_edit.setText(url)
            self.token_edit.clear()
            self.config_edit.setPlainText(client_config(url, tr("<the token, shown once the server runs>")))
            reason = tr("Could not start: {}").format(state.error) if state.error else tr("The server is off.")
            self.status.setText(reason)
        self.copy_token.setEnabled(state.running)
