"""HTTPS to servers whose authority only QGIS trusts (its Certificate Manager): run as a fresh process.

    QGIS_CUSTOM_CONFIG_PATH=/tmp/profile python -m tests.support.tls_probe CERT_DIR

A fresh process, because QGIS opens its authentication database once per
process and the plugin reads the authorities once per session.  ``CERT_DIR``
holds two self-signed certificates for 127.0.0.1 (``trusted`` and
``unknown``, ``.pem`` and ``.key``); only ``trusted`` is added to QGIS's
authorities, as Settings > Options > Authentication does.  Each serves a model
list over HTTPS; the model list and an OGC API request are asked for off the
main thread.  Prints one JSON line; the test asserts on it.
"""

from __future__ import annotations

import json
import os
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.support.auth_db_probe import _off_main_thread

MODELS = {"models": [{"name": "qwen3:8b"}]}


class _Tags(BaseHTTPRequestHandler):
    def log_message(self, *_args: object) -> None:
        pass

    def do_GET(self) -> None:
        body = json.dumps(MODELS).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _https_server(cert: Path, key: Path) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Tags)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> None:
    certs = Path(sys.argv[1])
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    for name in ("http_proxy", "https_proxy", "HTTPS_PROXY", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        os.environ.pop(name, None)
    from qgis.core import QgsApplication
    from qgis.PyQt.QtCore import QCoreApplication
    from qgis.PyQt.QtNetwork import QSslCertificate

    QCoreApplication.setOrganizationName(QgsApplication.QGIS_ORGANIZATION_NAME)
    QCoreApplication.setApplicationName(QgsApplication.QGIS_APPLICATION_NAME)
    app = QgsApplication([], False)
    app.initQgis()
    manager = QgsApplication.authManager()
    report: dict = {"stored": manager.storeCertAuthority(QSslCertificate((certs / "trusted.pem").read_bytes()))}
    manager.rebuildCaCertsCache()
    manager.rebuildTrustedCaCertsCache()

    from geogpt_qgis.agent.providers.discovery import list_models
    from geogpt_qgis.core.cancel import CancelToken
    from geogpt_qgis.gui.server_queries import explain_server_error
    from geogpt_qgis.tools.ogc.http import OgcHttp

    def ogc_get(url: str) -> object:
        with OgcHttp(10.0, CancelToken()) as http:
            return http.get_json(url).body

    servers = {name: _https_server(certs / f"{name}.pem", certs / f"{name}.key") for name in ("trusted", "unknown")}
    # First request of the session from the main thread, which then waits on a helper thread (as OgcHttp does):
    # the authorities must be read before, on the main thread, or it would wait for itself.
    started = time.monotonic()
    report["main_thread_ogc"] = ogc_get(f"https://127.0.0.1:{servers['trusted'].server_address[1]}/api/tags")
    report["main_thread_seconds"] = time.monotonic() - started
    for name, server in servers.items():
        url = f"https://127.0.0.1:{server.server_address[1]}"
        report[f"{name}_models"] = _off_main_thread(app, lambda url=url: list_models("ollama", url))
        report[f"{name}_ogc"] = _off_main_thread(app, lambda url=url: ogc_get(f"{url}/api/tags"))
        try:
            list_models("ollama", url)
        except Exception as exc:  # noqa: BLE001 - reported
            report[f"{name}_explained"] = explain_server_error(exc, "ollama", url)
        server.shutdown()
    print(json.dumps(report))
    sys.stdout.flush()
    app.exitQgis()


if __name__ == "__main__":
    main()
