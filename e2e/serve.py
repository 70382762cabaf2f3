"""Serve the built site on 127.0.0.1 the way a static host does.

Usage::

    python e2e/serve.py DIRECTORY PORT

Python's ``http.server``, quiet, with one addition that GitHub Pages also
makes: a missing path gets the site's ``/404.html`` (with status 404), so the
browser tests see the 404 page a reader would see.
"""

from __future__ import annotations

import sys
from functools import partial
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class SiteHandler(SimpleHTTPRequestHandler):
    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        page = Path(self.directory) / "404.html"
        if code != HTTPStatus.NOT_FOUND or not page.is_file():
            super().send_error(code, message, explain)
            return
        body = page.read_bytes()
        self.send_response(HTTPStatus.NOT_FOUND)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        del format, args  # quiet: the tests report what matters


def main(argv: list[str]) -> int:
    directory, port = argv[0], int(argv[1])
    handler = partial(SiteHandler, directory=directory)
    with ThreadingHTTPServer(("127.0.0.1", port), handler) as server:
        server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
