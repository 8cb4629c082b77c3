"""API keys, kept in the operating system's keychain through ``keyring``.

Keys are stored per server URL, so an OpenAI key and an OpenRouter key live
side by side.  They never go to QSettings, the project, logs or the
conversation store.  When no key is stored, ``OPENAI_API_KEY`` from the
environment is honoured.  ``keyring`` is imported lazily: it scans entry
points and may talk to D-Bus, which start-up must not pay for.
"""

from __future__ import annotations

import contextlib
import os
from urllib.parse import urlsplit

SERVICE = "geogpt_qgis"
ENV_VAR = "OPENAI_API_KEY"


class SecretStoreError(RuntimeError):
    """The keychain cannot store or read the key; the message says what to do."""


def account_for(base_url: str) -> str:
    """The keychain account name for a server: scheme, host and path, normalised."""
    parts = urlsplit(base_url.strip())
    path = parts.path.rstrip("/")
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{path}"


def _usable_keyring():
    import keyring
    from keyring.backends import fail

    backend = keyring.get_keyring()
    if isinstance(backend, fail.Keyring):
        return None
    return keyring


def get_api_key(base_url: str) -> str | None:
    """The stored key for ``base_url``, else ``$OPENAI_API_KEY``, else ``None``."""
    try:
        keyring = _usable_keyring()
        stored = keyring.get_password(SERVICE, account_for(base_url)) if keyring else None
    except Exception:  # noqa: BLE001 - a broken keychain must not stop a keyless server
        stored = None
    return stored or os.environ.get(ENV_VAR) or None


def set_api_key(base_url: str, key: str) -> None:
    """Store (or, with an empty key, delete) the key for ``base_url``."""
    keyring = _usable_keyring()
    if keyring is None:
        raise SecretStoreError(
            "No system keychain is available to store the API key. "
            f"Set the {ENV_VAR} environment variable before starting QGIS instead."
        )
    account = account_for(base_url)
    if not key:
        from keyring.errors import PasswordDeleteError

        with contextlib.suppress(PasswordDeleteError):
            keyring.delete_password(SERVICE, account)
        return
    keyring.set_password(SERVICE, account, key)


def has_stored_key(base_url: str) -> bool:
    """Whether the keychain holds a key for ``base_url`` (the environment is not consulted)."""
    try:
        keyring = _usable_keyring()
        return bool(keyring and keyring.get_password(SERVICE, account_for(base_url)))
    except Exception:  # noqa: BLE001 - a broken keychain must not stop a keyless server
        return False
