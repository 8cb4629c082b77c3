"""The proxy's login kept in QGIS's authentication database reaches the proxy: run as a fresh process.

    QGIS_CUSTOM_CONFIG_PATH=/tmp/profile python -m tests.support.proxy_login_probe

A fresh process, because QGIS opens its authentication database once per
process.  QGIS's proxy is set with ``proxy/authcfg`` naming a Basic
configuration (as Settings > Options > Network stores it); a model list is
asked for off the main thread, as the dock asks it, while the main thread
turns Qt's event loop.  Prints one JSON line; the test asserts on it.
"""

from __future__ import annotations

import json
import os
import sys

from tests.support.auth_db_probe import MASTER, _off_main_thread
from tests.support.http_proxy import RecordingProxy
from tests.support.model_server import ScriptedModelServer

LOGIN = ("proxy-user", "stored secret")


def main() -> None:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    for name in ("http_proxy", "HTTP_PROXY", "no_proxy", "NO_PROXY", "all_proxy", "ALL_PROXY"):
        os.environ.pop(name, None)
    from qgis.core import QgsApplication, QgsAuthMethodConfig, QgsSettings
    from qgis.PyQt.QtCore import QCoreApplication

    QCoreApplication.setOrganizationName(QgsApplication.QGIS_ORGANIZATION_NAME)
    QCoreApplication.setApplicationName(QgsApplication.QGIS_APPLICATION_NAME)
    app = QgsApplication([], False)
    app.initQgis()
    manager = QgsApplication.authManager()
    report: dict = {"master_password_set": manager.setMasterPassword(MASTER, True)}
    config = QgsAuthMethodConfig("Basic")
    config.setName("proxy login")
    config.setConfig("username", LOGIN[0])
    config.setConfig("password", LOGIN[1])
    stored = manager.storeAuthenticationConfig(config)
    report["stored"] = stored[0] if isinstance(stored, tuple) else bool(stored)

    from geogpt_qgis.agent.providers.discovery import list_models

    with RecordingProxy(login=LOGIN) as proxy, ScriptedModelServer() as server:
        settings = QgsSettings()
        for key, value in {
            "proxyEnabled": True,
            "proxyType": "HttpProxy",
            "proxyHost": "127.0.0.1",
            "proxyPort": str(proxy.port),
            "authcfg": config.id(),
        }.items():
            settings.setValue(f"proxy/{key}", value)
        report["models"] = _off_main_thread(app, lambda: list_models("ollama", server.url))
        report["carried"] = [(item.url, item.proxy_authorization) for item in proxy.carried]
        report["server_url"] = server.url
    print(json.dumps(report))
    sys.stdout.flush()
    app.exitQgis()


if __name__ == "__main__":
    main()
