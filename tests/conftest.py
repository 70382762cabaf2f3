"""Fixtures shared by the tests: tiny models and inputs, one torch thread."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
import torchvision
from torch import nn


@pytest.fixture
def one_thread() -> Iterator[None]:
    """Run the test with one torch thread (tiny models: no thread hand-off costs)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


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
    torch.manual_seed(0)
    return torchvision.models.resnet18(weights=None).eval()
