"""The chat panel: the dock's content, put together from parts that each hold one thing.

- ``server_picker.ServerPicker`` (live): which server and model the next run uses;
- ``conversation_view.ConversationView``: the conversation bar, the chat, the stored conversations;
- ``chat_input.ChatInput``: the question box, status, context meter, approval choice, Send/Stop;
- ``run_controller.RunController``: the runs of the agent's conversation service, painted into the chat.

The conversation service (``agent.conversation.Conversation``) makes the
tools' context and main-thread bridge; the project watcher shares the bridge
(its ``acting`` flag tells the agent's changes from the user's).

The panel builds and wires them, reopens the last conversation when QGIS
starts again, and releases everything on unload.  It lives inside
``ChatDock``, which builds it on first show.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from qgis.core import QgsProject, QgsRasterLayer, QgsVectorLayer, QgsWkbTypes
from qgis.PyQt.QtCore import QTimer, pyqtSignal
from qgis.PyQt.QtWidgets import QVBoxLayout, QWidget

from geogpt_qgis.agent.conversation import Conversation
from geogpt_qgis.gui.chat_input import ChatInput
from geogpt_qgis.gui.chat_view import ChatView
from geogpt_qgis.gui.conversation_view import ConversationView
from geogpt_qgis.gui.first_run_card import LINE, POINT, POLYGON, RASTER, TABLE, FirstRunCard, example_questions
from geogpt_qgis.gui.model_export_actions import install_model_export
from geogpt_qgis.gui.run_controller import RunController
from geogpt_qgis.gui.server_picker import ServerPicker
from geogpt_qgis.gui.server_state import ServerState, ServerStatus
from geogpt_qgis.toolbelt.dependencies import missing_packages
from geogpt_qgis.toolbelt.i18n import tr
from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
from geogpt_qgis.tools.project_watch import ProjectWatcher

if TYPE_CHECKING:
    from qgis.gui import QgisInterface

    from geogpt_qgis.gui.install_banner import InstallBanner


class ChatPanel(QWidget):
    """Model picker, conversation view and input row, and the run controller behind them.

    ``runs`` sends, stops and paints runs; ``view`` opens, lists and manages
    conversations; the widget attributes (``chat``, ``input``, ``status``...)
    name the parts' widgets for scripts and tests.
    """

    run_finished = pyqtSignal(str)  # status, for tests and scripts
    approval_shown = pyqtSignal(object)  # the ApprovalCard, for tests and scripts
    conversation_opened = pyqtSignal(str)  # thread id, once its history is shown
    conversations_listed = pyqtSignal()  # the list page was (re)filled

    def __init__(
        self,
        iface: QgisInterface | None,
        project: QgsProject | None = None,
        store_path: Path | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("GeoGptChatPanel")
        self.iface = iface
        self.project = project or QgsProject.instance()
        self.conversation = Conversation.on_project(self.project, iface, store_path, self)
        self.watcher = ProjectWatcher(self.project, self.conversation.bridge, self)
        self.model_bar = ServerPicker(self, live=True)
        self.composer = ChatInput(self)
        self.runs = RunController(self.conversation, self.watcher, ChatView(self), self.composer, self.model_bar)
        self.view = ConversationView(self.project, iface, self.runs, self.composer, self.watcher, self)
        self.model_export = install_model_export(self.runs, self.view)  # "Export as model…" (issue 33)
        self.runs.run_finished.connect(self.run_finished)
        self.runs.approval_shown.connect(self.approval_shown)
        self.view.conversation_opened.connect(self.conversation_opened)
        self.view.conversations_listed.connect(self.conversations_listed)
        # The parts' widgets, by name.
        self.chat, self.conversations, self.pages = self.view.chat, self.view.conversations, self.view.pages
        self.conversation_bar, self.new_button = self.view.conversation_bar, self.view.conversation_bar.new_button
        self.input, self.send_button, self.status = self.composer.edit, self.composer.send_button, self.composer.status
        self.meter, self.policy = self.composer.meter, self.composer.policy
        self.first_run = FirstRunCard(self)
        self.chat.set_placeholder(self.first_run)
        self._wire_first_run()

        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.model_bar)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.composer)
        self.install_banner: InstallBanner | None = None
        missing = missing_packages()
        if missing:  # names them and offers to install them into the profile
            from geogpt_qgis.gui.install_banner import InstallBanner

            self.install_banner = InstallBanner(missing, self)
            self.install_banner.installed.connect(self._packages_installed)
            layout.insertWidget(0, self.install_banner)

        self.project.cleared.connect(self._project_cleared)
        last = PlgOptionsManager.get_plg_settings().last_thread_id
        if last and not missing:
            # Come back to the last conversation (read from the store off this thread).
            QTimer.singleShot(0, lambda: self.view.open_conversation(last, restoring=True))

    def _packages_installed(self) -> None:
        """The model list could not be asked for without the packages (Send was off for it): ask again now."""
        self.chat.add_notice(tr("The Python packages are installed: ask away."), "info")
        self.model_bar.refresh_models()

    def _wire_first_run(self) -> None:
        """The card follows the server's state and the project's layers; Send is off while no model can answer."""
        card, picker = self.first_run, self.model_bar
        picker.state_changed.connect(self._server_state_changed)
        self.chat.placeholder_shown.connect(self._sync_status_line)
        card.check_requested.connect(picker.refresh_models)
        card.settings_requested.connect(lambda: picker.settings_button.setChecked(True))
        card.example_chosen.connect(self._example_chosen)
        for signal in self._project_signals():
            signal.connect(self._refresh_examples)
        self._refresh_examples()

    def _project_signals(self) -> tuple:
        """What changes the example questions: layers added or removed, a project read or closed."""
        project = self.project
        return (project.layersAdded, project.layersRemoved, project.readProject, project.cleared)

    def _server_state_changed(self, state: ServerState) -> None:
        self.first_run.show_state(state)
        self.composer.set_blocked(state.headline if state.blocks_sending else "")
        self._sync_status_line()

    def _sync_status_line(self, *_args: object) -> None:
        """The picker's line does not repeat the server problem the first-run card explains in full.

        Only while the card shows (an empty conversation) and only for a server
        that cannot be reached or failed; once a conversation has items the line
        is the one place that says it, and notes such as where the key went stay.
        """
        line = self.model_bar.status_label
        said_by_card = self.first_run.isVisibleTo(self.chat) and self.model_bar.state.status in (
            ServerStatus.UNREACHABLE,
            ServerStatus.FAILED,
        )
        line.setVisible(bool(line.text()) and not said_by_card)

    def _example_chosen(self, question: str) -> None:
        self.input.setPlainText(question)
        self.input.setFocus()

    def _refresh_examples(self, *_args: object) -> None:
        self.first_run.set_examples(example_questions(project_layer_kinds(self.project)))

    def _project_cleared(self) -> None:
        """The project was closed: a running agent must not touch its layers."""
        self.runs.stop()

    def shutdown(self) -> None:
        """Stop the agent thread and release everything (plugin unload, QGIS exit)."""
        with contextlib.suppress(TypeError):
            self.project.cleared.disconnect(self._project_cleared)
        for signal in self._project_signals():
            with contextlib.suppress(TypeError):
                signal.disconnect(self._refresh_examples)
        self.model_bar.shutdown()
        self.watcher.close()
        if self.install_banner is not None:
            self.install_banner.cancel()  # stops pip
        self.runs.shutdown()  # the conversation service closes its bridge and ends the agent's thread


def project_layer_kinds(project: QgsProject) -> list[tuple[str, str]]:
    """The project's layers as (name, kind) for the example questions, in the layer tree's order."""
    kinds = {
        QgsWkbTypes.GeometryType.PointGeometry: POINT,
        QgsWkbTypes.GeometryType.LineGeometry: LINE,
        QgsWkbTypes.GeometryType.PolygonGeometry: POLYGON,
    }
    found = []
    # The layer tree is built after the layers while a project is read: its order, else the registry's.
    for layer in project.layerTreeRoot().layerOrder() or list(project.mapLayers().values()):
        if isinstance(layer, QgsVectorLayer):
            found.append((layer.name(), kinds.get(layer.geometryType(), TABLE)))
        elif isinstance(layer, QgsRasterLayer):
            found.append((layer.name(), RASTER))
    return found
