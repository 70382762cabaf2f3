"""Claims of page 15, training a CNN's last layer (each test names the sentence it backs)."""

from __future__ import annotations

import math
import re

import torch
from sitecheck import match, number, numbers, outputs, prose, run_page

PAGE = "15"


def test_data() -> None:
    printed = outputs(PAGE)
    # "Each image holds one object (circle, square, triangle, star or cross)"
    assert "classes: ('circle', 'square', 'triangle', 'star', 'cross')" in printed
    low, high = numbers(r"object pixels per image: ([\d.]+)% to ([\d.]+)%", printed)
    # "Their share of the image varies with the object's size"
    assert 0 < low < high < 100


def test_the_gap_layer_is_a_max_pool() -> None:
    printed = outputs(PAGE)
    # "The recipe uses global max pooling (pool="max"): for the chapter's models
    # the layer named gap is an AdaptiveMaxPool2d"
    assert "pool='max'" in printed
    assert "gap layer: AdaptiveMaxPool2d" in printed
    assert "(gap): AdaptiveMaxPool2d(output_size=1)" in printed
    # "The last block's output (features below) is the feature map"
    assert "features: (2, 64, 8, 8)" in printed
    assert "scores:   (2, 5) (logits, before softmax)" in printed


def test_only_fc_is_trained() -> None:
    printed = outputs(PAGE)
    trainable, total = numbers(r"trainable parameters: (\d+) of (\d+)", printed)
    # "this page trains only the last layer, fc ... and freezes every other parameter"
    assert trainable == 64 * 5 + 5  # fc's weight and bias
    assert total == number(r"parameters: (\d+)", printed)
    assert "fit returned our History: True" in printed
    # "requires_grad_(False) freezes parameters, not buffers ... they update
    # their running averages on this page's images"
    assert number(r"largest change of bn1's running mean: ([\d.]+)", printed) > 0


def test_the_run_learns() -> None:
    printed = outputs(PAGE)
    rows = re.findall(
        r"epoch (\d+)/(\d+)\s+loss ([\d.]+)\s+accuracy ([\d.]+)\s+val_loss ([\d.]+)\s+val_accuracy ([\d.]+)",
        printed,
    )
    assert len(rows) == 3
    val = [float(r[5]) for r in rows]
    loss = [float(r[2]) for r in rows]
    # the curves show a run that learns: far above chance, loss going down
    assert val[-1] > 0.6
    assert loss[-1] < loss[0]
    assert "this page: 1000 images x 3 epochs, only fc" in printed
    # "the recipe trains all layers on more images for more epochs"
    n_train, epochs = numbers(r"recipe:\s+(\d+) images x (\d+) epochs, all layers", printed)
    assert n_train > 1000
    assert epochs > 3


def test_test_accuracies() -> None:
    printed = outputs(PAGE)
    page_run = number(r"test accuracy of this page's run: ([\d.]+) on 1000 images", printed)
    pretrained = number(r"test accuracy of the pretrained model: ([\d.]+) on 1000 images", printed)
    # "Both are far above chance (0.2)"
    assert page_run > 0.6
    assert pretrained > 0.95
    assert "in training mode: False" in printed  # "pretrained returns it in eval mode"
    # the confusion matrix counts the pretrained model's mistakes
    mistakes = number(r"mistakes: (\d+)", printed)
    assert mistakes == round((1 - pretrained) * 1000)


def test_prose_names_the_max_pool() -> None:
    for language in ("en", "zh_CN"):
        assert "AdaptiveMaxPool2d" in prose(PAGE, language)


def test_a_short_run_from_scratch_stays_at_chance() -> None:
    """ "a run of a few dozen batches stays at chance level (0.2 for five classes)":
    the page's former training run, 3 epochs on 1000 images (48 batches), from scratch."""
    import hooks_tutorial as ht  # noqa: PLC0415 - only for this slower check

    config = ht.pretrained_config("simple_cnn-shapes")
    train = ht.make_shapes(1000, split="train", seed=0)
    test = ht.make_shapes(1000, split="test", seed=config.seed)
    model = ht.SimpleCNN(channels=config.channels, pool=config.pool, seed=config.seed)
    epochs = 3
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    steps = math.ceil(len(train) / config.batch_size) * epochs
    assert steps < 50  # "a few dozen batches"
    scheduler = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=config.lr, total_steps=steps, pct_start=0.3
    )
    ht.fit(
        model,
        (train.images, train.labels),
        epochs=epochs,
        batch_size=config.batch_size,
        optimizer=optimizer,
        scheduler=scheduler,
        seed=config.seed,
    )
    with torch.no_grad():
        accuracy = (model.eval()(test.images).argmax(dim=1) == test.labels).float().mean().item()
    assert accuracy < 0.3
    assert match(r"n_train=(\d+)", outputs(PAGE))[1] == str(config.n_train)


def test_title_says_only_fc_is_trained_on_frozen_blocks() -> None:
    # issue 24: the page trains only fc on the frozen pretrained blocks; the title says so
    assert "last layer on frozen pretrained blocks" in prose(PAGE, "en")
    assert "在冻结的预训练卷积块上训练 CNN 的最后一层" in prose(PAGE, "zh_CN")


# -- the answers of the exercises (sitecheck.run_page runs the solutions) ------


def test_answer_1_losses_start_at_chance() -> None:
    printed = run_page(PAGE).solutions
    losses = [float(v) for v in re.findall(r"epoch 1 batch (?:5|10|15): loss ([\d.]+)", printed)]
    assert len(losses) == 3  # "after batches 5, 10 and 15 of the epoch's 16 batches"
    assert number(r"batches per epoch: (\d+)", printed) == 16
    uniform = number(r"loss of a uniform guess over 5 classes: ([\d.]+)", printed)
    assert abs(uniform - math.log(5)) < 1e-3
    # "The last is about 1.609, the cross-entropy of a uniform guess over 5 classes"
    assert abs(losses[-1] - uniform) < 0.02


def test_answer_2_early_stopping() -> None:
    printed = run_page(PAGE).solutions
    row = (
        r"{}: stopped at epoch (\d+), best epoch (\d+), validation accuracy ([\d.]+),"
        r" training accuracy ([\d.]+)"
    )
    head = numbers(row.format("new fc, frozen blocks"), printed)
    scratch = numbers(row.format("from scratch"), printed)
    # "The new fc on the frozen blocks improves for many epochs ... stops at epoch 18 and
    # keeps the weights of epoch 16": it stopped, after the patience of 2 epochs
    assert 0 < head[0] <= 20
    assert head[0] - head[1] == 2
    assert head[2] > 0.9
    # "The run from scratch stops at epoch 4: its best validation accuracy ... is at
    # chance level, and its training accuracy has only reached 0.385"
    assert scratch[0] < head[0]
    assert scratch[0] - scratch[1] == 2
    assert abs(scratch[2] - 0.2) < 0.1
    assert scratch[3] < 0.5


def test_answer_3_per_class_accuracy() -> None:
    printed = run_page(PAGE).solutions
    per_class = {
        name: number(rf"(?m)^\s*{name}: ([\d.]+)$", printed)
        for name in ("circle", "square", "triangle", "star", "cross")
    }
    # "The square is recognised best ... and the star worst"
    assert max(per_class, key=per_class.__getitem__) == "square"
    assert min(per_class, key=per_class.__getitem__) == "star"
    # "the most frequent mistake is a star called a cross"
    assert "most frequent mistake: star called cross" in printed
