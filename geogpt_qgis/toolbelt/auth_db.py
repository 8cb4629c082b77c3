"""API keys in the QGIS authentication database: the fallback where keyring has no usable backend.

QGIS encrypts the database with the user's master password.  Each server
gets one configuration named ``GeoGPT API key: <account>`` of the "Basic"
method (the account as user name, the key as password): QGIS 3.22 has no
API-header method, and a Basic configuration stays visible and removable in
Settings > Options > Authentication.  The name is stable, so nothing about
the key (not even the configuration id) needs to go to QSettings.

Threads: the authentication manager may ask for the master password with a
dialog, and not all of its calls are safe off the main thread, so every call
here runs on the main thread (``call_on_main_thread``); background callers
wait for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from geogpt_qgis.toolbelt.i18n import tr
from geogpt_qgis.toolbelt.main_thread import call_on_main_thread
from geogpt_qgis.toolbelt.secrets import ENV_VAR

if TYPE_CHECKING:
    from qgis.core import QgsAuthManager

T = TypeVar("T")

NAME_PREFIX = "GeoGPT API key: "
METHOD = "Basic"


class AuthDbError(RuntimeError):
    """The authentication database cannot store or read the key; the message says what to do."""


def config_name(account: str) -> str:
    """The stable name of the configuration holding the key for ``account``."""
    return NAME_PREFIX + account


def _manager() -> QgsAuthManager | None:
    """QGIS's authentication manager, or ``None`` when it is disabled (e.g. no QCA/OpenSSL plugin)."""
    from qgis.core import QgsApplication
    from qgis.PyQt.QtCore import QCoreApplication

    if QCoreApplication.instance() is None:
        return None
    manager = QgsApplication.authManager()
    if manager is None or manager.isDisabled():
        return None
    return manager


def _unavailable_error() -> AuthDbError:
    from qgis.core import QgsApplication

    manager = QgsApplication.authManager()
    reason = manager.disabledMessage().strip() if manager is not None else ""
    return AuthDbError(
        tr(
            "No system keychain is available, and the QGIS authentication database is disabled{r}. "
            "Install a keyring backend (e.g. GNOME Keyring or KWallet), or set the OPENAI_API_KEY "
            "environment variable before starting QGIS."
        ).format(r=f" ({reason})" if reason else "")
    )


def _config_id(manager: QgsAuthManager, account: str) -> str | None:
    name = config_name(account)
    for config_id, config in manager.availableAuthMethodConfigs().items():
        if config.name() == name:
            found: str = config_id
            return found
    return None


def _unlock(manager: QgsAuthManager) -> bool:
    """Whether the master password is known; QGIS asks the user for it (or to create one) if not.

    Headless (the command, the MCP server) no one is asked: only ``QGIS_AUTH_PASSWORD_FILE``, read by
    QGIS when it starts, can unlock the database there.
    """
    unlocked: bool = manager.masterPasswordIsSet() or manager.setMasterPassword(True)
    return unlocked


def cannot_read_message(account: str) -> str:
    """What failed (reading), where the key is, and the ways out: for a stored key the master password locks."""
    return tr(
        "The API key for {account} is stored in the QGIS authentication database (configuration "
        "'{name}'), but it could not be read: the QGIS master password that unlocks the database is not "
        "available (a run without a window cannot ask for it). Either put the master password in a file "
        "readable only by you and set QGIS_AUTH_PASSWORD_FILE to its path, or set the {env} environment "
        "variable to the key for this run, or enter the master password when QGIS asks (or in Settings > "
        "Options > Authentication)."
    ).format(account=account, name=config_name(account), env=ENV_VAR)


def cannot_store_message() -> str:
    return tr(
        "The QGIS master password is not set, so the API key cannot be stored in the QGIS "
        "authentication database. Set it in Settings > Options > Authentication (or enter it "
        "when QGIS asks), or set the OPENAI_API_KEY environment variable before starting QGIS."
    )


def _read(account: str) -> str | None:
    from qgis.core import QgsAuthMethodConfig

    manager = _manager()
    if manager is None:
        return None
    config_id = _config_id(manager, account)
    if config_id is None:
        return None
    if not _unlock(manager):
        raise AuthDbError(cannot_read_message(account))
    loaded = manager.loadAuthenticationConfig(config_id, QgsAuthMethodConfig(), True)
    ok, config = loaded if isinstance(loaded, tuple) else (True, loaded)
    if not ok:
        raise AuthDbError(
            tr(
                "The API key for {account} is stored in the QGIS authentication database (configuration "
                "'{name}'), but it could not be decrypted with the master password given (is it the right "
                "one?). Set the {env} environment variable to the key for this run, or store the key again."
            ).format(account=account, name=config_name(account), env=ENV_VAR)
        )
    return config.config("password") or None


def _store(account: str, key: str) -> None:
    from qgis.core import QgsAuthMethodConfig

    manager = _manager()
    if manager is None:
        raise _unavailable_error()
    if not _unlock(manager):
        raise AuthDbError(cannot_store_message())
    config = QgsAuthMethodConfig(METHOD)
    config.setName(config_name(account))
    config.setUri(account)
    config.setConfig("username", account)
    config.setConfig("password", key)
    existing = _config_id(manager, account)
    if existing is not None:
        config.setId(existing)
        ok = manager.updateAuthenticationConfig(config)
    else:
        stored = manager.storeAuthenticationConfig(config)
        ok = stored[0] if isinstance(stored, tuple) else bool(stored)
    if not ok:
        raise AuthDbError(tr("The QGIS authentication database refused to store the API key."))


def _delete(account: str) -> None:
    manager = _manager()
    if manager is None:
        return
    config_id = _config_id(manager, account)
    if config_id is not None:
        manager.removeAuthenticationConfig(config_id)


def _on_main(fn: Callable[[], T]) -> T:
    """``fn()`` on the main thread; a main thread that does not answer becomes an ``AuthDbError``."""
    try:
        return call_on_main_thread(fn)
    except TimeoutError as exc:
        raise AuthDbError(tr("QGIS did not answer in time; the master password dialog may still be open.")) from exc


def read_key(account: str) -> str | None:
    """The key stored for ``account``, or ``None``; may ask the user for the master password."""
    return _on_main(lambda: _read(account))


def store_key(account: str, key: str) -> None:
    """Store (or replace) the key for ``account``; raises ``AuthDbError`` with what to do."""
    _on_main(lambda: _store(account, key))


def delete_key(account: str) -> None:
    """Remove the key for ``account``, if one is stored."""
    _on_main(lambda: _delete(account))


def has_key(account: str) -> bool:
    """Whether a key is stored for ``account`` (does not need the master password)."""
    return _on_main(lambda: (manager := _manager()) is not None and _config_id(manager, account) is not None)
