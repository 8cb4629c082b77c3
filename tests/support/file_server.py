"""A static HTTP server on 127.0.0.1 in its own process, for loading URLs: files, capabilities, slow answers.

``GET /<name>`` serves ``ROOT/<name>`` (the query is ignored, so
``/wms?SERVICE=WMS&REQUEST=GetCapabilities`` serves ``ROOT/wms``), with
``http://BASE`` in text and JSON files replaced by the server's own URL (capabilities
name their GetMap URL).  ``/slow/<name>`` waits ``SLOW_SECONDS`` first, ``/slowN/<name>`` N seconds.  A
missing file is a 404.  ``/noqgis/<name>`` answers QGIS's own network manager (a user agent
naming ``QGIS/``) with an empty 503 and everyone else, the plugin's client included, with ``ROOT/<name>``:
a server on which QGIS's providers fail while the plugin's own reads succeed.  Its own process: QGIS's
main thread may wait for it inside C++ (the WMS provider reads capabilities there) without the GIL.

    python -m tests.support.file_server ROOT PORT
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from tests.support.net import free_port

SLOW_SECONDS = 1.0
REPO = Path(__file__).resolve().parents[2]
_SLOW = re.compile(r"^/slow(\d*)/")
REFUSE_QGIS = "/noqgis/"  # answers 503 to QGIS's network manager (its user agent names QGIS/), not to the plugin
_TYPES = {
    ".xml": "text/xml",
    ".geojson": "application/geo+json",
    ".json": "application/json",
    ".csv": "text/csv",
    ".png": "image/png",
}


def _handler(root: Path) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _body(self) -> tuple[int, bytes, str]:
            path = urlsplit(self.path).path
            if path.startswith(REFUSE_QGIS):  # QGIS's own providers fail here; the plugin's client is served
                path = path[len(REFUSE_QGIS) - 1 :]
                if "QGIS/" in self.headers.get("User-Agent", "").split("GeoGPT-QGIS/")[0]:
                    return 503, b"", "text/plain"
            slow = _SLOW.match(path)
            if slow:  # /slow/NAME waits SLOW_SECONDS, /slow2/NAME two seconds
                time.sleep(float(slow.group(1) or SLOW_SECONDS))
                path = path[slow.end() - 1 :]
            target = (root / path.lstrip("/")).resolve()
            if target.is_dir() and root.resolve() in target.parents:
                target = target / "index.json"  # /collections and /collections/x both exist, as on a server
            if root.resolve() not in target.parents or not target.is_file():
                return 404, b"no such file", "text/plain"
            data = target.read_bytes()
            kind = _TYPES.get(target.suffix, "application/octet-stream" if target.suffix else "text/xml")
            if not target.suffix and data.lstrip()[:1] == b"{":
                kind = "application/json"
            if kind.startswith("text/") or kind.endswith("json"):
                data = data.replace(b"http://BASE", f"http://127.0.0.1:{self.server.server_port}".encode())
            return 200, data, kind

        def _answer(self, with_body: bool) -> None:
            status, data, kind = self._body()
            ranged = self.headers.get("Range", "")
            if status == 200 and ranged.startswith("bytes="):  # GDAL's /vsicurl/ reads ranges
                start, _, end = ranged[len("bytes=") :].partition("-")
                first, last = int(start or 0), min(int(end or len(data) - 1), len(data) - 1)
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {first}-{last}/{len(data)}")
                data = data[first : last + 1]
            else:
                self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()
            if with_body:
                self.wfile.write(data)

        def do_GET(self) -> None:
            self._answer(True)

        def do_HEAD(self) -> None:
            self._answer(False)

        def log_message(self, *_args: object) -> None:
            pass

    return Handler


@contextmanager
def file_server(root: Path) -> Iterator[str]:
    """Serve ``root`` on a free port; yields the base URL."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "tests.support.file_server", str(root), str(port)], cwd=REPO)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.get(url + "/", timeout=1)
                break
            except httpx.HTTPError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the file server did not start") from None
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(10)


def write_oapif(root: Path, prefix: str, api: bool = True) -> None:
    """A one-collection OGC API Features server as static files; every link goes through ``prefix`` (a slow path)."""
    base = f"http://BASE{prefix}/oapi"
    collection = {
        "id": "wells",
        "title": "Wells",
        "extent": {"spatial": {"bbox": [[10.0, 55.9, 10.1, 56.0]]}},
        "links": [{"href": f"{base}/collections/wells/items", "rel": "items", "type": "application/geo+json"}],
    }
    features = {
        "type": "FeatureCollection",
        "features": [
            {
                "type": "Feature",
                "id": i,
                "properties": {"name": f"well {i}"},
                "geometry": {"type": "Point", "coordinates": [10.0 + i / 100, 55.95]},
            }
            for i in range(1, 4)
        ],
        "links": [],
    }
    docs = {
        "oapi/index.json": {
            "links": [
                {"href": f"{base}/collections", "rel": "data", "type": "application/json"},
                {"href": f"{base}/conformance", "rel": "conformance", "type": "application/json"},
                *(
                    [{"href": f"{base}/api", "rel": "service-desc", "type": "application/vnd.oai.openapi+json"}]
                    if api
                    else []
                ),
            ]
        },
        "oapi/api": {"openapi": "3.0.2", "info": {"title": "wells", "version": "1"}, "paths": {}},
        "oapi/conformance": {"conformsTo": ["http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core"]},
        "oapi/collections/index.json": {"collections": [collection], "links": []},
        "oapi/collections/wells/index.json": collection,
        "oapi/collections/wells/items": features,
    }
    for name, body in docs.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(json.dumps(body), encoding="utf-8")


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), _handler(Path(sys.argv[1]))).serve_forever()
