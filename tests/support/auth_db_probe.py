"""Store and read API keys where keyring has no usable backend, in a fresh QGIS profile: run as a process.

    QGIS_CUSTOM_CONFIG_PATH=/tmp/profile python -m tests.support.auth_db_probe

A fresh process, because QGIS opens its authentication database once per
process: the test's own QGIS must keep its profile's database untouched.
Prints one JSON line with what happened; the test asserts on it.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

URL = "https://models.example.org/v1"
KEY = "sk-planted-authdb-4f1c9e2a7b"
MASTER = "probe-master-password"


def _off_main_thread(app, fn) -> dict:
    """Call ``fn`` on another thread while this (main) thread keeps Qt's event loop turning."""
    box: dict = {}

    def run() -> None:
        try:
            box["result"] = fn()
        except Exception as exc:  # noqa: BLE001 - reported
            box["error"] = f"{type(exc).__name__}: {exc}"

    thread = threading.Thread(target=run)
    thread.start()
    while thread.is_alive():
        app.processEvents()
        thread.join(0.01)
    return box


def main() -> None:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ.pop("OPENAI_API_KEY", None)
    import keyring
    from keyring.backends import chainer, fail
    from qgis.core import QgsApplication, QgsSettings
    from qgis.PyQt.QtCore import QCoreApplication

    from tests.support.keyring_backend import MemoryKeyring

    QCoreApplication.setOrganizationName(QgsApplication.QGIS_ORGANIZATION_NAME)
    QCoreApplication.setApplicationName(QgsApplication.QGIS_APPLICATION_NAME)
    app = QgsApplication([], False)
    app.initQgis()

    from geogpt_qgis.toolbelt import auth_db, secrets

    report: dict = {"auth_db_path": QgsApplication.qgisAuthDatabaseFilePath()}
    manager = QgsApplication.authManager()
    keyring.set_keyring(fail.Keyring())
    report["usable_with_fail_backend"] = secrets._usable_keyring() is not None

    # No master password yet (and no one to ask, headless): a clear error, nothing stored.
    try:
        secrets.set_api_key(URL, KEY)
        report["without_master_password"] = "stored"
    except secrets.SecretStoreError as exc:
        report["without_master_password"] = str(exc)

    report["master_password_set"] = manager.setMasterPassword(MASTER, True)
    report["stored_in"] = secrets.set_api_key(URL, KEY)
    report["read_on_main_thread"] = secrets.get_api_key(URL)
    report["read_off_main_thread"] = _off_main_thread(app, lambda: secrets.get_api_key(URL))
    report["has_stored_key"] = _off_main_thread(app, lambda: secrets.has_stored_key(URL))
    report["config_names"] = sorted(c.name() for c in manager.availableAuthMethodConfigs().values())
    os.environ[secrets.ENV_VAR] = "sk-from-the-environment"
    report["read_with_env_set"] = secrets.get_api_key(URL)
    del os.environ[secrets.ENV_VAR]
    # Replacing keeps one configuration per server.
    report["replaced_in"] = _off_main_thread(app, lambda: secrets.set_api_key(URL, KEY + "-v2"))
    report["read_after_replace"] = secrets.get_api_key(URL)
    report["configs_after_replace"] = len(manager.availableAuthMethodConfigs())
    secrets.set_api_key(URL, KEY)

    class BrokenKeyring(MemoryKeyring):
        """A keychain that fails every call (a locked or crashed keychain daemon)."""

        def get_password(self, service: str, username: str) -> str | None:
            raise RuntimeError("keychain daemon crashed")

        def set_password(self, service: str, username: str, password: str) -> None:
            raise RuntimeError("keychain daemon crashed")

    class EmptyChain(chainer.ChainerBackend):
        backends = ()  # type: ignore[assignment]  # no backend to chain

    other = "https://other.example.org/v1"
    for label, backend in (("broken", BrokenKeyring()), ("empty_chain", EmptyChain())):
        keyring.set_keyring(backend)
        report[f"{label}_usable"] = secrets._usable_keyring() is not None
        report[f"{label}_stored_in"] = secrets.set_api_key(other, f"{KEY}-{label}")
        report[f"{label}_read"] = secrets.get_api_key(other)
    keyring.set_keyring(fail.Keyring())
    secrets.set_api_key(other, "")
    report["read_other_after_delete"] = secrets.get_api_key(other)

    # A working keychain takes the key, and the older copy leaves QGIS's database.
    memory = MemoryKeyring()
    third = "https://third.example.org/v1"
    keyring.set_keyring(fail.Keyring())
    secrets.set_api_key(third, KEY + "-third")
    keyring.set_keyring(memory)
    report["third_stored_in"] = secrets.set_api_key(third, KEY + "-third")
    report["third_in_auth_db"] = auth_db.has_key(secrets.account_for(third))

    from geogpt_qgis.toolbelt.preferences import PlgOptionsManager

    PlgOptionsManager.set_value("provider", "openai")
    PlgOptionsManager.set_value("openai_base_url", URL)
    settings = QgsSettings()
    settings.sync()
    report["settings_file"] = settings.fileName()
    report["settings_has_key"] = KEY.encode() in Path(settings.fileName()).read_bytes()
    report["auth_db_has_plain_key"] = KEY.encode() in Path(report["auth_db_path"]).read_bytes()
    print(json.dumps(report))
    sys.stdout.flush()
    app.exitQgis()


if __name__ == "__main__":
    main()
