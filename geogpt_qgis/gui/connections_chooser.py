"""Which saved PostgreSQL connections the agent may use, with a warning for roles that could change data.

Part of the options page.  The role check asks each chosen connection's
server in the background (``LatestAnswers``: a newer choice drops the older
check's answer); reading the saved connections needs QGIS's API, so that
part runs on the main thread.
"""

from __future__ import annotations

from qgis.PyQt.QtCore import Qt, QTimer
from qgis.PyQt.QtWidgets import QCheckBox, QLabel, QListWidget, QListWidgetItem, QVBoxLayout, QWidget

from geogpt_qgis.gui.background import LatestAnswers
from geogpt_qgis.gui.server_picker import ERROR_STYLE, set_label
from geogpt_qgis.toolbelt.i18n import tr

ALL_CONNECTIONS = "*"
_ROLES_CHECK_DELAY_MS = 300  # after the last change of the connection choice


class ConnectionsChooser(QWidget):
    """The "all connections" box or a checked list; ``setting()`` is the ``postgis_connections`` value."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.answers = LatestAnswers(self)
        self.all_connections = QCheckBox(tr("All saved connections, including ones added later"))
        self.connections_list = QListWidget()
        self.connections_list.setMaximumHeight(110)
        self.connections_hint = QLabel()
        self.connections_hint.setWordWrap(True)
        self.roles_warning = QLabel()  # the chosen connections' roles that could write
        self.roles_warning.setWordWrap(True)
        self.roles_warning.setStyleSheet(ERROR_STYLE)
        self.roles_warning.setVisible(False)
        self._roles_check = QTimer(self)
        self._roles_check.setSingleShot(True)
        self._roles_check.setInterval(_ROLES_CHECK_DELAY_MS)
        self._roles_check.timeout.connect(self.check_connection_roles)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for widget in (self.all_connections, self.connections_list, self.connections_hint, self.roles_warning):
            layout.addWidget(widget)
        self.all_connections.toggled.connect(self._all_connections_toggled)
        self.all_connections.toggled.connect(lambda _on: self._roles_check.start())
        self.connections_list.itemChanged.connect(lambda _item: self._roles_check.start())

    def load(self, setting: str) -> None:
        """Show the saved connections, checked as ``setting`` (``*`` or names separated by commas) says."""
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
        self.connections_list.setVisible(bool(names))  # the hint says why there is nothing to choose
        self._roles_check.start()

    def _all_connections_toggled(self, everything: bool) -> None:
        self.connections_list.setEnabled(not everything)
        if everything:
            for row in range(self.connections_list.count()):
                self.connections_list.item(row).setCheckState(Qt.CheckState.Checked)

    def setting(self) -> str:
        """``*`` or the checked connection names, separated by commas (the ``postgis_connections`` setting)."""
        if self.all_connections.isChecked():
            return ALL_CONNECTIONS
        return ",".join(self.chosen())

    def chosen(self) -> list[str]:
        """The saved connections the agent would be allowed to use with the page as it is."""
        items = [self.connections_list.item(row) for row in range(self.connections_list.count())]
        return [i.text() for i in items if self.all_connections.isChecked() or i.checkState() == Qt.CheckState.Checked]

    def check_connection_roles(self) -> None:
        """Ask each chosen connection's server, in the background, whether its role could change data."""
        from geogpt_qgis.tools.postgis.connections import resolve_connection

        self._roles_check.stop()
        self.answers.forget()  # the choice changed: an older check's answer is not about it
        names = self.chosen()
        self.roles_warning.setVisible(False)
        if not names:
            return
        try:
            targets = [(name, resolve_connection(name, names).conninfo) for name in names]  # main thread: QGIS API
        except Exception as exc:  # noqa: BLE001 - a broken saved connection: say so, do not fail the page
            set_label(self.roles_warning, tr("Could not read the saved connections: {}").format(exc), True)
            return
        self.answers.ask("roles", lambda: _role_warnings(targets), self._roles_arrived)

    def _roles_arrived(self, lines: list[str] | None, error: BaseException | None) -> None:
        if error is not None:
            lines = [tr("Could not check the connections' roles: {}").format(error)]
        set_label(self.roles_warning, "\n".join(lines or []), bool(lines))


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
