"""Tiny models shared by the tests (read-only for other test modules)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch import nn


def _raw_hook_total(model: nn.Module) -> int:
    """Every hook entry on the model, read straight from the module dicts."""
    total = 0
    for m in model.modules():
        total += len(m._forward_hooks) + len(m._forward_pre_hooks)
        total += len(m._backward_hooks) + len(m._backward_pre_hooks)
        total += len(m._forward_hooks_with_kwargs) + len(m._forward_hooks_always_called)
        total += len(m._forward_pre_hooks_with_kwargs)
        for p in m.parameters(recurse=False):
            total += len(p._backward_hooks or {})
            total += len(getattr(p, "_post_accumulate_grad_hooks", None) or {})
    return total


@pytest.fixture
def assert_no_hooks() -> Callable[[nn.Module], None]:
    """A check that no module or parameter of a model carries any hook."""

    def check(model: nn.Module) -> None:
        assert _raw_hook_total(model) == 0

    return check


@pytest.fixture
def mlp() -> nn.Sequential:
    """Linear -> ReLU -> Linear, 4 -> 5 -> 2, fixed random weights."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 2))


@pytest.fixture
def tiny_cnn() -> nn.Sequential:
    """A small CNN with an in-place ReLU right after a conv (like ResNet)."""
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 4, 3, padding=1),
        nn.ReLU(inplace=True),
        nn.Conv2d(4, 6, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(6, 3),
    )


@pytest.fixture
def image() -> torch.Tensor:
    """A batch of two 3x8x8 images for ``tiny_cnn``."""
    return torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(1))


@pytest.fixture
def resnet18() -> nn.Module:
    """torchvision's ResNet-18 architecture, random weights, eval mode."""
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    return torchvision.models.resnet18(weights=None).eval()
