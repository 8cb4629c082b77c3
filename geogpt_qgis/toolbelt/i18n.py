"""Translation helpers: ``tr()`` and loading the plugin's ``.qm`` file."""

from __future__ import annotations

from qgis.PyQt.QtCore import QCoreApplication, QLocale, QSettings, QTranslator

from geogpt_qgis.toolbelt.paths import i18n_dir

CONTEXT = "GeoGPT"


def tr(text: str) -> str:
    """Translate a user-visible string in the plugin's translation context."""
    return QCoreApplication.translate(CONTEXT, text)


def install_translator() -> QTranslator | None:
    """Load the translation for the user's locale, if one is shipped; return it for removal."""
    locale = str(QSettings().value("locale/userLocale", QLocale().name()) or "")[:2]
    qm = i18n_dir() / f"geogpt_qgis_{locale}.qm"
    if not locale or not qm.is_file():
        return None
    translator = QTranslator()
    if not translator.load(str(qm)):
        return None
    QCoreApplication.installTranslator(translator)
    return translator
