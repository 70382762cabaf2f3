"""Fixtures shared by the tests: tiny models and inputs, every CAM method, one torch thread.

And a rule (tests/no_skips.py): on Linux, where every test can run, a skipped test fails.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
import torchvision
from torch import nn

from hooks_tutorial import (
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

pytest_plugins = ["no_skips"]


def pytest_configure(config: pytest.Config) -> None:
    """Share the cores among pytest-xdist's workers: ``cores // workers`` torch threads each.

    Each worker's torch otherwise takes a thread per core, so two workers ran four
    threads on two cores, and the threads of each waited for the others: the unit
    tests took 174 s instead of 101 s here, and the test that runs page 23 21 s
    instead of 4 s. A worker's processes (pages run in a subprocess) get the same
    count through ``OMP_NUM_THREADS``. When ``OMP_NUM_THREADS`` is set already, as
    to test on 2 threads, it is respected.
    """
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if workers is None or "OMP_NUM_THREADS" in os.environ:
        return
    threads = max(1, (os.cpu_count() or 1) // int(workers))
    os.environ["OMP_NUM_THREADS"] = str(threads)
    torch.set_num_threads(threads)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Start the tests marked ``slow`` (3 to 30 s each) first, in their order.

    With a worker per core (pytest-xdist, ``--dist worksteal``), a long test
    that starts last runs alone at the end: the retraining test did, for
    about 30 s, while the other core was idle. Started first, they run while
    the other worker takes the short tests.
    """
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


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


class SmallCNN(nn.Module):
    """conv1 -> BN -> relu1 -> conv2 -> [inside] -> in-place +0.1 -> relu2 -> GAP -> fc, 4 classes.

    As in a ResNet block, the target layer's output (``conv2``) is changed in
    place after the layer. ``inside``, when set, is called with conv2's output
    during each forward pass: tests pause a thread or count hooks there (a
    plain attribute, not a hook, so it never shows in ``count_hooks``).
    Eval mode, fixed weights and BatchNorm statistics.
    """

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv1 = nn.Conv2d(3, 6, 3, padding=1)
        self.bn = nn.BatchNorm2d(6)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(6, 8, 3, padding=1)
        self.relu2 = nn.ReLU()
        self.fc = nn.Linear(8, 4)
        self.inside: Callable[[torch.Tensor], None] | None = None
        with torch.no_grad():
            self.bn.running_mean.uniform_(-0.3, 0.3)
            self.bn.running_var.uniform_(0.5, 1.5)
        self.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.conv2(self.relu1(self.bn(self.conv1(x))))
        if self.inside is not None:
            self.inside(out)
        out += 0.1
        return self.fc(self.relu2(out).mean(dim=(2, 3)))


@pytest.fixture
def small_cnn() -> Callable[[], SmallCNN]:
    """Make a :class:`SmallCNN` (a new one per call: tests that need several call it again)."""
    return SmallCNN


#: Every CAM and saliency method of the library, made for a SmallCNN, by name.
CAM_METHODS: dict[str, Callable[[nn.Module], Any]] = {
    "GradCAM": lambda m: GradCAM(m, "conv2"),
    "GradCAMPlusPlus": lambda m: GradCAMPlusPlus(m, "conv2"),
    "XGradCAM": lambda m: XGradCAM(m, "conv2"),
    "LayerCAM": lambda m: LayerCAM(m, ["relu1", "conv2"]),
    "HiResCAM": lambda m: HiResCAM(m, "conv2"),
    "ScoreCAM": lambda m: ScoreCAM(m, "conv2", top_k=3, batch_size=4),
    "ScoreCAM-channel_softmax": lambda m: ScoreCAM(m, "conv2", weights="channel_softmax"),
    "EigenCAM": lambda m: EigenCAM(m, "conv2"),
    "CAM": lambda m: CAM(m, "relu2", "fc"),
    "GuidedBackprop": GuidedBackprop,
    "GuidedGradCAM": lambda m: GuidedGradCAM(m, "conv2"),
}


@pytest.fixture(params=list(CAM_METHODS))
def make_cam(request: pytest.FixtureRequest) -> Callable[[nn.Module], Any]:
    """Each method in turn (the test runs once per method): ``make_cam(model)`` makes it."""
    return CAM_METHODS[request.param]


@pytest.fixture
def cam_methods() -> dict[str, Callable[[nn.Module], Any]]:
    """Every method at once, by name: ``cam_methods["GradCAM"](model)``."""
    return dict(CAM_METHODS)
