"""Unit tests of docs/_ext/figures.py (light figures), run by ``nox -s docs``."""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib as mpl

sys.path.insert(0, str(Path(__file__).parents[2] / "docs" / "_ext"))

import figures

mpl.use("Agg")


def sizes(src: str) -> tuple[int, int] | None:
    return {"a.webp": (800, 400), "b.webp": (640, 480)}.get(src)


def test_size_images_adds_width_height_and_lazy_loading_after_the_first() -> None:
    html = '<p><img src="a.webp" alt="x"></p><img alt="y" src="b.webp" class="c"/>'
    assert figures.size_images(html, sizes) == (
        '<p><img src="a.webp" alt="x" width="800" height="400"></p>'
        '<img alt="y" src="b.webp" class="c" width="640" height="480" loading="lazy"/>'
    )


def test_the_first_image_is_lazy_too_when_it_is_below_the_first_screen() -> None:
    header = "<header>" + "menu " * 1000 + "</header>"  # before the article: not counted
    near = header + '<article><p>short</p><img src="a.webp"></article>'
    assert 'loading="lazy"' not in figures.size_images(near, sizes)
    text = "word " * (figures.FIRST_SCREEN_CHARS // 5 + 1)
    far = header + f'<article><p>{text}</p><img src="a.webp"></article>'
    assert figures.size_images(far, sizes).endswith(
        '<img src="a.webp" width="800" height="400" loading="lazy"></article>'
    )


def test_size_images_leaves_unknown_and_already_sized_images_alone() -> None:
    html = '<img src="https://x/y.png"><img src="a.webp" width="10" height="5" loading="eager">'
    assert figures.size_images(html, sizes) == html.replace(
        '<img src="https://x/y.png">', '<img src="https://x/y.png">'
    )
    assert figures.size_images(figures.size_images(html, sizes), sizes) == html


def test_web_figures_caps_the_width_and_saves_webp(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt  # noqa: PLC0415

    plt.close("all")
    figure = plt.figure(figsize=(13.6, 4), dpi=100)
    figure.add_subplot().plot([0, 1])
    images = iter([str(tmp_path / "sphx_glr_page_001.png")])
    conf = {
        "image_srcset": [2.0],
        "matplotlib_animations": (False, None),
        "compress_images": (),
        "src_dir": str(tmp_path),
    }
    rst = figures.WebFigures()(None, {"image_path_iterator": images}, conf)
    from PIL import Image  # noqa: PLC0415

    with Image.open(tmp_path / "sphx_glr_page_001.webp") as one:
        assert one.format == "WEBP"
        assert one.size[0] == figures.MAX_WIDTH
    with Image.open(tmp_path / "sphx_glr_page_001_2_00x.webp") as two:
        assert two.size[0] == 2 * figures.MAX_WIDTH
    assert "sphx_glr_page_001.webp" in rst
    plt.close("all")
