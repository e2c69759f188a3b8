"""What the UCI loader tests share: where the real files are, skipping without them,
refusing the network, and a local HTTP server for the download tests."""

import os
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

#: ``$SKDP_DATA``, else ``../shared/data`` next to the repository root
DATA_DIR = Path(
    os.environ.get("SKDP_DATA")
    or Path(__file__).resolve().parents[2].parent / "shared" / "data"
)


def require(*relpaths):
    """Skip the calling test unless every file ``relpaths`` (under DATA_DIR) exists."""
    if not DATA_DIR.is_dir():
        pytest.skip(f"data folder {DATA_DIR} not found (set SKDP_DATA)")
    for rel in relpaths:
        if not (DATA_DIR / rel).is_file():
            pytest.skip(f"data file {DATA_DIR / rel} not found")


def refuse_network(monkeypatch):
    """Make any attempt to reach the network fail loudly.

    ``sklearn.datasets.fetch_file`` (skdp's downloader) calls ``urlretrieve``, which
    opens every URL through ``urllib.request.urlopen``.
    """

    def refuse(*args, **kwargs):
        raise AssertionError("tests must not touch the network")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)


class LocalServer:
    """An HTTP server on 127.0.0.1 in a thread, serving ``files`` (path -> bytes)."""

    def __init__(self):
        self.files, self.requests = {}, []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                server.requests.append(self.path)
                body = server.files.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):  # quiet
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path):
        return self.base + path

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


def serve_locally(monkeypatch):
    """Start a :class:`LocalServer` and let ``urlopen`` reach it, and nothing else
    (no proxy either)."""
    server = LocalServer()
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def local_only(url, *args, **kwargs):
        full = url.full_url if isinstance(url, urllib.request.Request) else url
        if not full.startswith(server.base + "/"):
            raise AssertionError(f"tests must not touch the network: {full}")
        return direct.open(url, *args, **kwargs)

    monkeypatch.setattr(urllib.request, "urlopen", local_only)
    return server
