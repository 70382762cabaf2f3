"""Tests for hooks_tutorial.training: the callback protocol, built-in callbacks, fit."""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from hooks_tutorial.data import make_shapes
from hooks_tutorial.models import SimpleCNN, TinyConvNet
from hooks_tutorial.training import (
    Callback,
    EarlyStopping,
    History,
    ProgressPrinter,
    StopTraining,
    evaluate,
    fit,
)

pytestmark = pytest.mark.usefixtures("one_thread")


def _toy_data(n: int = 20, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """1x4x4 inputs; label 1 when the top-left 2x2 block is bright (learnable by TinyConvNet)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 1, 4, 4, generator=g)
    y = (x[:, 0, :2, :2].mean(dim=(1, 2)) > 0).long()
    return x, y


class Recorder:
    """A duck-typed callback (no base class) that records every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def on_train_begin(self, model: nn.Module, params: Mapping[str, Any]) -> None:
        self.calls.append(("on_train_begin", model, dict(params)))

    def on_batch_end(self, batch: int, logs: Mapping[str, float]) -> None:
        self.calls.append(("on_batch_end", batch, dict(logs)))

    def on_epoch_end(self, epoch: int, logs: Mapping[str, float]) -> None:
        self.calls.append(("on_epoch_end", epoch, dict(logs)))

    def on_train_end(self, logs: Mapping[str, float]) -> None:
        self.calls.append(("on_train_end", dict(logs)))

    def events(self) -> list[tuple[str, Any]]:
        return [
            (c[0], c[1]) if c[0] in ("on_batch_end", "on_epoch_end") else (c[0],)
            for c in self.calls
        ]  # type: ignore[misc]


# ------------------------------------------------------------------ protocol


def test_callback_order_and_arguments() -> None:
    model = TinyConvNet()
    recorder = Recorder()
    fit(model, _toy_data(20), epochs=2, batch_size=8, callbacks=[recorder])
    assert recorder.events() == [
        ("on_train_begin",),
        ("on_batch_end", 1), ("on_batch_end", 2), ("on_batch_end", 3), ("on_epoch_end", 1),
        ("on_batch_end", 1), ("on_batch_end", 2), ("on_batch_end", 3), ("on_epoch_end", 2),
        ("on_train_end",),
    ]  # fmt: skip
    _, got_model, params = recorder.calls[0]
    assert got_model is model
    assert params == {
        "epochs": 2,
        "batch_size": 8,
        "steps": 3,
        "samples": 20,
        "validation": False,
    }
    batch_logs = [c[2] for c in recorder.calls if c[0] == "on_batch_end"]
    assert [logs["size"] for logs in batch_logs[:3]] == [8, 8, 4]
    assert [logs["epoch"] for logs in batch_logs] == [1, 1, 1, 2, 2, 2]
    epoch_logs = recorder.calls[4][2]
    assert set(epoch_logs) == {"loss", "accuracy", "seconds"}
    # the epoch loss is the sample-weighted mean of its batch losses
    expected = sum(logs["loss"] * logs["size"] for logs in batch_logs[:3]) / 20
    assert epoch_logs["loss"] == pytest.approx(expected, rel=1e-12)
    assert 0.0 <= epoch_logs["accuracy"] <= 1.0
    assert recorder.calls[-1][1] == recorder.calls[-2][2]  # on_train_end gets the last logs


def test_validation_logs() -> None:
    recorder = Recorder()
    fit(TinyConvNet(), _toy_data(16), epochs=1, val_data=_toy_data(8, seed=1), callbacks=[recorder])
    epoch_logs = recorder.calls[-2][2]
    assert set(epoch_logs) == {"loss", "accuracy", "val_loss", "val_accuracy", "seconds"}
    model = TinyConvNet()
    fit(model, _toy_data(16), epochs=1, val_data=_toy_data(8, seed=1))
    assert evaluate(model, _toy_data(8, seed=1)) == pytest.approx(
        {"loss": epoch_logs["val_loss"], "accuracy": epoch_logs["val_accuracy"]}, rel=1e-6
    )  # same seed and data: same weights, same validation scores


def test_duck_typed_partial_callbacks() -> None:
    epochs_seen: list[int] = []

    class OnlyEpochs:
        def on_epoch_end(self, epoch: int, logs: Mapping[str, float]) -> None:
            epochs_seen.append(epoch)

    class Nothing:
        pass

    fit(TinyConvNet(), _toy_data(), epochs=3, callbacks=[OnlyEpochs(), Nothing()])
    assert epochs_seen == [1, 2, 3]


def test_base_class_methods_do_nothing() -> None:
    callback = Callback()
    assert callback.on_train_begin(TinyConvNet(), {}) is None
    assert callback.on_batch_end(1, {}) is None
    assert callback.on_epoch_end(1, {}) is None
    assert callback.on_train_end({}) is None

    class Counter(Callback):
        def __init__(self) -> None:
            self.batches = 0

        def on_batch_end(self, batch: int, logs: Mapping[str, float]) -> None:
            self.batches += 1

    counter = Counter()
    fit(TinyConvNet(), _toy_data(20), epochs=2, batch_size=10, callbacks=[counter])
    assert counter.batches == 4


# ------------------------------------------------------------------ stopping


def test_stop_training_from_batch_end_finishes_the_epoch() -> None:
    class StopAtBatch2(Callback):
        def on_batch_end(self, batch: int, logs: Mapping[str, float]) -> None:
            if batch == 2:
                raise StopTraining

    recorder = Recorder()
    history = fit(
        TinyConvNet(), _toy_data(40), epochs=5, batch_size=8, callbacks=[StopAtBatch2(), recorder]
    )
    assert recorder.events() == [
        ("on_train_begin",),
        ("on_batch_end", 1),
        ("on_batch_end", 2),  # the later callback still receives the stopping event
        ("on_epoch_end", 1),
        ("on_train_end",),
    ]
    assert len(history) == 1
    assert history.epochs == [1]


def test_stop_training_from_train_begin_runs_no_epoch() -> None:
    class Refuse:
        def on_train_begin(self, model: nn.Module, params: Mapping[str, Any]) -> None:
            raise StopTraining

    recorder = Recorder()
    history = fit(TinyConvNet(), _toy_data(), epochs=3, callbacks=[Refuse(), recorder])
    assert recorder.events() == [("on_train_begin",), ("on_train_end",)]
    assert recorder.calls[-1][1] == {}
    assert len(history) == 0


def test_early_stopping_counts_patience() -> None:
    stopper = EarlyStopping("loss", patience=2, restore_best=False)
    stopper.on_train_begin(TinyConvNet(), {})
    stopper.on_epoch_end(1, {"loss": 1.0})
    stopper.on_epoch_end(2, {"loss": 0.9})
    stopper.on_epoch_end(3, {"loss": 0.95})
    with pytest.raises(
        StopTraining, match=r"loss has not improved for 2 epochs \(best 0.9 at epoch 2\)"
    ):
        stopper.on_epoch_end(4, {"loss": 0.91})
    assert (stopper.best, stopper.best_epoch, stopper.stopped_epoch) == (0.9, 2, 4)


def test_early_stopping_min_delta_and_max_mode() -> None:
    stopper = EarlyStopping("val_accuracy", patience=1, min_delta=0.05)
    assert stopper.mode == "max"
    stopper.on_train_begin(TinyConvNet(), {})
    stopper.on_epoch_end(1, {"val_accuracy": 0.5})
    with pytest.raises(StopTraining):
        stopper.on_epoch_end(2, {"val_accuracy": 0.54})  # +0.04 < min_delta
    assert EarlyStopping("loss", mode="max").mode == "max"
    assert EarlyStopping().mode == "min"


def test_early_stopping_in_fit_stops_and_restores_best() -> None:
    # lr=0: the weights do not change, so the epoch loss changes only by float
    # rounding (another shuffling order); min_delta ignores that, the first epoch
    # stays the best, and training stops after `patience` more epochs
    model = TinyConvNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    stopper = EarlyStopping("loss", patience=2, min_delta=1e-6)
    history = fit(model, _toy_data(), epochs=10, optimizer=optimizer, callbacks=[stopper])
    assert history.epochs == [1, 2, 3]
    assert stopper.stopped_epoch == 3
    assert stopper.best_epoch == 1


def test_early_stopping_restores_best_weights() -> None:
    model = TinyConvNet()
    stopper = EarlyStopping("val_loss", patience=5)
    stopper.on_train_begin(model, {})
    best = {k: v.clone() for k, v in model.state_dict().items()}
    stopper.on_epoch_end(1, {"val_loss": 0.5})
    with torch.no_grad():
        model.conv.weight.add_(1.0)
    stopper.on_epoch_end(2, {"val_loss": 0.7})
    stopper.on_train_end({})
    for key, value in model.state_dict().items():
        assert torch.equal(value, best[key]), key


def test_early_stopping_keeps_last_weights_when_last_is_best() -> None:
    model = TinyConvNet()
    stopper = EarlyStopping("loss")
    stopper.on_train_begin(model, {})
    stopper.on_epoch_end(1, {"loss": 0.5})
    with torch.no_grad():
        model.conv.weight.add_(1.0)
    after = model.conv.weight.clone()
    stopper.on_epoch_end(2, {"loss": 0.4})
    stopper.on_train_end({})
    assert torch.equal(model.conv.weight, after)


def test_early_stopping_missing_key() -> None:
    with pytest.raises(ValueError, match=r"monitors 'val_loss'.*pass val_data to fit"):
        fit(TinyConvNet(), _toy_data(), epochs=2, callbacks=[EarlyStopping()])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"patience": 0}, "patience must be a positive int"),
        ({"min_delta": -1.0}, "min_delta must be >= 0"),
        ({"mode": "up"}, "mode must be 'auto', 'min' or 'max'"),
    ],
)
def test_early_stopping_bad_arguments(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        EarlyStopping(**kwargs)


# ------------------------------------------------------------ history, printer


def test_fit_returns_history() -> None:
    history = fit(TinyConvNet(), _toy_data(), epochs=3)
    assert isinstance(history, History)
    assert history.epochs == [1, 2, 3]
    assert len(history["loss"]) == 3
    with pytest.raises(KeyError, match=r"no 'val_loss' in the history; recorded keys: loss"):
        history["val_loss"]


def test_fit_returns_the_given_history_and_clears_it() -> None:
    mine = History()
    mine.on_epoch_end(99, {"loss": 1.0})
    assert fit(TinyConvNet(), _toy_data(), epochs=2, callbacks=[mine]) is mine
    assert mine.epochs == [1, 2]
    assert repr(mine) == "History(epochs=2, keys=['loss', 'accuracy', 'seconds'])"


def test_progress_printer_to_stream() -> None:
    out = io.StringIO()
    fit(TinyConvNet(), _toy_data(), epochs=3, callbacks=[ProgressPrinter(out)])
    lines = out.getvalue().splitlines()
    assert len(lines) == 4
    assert lines[0].startswith("epoch 1/3  loss ")
    assert "  accuracy " in lines[0]
    assert lines[0].endswith(" s)")
    assert lines[-1].startswith("done in ")


def test_progress_printer_every_and_default_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    fit(TinyConvNet(), _toy_data(), epochs=5, callbacks=[ProgressPrinter(every=2)])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in lines[:-1]] == ["2/5", "4/5", "5/5"]
    with pytest.raises(ValueError, match="every must be a positive int"):
        ProgressPrinter(every=0)


