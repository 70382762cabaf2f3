"""Light figures: saved at the size they are shown, as WebP, with their size in the HTML.

Two jobs that no package does for sphinx-gallery's figures:

- :class:`WebFigures`, the gallery's image scraper: sphinx-gallery's Matplotlib
  scraper saves each figure as lossy WebP, then the file is scaled down to at
  most :data:`MAX_WIDTH` pixels wide (the article's width; the ``2x`` variant of
  ``image_srcset``, for high-density screens, to twice that). The
  pages' figures are mostly heatmaps over images, which PNG compresses badly:
  measured on page 18's figure, 974 KiB as an RGBA PNG at 1360 px, 54 KiB as
  WebP at 800 px.
- :func:`size_images`, run on every HTML page when the build finishes: each
  ``<img>`` of a local file gets its ``width`` and ``height`` (so the page does
  not jump while images load) and ``loading="lazy"``, except the first image
  when it may be on the first screen (less than :data:`FIRST_SCREEN_CHARS`
  characters of the page's text before it). Sphinx's and sphinx-gallery's image
  directives do not write either. Measured on page 18 (Lighthouse, mobile): its
  first figure, 5,000 px down the page, was fetched (145 KiB, the 2x variant)
  at once, competing with the page's text and styles for a phone's bandwidth.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from html import unescape
from pathlib import Path
from typing import Any

MAX_WIDTH = 800  # px at 1x: the article column of pydata-sphinx-theme is narrower
# the text before an image (from the start of the article) past which it is surely
# below the first screen, on a phone as on a desktop: about two phone screens of prose
FIRST_SCREEN_CHARS = 2000
WEBP = {"quality": 85, "method": 6}


class WebFigures:
    """An ``image_scrapers`` entry: Matplotlib figures as WebP, at most ``MAX_WIDTH`` wide.

    A class (not a function) so that the gallery configuration stays picklable.
    """

    def __repr__(self) -> str:  # sphinx-gallery hashes the configuration's repr
        return f"WebFigures(max_width={MAX_WIDTH}, webp={WEBP})"

    def __call__(self, block: Any, block_vars: dict[str, Any], gallery_conf: dict[str, Any]) -> str:
        from PIL import Image  # noqa: PLC0415  (matplotlib brings Pillow)
        from sphinx_gallery.scrapers import matplotlib_scraper  # noqa: PLC0415

        rst = matplotlib_scraper(
            block, block_vars, gallery_conf, format="webp", pil_kwargs=dict(WEBP)
        )
        # scale each saved file down to the width it is shown at (2x: twice that)
        for name in re.findall(r"/[^\s,]+\.webp", rst):
            path = Path(gallery_conf["src_dir"]) / name.lstrip("/")
            limit = 2 * MAX_WIDTH if path.stem.endswith("_2_00x") else MAX_WIDTH
            with Image.open(path) as image:
                image.load()
            if image.width > limit:
                height = round(image.height * limit / image.width)
                image.resize((limit, height), Image.Resampling.LANCZOS).save(path, **WEBP)
        return rst


_IMG = re.compile(r"<img\b[^>]*>")
_ATTRIBUTE = re.compile(r'\s([a-z-]+)="([^"]*)"')
_TAG = re.compile(r"<[^>]*>")
_SPACE = re.compile(r"\s+")


def _text_length(html: str) -> int:
    """The number of characters of text in ``html`` (tags removed, spaces collapsed)."""
    return len(_SPACE.sub(" ", unescape(_TAG.sub(" ", html))).strip())


def size_images(html: str, image_size: Callable[[str], tuple[int, int] | None]) -> str:
    """Add ``width``/``height`` and lazy loading to ``<img>`` tags.

    Every image is lazy but the first, unless more than :data:`FIRST_SCREEN_CHARS`
    characters of text come before the first (counted from ``<article``, else
    from the start). ``image_size(src)`` returns the pixel size of the file
    ``src`` points to, or ``None`` (a remote or missing file: no size added).
    """
    seen = 0
    top = max(html.find("<article"), 0)

    def fix(match: re.Match[str]) -> str:
        nonlocal seen
        tag = match.group()
        attributes = dict(_ATTRIBUTE.findall(tag))
        seen += 1
        if "src" not in attributes:
            return tag
        size = image_size(attributes["src"])
        additions = []
        if size is not None and "width" not in attributes and "height" not in attributes:
            additions += [f'width="{size[0]}"', f'height="{size[1]}"']
        lazy = seen > 1 or _text_length(html[top : match.start()]) > FIRST_SCREEN_CHARS
        if lazy and "loading" not in attributes:
            additions.append('loading="lazy"')
        if not additions:
            return tag
        end = "/>" if tag.endswith("/>") else ">"
        return f"{tag[: -len(end)].rstrip()} {' '.join(additions)}{end}"

    return _IMG.sub(fix, html)


def _sizer(page: Path) -> Callable[[str], tuple[int, int] | None]:
    from PIL import Image  # noqa: PLC0415  (matplotlib brings Pillow)

    def image_size(src: str) -> tuple[int, int] | None:
        if "://" in src or src.startswith("data:"):
            return None
        path = (page.parent / src.split("#", maxsplit=1)[0].split("?", maxsplit=1)[0]).resolve()
        if not path.is_file() or path.suffix.lower() == ".svg":
            return None
        with Image.open(path) as image:
            return image.size

    return image_size


def size_all_images(app: Any, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        fixed = size_images(text, _sizer(page))
        if fixed != text:
            page.write_text(fixed, encoding="utf-8")


def setup(app: Any) -> dict[str, Any]:
    app.connect("build-finished", size_all_images)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
