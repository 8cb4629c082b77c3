"""The card an empty conversation shows: what GeoGPT does, the model server's state, the next step, examples.

It is the chat column's placeholder (``ChatView.set_placeholder``), so it
scrolls and re-wraps with the column and goes away with the first message.
It knows nothing of the server or the project: the panel feeds it a
``ServerState`` and example questions, and hears which example was chosen.
"""

from __future__ import annotations

from html import escape

from qgis.PyQt.QtCore import Qt, QTimer, pyqtSignal
from qgis.PyQt.QtGui import QGuiApplication
from qgis.PyQt.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QSizePolicy, QVBoxLayout, QWidget

from geogpt_qgis.gui.server_state import ServerState, ServerStatus, checking
from geogpt_qgis.toolbelt.help import open_guide
from geogpt_qgis.toolbelt.i18n import tr

CARD_STYLE = """
QFrame#geogptFirstRun { border: 1px solid palette(mid); border-radius: 6px; background: palette(base); }
QLabel#geogptFirstRunTitle { font-weight: bold; }
QLabel#geogptServerState[status="ready"] { color: #2b7a0b; }
QLabel#geogptServerState[status="checking"] { color: #555555; }
QLabel#geogptServerState[status="problem"] { color: #a94442; font-weight: bold; }
QLabel#geogptCommand { font-family: monospace; background: palette(alternate-base); padding: 4px; }
"""
COPIED_MS = 1500
# Kinds of layer (see example_questions): a geometry type or "table"/"raster".
POINT, LINE, POLYGON, TABLE, RASTER = "point", "line", "polygon", "table", "raster"


def example_questions(layers: list[tuple[str, str]]) -> list[str]:
    """Three or four questions about the project's own layers (name, kind), the first ones listed."""
    if not layers:
        return [
            tr("What can you do with a QGIS project?"),
            tr("Where is Trondheim? Zoom the map there."),
            tr("How do I add a layer from a GeoPackage?"),
        ]
    questions = [tr("Which layers are in this project, and what do they hold?")]
    vectors = [name for name, kind in layers if kind in (POINT, LINE, POLYGON, TABLE)]
    points = [name for name, kind in layers if kind == POINT]
    areas = [name for name, kind in layers if kind == POLYGON]
    if vectors:
        questions.append(tr("Which fields does {l} have, and what do its values look like?").format(l=vectors[0]))
    if points and areas:
        questions.append(tr("How many {p} are in each of the {a}?").format(p=points[0], a=areas[0]))
    if vectors:
        questions.append(tr("Zoom to {l} and select its five largest features.").format(l=vectors[-1]))
    elif any(kind == RASTER for _name, kind in layers):
        questions.append(tr("What is the resolution and value range of {l}?").format(l=layers[0][0]))
    return questions[:4]


def _wrapped(text: str = "", name: str = "") -> QLabel:
    label = QLabel(text)
    label.setWordWrap(True)
    label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)  # never widens the dock
    if name:
        label.setObjectName(name)
    return label


