"""A header button that shows or hides a body: tool steps and reasoning use it."""

from __future__ import annotations

from qgis.PyQt.QtCore import Qt
from qgis.PyQt.QtWidgets import QSizePolicy, QToolButton, QVBoxLayout, QWidget


class CollapsibleSection(QWidget):
    """A clickable title over a body widget that starts collapsed."""

    def __init__(self, title: str, body: QWidget, parent: QWidget | None = None, expanded: bool = False) -> None:
        super().__init__(parent)
        self.header = QToolButton(self)
        self.header.setText(title)
        self.header.setCheckable(True)
        self.header.setAutoRaise(True)
        self.header.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        # Ignored width: a long title is cut at the column's edge instead of widening the column.
        self.header.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.header.setObjectName("geogptSectionHeader")  # styled by the chat column's one style sheet
        self.body = body
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.header)
        layout.addWidget(body)
        self.header.toggled.connect(self.set_expanded)
        self.set_expanded(expanded)

    def set_title(self, title: str) -> None:
        self.header.setText(title)

    def set_expanded(self, expanded: bool) -> None:
        if self.header.isChecked() != expanded:
            self.header.setChecked(expanded)  # re-enters through toggled
            return
        self.header.setArrowType(Qt.ArrowType.DownArrow if expanded else Qt.ArrowType.RightArrow)
        self.body.setVisible(expanded)

    @property
    def expanded(self) -> bool:
        checked: bool = self.header.isChecked()
        return checked
