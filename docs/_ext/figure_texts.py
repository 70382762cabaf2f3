"""Chinese words in the figures of the zh_CN pages, from the one English run.

Each page runs once, in the English build; the zh_CN build shows its outputs.
For the figures' words (titles, axis labels, tick labels that are words,
legends, annotations, colorbar labels) to be Chinese there, without running
the page again:

- :class:`figures.WebFigures` (the gallery's scraper) keeps each figure as it
  saves it: ``<image>.fig.pickle`` (Matplotlib figures pickle) and
  ``<image>.texts.json``, the texts it drew that have a word (two or more ASCII
  letters, as for code comments: ``0.5`` or ``x`` read the same in Chinese).
- In the pages listed in ``figure_text_pages`` (docs/conf.py), the transform
  :class:`MarkFigureTexts` puts :class:`figure_texts` nodes (Sphinx's
  ``addnodes.translatable``, one per text) after each figure: the gettext
  builder extracts their texts into the page's catalog (``nox -s
  translations``), and Sphinx's ``Locale`` transform hands them their
  translations.
- :class:`ApplyFigureTexts` (zh_CN, after ``Locale``) loads the pickled figure,
  replaces each text by its translation, draws it with Noto Sans CJK SC (from
  the ``mplfonts`` package of the docs dependency group; DejaVu Sans first, so
  digits and Latin letters look as in English), saves ``<image>_zh_CN.webp``
  and its 2x variant beside the English files at the English sizes, and points
  the page's figure at them. A listed figure's text without a translation is a
  warning (an error under ``-W``); a msgstr equal to its msgid keeps a text
  as it is on purpose (a model's token, a module name). The phone check
  (``figures.phone_problems``, text at least 9 CSS px on a 390 px phone) is
  run on the Chinese image too.

Downloads stay as they are: a downloaded script draws its figures with the
English words of its code, so it draws readable text on any machine, with or
without a CJK font.

Why no package does this: sphinx-gallery has no i18n, and Sphinx translates
the doctree, not the pixels of an image.
"""

from __future__ import annotations

import importlib.util
import io
import json
import pickle
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.transforms import SphinxTransform
from sphinx.util import logging

logger = logging.getLogger(__name__)

WORD = re.compile(r"[A-Za-z]{2,}")
TEXTS = ".texts.json"  # beside the image: the texts with words that the figure drew
PICKLE = ".fig.pickle"  # beside the image: the figure itself
SUFFIX = "_zh_CN"  # sphx_glr_x_001.webp -> sphx_glr_x_001_zh_CN.webp (2x: ..._zh_CN_2_00x.webp)
LATIN = "DejaVu Sans"  # Matplotlib's default, first: digits and Latin letters as in English
CJK_FILE = "NotoSansCJKsc-Regular.otf"  # in the mplfonts package (SIL Open Font License)


MATHTEXT_COMMAND = re.compile(r"\\[A-Za-z]+")  # \mathdefault, \times: not words
# A number standing alone (not part of a name such as relu1 or blocks.0.1): a figure's
# numbers come from the run (an AUC, a probability, an axis' range) and can end in other
# digits on another CPU, so a message holds a placeholder {k} for the k-th number.
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.]\w)")
PLACEHOLDER = re.compile(r"\{(\d+)\}")


def has_words(text: str) -> bool:
    return bool(WORD.search(MATHTEXT_COMMAND.sub("", text)))


def message(text: str) -> tuple[str, list[str]]:
    """A figure text as its catalog message and its numbers: ``"AUC 0.873"`` -> ``"AUC {0}"``."""
    numbers: list[str] = []

    def hold(match: re.Match[str]) -> str:
        numbers.append(match.group())
        return "{" + str(len(numbers) - 1) + "}"

    return NUMBER.sub(hold, text), numbers


def fill(translation: str, numbers: list[str]) -> str | None:
    """A translated message with this run's numbers put back; None if a placeholder is unknown."""
    held = [int(k) for k in PLACEHOLDER.findall(translation)]
    if any(k >= len(numbers) for k in held):
        return None
    return PLACEHOLDER.sub(lambda match: numbers[int(match.group(1))], translation)


