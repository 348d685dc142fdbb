"""Where the metrics go: a node-exporter textfile-collector file, or an HTTP `/metrics` endpoint.

The textfile is written as `<dir>/clusterforge.prom` through a temporary file in the same folder and
`os.replace`, so node-exporter never reads half a file. The HTTP server (stdlib `http.server`) computes the
metrics on each scrape from the records database; a database it cannot read answers 500 with the reason.
"""

from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from clusterforge.errors import ClusterforgeError, ExitCode
from clusterforge.metrics.collect import collect
from clusterforge.metrics.exposition import CONTENT_TYPE, only_node, render

TEXTFILE = "clusterforge.prom"


class BadListen(ClusterforgeError):
    exit_code = ExitCode.BAD_INPUT


def metrics_text(db: Path | None, node: str | None = None) -> str:
    fams = collect(db)
    return render(only_node(fams, node) if node else fams)


def write_textfile(directory: Path, text: str, name: str = TEXTFILE) -> Path:
    """Write `text` to `directory/name` atomically (temporary file + rename); returns the path."""
    directory.mkdir(parents=True, exist_ok=True)
    dest = directory / name
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # node-exporter runs as its own user
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return dest


def parse_listen(text: str) -> tuple[str, int]:
    """`ADDR:PORT` (`[::1]:9464` for IPv6, `:9464` for every address, port 0 for any free one)."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise BadListen(f"--listen {text!r}: expected ADDR:PORT, e.g. 127.0.0.1:9464")
    return host.strip("[]") or "0.0.0.0", int(port)


def make_handler(render_metrics: Callable[[], str]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?", 1)[0] != "/metrics":
                self._send(404, "text/plain; charset=utf-8", "not found: try /metrics\n")
                return
            try:
                body = render_metrics()
            except (ClusterforgeError, OSError) as exc:
                self._send(500, "text/plain; charset=utf-8", f"cannot read the records: {exc}\n")
                return
            self._send(200, CONTENT_TYPE, body)

        def _send(self, code: int, ctype: str, body: str) -> None:
            data = body.encode()
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:  # scrapes are not news
            return

    return Handler


class _Server6(ThreadingHTTPServer):
    address_family = socket.AF_INET6


def server(listen: str, db: Path | None) -> ThreadingHTTPServer:
    host, port = parse_listen(listen)
    cls = _Server6 if ":" in host else ThreadingHTTPServer
    srv = cls((host, port), make_handler(lambda: metrics_text(db)))
    srv.daemon_threads = True
    return srv
