"""Claims of page 4 (callbacks in a training loop), checked against what the page printed."""

from __future__ import annotations

import contextlib
import io
import re

import pytest
from sitecheck import (
    EXAMPLES,
    match,
    number,
    numbers,
    outputs,
    prose,
    quoted_in_both_languages,
    run_page,
)

PAGE = "04"


def _hand_losses(printed: str) -> list[float]:
    return [float(v) for v in re.findall(r"^epoch \d: loss ([\d.]+)$", printed, flags=re.MULTILINE)]


def test_fit_repeats_the_hand_written_loop() -> None:
    # "The first three training losses are those of the hand-written loop above"
    printed = outputs(PAGE)
    hand = _hand_losses(printed)[:3]
    fit = [float(v) for v in re.findall(r"epoch \d/6  loss ([\d.]+)", printed)]
    assert len(hand) == 3
    assert fit[:3] == hand
    # the lambda callback recorded the same losses
    assert match(r"recorded: (\[.*\])", printed)[1] == str([(i + 1, v) for i, v in enumerate(hand)])


def test_every_number_is_the_same_on_each_run() -> None:
    # "every number is the same on each run": the scheduler run starts from the
    # same seeded model, data and shuffling, with the same learning rate for two
    # epochs, so its first two losses repeat those of the other runs
    printed = outputs(PAGE)
    hand = _hand_losses(printed)[:2]
    scheduled = [float(v) for v in re.findall(r"epoch \d: lr [\d.e-]+  loss ([\d.]+)", printed)]
    assert scheduled[:2] == hand


def test_fit_returns_a_history() -> None:
    # "``fit`` always returns a ``History``"
    assert "History(epochs=6" in outputs(PAGE)


def test_early_stopping_facts() -> None:
    printed = outputs(PAGE)
    run = int(number(r"epochs run: (\d+) of 30", printed))
    best, stopped = (int(v) for v in numbers(r"best epoch: (\d+) stopped at epoch: (\d+)", printed))
    losses = [float(v) for v in match(r"val_loss per epoch: \[(.*)\]", printed)[1].split(",")]
    assert len(losses) == run == stopped
    # "training stopped ``patience`` epochs after the best one" (patience=2)
    assert stopped - best == 2
    # "The validation loss kept falling after the best epoch, but never to
    # ``min_delta`` or more below the best value" (min_delta=0.01)
    best_loss = number(r"val_loss counted as best \(stopper\.best\): ([\d.]+)", printed)
    later = losses[best:]
    assert all(a > b for a, b in zip([losses[best - 1], *later], later, strict=False))
    assert all(best_loss - 0.01 < v < best_loss for v in later)
    # "the best epoch is *not* the epoch with the lowest validation loss: a later epoch had a lower one"
    lowest, lowest_epoch = numbers(
        r"lowest val_loss of any epoch: ([\d.]+) at epoch (\d+)", printed
    )
    assert lowest < best_loss
    assert lowest_epoch > best
    assert int(number(r"best epoch \(last improvement by min_delta\): (\d+)", printed)) == best


def test_the_best_epochs_weights_come_back() -> None:
    # "it is the best epoch's, not the lowest one"
    printed = outputs(PAGE)
    final = number(r"val_loss of the final model: ([\d.]+)", printed)
    assert final == number(r"val_loss counted as best \(stopper\.best\): ([\d.]+)", printed)
    assert "same as the best epoch: True" in printed
    assert "same as the lowest: False" in printed


def test_step_lr_halves_every_two_epochs() -> None:
    # "``StepLR(step_size=2, gamma=0.5)`` halves the learning rate every two epochs"
    rates = [float(v) for v in re.findall(r"epoch \d: lr ([\d.e-]+)  loss", outputs(PAGE))]
    assert rates == [0.03, 0.03, 0.015, 0.015, 0.0075, 0.0075]


def test_solutions_state_their_answers() -> None:
    run = run_page(PAGE)
    lines = run.solutions.splitlines()
    # "``BestEpoch`` prints the higher of the two epochs' validation accuracies and its
    # epoch." The solution's fit call again (seeded: the same run), now keeping its History.
    ns = run.namespace
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        history = ns["ht"].fit(
            ns["make_model"](),
            (ns["train_data"].images, ns["train_data"].labels),
            epochs=2,
            lr=3e-2,
            callbacks=[ns["BestEpoch"]()],
            val_data=(ns["val_data"].images, ns["val_data"].labels),
        )
    assert printed.getvalue().splitlines() == lines[:1]  # the same run as the solution's
    best, epoch = numbers(r"^best val_accuracy ([\d.]+) at epoch (\d+)$", lines[0])
    accuracies = history["val_accuracy"]
    assert history.epochs == [1, 2]
    assert accuracies[int(epoch) - 1] == max(accuracies)
    assert best == pytest.approx(max(accuracies), abs=5e-4)  # printed with 3 decimals
    # "the same seeded run as the first two epochs above"
    second_epoch = number(r"epoch 2/6 .*val_accuracy ([\d.]+)", outputs(PAGE))
    assert best == pytest.approx(second_epoch, abs=5e-4)
    # "The counter ends at 8 batches and 512 samples: each of the 2 epochs goes through
    # the 256 training images once, in batches of 64"
    assert lines[1] == "batches: 8, samples: 512"
    assert lines[2] == "256 images per epoch, 64 per batch"
    # "The lowest validation loss, 0.0028, comes in the 11th epoch, the last one of the
    # early-stopping run, and not in the 9th, the best epoch that ``EarlyStopping``
    # restored"
    printed = outputs(PAGE)
    lowest, lowest_epoch = numbers(
        r"lowest val_loss of any epoch: ([\d.]+) at epoch (\d+)", printed
    )
    assert lines[3] == f"lowest val_loss {lowest:.4f} at epoch {int(lowest_epoch)}"
    assert lowest_epoch == number(r"epochs run: (\d+) of 30", printed)
    best = int(number(r"best epoch: (\d+) stopped", printed))
    assert lines[4] == f"best epoch restored by EarlyStopping: {best}"
    assert best < lowest_epoch
    quoted_in_both_languages(PAGE, f"{lowest:.4f}")
    for language in ("en", "zh_CN"):  # "the 11th epoch" / "第 11 轮", "the 9th" / "第 9 轮"
        text = prose(PAGE, language)
        assert f"{int(lowest_epoch)}th" in text or f"第 {int(lowest_epoch)} 轮" in text
        assert f"{best}th" in text or f"第 {best} 轮" in text


def test_every_figure_is_shown() -> None:
    # the downloaded script shows its two figures in a terminal too (style: plt.show())
    source = (EXAMPLES / "01_python_foundations" / "plot_04_training_callbacks.py").read_text()
    figures = source.count("plt.subplots(")
    assert figures == 2
    assert source.count("\nplt.show()\n") == figures
