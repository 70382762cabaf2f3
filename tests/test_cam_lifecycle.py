"""The hook rule of the CAM classes: registered at the start of a call, removed in ``finally``.

Each test counts the hooks *during* the call (from inside the model's
forward) as well as after it, so that it fails when the rule is broken: hooks
registered at construction or kept between calls, hooks left after an
exception or an interrupt.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn

from hooks_tutorial import count_hooks
from hooks_tutorial.cam import (
    CAM,
    EigenCAM,
    GradCAM,
    GradCAMPlusPlus,
    GuidedBackprop,
    GuidedGradCAM,
    HiResCAM,
    LayerCAM,
    ScoreCAM,
    XGradCAM,
)


class Probe(nn.Module):
    """conv -> ReLU -> conv ["conv2"] -> ReLU -> [probe] -> GAP -> fc.

    The probe counts the hooks on the whole model each time the forward
    reaches it, and raises ``fail`` there if it is set.
    """

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv1 = nn.Conv2d(3, 6, 3, padding=1)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(6, 8, 3, padding=1)
        self.relu2 = nn.ReLU()
        self.fc = nn.Linear(8, 4)
        self.seen: list[int] = []
        self.fail: BaseException | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu2(self.conv2(self.relu1(self.conv1(x))))
        self.seen.append(count_hooks(self).total)
        if self.fail is not None:
            raise self.fail
        return self.fc(out.mean(dim=(2, 3)))


METHODS: dict[str, Callable[[nn.Module], Any]] = {
    "GradCAM": lambda m: GradCAM(m, "conv2"),
    "GradCAMPlusPlus": lambda m: GradCAMPlusPlus(m, "conv2"),
    "XGradCAM": lambda m: XGradCAM(m, "conv2"),
    "LayerCAM": lambda m: LayerCAM(m, ["conv1", "conv2"]),
    "HiResCAM": lambda m: HiResCAM(m, "conv2"),
    "ScoreCAM": lambda m: ScoreCAM(m, "conv2", top_k=2),
    "ScoreCAM-channel_softmax": lambda m: ScoreCAM(m, "conv2", weights="channel_softmax"),
    "EigenCAM": lambda m: EigenCAM(m, "conv2"),
    "CAM": lambda m: CAM(m, "relu2", "fc"),
    "GuidedBackprop": GuidedBackprop,
    "GuidedGradCAM": lambda m: GuidedGradCAM(m, "conv2"),
}


@pytest.fixture
def x() -> torch.Tensor:
    return torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(3))


@pytest.mark.parametrize("name", METHODS)
def test_hooks_exist_only_during_a_call(name: str, x: torch.Tensor) -> None:
    model = Probe()
    cam = METHODS[name](model)
    assert count_hooks(model) == {}  # nothing registered by the constructor
    cam(x)
    # The first forward pass of the call carries the call's hooks ...
    assert model.seen[0] > 0
    # ... and none is left after it, nor kept for the next call.
    assert count_hooks(model) == {}
    model.seen.clear()
    cam(x)
    assert model.seen[0] > 0
    assert count_hooks(model) == {}


@pytest.mark.parametrize("name", METHODS)
def test_no_hook_left_after_an_exception_in_the_forward(name: str, x: torch.Tensor) -> None:
    model = Probe()
    model.fail = RuntimeError("model failed")
    with pytest.raises(RuntimeError, match="model failed"):
        METHODS[name](model)(x)
    assert model.seen[0] > 0  # the hooks were there when the model raised
    assert count_hooks(model) == {}


class Interrupt(KeyboardInterrupt):
    """Like Ctrl-C in the middle of the forward pass (not an ``Exception``)."""


@pytest.mark.parametrize("name", METHODS)
def test_no_hook_left_and_modes_restored_after_an_interrupt(name: str, x: torch.Tensor) -> None:
    model = Probe().train()
    model.fail = Interrupt()
    with pytest.raises(Interrupt):
        METHODS[name](model)(x)
    assert model.seen[0] > 0
    assert count_hooks(model) == {}
    assert all(m.training for m in model.modules())


def test_with_block_still_works_and_never_swallows(x: torch.Tensor) -> None:
    model = Probe()
    with GradCAM(model, "conv2") as cam:
        assert isinstance(cam, GradCAM)
        maps = cam(x)
        assert count_hooks(model) == {}  # inside the block, between calls: nothing held
    torch.testing.assert_close(maps, GradCAM(model, "conv2")(x), rtol=0, atol=0)

    class Boom(Exception):
        pass

    def use_and_fail() -> None:
        with GuidedGradCAM(model, "conv2") as ggc:
            ggc(x)
            raise Boom

    with pytest.raises(Boom):
        use_and_fail()
    assert count_hooks(model) == {}