# --------------------------------------------------------------------- data kinds


def test_data_kinds() -> None:
    x, y = _toy_data(16)
    for data in (
        (x, y),
        TensorDataset(x, y),
        DataLoader(TensorDataset(x, y), batch_size=4),
        [(x[:8], y[:8]), (x[8:], y[8:])],
    ):
        history = fit(TinyConvNet(), data, epochs=1)
        assert len(history) == 1


def test_scheduler_steps_after_every_batch() -> None:
    model = TinyConvNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 0.5**step)
    fit(model, _toy_data(20), epochs=2, batch_size=5, optimizer=optimizer, scheduler=scheduler)
    assert optimizer.param_groups[0]["lr"] == 0.5**8  # 4 batches x 2 epochs
    with pytest.raises(ValueError, match="scheduler schedules another optimizer"):
        fit(TinyConvNet(), _toy_data(), epochs=1, scheduler=scheduler)


def test_fit_leaves_eval_mode_and_evaluate_restores_mode() -> None:
    model = TinyConvNet()
    fit(model, _toy_data(), epochs=1)
    assert not model.training
    model.train()
    evaluate(model, _toy_data())
    assert model.training


def test_fit_learns_the_toy_task() -> None:
    model = TinyConvNet()
    history = fit(model, _toy_data(200), epochs=15, batch_size=20, lr=0.02)
    # a linear rule on 4 pixels: one conv + linear layer fits it quickly
    assert history["accuracy"][-1] > 0.9
    assert history["loss"][-1] < history["loss"][0]


