"""Lighthouse scores and page weights of the built site, served with gzip.

Run after ``nox -s docs`` (``nox -s bench -- benchmarks/bench_lighthouse.py``).
It serves ``docs/_build/html`` on 127.0.0.1 with gzip (as any real host does),
runs Lighthouse 12 (``npx lighthouse@12.2.3``, mobile preset, Debian's
Chromium) on the home page, the heaviest tutorial page, the CAM-family page and
an API page in both languages, and prints the four category scores with the
largest contentful paint and the transferred bytes. Then it prints every
tutorial page's weight: its HTML and the images it shows, compressed as served.
It reports numbers and asserts nothing.

``LIGHTHOUSE`` may name a local ``lighthouse`` executable instead of npx.
``--reports DIR`` keeps each page's Lighthouse JSON report there (to read the
failing audits).
"""

from __future__ import annotations

import argparse
import functools
import gzip
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

SITE = Path(__file__).parents[1] / "docs" / "_build" / "html"
CHROMIUM = "/usr/bin/chromium"
TEXT = (".html", ".js", ".css", ".svg", ".json", ".txt", ".xml", ".map")


class GzipHandler(http.server.SimpleHTTPRequestHandler):
    """Static files; text files gzip-compressed when the client accepts it."""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def send_head(self):  # type: ignore[no-untyped-def]
        path = Path(self.translate_path(self.path))
        if path.is_dir():
            path = path / "index.html"
        accepts = "gzip" in self.headers.get("Accept-Encoding", "")
        if not (accepts and path.is_file() and path.suffix in TEXT):
            return super().send_head()
        body = gzip.compress(path.read_bytes(), compresslevel=6)
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return _Body(body)


class _Body:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def read(self, *_: object) -> bytes:
        data, self.data = self.data, b""
        return data

    def close(self) -> None:
        pass


class QuietServer(http.server.ThreadingHTTPServer):
    """A request the browser gave up on (a lazy image when Lighthouse stops) is no error."""

    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


def serve() -> tuple[http.server.ThreadingHTTPServer, str]:
    handler = functools.partial(GzipHandler, directory=str(SITE))
    server = QuietServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def served_size(path: Path) -> int:
    data = path.read_bytes()
    return len(gzip.compress(data, compresslevel=6)) if path.suffix in TEXT else len(data)


def page_weight(language: str, page: str) -> tuple[int, int]:
    """(HTML bytes, image bytes) of a page as served; images counted once, 1x variant."""
    html_path = SITE / language / page
    text = html_path.read_text(encoding="utf-8")
    images = 0
    for src in set(re.findall(r'<img[^>]+src="([^"]+)"', text)):
        image = (html_path.parent / src).resolve()
        if image.is_file():
            images += image.stat().st_size
    return served_size(html_path), images


def heaviest_tutorial(language: str) -> str:
    pages = sorted((SITE / language / "auto_examples").glob("*/plot_*.html"))
    return max(
        (p.relative_to(SITE / language).as_posix() for p in pages),
        key=lambda page: sum(page_weight(language, page)),
    )


def lighthouse(url: str, out: Path) -> dict[str, object]:
    command = os.environ.get("LIGHTHOUSE")
    base = [command] if command else ["npx", "--yes", "lighthouse@12.2.3"]
    flags = "--headless=new --no-sandbox --disable-gpu --disable-background-networking"
    subprocess.run(
        [
            *base,
            url,
            "--quiet",
            "--output=json",
            f"--output-path={out}",
            "--only-categories=performance,accessibility,best-practices,seo",
            f"--chrome-flags={flags}",
        ],
        check=True,
        env={**os.environ, "CHROME_PATH": CHROMIUM},
        timeout=300,
    )
    report = json.loads(out.read_text(encoding="utf-8"))
    audits = report["audits"]
    return {
        **{k: round(v["score"] * 100) for k, v in report["categories"].items()},
        "lcp_s": audits["largest-contentful-paint"]["numericValue"] / 1000,
        "kib": audits["total-byte-weight"]["numericValue"] / 1024,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=Path, help="keep the JSON reports in this folder")
    args = parser.parse_args()
    if not (SITE / "en" / "index.html").is_file():
        print("no built site: run `nox -s docs` first")
        return 1
    if not os.environ.get("LIGHTHOUSE") and shutil.which("npx") is None:
        print("npx (Node.js) is needed for Lighthouse")
        return 1
    server, base = serve()
    targets = ["index.html"]
    targets.append(heaviest_tutorial("en"))
    targets += ["auto_examples/04_grad_cam/plot_18_cam_family.html"]
    targets += ["generated/hooks_tutorial.GradCAM.html"]
    targets = list(dict.fromkeys(targets))
    print(f"Lighthouse 12, mobile preset, served with gzip from {base}")
    header = (
        f"{'page':58s} {'perf':>4s} {'a11y':>4s} {'bp':>4s} {'seo':>4s} {'LCP s':>6s} {'KiB':>7s}"
    )
    print(header)
    with tempfile.TemporaryDirectory() as tmp:
        for language in ("en", "zh_CN"):
            for target in targets:
                name = f"{language}-{Path(target).stem}.json"
                out = args.reports / name if args.reports else Path(tmp) / "report.json"
                if args.reports:
                    args.reports.mkdir(parents=True, exist_ok=True)
                result = lighthouse(f"{base}/{language}/{target}", out)
                print(
                    f"{language + '/' + target:58s} {result['performance']:4d} "
                    f"{result['accessibility']:4d} {result['best-practices']:4d} "
                    f"{result['seo']:4d} {result['lcp_s']:6.1f} {result['kib']:7.0f}"
                )
    server.shutdown()
    print("\nPage weights as served (HTML gzip-compressed, images as files, 1x):")
    for language in ("en", "zh_CN"):
        rows = []
        for page in sorted((SITE / language / "auto_examples").glob("*/plot_*.html")):
            name = page.relative_to(SITE / language).as_posix()
            rows.append((name, *page_weight(language, name)))
        total_images = sum(r[2] for r in rows)
        heaviest = max(rows, key=lambda r: r[1] + r[2])
        print(
            f"{language}: {len(rows)} tutorial pages, images {total_images / 2**20:.2f} MiB in all; "
            f"heaviest {heaviest[0]}: HTML {heaviest[1] / 1024:.0f} KiB + "
            f"images {heaviest[2] / 1024:.0f} KiB"
        )
    figures = sorted(p for p in (SITE / "en" / "_images").iterdir() if p.suffix != ".svg")
    print(
        f"images in en/_images (figures with their 2x variants, thumbnails): {len(figures)} files, "
        f"{sum(p.stat().st_size for p in figures) / 2**20:.2f} MiB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
