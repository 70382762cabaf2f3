"""docs/_ext/figure_texts.py: the zh_CN copy of a figure, drawn again with Chinese words."""

from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path

import matplotlib as mpl

mpl.use("agg")
import matplotlib.pyplot as plt
from PIL import Image, ImageChops

sys.path.insert(0, str(Path(__file__).parents[2] / "docs" / "_ext"))
from figure_texts import (
    LATIN,
    PICKLE,
    TEXTS,
    cjk_family,
    fill,
    has_words,
    kept_texts,
    message,
    record_figure,
    render,
    translate_figure,
    zh_name,
)
from figures import MEASURES

ZH = {"Loss": "损失", "epoch": "轮次", "train": "训练集", "circle": "圆形", "square": "正方形"}


def _figure() -> plt.Figure:
    figure, axes = plt.subplots(figsize=(4, 3))
    axes.plot([1, 2, 3], [3, 2, 1], label="train")
    axes.set(title="Loss", xlabel="epoch", ylabel="0.5x")
    axes.set_xticks([1, 2], labels=["circle", "square"])
    axes.legend()
    return figure


def test_every_word_is_translated_and_drawn_with_the_cjk_fallback() -> None:
    family = cjk_family()  # the docs group installs mplfonts
    assert family == "Noto Sans CJK SC"
    figure = _figure()
    try:
        missing = translate_figure(figure, ZH.get, [LATIN, family])
        axes = figure.axes[0]
        assert missing == []
        assert axes.get_title() == "损失"
        assert axes.get_xlabel() == "轮次"
        assert axes.get_ylabel() == "0.5x"  # no word: as it was
        assert [t.get_text() for t in axes.get_legend().get_texts()] == ["训练集"]
        figure.canvas.draw()
        assert [t.get_text() for t in axes.get_xticklabels()] == ["圆形", "正方形"]
        assert axes.title.get_fontfamily() == [LATIN, family]
        for label in [*axes.get_xticklabels(), *axes.get_yticklabels()]:
            assert label.get_fontfamily() == [LATIN, family]
    finally:
        plt.close(figure)


def test_a_tick_label_whose_translation_keeps_a_latin_word_is_not_reported() -> None:
    # tick labels are translated, then met again among the figure's texts:
    # "Grad-CAM 热力图" must not be looked up a second time
    family = cjk_family()
    assert family is not None
    figure, axes = plt.subplots(figsize=(4, 3))
    axes.set_xticks([1, 2], labels=["Grad-CAM", "circle"])
    try:
        missing = translate_figure(
            figure, {"Grad-CAM": "Grad-CAM 热力图", "circle": "圆形"}.get, [LATIN, family]
        )
        figure.canvas.draw()
        assert missing == []
        assert [t.get_text() for t in axes.get_xticklabels()] == ["Grad-CAM 热力图", "圆形"]
    finally:
        plt.close(figure)


def test_a_figure_s_numbers_are_placeholders_in_its_message() -> None:
    # numbers from the run (an AUC, a probability) end in other digits on another CPU:
    # the message must not change with them, names with digits stay as they are
    assert message("Grad-CAM, AUC 0.873") == ("Grad-CAM, AUC {0}", ["0.873"])
    assert message("Grad-CAM, AUC 0.871")[0] == "Grad-CAM, AUC {0}"
    assert message("circle -> square\nwrong, p=0.76") == (
        "circle -> square\nwrong, p={0}",
        ["0.76"],
    )
    assert message("blocks.0.1") == ("blocks.0.1", [])
    assert message("relu1 and the 2nd") == ("relu1 and the 2nd", [])
    assert fill("{0} 个随机方向，块 {1}", ["10", "1"]) == "10 个随机方向，块 1"
    assert fill("块 {2}", ["1"]) is None  # a placeholder the text does not have
    assert not has_words("$\\mathdefault{10^{-4}}$")  # an axis' tick: no word


