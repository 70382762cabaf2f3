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
- A phone check of every figure (issue 33, item 2): while :class:`WebFigures`
  saves a figure it records each text it draws (titles, tick labels, legends,
  annotations, colorbar labels) and each image panel, and works out how large
  they come out on a 390 px phone, where the article column is
  :data:`PHONE_COLUMN` CSS px wide and the figure is shrunk to it. A text's size
  is its font size (the em, like CSS ``font-size``) in CSS px: font size in points
  x dpi / 72 x shown width / image width. The results go in a JSON file beside
  the image (so a page whose run sphinx-gallery reuses is checked too), and
  :func:`check_phone_figures` warns (``-W``: the build fails) for every figure of
  a page with text under :data:`MIN_TEXT_PX` or an image panel narrower than
  :data:`MIN_PANEL_PX`, naming the page, the figure and the text.
- The figure itself and its words are kept beside the image for its Chinese
  copy (``docs/_ext/figure_texts.py``).
- :func:`link_figures`: each gallery figure is a link to its largest file, so a
  tap (or Enter) opens the full image, which a phone can zoom.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from html import unescape
from pathlib import Path
from typing import Any

from figure_texts import record_figure

MAX_WIDTH = 800  # px at 1x: the article column of pydata-sphinx-theme is narrower
# the text before an image (from the start of the article) past which it is surely
# below the first screen, on a phone as on a desktop: about two phone screens of prose
FIRST_SCREEN_CHARS = 2000
WEBP = {"quality": 85, "method": 6}
# CSS px: the article column on a 390 px wide phone (the theme pads the page by 16 px on
# each side); a figure wider than that is shrunk to it
PHONE_COLUMN = 358
# CSS px: the smallest font size (the em, as CSS font-size) a figure's text may have there;
# the page's own text is 16 px and its code 14 px (issue 33, item 2: "about 9 px")
MIN_TEXT_PX = 9.0
# CSS px: the narrowest an image panel (an Axes showing an image) may be there: a fifth of
# the column, so at most four panels across, with room for labels and a colorbar (page
# 17's six-panel strip had panels 57 px wide)
MIN_PANEL_PX = 72.0
MEASURES = ".phone.json"  # the measurements' file, beside the image: <image>.phone.json


@contextmanager
def _recording() -> Iterator[dict[int, dict[str, Any]]]:
    """Record what each figure draws while it is saved: texts and image panels.

    Yields ``{figure number: {"width": px, "texts": {id: (text, px)}, "panels": {id: px}}}``
    in the pixels of the saved image (the smallest save, the 1x one, wins).
    Matplotlib's own ``Text.draw`` and ``Axes.draw`` are wrapped for the time
    of the save, so only what is drawn counts (a tick outside the axis limits,
    an empty or hidden text are not).
    """
    from matplotlib.axes import Axes  # noqa: PLC0415
    from matplotlib.text import Text  # noqa: PLC0415

    seen: dict[int, dict[str, Any]] = {}
    text_draw, axes_draw = Text.draw, Axes.draw

    def entry(artist: Any, renderer: Any) -> dict[str, Any] | None:
        figure = artist.get_figure(root=True)
        width = getattr(renderer, "width", None)
        if figure is None or not width:
            return None
        record = seen.setdefault(figure.number, {"width": width, "texts": {}, "panels": {}})
        if width < record["width"]:  # a 1x save after a 2x one: start again at 1x
            record.update(width=width, texts={}, panels={})
        return record if width == record["width"] else None

    def draw_text(self: Any, renderer: Any, *args: Any, **kwargs: Any) -> Any:
        record = entry(self, renderer)
        if record is not None and self.get_visible() and self.get_text().strip():
            size = renderer.points_to_pixels(self.get_fontsize())
            record["texts"][id(self)] = (self.get_text(), float(size))
        return text_draw(self, renderer, *args, **kwargs)

    def draw_axes(self: Any, renderer: Any, *args: Any, **kwargs: Any) -> Any:
        record = entry(self, renderer)
        if (
            record is not None
            and self.get_visible()
            and self.images
            and getattr(self, "_colorbar", None) is None
        ):
            record["panels"][id(self)] = float(self.get_window_extent(renderer).width)
        return axes_draw(self, renderer, *args, **kwargs)

    Text.draw, Axes.draw = draw_text, draw_axes  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        Text.draw, Axes.draw = text_draw, axes_draw  # type: ignore[method-assign]


def phone_measures(record: dict[str, Any]) -> dict[str, Any]:
    """A figure's recorded texts and panels, in CSS px on a 390 px phone.

    The 1x image is at most :data:`MAX_WIDTH` px wide and shown at its own width,
    or at :data:`PHONE_COLUMN` px where it is wider than the column.
    """
    width = record["width"]
    scale = min(PHONE_COLUMN, MAX_WIDTH, width) / width
    texts = sorted((round(px * scale, 2), text) for text, px in record["texts"].values())
    return {
        "image_width": width,
        "shown_width": round(width * scale, 1),
        "texts": [{"text": text, "px": px} for px, text in texts],
        "panels": sorted(round(px * scale, 1) for px in record["panels"].values()),
    }


