"""Translation helpers: ``tr()`` and loading the plugin's ``.qm`` file.

Only Qt at import time: every widget calls ``tr``, and the Qt 6 smoke test builds widgets where
no QGIS is installed (``qgis.core`` is imported where QGIS's own locale is read).
"""

from __future__ import annotations

from pathlib import Path

from qgis.PyQt.QtCore import QCoreApplication, QLocale, QSettings, QTranslator

from geogpt_qgis.toolbelt.paths import i18n_dir

CONTEXT = "GeoGPT"


def tr(text: str) -> str:
    """Translate a user-visible string in the plugin's translation context."""
    translated: str = QCoreApplication.translate(CONTEXT, text)
    return translated


def qgis_locale() -> str:
    """The locale QGIS translates its own interface into, e.g. ``"nb_NO"``.

    QGIS uses ``--lang`` when given (``QgsApplication.translation()``), else
    ``locale/userLocale`` when ``locale/overrideFlag`` is set, else the system
    locale (which it also writes to ``locale/userLocale``).
    """
    from qgis.core import QgsApplication

    app = QgsApplication.instance()
    chosen = app.translation() if isinstance(app, QgsApplication) else ""
    if chosen:
        return chosen
    settings = QSettings()
    if settings.value("locale/overrideFlag", False, type=bool):
        return str(settings.value("locale/userLocale", "") or "") or QLocale.system().name()
    system: str = QLocale.system().name()
    return system


def translation_file(locale: str) -> Path | None:
    """The shipped ``.qm`` for a locale: exact (``nb_NO``), else by language (``nb``); None if there is none."""
    language = locale.replace("-", "_").split("_")[0].lower()
    names = [locale, language, *(["nb"] if language == "no" else [])]
    for name in names:
        qm = i18n_dir() / f"geogpt_qgis_{name}.qm"
        if name and qm.is_file():
            return qm
    return None


def install_translator(locale: str | None = None) -> QTranslator | None:
    """Load the translation for QGIS's locale, if one is shipped; return it for removal."""
    qm = translation_file(locale or qgis_locale())
    if qm is None:
        return None
    translator = QTranslator()
    if not translator.load(str(qm)):
        return None
    QCoreApplication.installTranslator(translator)
    return translator
