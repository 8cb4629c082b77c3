"""A small bar showing how full the model's context window was for the last request."""

from __future__ import annotations

from qgis.PyQt.QtWidgets import QProgressBar, QWidget

from geogpt_qgis.toolbelt.i18n import tr

METER_WIDTH = 84
# Fill colours: plenty of room, getting full, older messages are being summarised.
_COLOURS = ((0.6, "#5cb85c"), (0.85, "#f0ad4e"), (1.01, "#d9534f"))


class ContextMeter(QProgressBar):
    """``43%`` in a thin bar; the tooltip says tokens used, the window, and what was summarised."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("geogptContextMeter")
        self.setRange(0, 100)
        self.setFixedWidth(METER_WIDTH)
        self.setMaximumHeight(14)
        self.setTextVisible(True)
        self.setFormat(tr("context %p%"))  # a word, not "ctx"; the tooltip says what it means
        self.reset_usage()

    def reset_usage(self) -> None:
        self.used = self.limit = self.omitted = 0
        self.setValue(0)
        self.setToolTip(tr("How full the model's context window is: shown after the first request."))
        self._colour(0.0)

    def show_usage(self, used: int, limit: int, reserved: int = 0, omitted: int = 0) -> None:
        """Show the prompt of the request about to be made: ``used`` of ``limit`` tokens."""
        self.used, self.limit, self.omitted = used, limit, omitted
        share = used / limit if limit else 0.0
        self.setValue(min(100, round(share * 100)))
        tip = tr("Context: {used:,} of {limit:,} tokens ({percent:.0f}%) in the last request").format(
            used=used, limit=limit, percent=share * 100
        )
        if reserved:
            tip += tr("; {reserved:,} kept free for the answer").format(reserved=reserved)
        if omitted:
            tip += tr("; {n} older messages summarised to fit").format(n=omitted)
        self.setToolTip(tip + ".")
        self._colour(share if not omitted else max(share, 0.9))

    def _colour(self, share: float) -> None:
        colour = next(c for limit, c in _COLOURS if share < limit)
        self.setStyleSheet(
            "QProgressBar#geogptContextMeter { border: 1px solid palette(mid); border-radius: 3px; "
            "font-size: 8pt; text-align: center; }"
            f"QProgressBar#geogptContextMeter::chunk {{ background: {colour}; }}"
        )