def record_figure(image: Path, figure: Any, texts: Sequence[str]) -> None:
    """Keep a figure the scraper saved as ``image``: its pickle and its texts with words."""
    words = sorted({t for t in texts if has_words(t)})
    image.with_name(image.name + TEXTS).write_text(
        json.dumps(words, ensure_ascii=False), encoding="utf-8"
    )
    target = image.with_name(image.name + PICKLE)
    try:
        target.write_bytes(pickle.dumps(figure))
    except Exception:  # noqa: BLE001 - a figure that does not pickle stays English (warned)
        target.unlink(missing_ok=True)


def cjk_family() -> str | None:
    """Register the CJK font with Matplotlib; its family name, or None when it is missing."""
    spec = importlib.util.find_spec("mplfonts")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "fonts" / CJK_FILE
    if not path.is_file():
        return None
    from matplotlib import font_manager  # noqa: PLC0415

    font_manager.fontManager.addfont(str(path))
    return str(font_manager.FontProperties(fname=str(path)).get_name())


def zh_name(image: Path, *, double: bool = False) -> Path:
    return image.with_name(image.stem + SUFFIX + ("_2_00x" if double else "") + image.suffix)


def translate_figure(
    figure: Any, lookup: Callable[[str], str | None], family: list[str]
) -> list[str]:
    """Replace the figure's texts by their translations and set ``family`` on every text.

    Tick labels are made by the axes' formatters at each draw: the figure is
    drawn once, and an axis with a tick label to translate gets fixed labels.
    Returns the texts with words that have no translation.
    """
    from matplotlib.text import Text  # noqa: PLC0415

    missing: list[str] = []
    done: set[str] = set()  # translations already set: tick labels are seen twice

    def new(text: str) -> str:
        if not has_words(text) or text in done:
            return text
        template, numbers = message(text)
        translated = lookup(template)
        found = fill(translated, numbers) if translated else None
        if not found or found == text:
            missing.append(template)
            return text
        done.add(found)
        return found

    figure.canvas.draw()  # the formatters write the tick labels
    ticks: set[int] = set()  # the tick labels' Text objects: translated here, not below
    for axes in figure.axes:
        limits = axes.get_xlim(), axes.get_ylim()
        for axis in (axes.xaxis, axes.yaxis):
            low, high = sorted(axis.get_view_interval())
            margin = 1e-9 * (high - low)  # a tick on the view's edge is drawn
            # read both label sets first: set_ticks widens the view to show every location
            # (a log axis has some outside it), and a log formatter labels by the view
            found = {
                minor: (
                    list(axis.get_ticklocs(minor=minor)),
                    [t.get_text() for t in axis.get_ticklabels(minor=minor)],
                )
                for minor in (False, True)
            }
            for minor, (locations, labels) in found.items():
                if any(has_words(t) for t in labels):
                    shown = [low - margin <= x <= high + margin for x in locations]
                    translated = [new(t) if s else t for t, s in zip(labels, shown, strict=True)]
                    axis.set_ticks(locations, labels=translated, minor=minor)
                for tick in axis.get_minor_ticks() if minor else axis.get_major_ticks():
                    ticks.update(id(label) for label in (tick.label1, tick.label2))
        axes.set_xlim(limits[0])  # as drawn in English
        axes.set_ylim(limits[1])
    # every Text, tick labels included (the drawn ticks; a tick made at the next draw
    # copies the first tick's font: Matplotlib's Axis._copy_tick_props)
    for text in figure.findobj(Text):
        if text.get_text() and id(text) not in ticks:
            text.set_text(new(text.get_text()))
        text.set_fontfamily(family)
    return sorted(set(missing))


