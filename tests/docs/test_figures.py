"""Unit tests of docs/_ext/figures.py (light figures), run by ``nox -s docs``."""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib as mpl
import pytest

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


def _scrape(tmp_path: Path, figure_count: int = 1) -> list[dict[str, object]]:
    """Run WebFigures on the open figures; the phone measurements of each, in order."""
    import json  # noqa: PLC0415

    names = [str(tmp_path / f"sphx_glr_page_{n:03d}.png") for n in range(1, figure_count + 1)]
    conf = {
        "image_srcset": [2.0],
        "matplotlib_animations": (False, None),
        "compress_images": (),
        "src_dir": str(tmp_path),
    }
    figures.WebFigures()(None, {"image_path_iterator": iter(names)}, conf)
    return [
        json.loads(Path(name).with_suffix(".webp" + figures.MEASURES).read_text()) for name in names
    ]


def test_a_wide_strip_of_panels_is_unreadable_on_a_phone(tmp_path: Path) -> None:
    """Page 17's old layout: six 2-inch panels in a row, 10-point titles."""
    import matplotlib.pyplot as plt  # noqa: PLC0415
    import numpy as np  # noqa: PLC0415

    plt.close("all")
    _, axes = plt.subplots(1, 6, figsize=(12.6, 2.2), layout="constrained")
    for n, ax in enumerate(axes):
        ax.imshow(np.zeros((8, 8)))
        ax.set_title(f"method {n}")
    (measures,) = _scrape(tmp_path)
    assert measures["image_width"] == 1260
    assert measures["shown_width"] == figures.PHONE_COLUMN
    # 12 pt titles ("large") x 100/72 px per point, shrunk from 1260 to 358 px
    title = next(t for t in measures["texts"] if t["text"] == "method 0")
    assert title["px"] == pytest.approx(12 * 100 / 72 * 358 / 1260, abs=0.01)
    problems = figures.phone_problems(measures)
    assert len(problems) == 2
    # 6 titles and 48 tick labels (0, 2, 4, 6 on both axes of each panel)
    assert problems[0].startswith("54 texts under 9 CSS px")
    assert "'method 0' 4.7 px" in problems[0]
    assert f"6 image panels under {figures.MIN_PANEL_PX:g} CSS px" in problems[1]
    plt.close("all")


def test_a_grid_at_the_phone_width_passes_and_hidden_texts_do_not_count(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt  # noqa: PLC0415
    import numpy as np  # noqa: PLC0415

    plt.close("all")
    fig, axes = plt.subplots(2, 3, figsize=(5.4, 4), layout="constrained")
    for ax in axes.flat:
        ax.imshow(np.zeros((8, 8)))
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title("Grad-CAM")
    fig.text(0, 0, "hidden", fontsize=2, visible=False)
    small = plt.figure(figsize=(3, 2))  # narrower than the column: shown at its own size
    small.add_subplot().plot([0, 1])
    big, little = _scrape(tmp_path, 2)
    assert figures.phone_problems(big) == []
    assert "hidden" not in {t["text"] for t in big["texts"]}
    assert {t["text"] for t in big["texts"]} == {"Grad-CAM"}
    assert little["shown_width"] == 300
    assert min(t["px"] for t in little["texts"]) == pytest.approx(10 * 100 / 72, abs=0.01)
    plt.close("all")


def test_each_gallery_figure_links_to_its_largest_image() -> None:
    img = (
        '<img src="../_images/a.webp" srcset="../_images/a.webp, ../_images/a_2_00x.webp 2.00x"'
        ' alt="image, Grad-CAM" class = "sphx-glr-single-img" width="358" height="200"/>'
    )
    other = '<img src="logo.svg" alt="logo"/>'
    html = f"<p>{img}</p>{other}"
    linked = figures.link_figures(html)
    assert linked == (
        f'<p><a class="sphx-glr-figure-link" href="../_images/a_2_00x.webp">{img}</a></p>{other}'
    )
    assert figures.link_figures(linked) == linked  # once only
    single = '<img src="b.webp" alt="b" class="sphx-glr-multi-img"/>'
    assert (
        figures.link_figures(single)
        == f'<a class="sphx-glr-figure-link" href="b.webp">{single}</a>'
    )
