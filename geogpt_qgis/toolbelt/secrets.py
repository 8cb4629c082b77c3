"""API keys, kept in the operating system's keychain through ``keyring``, else in QGIS's.

Keys are stored per server URL, so an OpenAI key and an OpenRouter key live
side by side.  Where keyring has no usable backend (a headless Linux box:
``keyring.backends.fail``) or the keychain fails, keys go to the QGIS
authentication database (``toolbelt.auth_db``), encrypted with the master
password.  They never go to QSettings, the project, logs or the
conversation store.  Reading tries the keychain, then the authentication
database, then ``OPENAI_API_KEY`` from the environment.  ``keyring`` is
imported lazily: it scans entry points and may talk to D-Bus, which start-up
must not pay for.  Call these functions off the main thread: the keychain
may be slow (the authentication database part hops to the main thread by
itself).
"""

from __future__ import annotations

import contextlib
import logging
import os
from types import ModuleType
from urllib.parse import urlsplit

from geogpt_qgis.core import secrets_scrub

SERVICE = "geogpt_qgis"
ENV_VAR = "OPENAI_API_KEY"
KEYCHAIN = "keychain"
AUTH_DB = "auth_db"

log = logging.getLogger(__name__)


class SecretStoreError(RuntimeError):
    """The keychain cannot store or read the key; the message says what to do."""


def account_for(base_url: str) -> str:
    """The keychain account name for a server: scheme, host and path, normalised."""
    parts = urlsplit(base_url.strip())
    path = parts.path.rstrip("/")
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{path}"


def _usable_keyring() -> ModuleType | None:  # the keyring module (imported lazily) or None
    """``keyring`` if its backend can really keep a key; ``None`` for the fail/null backends or an empty chain."""
    try:
        import keyring
        from keyring.backends import chainer, fail, null

        backend = keyring.get_keyring()
    except Exception:  # noqa: BLE001 - a broken keyring install is the same as none
        return None
    if isinstance(backend, (fail.Keyring, null.Keyring)):
        return None
    if isinstance(backend, chainer.ChainerBackend) and not backend.backends:
        return None
    return keyring


def _keychain_get(account: str) -> str | None:
    keyring = _usable_keyring()
    if keyring is None:
        return None
    try:
        password: str | None = keyring.get_password(SERVICE, account)
        return password
    except Exception as exc:  # noqa: BLE001 - a broken keychain must not stop a keyless server
        log.warning(
            "The API key for %s could not be read from the system keychain (service '%s', account '%s': %s); "
            "unlock the keychain, or set %s to the key for this run.",
            account,
            SERVICE,
            account,
            type(exc).__name__,
            ENV_VAR,
        )
        return None


def _auth_db_get(account: str) -> str | None:
    from geogpt_qgis.toolbelt import auth_db

    try:
        return auth_db.read_key(account)
    except auth_db.AuthDbError as exc:  # e.g. no master password (headless), or its dialog was cancelled
        log.warning("%s", exc)  # says what failed, where the key is and the ways out
        return None
    except Exception as exc:  # noqa: BLE001 - a broken database must not stop a keyless server
        log.warning(
            "The API key for %s in the QGIS authentication database (configuration '%s') could not be read "
            "(%s: %s); set %s to the key for this run.",
            account,
            auth_db.config_name(account),
            type(exc).__name__,
            exc,
            ENV_VAR,
        )
        return None


def get_api_key(base_url: str) -> str | None:
    """The stored key for ``base_url`` (keychain, then QGIS authentication database), else ``$OPENAI_API_KEY``."""
    account = account_for(base_url)
    for where, read in ((KEYCHAIN, _keychain_get), (AUTH_DB, _auth_db_get)):
        stored = read(account)
        if stored:
            secrets_scrub.register(stored)  # from now on scrubbed from results, logs, stores and exports
            log.debug("API key for %s found in the %s store", account, where)
            return stored
    from_env = os.environ.get(ENV_VAR) or None
    if from_env:
        log.debug("API key for %s taken from $%s", account, ENV_VAR)
    return from_env