def render(
    pickled: Path, image: Path, lookup: Callable[[str], str | None], family: str
) -> tuple[list[str], list[str]]:
    """Write the Chinese copies of ``image`` (1x and 2x) from the pickled figure.

    Returns (texts without a translation, phone problems of the Chinese image).
    """
    import matplotlib as mpl  # noqa: PLC0415
    import matplotlib.pyplot as plt  # noqa: PLC0415
    from figures import MEASURES, WEBP, _recording, phone_measures, phone_problems  # noqa: PLC0415
    from PIL import Image  # noqa: PLC0415

    with mpl.rc_context({"backend": "agg"}):
        figure = pickle.loads(pickled.read_bytes())
        try:
            missing = translate_figure(figure, lookup, [LATIN, family])
            buffer = io.BytesIO()
            with _recording() as seen:
                figure.savefig(buffer, format="png", dpi=2 * figure.dpi)
            record = next(iter(seen.values()), None)
        finally:
            plt.close(figure)
    buffer.seek(0)
    with Image.open(buffer) as drawn:
        drawn.load()
    for double in (False, True):
        english = image if not double else image.with_name(image.stem + "_2_00x" + image.suffix)
        if not english.is_file():
            continue
        with Image.open(english) as shown:
            width = shown.width
        height = round(drawn.height * width / drawn.width)
        resized = drawn.resize((width, height), Image.Resampling.LANCZOS)
        resized.save(zh_name(image, double=double), **WEBP)
    problems: list[str] = []
    if record is not None:
        measures = phone_measures(record)
        target = zh_name(image)
        target.with_name(target.name + MEASURES).write_text(json.dumps(measures), encoding="utf-8")
        problems = phone_problems(measures)
    return missing, problems


# -- Sphinx -------------------------------------------------------------------------


class figure_texts(nodes.Element, addnodes.translatable):  # a node: docutils' naming
    """The texts with words of the figure before it, as messages of the page's catalog."""

    def preserve_original_messages(self) -> None:
        pass  # the messages are in "texts", never changed

    def extract_original_messages(self) -> Sequence[str]:
        return list(self["texts"])

    def apply_translated_message(self, original_message: str, translated_message: str) -> None:
        self.setdefault("translations", {})[original_message] = translated_message


def _images(node: nodes.Element, srcdir: Path) -> Path | None:
    """The 1x image file of a gallery figure node (sphinx-gallery's ``image-sg``)."""
    srcset = node.get("srcset") or node.get("uri") or ""
    first = str(srcset).split(",", maxsplit=1)[0].split()[0] if srcset else ""
    return srcdir / first.lstrip("/") if first else None


def _figure_nodes(document: nodes.document) -> list[nodes.Element]:
    return [
        n
        for n in document.findall(nodes.Element)
        if type(n).__name__ == "imgsgnode"  # sphinx-gallery's figure node
    ]


class MarkFigureTexts(SphinxTransform):
    """In a listed page, a :class:`figure_texts` node after each figure that has words."""

    default_priority = 5

    def apply(self, **kwargs: Any) -> None:
        del kwargs
        docname = self.env.path2doc(self.document["source"])
        if docname not in self.config.figure_text_pages:
            return
        for figure in _figure_nodes(self.document):
            image = _images(figure, Path(self.env.srcdir))
            if image is None:
                continue
            recorded = image.with_name(image.name + TEXTS)
            if not recorded.is_file():
                logger.warning(
                    "figure %s has no recorded texts: run the page again (delete %s)",
                    image.name,
                    Path(self.document["source"]).with_suffix(".py.md5").name,
                    location=figure,
                    type="figure_texts",
                )
                continue
            recorded_texts = json.loads(recorded.read_text(encoding="utf-8"))
            texts = sorted({message(t)[0] for t in recorded_texts if has_words(t)})
            if not texts:
                continue
            # One node per text: Sphinx's Locale transform keeps one "translated" flag per
            # node, and a text kept as itself (msgstr = msgid) sets it, so in a shared node
            # the figure's other translations would be passed over.
            parent = figure.parent
            at = parent.index(figure) + 1
            for offset, text in enumerate(texts):
                node = figure_texts(texts=[text], image=str(image))
                node.source, node.line = self.document["source"], figure.line or 1
                parent.insert(at + offset, node)


