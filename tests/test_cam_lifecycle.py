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

from hooks_tutorial import GradCAM, GuidedGradCAM, count_hooks


class Probe:
    """Set as a SmallCNN's ``inside``: counts the model's hooks each time the forward
    reaches it, and raises ``fail`` there if it is set."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        self.seen: list[int] = []
        self.fail: BaseException | None = None

    def __call__(self, out: torch.Tensor) -> None:
        self.seen.append(count_hooks(self.model).total)
        if self.fail is not None:
            raise self.fail


@pytest.fixture
def probed(small_cnn: Callable[[], nn.Module]) -> tuple[Any, Probe]:
    """A SmallCNN and the probe inside its forward pass."""
    model = small_cnn()
    probe = Probe(model)
    model.inside = probe
    return model, probe


@pytest.fixture
def x() -> torch.Tensor:
    return torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(3))


def test_hooks_exist_only_during_a_call(make_cam: Callable[[nn.Module], Any], probed, x) -> None:
    model, probe = probed
    cam = make_cam(model)
    assert count_hooks(model) == {}  # nothing registered by the constructor
    cam(x)
    # The first forward pass of the call carries the call's hooks ...
    assert probe.seen[0] > 0
    # ... and none is left after it, nor kept for the next call.
    assert count_hooks(model) == {}
    probe.seen.clear()
    cam(x)
    assert probe.seen[0] > 0
    assert count_hooks(model) == {}


def test_no_hook_left_after_an_exception_in_the_forward(
    make_cam: Callable[[nn.Module], Any], probed, x: torch.Tensor
) -> None:
    model, probe = probed
    probe.fail = RuntimeError("model failed")
    with pytest.raises(RuntimeError, match="model failed"):
        make_cam(model)(x)
    assert probe.seen[0] > 0  # the hooks were there when the model raised
    assert count_hooks(model) == {}


class Interrupt(KeyboardInterrupt):
    """Like Ctrl-C in the middle of the forward pass (not an ``Exception``)."""


def test_no_hook_left_and_modes_restored_after_an_interrupt(
    make_cam: Callable[[nn.Module], Any], probed, x: torch.Tensor
) -> None:
    model, probe = probed
    model.train()
    probe.fail = Interrupt()
    with pytest.raises(Interrupt):
        make_cam(model)(x)
    assert probe.seen[0] > 0
    assert count_hooks(model) == {}
    assert all(m.training for m in model.modules())


def test_with_block_still_works_and_never_swallows(probed, x: torch.Tensor) -> None:
    model, _ = probed
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
