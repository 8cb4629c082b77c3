"""Qt-free, QGIS-free building blocks: events, cancellation, text helpers."""