class ApplyFigureTexts(SphinxTransform):
    """zh_CN: draw each listed figure again with its translated texts, and show that."""

    default_priority = 21

    def apply(self, **kwargs: Any) -> None:
        del kwargs
        if self.config.language in (None, "", "en"):
            return
        found = list(self.document.findall(figure_texts))
        if not found:
            return
        family = cjk_family()
        if family is None:
            logger.warning(
                "no CJK font (the mplfonts package of the docs group): figures stay English",
                location=found[0],
                type="figure_texts",
            )
            return
        by_image: dict[str, list[figure_texts]] = {}
        for node in found:
            by_image.setdefault(node["image"], []).append(node)
        for texts in by_image.values():
            node = texts[0]  # the first after the figure
            translations: dict[str, str] = {}
            for part in texts:
                translations.update(part.get("translations", {}))
            image = Path(node["image"])
            pickled = image.with_name(image.name + PICKLE)
            if not pickled.is_file():
                logger.warning(
                    "figure %s could not be kept (it does not pickle): it stays English",
                    image.name,
                    location=node,
                    type="figure_texts",
                )
                continue
            missing, problems = render(pickled, image, translations.get, family)
            kept = self._kept() if missing else set()
            for text in (t for t in missing if t not in kept):
                logger.warning(
                    "figure text without a translation: %r (%s); run `nox -s translations` "
                    "and translate it in the page's catalog",
                    text[:100],
                    image.name,
                    location=node,
                    type="figure_texts",
                )
            for problem in problems:
                logger.warning("Chinese figure %s: %s", zh_name(image).name, problem, location=node)
            figure = node.parent[node.parent.index(node) - 1]
            srcdir = Path(self.env.srcdir)
            one = "/" + zh_name(image).relative_to(srcdir).as_posix()
            two = "/" + zh_name(image, double=True).relative_to(srcdir).as_posix()
            figure["srcset"] = f"{one}, {two} 2.00x" if Path(srcdir / two[1:]).is_file() else one
            figure["uri"] = one

    def _kept(self) -> set[str]:
        """The page's figure words that its catalog keeps as they are (:func:`kept_texts`)."""
        from sphinx.util.i18n import docname_to_domain  # noqa: PLC0415

        domain = docname_to_domain(self.env.docname, self.config.gettext_compact)
        kept: set[str] = set()
        for folder in self.config.locale_dirs:
            folder_path = Path(self.env.srcdir, folder, self.config.language, "LC_MESSAGES")
            kept |= kept_texts(folder_path / f"{domain}.po")
        return kept


def kept_texts(po: Path) -> set[str]:
    """The messages of the catalog ``po`` translated as themselves, on purpose.

    A model's tokens (``<bos>``, ``Mary``) and module names (``blocks.0.1``)
    stay as they are in Chinese. Their msgstr equals their msgid, which
    Sphinx's ``Locale`` transform passes over as untranslated; the catalog
    itself (read with Babel, as Sphinx does) says they were kept. Fuzzy
    entries do not count: nobody has confirmed them.
    """
    from babel.messages.pofile import read_po  # noqa: PLC0415

    if not po.is_file():
        return set()
    with po.open("rb") as stream:
        catalog = read_po(stream)
    return {
        m.id for m in catalog if isinstance(m.id, str) and m.id and m.string == m.id and not m.fuzzy
    }


def drop_figure_texts(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Every builder but gettext: the message nodes have done their job."""
    del docname
    if app.builder.name == "gettext":
        return
    for node in list(doctree.findall(figure_texts)):
        node.parent.remove(node)


def setup(app: Sphinx) -> dict[str, Any]:
    # docnames whose figures' texts are translated; later work adds pages here
    app.add_config_value("figure_text_pages", [], "env", types=[list])
    app.add_transform(MarkFigureTexts)
    app.add_transform(ApplyFigureTexts)
    app.connect("doctree-resolved", drop_figure_texts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
