"""The algorithms installed in the running QGIS, as search entries (main thread).

Reading the registry's metadata for ~700 algorithms takes a few milliseconds,
so it is done in one main-thread call and cached until the set of installed
algorithms changes.
"""

from __future__ import annotations

import sys
from pathlib import Path

from qgis.core import QgsApplication, QgsProcessingAlgorithm

from geogpt_qgis.tools.processing.compat import FLAG_DEPRECATED, FLAG_HIDDEN, has_flag
from geogpt_qgis.tools.processing.search import AlgorithmEntry, AlgorithmIndex

_cache: dict[tuple[str, ...], AlgorithmIndex] = {}


def ensure_processing() -> int:
    """Make sure QGIS Processing is loaded (headless use); return the number of algorithms.

    QGIS desktop loads it at start-up; a standalone QgsApplication does not.
    Main thread only.
    """
    registry = QgsApplication.processingRegistry()
    if registry.providerById("native") is not None and len(registry.algorithms()) > 50:
        return len(registry.algorithms())
    plugins = Path(QgsApplication.pkgDataPath()) / "python" / "plugins"
    if plugins.is_dir() and str(plugins) not in sys.path:
        sys.path.append(str(plugins))
    from processing.core.Processing import Processing

    Processing.initialize()
    if registry.providerById("native") is None:
        from qgis.analysis import QgsNativeAlgorithms

        registry.addProvider(QgsNativeAlgorithms())
    return len(registry.algorithms())


def usable_algorithms() -> list[QgsProcessingAlgorithm]:
    """Installed algorithms a user could pick in the toolbox (not deprecated, not hidden)."""
    return [
        algorithm
        for algorithm in QgsApplication.processingRegistry().algorithms()
        if not has_flag(algorithm, FLAG_DEPRECATED) and not has_flag(algorithm, FLAG_HIDDEN)
    ]


def current_index() -> AlgorithmIndex:
    """The search index for the installed algorithms (rebuilt when they change).  Main thread."""
    algorithms = usable_algorithms()
    key = tuple(sorted(a.id() for a in algorithms))
    index = _cache.get(key)
    if index is None:
        entries = [
            AlgorithmEntry(
                id=a.id(),
                name=a.displayName(),
                group=a.group(),
                tags=" ".join(a.tags()),
                short=a.shortDescription(),
                help=a.shortHelpString() or "",
                provider=a.provider().id() if a.provider() else "",
            )
            for a in algorithms
        ]
        _cache.clear()
        index = _cache[key] = AlgorithmIndex(entries)
    return index