def phone_problems(measures: dict[str, Any]) -> list[str]:
    """What is too small in a figure on a phone (``phone_measures``' result)."""
    problems = []
    small = [t for t in measures["texts"] if t["px"] < MIN_TEXT_PX]
    if small:
        # each distinct text once, the smallest first
        named = {t["text"]: t["px"] for t in reversed(small)}
        shown = ", ".join(f"{text!r} {px:.1f} px" for text, px in list(named.items())[::-1][:5])
        more = f" and {len(named) - 5} more" if len(named) > 5 else ""
        problems.append(
            f"{len(small)} texts under {MIN_TEXT_PX:g} CSS px (font size) when the "
            f"{measures['image_width']} px wide image is shown {measures['shown_width']:g} px "
            f"wide on a 390 px phone: {shown}{more}"
        )
    narrow = [px for px in measures["panels"] if px < MIN_PANEL_PX]
    if narrow:
        problems.append(
            f"{len(narrow)} image panels under {MIN_PANEL_PX:g} CSS px wide on a 390 px "
            f"phone (the narrowest {narrow[0]:.1f} px): fewer panels per row"
        )
    return problems


class WebFigures:
    """An ``image_scrapers`` entry: Matplotlib figures as WebP, at most ``MAX_WIDTH`` wide.

    A class (not a function) so that the gallery configuration stays picklable.
    """

    def __repr__(self) -> str:  # sphinx-gallery hashes the configuration's repr
        return f"WebFigures(max_width={MAX_WIDTH}, webp={WEBP})"

    def __call__(self, block: Any, block_vars: dict[str, Any], gallery_conf: dict[str, Any]) -> str:
        import matplotlib.pyplot as plt  # noqa: PLC0415
        from PIL import Image  # noqa: PLC0415  (matplotlib brings Pillow)
        from sphinx_gallery.scrapers import matplotlib_scraper  # noqa: PLC0415

        numbers = plt.get_fignums()  # the scraper saves them in this order
        figures = {n: plt.figure(n) for n in numbers}  # kept for the zh_CN copies
        with _recording() as seen:
            rst = matplotlib_scraper(
                block, block_vars, gallery_conf, format="webp", pil_kwargs=dict(WEBP)
            )
        saved = [name for name in re.findall(r"/[^\s,]+\.webp", rst) if "_2_00x" not in name]
        for number, name in zip(numbers, dict.fromkeys(saved), strict=False):
            if number in seen:
                path = Path(gallery_conf["src_dir"]) / name.lstrip("/")
                measures = path.with_name(path.name + MEASURES)
                measures.write_text(json.dumps(phone_measures(seen[number])), encoding="utf-8")
                # the figure and its words, for its Chinese copy (docs/_ext/figure_texts.py)
                texts = [text for text, _ in seen[number]["texts"].values()]
                record_figure(path, figures[number], texts)
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


_GALLERY_IMG = re.compile(r'<img\b[^>]*\bclass\s*=\s*"sphx-glr-(?:single|multi)-img"[^>]*>')
_SRCSET = re.compile(r'\bsrcset\s*=\s*"([^"]*)"')
_SRC = re.compile(r'\bsrc\s*=\s*"([^"]*)"')


def link_figures(html: str) -> str:
    """Make each gallery figure (sphinx-gallery's ``<img>``) a link to its largest file.

    The largest is the last ``srcset`` candidate (``..._2_00x.webp 2.00x``), else
    ``src``. The link's name is the image's alt text; Enter opens it like a tap.
    """

    def wrap(match: re.Match[str]) -> str:
        tag = match.group()
        if html.rfind("<a ", 0, match.start()) > html.rfind("</a>", 0, match.start()):
            return tag  # already inside a link
        srcset = _SRCSET.search(tag)
        candidates = (
            [c.split()[0] for c in srcset.group(1).split(",") if c.strip()] if srcset else []
        )
        src = _SRC.search(tag)
        target = candidates[-1] if candidates else (src.group(1) if src else None)
        if target is None:
            return tag
        return f'<a class="sphx-glr-figure-link" href="{target}">{tag}</a>'

    return _GALLERY_IMG.sub(wrap, html)


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
        fixed = link_figures(size_images(text, _sizer(page)))
        if fixed != text:
            page.write_text(fixed, encoding="utf-8")


_FIGURE = re.compile(r"^\s*\.\. image-sg:: (/\S+\.webp)\s*$", re.MULTILINE)


def check_phone_figures(app: Any, env: Any) -> None:  # noqa: ARG001  (the event's signature)
    """Warn for each gallery figure whose text or panels are too small on a phone.

    Reads the figures each gallery page shows (``image-sg`` in its generated
    ``.rst``) and their measurements (``<image>.phone.json``, written by
    :class:`WebFigures` when the page ran).
    """
    from sphinx.util import logging  # noqa: PLC0415

    if app.builder.format != "html":
        return
    logger = logging.getLogger(__name__)
    source = Path(app.srcdir)
    for rst in sorted(source.glob("auto_examples/*/plot_*.rst")):
        docname = rst.relative_to(source).with_suffix("").as_posix()
        names = _FIGURE.findall(rst.read_text(encoding="utf-8"))
        for number, name in enumerate(names, 1):
            image = source / name.lstrip("/")
            measured = image.with_name(image.name + MEASURES)
            if not measured.is_file():
                logger.warning(
                    f"figure {number} ({image.name}) has no phone measurements: run the page "
                    f"again (delete {rst.with_suffix('.py.md5').relative_to(source)})",
                    location=docname,
                )
                continue
            for problem in phone_problems(json.loads(measured.read_text(encoding="utf-8"))):
                logger.warning(f"figure {number} ({image.name}): {problem}", location=docname)


def setup(app: Any) -> dict[str, Any]:
    app.connect("build-finished", size_all_images)
    app.connect("env-check-consistency", check_phone_figures)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