def set_api_key(base_url: str, key: str) -> str:
    """Store (or, with an empty key, delete) the key for ``base_url``; return where it went (``KEYCHAIN``/``AUTH_DB``).

    Raises ``SecretStoreError`` (with what to do) when neither store can take it.
    """
    account = account_for(base_url)
    if not key:
        _delete_everywhere(account)
        return ""
    secrets_scrub.register(key)
    keyring = _usable_keyring()
    if keyring is not None:
        try:
            keyring.set_password(SERVICE, account, key)
        except Exception as exc:  # noqa: BLE001 - e.g. a locked or broken keychain: use QGIS's instead
            log.warning("The system keychain refused the API key (%s); using QGIS's.", type(exc).__name__)
        else:
            with contextlib.suppress(Exception):  # an older copy in QGIS's database must not linger
                from geogpt_qgis.toolbelt import auth_db

                auth_db.delete_key(account)
            log.debug("API key for %s saved in the system keychain", account)
            return KEYCHAIN
    from geogpt_qgis.toolbelt import auth_db

    try:
        auth_db.store_key(account, key)
    except auth_db.AuthDbError as exc:
        raise SecretStoreError(str(exc)) from exc
    log.debug("API key for %s saved in the QGIS authentication database", account)
    return AUTH_DB


def _delete_everywhere(account: str) -> None:
    keyring = _usable_keyring()
    if keyring is not None:
        from keyring.errors import PasswordDeleteError

        with contextlib.suppress(PasswordDeleteError):
            keyring.delete_password(SERVICE, account)
    from geogpt_qgis.toolbelt import auth_db

    try:
        auth_db.delete_key(account)
    except auth_db.AuthDbError as exc:
        raise SecretStoreError(str(exc)) from exc


def has_stored_key(base_url: str) -> bool:
    """Whether a key is stored for ``base_url`` (the environment is not consulted, no password is asked)."""
    account = account_for(base_url)
    if _keychain_get(account):
        return True
    try:
        from geogpt_qgis.toolbelt import auth_db

        return auth_db.has_key(account)
    except Exception:  # noqa: BLE001 - no usable store means no stored key
        return False


def register_connection_passwords() -> int:
    """Register the passwords of QGIS's saved PostgreSQL connections as secrets; returns how many (main thread).

    Only passwords kept in the connection itself (and ``PGPASSWORD``, through
    ``secrets_scrub``) are read here, which asks nobody for anything; a password
    behind an authentication configuration is registered when a tool expands
    the connection (``tools.postgis.connections``).
    """
    from qgis.core import QgsDataSourceUri, QgsProviderRegistry

    metadata = QgsProviderRegistry.instance().providerMetadata("postgres")
    if metadata is None:
        return 0
    registered = 0
    for connection in metadata.connections().values():
        uri = QgsDataSourceUri(connection.uri())
        registered += secrets_scrub.register_password(uri.password(), uri.username(), uri.database())
    return registered


# Where the in-plugin MCP server's bearer token is kept (the same stores as the API keys, never QSettings).
MCP_SERVER_ACCOUNT = "mcp://geogpt-qgis/server-token"


def mcp_server_token(renew: bool = False) -> str:
    """The bearer token MCP clients must send to the in-plugin server: stored, or made and stored on first start.

    ``renew`` replaces it (clients configured with the old one are refused
    from then on).  Off the main thread, as the other keys.
    """
    from secrets import token_urlsafe

    account = account_for(MCP_SERVER_ACCOUNT)
    if not renew:
        for read in (_keychain_get, _auth_db_get):
            stored = read(account)
            if stored:
                secrets_scrub.register(stored)
                return stored
    token = token_urlsafe(32)
    set_api_key(MCP_SERVER_ACCOUNT, token)
    return token
