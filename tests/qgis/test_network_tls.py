"""HTTPS with the authorities QGIS trusts: a company's root added in QGIS's Certificate Manager counts for GeoGPT.

Two self-signed certificates for 127.0.0.1 (made by ``openssl``); only one is
added to QGIS's authorities, in a fresh profile of its own process
(tests/support/tls_probe.py).  Model-list and OGC API requests to the server
with that certificate succeed; to the other they fail, and the user is told
where to add an authority.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _self_signed(folder: Path, name: str) -> None:
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1"),
            *("-addext", "subjectAltName=IP:127.0.0.1"),
            *("-keyout", str(folder / f"{name}.key"), "-out", str(folder / f"{name}.pem")),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )


def test_authorities_trusted_in_qgis_are_trusted_for_models_and_ogc(tmp_path):
    certs = tmp_path / "certs"
    certs.mkdir()
    for name in ("trusted", "unknown"):
        _self_signed(certs, name)
    profile = tmp_path / "qgis-profile"
    env = {**os.environ, "QGIS_CUSTOM_CONFIG_PATH": str(profile), "QGIS_OPTIONS_PATH": str(profile)}
    env["QT_QPA_PLATFORM"] = "offscreen"
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.tls_probe", str(certs)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        stdin=subprocess.DEVNULL,
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["stored"] is True
    assert report["main_thread_ogc"] == {"models": [{"name": "qwen3:8b"}]}
    assert report["main_thread_seconds"] < 10  # no wait for itself (the bridge would give up after 120 s)
    assert report["trusted_models"] == {"result": ["qwen3:8b"]}
    assert report["trusted_ogc"] == {"result": {"models": [{"name": "qwen3:8b"}]}}
    assert "CERTIFICATE_VERIFY_FAILED" in report["unknown_models"]["error"]
    assert "certificate is not trusted (self-signed certificate)" in report["unknown_ogc"]["error"]
    assert "Certificate Manager" in report["unknown_ogc"]["error"]
    explained = report["unknown_explained"]
    assert explained.startswith("The certificate of the model server at https://127.0.0.1:")
    assert "is not trusted (self-signed certificate)" in explained and "Certificate Manager" in explained