def test_a_figure_is_translated_whatever_its_numbers() -> None:
    family = cjk_family()
    assert family is not None
    for auc in ("0.873", "0.871"):
        figure, axes = plt.subplots(figsize=(4, 3))
        axes.set_title(f"Grad-CAM, AUC {auc}")
        try:
            missing = translate_figure(
                figure, {"Grad-CAM, AUC {0}": "Grad-CAM，AUC {0}"}.get, [LATIN, family]
            )
            assert missing == []
            assert axes.get_title() == f"Grad-CAM，AUC {auc}"
        finally:
            plt.close(figure)


def test_ticks_outside_the_view_neither_widen_it_nor_need_a_translation() -> None:
    figure, axes = plt.subplots(figsize=(4, 3))
    axes.set_xticks([0, 1, 5], labels=["circle", "square", "star"])
    axes.set_xlim(-0.5, 1.5)  # "star" is outside the view: never drawn
    try:
        missing = translate_figure(figure, ZH.get, [LATIN])
        assert missing == []
        assert axes.get_xlim() == (-0.5, 1.5)
    finally:
        plt.close(figure)


def test_a_word_without_translation_is_reported() -> None:
    figure = _figure()
    try:
        missing = translate_figure(figure, {"Loss": "损失"}.get, [LATIN])
    finally:
        plt.close(figure)
    assert missing == ["circle", "epoch", "square", "train"]


def test_a_word_translated_as_itself_is_kept_but_empty_and_fuzzy_ones_are_not(
    tmp_path: Path,
) -> None:
    po = tmp_path / "page.po"
    po.write_text(
        'msgid ""\nmsgstr "Content-Type: text/plain; charset=UTF-8\\n"\n\n'
        'msgid "<bos>"\nmsgstr "<bos>"\n\n'  # a model's token: kept
        'msgid "blocks.0.1"\nmsgstr "blocks.0.1"\n\n'  # a module name: kept
        'msgid "epoch"\nmsgstr ""\n\n'  # not translated yet
        '#, fuzzy\nmsgid "train"\nmsgstr "train"\n\n'  # a guess nobody confirmed
        'msgid "Loss"\nmsgstr "损失"\n',  # translated
        encoding="utf-8",
    )
    assert kept_texts(po) == {"<bos>", "blocks.0.1"}
    assert kept_texts(tmp_path / "missing.po") == set()


def test_the_scraper_keeps_the_figure_and_its_words(tmp_path: Path) -> None:
    figure = _figure()
    image = tmp_path / "sphx_glr_x_001.webp"
    figure.savefig(image, format="webp")
    record_figure(image, figure, ["Loss", "epoch", "0.5", "x", "train"])
    plt.close(figure)
    assert json.loads(image.with_name(image.name + TEXTS).read_text("utf-8")) == [
        "Loss",
        "epoch",
        "train",
    ]
    again = pickle.loads(image.with_name(image.name + PICKLE).read_bytes())
    assert again.axes[0].get_title() == "Loss"
    plt.close(again)


def test_the_chinese_copy_has_the_english_size_and_other_pixels(tmp_path: Path) -> None:
    figure = _figure()
    image = tmp_path / "sphx_glr_x_001.webp"
    figure.savefig(image, format="webp", dpi=100)
    figure.savefig(image.with_name("sphx_glr_x_001_2_00x.webp"), format="webp", dpi=200)
    record_figure(image, figure, ["Loss"])
    plt.close(figure)
    family = cjk_family()
    assert family is not None
    missing, problems = render(image.with_name(image.name + PICKLE), image, ZH.get, family)
    assert missing == []
    assert isinstance(problems, list)
    for double in (False, True):
        english = image if not double else image.with_name("sphx_glr_x_001_2_00x.webp")
        with Image.open(english) as en, Image.open(zh_name(image, double=double)) as zh:
            assert zh.width == en.width
            assert ImageChops.difference(en.convert("RGB"), zh.convert("RGB")).getbbox()
    measures = json.loads(zh_name(image).with_name(zh_name(image).name + MEASURES).read_text())
    assert {t["text"] for t in measures["texts"]} >= {"损失", "轮次", "训练集"}
