"""Tests for hooks_tutorial.pretrained: training on first use, the cache and its failures.

Every test trains a tiny configuration (a few dozen 32x32 images, one epoch,
narrow layers) into a temporary cache folder set through the environment.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from hooks_tutorial import zoo
from hooks_tutorial.data import ShapesSpec
from hooks_tutorial.models import SimpleCNN
from hooks_tutorial.zoo import (
    CACHE_ENV,
    PretrainedCacheWarning,
    PretrainedConfig,
    cache_dir,
    pretrained,
    pretrained_config,
)

TINY = dataclasses.replace(
    pretrained_config("simple_cnn-shapes"),
    n_train=32,
    n_test=16,
    data=ShapesSpec(image_size=32),
    channels=(4, 4, 8),
    epochs=1,
    batch_size=16,
)


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(folder))
    return folder


def _files(folder: Path) -> list[Path]:
    return sorted(folder.iterdir()) if folder.exists() else []


def _same_weights(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    return all(
        torch.equal(x, y)
        for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True)
    )


def _forbid_training(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(config: PretrainedConfig) -> None:
        msg = "training was not expected: the cache should have been used"
        raise AssertionError(msg)

    monkeypatch.setattr(zoo, "_train", fail)


def test_trains_once_then_loads(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = pretrained("simple_cnn-shapes", config=TINY)
    assert isinstance(first, SimpleCNN)
    assert not first.training
    (path,) = _files(cache)
    assert path.name == f"simple_cnn-shapes-{TINY.key()[:16]}.pt"
    payload = torch.load(path, weights_only=True)  # loadable without pickle code
    assert payload["key"] == TINY.key()
    assert set(payload["metrics"]) == {"train_seconds", "test_accuracy"}
    _forbid_training(monkeypatch)
    second = pretrained("simple_cnn-shapes", config=TINY)
    assert second is not first
    assert not second.training
    assert _same_weights(first, second)


def test_training_is_deterministic(cache: Path) -> None:
    a = pretrained("simple_cnn-shapes", config=TINY)
    b = pretrained("simple_cnn-shapes", config=TINY, retrain=True)
    assert _same_weights(a, b)
    assert len(_files(cache)) == 1  # replaced, no temporary files left


def test_explicit_cache_folder_beats_environment(cache: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    pretrained("simple_cnn-shapes", config=TINY, cache=other)
    assert len(_files(other)) == 1
    assert not cache.exists()


def test_corrupt_file_is_replaced_with_a_warning(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    good = pretrained("simple_cnn-shapes", config=TINY)
    (path,) = _files(cache)
    path.write_bytes(b"not a torch file")
    with pytest.warns(
        PretrainedCacheWarning, match=r"ignoring the cached weights .*training again"
    ):
        again = pretrained("simple_cnn-shapes", config=TINY)
    assert _same_weights(good, again)
    _forbid_training(monkeypatch)
    pretrained("simple_cnn-shapes", config=TINY)  # the file was repaired: no warning


def test_truncated_file_is_replaced(cache: Path) -> None:
    pretrained("simple_cnn-shapes", config=TINY)
    (path,) = _files(cache)
    path.write_bytes(path.read_bytes()[:100])
    with pytest.warns(PretrainedCacheWarning, match="ignoring the cached weights"):
        pretrained("simple_cnn-shapes", config=TINY)
    assert torch.load(path, weights_only=True)["key"] == TINY.key()


def test_file_for_another_key_is_replaced(cache: Path) -> None:
    pretrained("simple_cnn-shapes", config=TINY)
    (path,) = _files(cache)
    payload = torch.load(path, weights_only=True)
    payload["key"] = "0" * 64
    torch.save(payload, path)
    with pytest.warns(PretrainedCacheWarning, match="made for another configuration or version"):
        pretrained("simple_cnn-shapes", config=TINY)


def test_weights_of_the_wrong_shape_are_replaced(cache: Path) -> None:
    pretrained("simple_cnn-shapes", config=TINY)
    (path,) = _files(cache)
    payload = torch.load(path, weights_only=True)
    payload["state_dict"] = SimpleCNN(channels=(4, 4, 4)).state_dict()
    torch.save(payload, path)
    with pytest.warns(
        PretrainedCacheWarning, match=r"RuntimeError: Error\(s\) in loading state_dict"
    ):
        model = pretrained("simple_cnn-shapes", config=TINY)
    assert model.fc.in_features == 8


def test_unwritable_cache_warns_and_returns_the_model(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(path: Path, payload: object) -> None:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(zoo, "_save", refuse)
    with pytest.warns(
        PretrainedCacheWarning, match=f"could not cache the weights.*Set {CACHE_ENV}"
    ):
        model = pretrained("simple_cnn-shapes", config=TINY)
    assert isinstance(model, SimpleCNN)
    assert _files(cache) == []


def test_failed_write_leaves_no_temporary_file(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_save(obj: object, file: object) -> None:
        msg = "disk full"
        raise OSError(msg)

    monkeypatch.setattr(torch, "save", broken_save)
    with pytest.warns(PretrainedCacheWarning, match="disk full"):
        pretrained("simple_cnn-shapes", config=TINY)
    assert _files(cache) == []


def test_key_follows_everything_that_sets_the_weights() -> None:
    assert TINY.key() == dataclasses.replace(TINY).key()
    changed = [
        dataclasses.replace(TINY, seed=1),
        dataclasses.replace(TINY, epochs=2),
        dataclasses.replace(TINY, channels=(4, 4, 4)),
        dataclasses.replace(TINY, data=ShapesSpec(image_size=32, noise=0.0)),
        dataclasses.replace(TINY, data=ShapesSpec(image_size=32, variant="shortcut")),
        dataclasses.replace(TINY, n_train_two=8),
        dataclasses.replace(TINY, multi_label=True),
    ]
    keys = {c.key() for c in changed}
    assert len(keys) == len(changed)
    assert TINY.key() not in keys


def test_key_includes_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    before = TINY.key()
    monkeypatch.setattr(zoo, "_LIBRARY_VERSION", "999.0")
    assert TINY.key() != before


def test_registered_configs() -> None:
    assert pretrained_config("simple_cnn-shapes").data.variant == "single"
    assert pretrained_config("simple_cnn-shortcut").data.variant == "shortcut"
    assert pretrained_config("simple_cnn-shapes").pool == "max"  # see benchmarks/bench_training.py
    multilabel = pretrained_config("simple_cnn-multilabel")
    assert multilabel.multi_label
    assert multilabel.n_train_two > 0
    assert not pretrained_config("simple_cnn-shapes").multi_label
    with pytest.raises(
        ValueError,
        match=r"no pretrained model named 'simple_cnn-shape'; did you mean 'simple_cnn-shapes'\? Available: ",
    ):
        pretrained_config("simple_cnn-shape")
    with pytest.raises(ValueError, match="no pretrained model named 'resnet18'"):
        pretrained("resnet18")


def test_cache_dir_resolution(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "a"))
    assert cache_dir() == tmp_path / "a"
    monkeypatch.setenv(CACHE_ENV, "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "hooks_tutorial"
    monkeypatch.delenv(CACHE_ENV)
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "hooks_tutorial"


def _spy_fit(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, object]]:
    """Record what ``_train`` gives to ``fit`` (and still train)."""
    calls: list[dict[str, object]] = []
    real_fit = zoo.fit

    def spy(
        model: torch.nn.Module, data: tuple[torch.Tensor, torch.Tensor], **options: object
    ) -> object:
        calls.append({"images": data[0], "labels": data[1], **options})
        return real_fit(model, data, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(zoo, "fit", spy)
    return calls


def test_multi_label_recipe_trains_on_both_variants(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _spy_fit(monkeypatch)
    config = dataclasses.replace(TINY, n_train_two=8, multi_label=True)
    model = pretrained("simple_cnn-multilabel", config=config)
    (call,) = calls
    labels = call["labels"]
    assert isinstance(labels, torch.Tensor)
    assert labels.shape == (32 + 8, 5)
    # single-object rows name one class, two-object rows name two (multi-hot, not halves)
    assert labels[:32].sum(dim=1).tolist() == [1.0] * 32
    assert labels[32:].sum(dim=1).tolist() == [2.0] * 8
    assert set(labels.unique().tolist()) == {0.0, 1.0}
    assert isinstance(call["loss_fn"], torch.nn.BCEWithLogitsLoss)
    assert model(torch.rand(2, 3, 32, 32)).shape == (2, 5)


def test_single_label_recipe_with_two_objects_uses_soft_labels(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _spy_fit(monkeypatch)
    pretrained("simple_cnn-shapes", config=dataclasses.replace(TINY, n_train_two=8))
    labels = calls[0]["labels"]
    assert isinstance(labels, torch.Tensor)
    # every row is a probability distribution: one class, or half for each of two
    torch.testing.assert_close(labels.sum(dim=1), torch.ones(40))
    assert set(labels[32:].unique().tolist()) == {0.0, 0.5}
    assert isinstance(calls[0]["loss_fn"], torch.nn.CrossEntropyLoss)


def test_default_recipe_trains_on_class_indices(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _spy_fit(monkeypatch)
    pretrained("simple_cnn-shapes", config=TINY)
    labels = calls[0]["labels"]
    assert isinstance(labels, torch.Tensor)
    assert labels.dtype == torch.int64
    assert labels.shape == (32,)


@pytest.mark.parametrize("count", [-1, 1.5, True])
def test_bad_two_object_count_is_rejected(count: object) -> None:
    with pytest.raises(
        ValueError, match=r"n_train_two must be an int >= 0 \(extra two-object images\), got "
    ):
        dataclasses.replace(TINY, n_train_two=count)
