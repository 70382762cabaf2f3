"""Overhead of ``capture_activations`` on ResNet-18 relative to a plain forward pass.

ResNet-18 with random weights (torchvision architecture, no download), a
batch of 8 images of 224x224, CPU. Each variant is timed as a whole ``with``
block (hooks registered, one forward pass, hooks removed). Variants are run in
round-robin order, so that a slow-down of the shared machine hits all of them
alike, and the median of the repeats is reported after warm-up runs.

Goal: at most 1.05x the plain forward pass (median), with and without
autograd. The minimum is printed too: on a busy machine it is the steadier
estimate of the cost itself. ``--threads 1`` also makes runs steadier when
other processes share the cores.

Run: ``python benchmarks/bench_capture.py [--repeats 15] [--batch 8] [--size 224]``
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from collections.abc import Callable, Iterator

import torch
import torchvision
from torch import nn

from hooks_tutorial import capture_activations

GOAL = 1.05


def variants(
    model: nn.Module,
) -> dict[str, Callable[[], contextlib.AbstractContextManager[object]]]:
    convs = [name for name, m in model.named_modules() if isinstance(m, nn.Conv2d)]
    return {
        "plain forward": contextlib.nullcontext,
        "layer4": lambda: capture_activations(model, "layer4"),
        f"all {len(convs)} convs": lambda: capture_activations(model, convs),
        f"all {len(convs)} convs, clone": lambda: capture_activations(model, convs, clone=True),
    }


@contextlib.contextmanager
def grad_mode(enabled: bool) -> Iterator[None]:
    with torch.set_grad_enabled(enabled):
        yield


def measure(
    model: nn.Module, x: torch.Tensor, *, grad: bool, repeats: int, warmup: int
) -> dict[str, list[float]]:
    cases = variants(model)
    times: dict[str, list[float]] = {name: [] for name in cases}
    for i in range(warmup + repeats):
        for name, make in cases.items():
            with grad_mode(grad):
                start = time.perf_counter()
                with make():
                    out = model(x)
                elapsed = time.perf_counter() - start
            del out  # free the graph before the next run
            if i >= warmup:
                times[name].append(elapsed)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None).eval()
    x = torch.randn(args.batch, 3, args.size, args.size)

    print(
        f"ResNet-18 (random weights), input {tuple(x.shape)}, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads; median of {args.repeats} runs after "
        f"{args.warmup} warm-up runs"
    )
    header = (
        f"{'autograd':<10}{'captured layers':<24}{'median ms':>11}{'IQR ms':>9}"
        f"{'min ms':>9}{'ratio':>8}{'min ratio':>11}  goal"
    )
    print(header)
    print("-" * len(header))
    for grad in (False, True):
        times = measure(model, x, grad=grad, repeats=args.repeats, warmup=args.warmup)
        base = statistics.median(times["plain forward"])
        base_min = min(times["plain forward"])
        for name, values in times.items():
            med = statistics.median(values)
            q = statistics.quantiles(values, n=4)
            ratio = med / base
            verdict = "" if name == "plain forward" else ("ok" if ratio <= GOAL else "over")
            mode = "enabled" if grad else "no_grad"
            print(
                f"{mode:<10}{name:<24}{med * 1e3:>11.1f}{(q[2] - q[0]) * 1e3:>9.1f}"
                f"{min(values) * 1e3:>9.1f}{ratio:>7.3f}x{min(values) / base_min:>10.3f}x  {verdict}"
            )


if __name__ == "__main__":
    main()
