"""Soak: many calls mixing every CAM method on one model; hooks left and memory growth.

Run: ``python benchmarks/bench_soak.py`` (``--calls 1000`` by default).

A small CNN (64 x 64 inputs, as on the tutorial pages), every method of the
library on shared objects, called in turn with varying batches and targets.
After a warm-up of one round, the resident set size (RSS, from
``/proc/self/status``) is read before and after the calls. Goals: no hook
left on the model, RSS growth under 5 MB.
"""

from __future__ import annotations

import argparse
import gc
import os
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

from hooks_tutorial import capture_activations, capture_gradients, count_hooks
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


def rss_mb() -> float:
    """Resident set size of this process in MB (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    msg = "no VmRSS in /proc/self/status"
    raise RuntimeError(msg)


def make_model() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1),
        nn.BatchNorm2d(16),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1),
        nn.ReLU(inplace=True),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(64, 4),
    ).eval()


def calls(model: nn.Module) -> list[Callable[[torch.Tensor, int], object]]:
    def capture(x: torch.Tensor, target: int) -> object:
        with capture_activations(model, ["2", "8"]) as acts, capture_gradients(model, "8") as grads:
            model(x)[:, target].sum().backward()
        model.zero_grad(set_to_none=True)
        return acts["8"], grads["8"]

    return [
        GradCAM(model, "8"),
        GradCAMPlusPlus(model, "8"),
        XGradCAM(model, "8"),
        LayerCAM(model, ["5", "8"]),
        HiResCAM(model, "8"),
        ScoreCAM(model, "8", top_k=8),
        ScoreCAM(model, "8", top_k=8, weights="channel_softmax"),
        EigenCAM(model, "8"),
        CAM(model, "8", "11"),
        GuidedBackprop(model),
        GuidedGradCAM(model, "8"),
        capture,
    ]


def run(fns: list[Callable[[torch.Tensor, int], object]], n: int) -> None:
    for i in range(n):
        x = torch.randn(1 + i % 4, 3, 64, 64, generator=torch.Generator().manual_seed(i))
        fns[i % len(fns)](x, i % 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = make_model()
    fns = calls(model)
    run(fns, 5 * len(fns))  # warm-up: allocator pools, lazy imports
    gc.collect()
    before = rss_mb()
    start = time.perf_counter()
    run(fns, args.calls)
    seconds = time.perf_counter() - start
    gc.collect()
    after = rss_mb()
    hooks = count_hooks(model).total
    growth = after - before
    print(
        f"{args.calls} calls of {len(fns)} methods in {seconds:.1f} s; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print(f"hooks left on the model: {hooks} (goal 0: {'met' if hooks == 0 else 'MISSED'})")
    print(
        f"RSS before {before:.1f} MB, after {after:.1f} MB, growth {growth:+.2f} MB "
        f"(goal < 5 MB: {'met' if growth < 5 else 'MISSED'})"
    )


if __name__ == "__main__":
    main()