class FirstRunCard(QFrame):
    """What the plugin does, whether the server is ready (and what to do if not), and example questions."""

    example_chosen = pyqtSignal(str)  # the question clicked: the panel puts it in the input box
    check_requested = pyqtSignal()  # "Check again": ask the server once more
    settings_requested = pyqtSignal()  # "Server settings": unfold the picker's URL/key fields

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("geogptFirstRun")
        self.setStyleSheet(CARD_STYLE)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.title = _wrapped(tr("Ask GeoGPT about your map"), "geogptFirstRunTitle")
        self.intro = _wrapped(
            tr(
                "It reads the layers of this project, selects and counts features, runs processing tools and "
                "SQL, and asks you before it changes data or writes files. It runs on a model server you choose."
            )
        )
        self.state_label = _wrapped(name="geogptServerState")
        self.step_label = _wrapped(name="geogptNextStep")
        self.command = QLabel()
        self.command.setObjectName("geogptCommand")
        self.command.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.command.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.copy_button = QPushButton(tr("Copy"))
        self.copy_button.setObjectName("geogptCopyCommand")
        self.copy_button.setToolTip(tr("Copy the command, to paste it into a terminal"))
        self.copy_button.clicked.connect(self.copy_command)
        self._copied = QTimer(self)  # owned by the card: it cannot fire into a deleted one
        self._copied.setSingleShot(True)
        self._copied.setInterval(COPIED_MS)
        self._copied.timeout.connect(lambda: self.copy_button.setText(tr("Copy")))
        self.check_button = QPushButton(tr("Check again"))
        self.check_button.clicked.connect(self.check_requested)
        self.settings_button = QPushButton(tr("Server settings"))
        self.settings_button.clicked.connect(self.settings_requested)
        self.examples_title = _wrapped(tr("Try asking:"))
        self.examples: list[QLabel] = []
        self.guide_link = _wrapped(
            '<a href="guide">' + escape(tr("New to GeoGPT? Read the user guide")) + "</a>", "geogptGuideLink"
        )
        self.guide_link.setToolTip(tr("Installing, choosing a model, what the agent may do without asking"))
        self.guide_link.linkActivated.connect(lambda _link: open_guide())

        command_row = QHBoxLayout()
        command_row.addWidget(self.command, 1)
        command_row.addWidget(self.copy_button)
        self.command_box = QWidget()
        self.command_box.setLayout(command_row)
        command_row.setContentsMargins(0, 0, 0, 0)
        actions = QHBoxLayout()
        actions.addWidget(self.check_button)
        actions.addWidget(self.settings_button)
        actions.addStretch(1)
        self._examples_layout = QVBoxLayout()
        self._examples_layout.setSpacing(2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 8, 10, 8)
        for widget in (self.title, self.intro, self.state_label, self.step_label, self.command_box):
            layout.addWidget(widget)
        layout.addLayout(actions)
        layout.addWidget(self.examples_title)
        layout.addLayout(self._examples_layout)
        layout.addWidget(self.guide_link)
        self.show_state(checking(""))

    def show_state(self, state: ServerState) -> None:
        """Say where the server stands and, unless it is ready, the one next step."""
        self.state = state
        calm = {ServerStatus.READY: "ready", ServerStatus.CHECKING: "checking", ServerStatus.NEEDS_KEY: "checking"}
        kind = calm.get(state.status, "problem")  # a key not typed yet is a step to take, not a fault
        self.state_label.setProperty("status", kind)
        self.state_label.setText(state.headline)
        self.state_label.style().unpolish(self.state_label)
        self.state_label.style().polish(self.state_label)
        self.step_label.setText(state.next_step)
        self.step_label.setVisible(bool(state.next_step))
        self.command.setText(state.command)
        self.command_box.setVisible(bool(state.command))
        self.check_button.setVisible(state.blocks_sending)
        self.settings_button.setVisible(state.settings)
        self.examples_title.setText(tr("Try asking:") if state.ready else tr("Once it is ready, try asking:"))

    def copy_command(self) -> None:
        QGuiApplication.clipboard().setText(self.command.text())
        self.copy_button.setText(tr("Copied"))
        self._copied.start()

    def set_examples(self, questions: list[str]) -> None:
        """Show ``questions`` as links; clicking one emits ``example_chosen``."""
        for label in self.examples:
            self._examples_layout.removeWidget(label)
            label.deleteLater()
        self.examples = []
        for question in questions:
            label = _wrapped(f'• <a href="ask">{escape(question)}</a>', "geogptExample")
            label.setToolTip(tr("Put this question in the input box"))
            label.linkActivated.connect(lambda _link, q=question: self.example_chosen.emit(q))
            self._examples_layout.addWidget(label)
            self.examples.append(label)