def test_multi_hot_targets_with_bce_loss() -> None:
    x, y = _toy_data(200)
    # two yes/no questions per input: "is the block bright?" and "is it dark?" (never both)
    targets = torch.stack([1.0 - y.float(), y.float()], dim=1)
    model = TinyConvNet()
    history = fit(
        model, (x, targets), epochs=15, batch_size=20, lr=0.02, loss_fn=nn.BCEWithLogitsLoss()
    )
    assert history["accuracy"][-1] > 0.9
    # the accuracy of targets agrees with the accuracy of the class indices they encode
    scores = evaluate(model, (x, targets), loss_fn=nn.BCEWithLogitsLoss())
    assert scores["accuracy"] == pytest.approx(evaluate(model, (x, y))["accuracy"], abs=0)


def test_accuracy_with_targets_counts_any_positive_target() -> None:
    class Fixed(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bias = nn.Parameter(torch.tensor([0.0, 2.0, 1.0]))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.bias.expand(x.shape[0], 3)  # always predicts class 1

    x = torch.zeros(4, 1)
    targets = torch.tensor([[0, 1, 1], [1, 0, 1], [0.5, 0.5, 0], [0, 0, 1]], dtype=torch.float32)
    # top class 1 has a positive target in rows 0 and 2 only
    assert evaluate(Fixed(), (x, targets))["accuracy"] == pytest.approx(0.5)


def test_targets_must_have_one_column_per_class() -> None:
    x, y = _toy_data()
    with pytest.raises(
        ValueError,
        match=r"float labels are per-class targets \[batch, classes\] and should have shape "
        r"\[20, 2\] for this model, got \(20, 3\)",
    ):
        fit(TinyConvNet(), (x, torch.zeros(20, 3)), epochs=1)
    with pytest.raises(
        ValueError, match=r"should have shape \[20, 2\] for this model, got \(20,\)"
    ):
        evaluate(TinyConvNet(), (x, y.float()))
    with pytest.raises(ValueError, match=r"labels should be class indices \[batch\]"):
        fit(TinyConvNet(), (x, torch.zeros(20, 2, dtype=torch.long)), epochs=1)


# ----------------------------------------------------------------- determinism


def _state(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in model.state_dict().items()}


def test_training_is_deterministic_for_a_seed() -> None:
    data = make_shapes(48, image_size=32, seed=0)
    runs = []
    for _ in range(2):
        model = SimpleCNN(channels=(4, 8, 8), seed=0)
        history = fit(model, data, epochs=2, batch_size=16, seed=1)
        runs.append((_state(model), history["loss"], history["accuracy"]))
    (state_a, loss_a, acc_a), (state_b, loss_b, acc_b) = runs
    for key in state_a:
        assert torch.equal(state_a[key], state_b[key]), key
    assert loss_a == loss_b
    assert acc_a == acc_b
    model = SimpleCNN(channels=(4, 8, 8), seed=0)
    fit(model, data, epochs=2, batch_size=16, seed=2)  # another shuffling order
    assert not torch.equal(model.conv1.weight, state_a["conv1.weight"])


# --------------------------------------------------------------------- bad input


def test_empty_data_is_rejected() -> None:
    empty = TensorDataset(torch.zeros(0, 1, 4, 4), torch.zeros(0, dtype=torch.long))
    with pytest.raises(ValueError, match="train_data is empty"):
        fit(TinyConvNet(), empty, epochs=1)
    with pytest.raises(ValueError, match="train_data is empty"):
        fit(TinyConvNet(), DataLoader(empty), epochs=1)
    with pytest.raises(ValueError, match="train_data gave no batches"):
        fit(TinyConvNet(), [], epochs=1)
    with pytest.raises(ValueError, match="val_data is empty"):
        fit(TinyConvNet(), _toy_data(), val_data=empty, epochs=1)


def test_model_output_must_match_classes() -> None:
    data = make_shapes(8, image_size=32, seed=0)
    model = SimpleCNN(num_classes=3, channels=(4, 4, 4), seed=0)
    with pytest.raises(
        ValueError,
        match="outputs 3 scores per input but the data has 5 classes; build the model with num_classes=5",
    ):
        fit(model, data, epochs=1)
    x, y = _toy_data()
    with pytest.raises(ValueError, match=r"labels range from 0 to 4 .* outputs 2 scores"):
        fit(TinyConvNet(), (x, y * 4), epochs=1)
    with pytest.raises(ValueError, match=r"labels range from 0 to 4 .* outputs 2 scores"):
        evaluate(TinyConvNet(), (x, y * 4))


def test_model_must_return_scores() -> None:
    with pytest.raises(
        ValueError,
        match=r"should return class scores \[batch, classes\], got shape \(20, 2, 4, 4\)",
    ):
        fit(TinyConvNet().conv, _toy_data(), epochs=1)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"epochs": 0}, ValueError, "epochs must be a positive int"),
        ({"epochs": 1, "batch_size": 0}, ValueError, "batch_size must be a positive int"),
    ],
)
def test_bad_fit_arguments(kwargs: dict[str, Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        fit(TinyConvNet(), _toy_data(), **kwargs)


def test_bad_data_kinds() -> None:
    with pytest.raises(TypeError, match="train_data must be a Dataset"):
        fit(TinyConvNet(), 42, epochs=1)  # type: ignore[arg-type]
    with pytest.raises(
        TypeError, match=r"each batch of train_data must be an \(inputs, labels\) pair"
    ):
        fit(TinyConvNet(), [torch.zeros(2, 1, 4, 4)], epochs=1)
    x, y = _toy_data()
    with pytest.raises(ValueError, match="20 inputs but 19 labels"):
        fit(TinyConvNet(), (x, y[:-1]), epochs=1)


def test_model_without_parameters() -> None:
    with pytest.raises(ValueError, match=r"the model \(ReLU\) has no parameters to train"):
        fit(nn.ReLU(), _toy_data(), epochs=1)


def test_evaluate_model_without_parameters() -> None:
    # fit refuses such a model (nothing to train), but evaluate scores it: the
    # batches stay on their own device instead of a bare StopIteration
    x = torch.tensor([[2.0, 0.0], [0.0, 1.0], [3.0, 1.0], [0.0, 0.5]])
    y = torch.tensor([0, 1, 1, 1])
    model = nn.Sequential(nn.Flatten())
    scores = evaluate(model, (x, y), batch_size=3)
    expected_loss = nn.functional.cross_entropy(x, y).item()
    assert scores == pytest.approx({"loss": expected_loss, "accuracy": 0.75}, rel=1e-6)


def test_evaluate_model_with_buffers_only() -> None:
    class Shift(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("shift", torch.tensor([0.0, 10.0]))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + self.shift

    x, y = torch.zeros(4, 2), torch.tensor([1, 1, 0, 1])
    assert evaluate(Shift(), (x, y))["accuracy"] == pytest.approx(0.75)
