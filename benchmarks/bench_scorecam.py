"""Score-CAM against pytorch-grad-cam's and torchcam's, and the ``top_k`` trade-off.

Run: ``python benchmarks/bench_scorecam.py`` (``--repeats 1`` for one round).

ResNet-18 with random weights, eval mode, ``layer4`` (512 channels), one
224 x 224 image, CPU, 2 threads. Timed, interleaved in a shuffled order in
each round:

* ``ScoreCAM(model, "layer4")`` with ``weights="probability"`` (the authors'
  weights) and ``weights="channel_softmax"`` (the peers' weights), with
  their default ``batch_size``;
* pytorch-grad-cam's ``ScoreCAM`` and torchcam's ``ScoreCAM`` with their
  default batch sizes (16 and 32). Each peer's hooks are made and removed
  inside its own timed call, so that they do not slow the others' passes.

All of them run the same 512 masked forward passes, so the times should be
close. Goal: ours at most 1.1 x the fastest peer's time. Then ``top_k``:
time and agreement (Pearson correlation) with the exact map for a few
budgets. The CPU-time column (process CPU seconds) is the steadier figure on
a shared machine; wall times are noisy there.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import statistics
import time
import warnings
from collections.abc import Callable

import pytorch_grad_cam
import torch
import torch.nn.functional as F
import torchvision
from pytorch_grad_cam.utils.model_targets import ClassifierOutputTarget
from torchcam.methods import ScoreCAM as TorchCamScoreCAM

from hooks_tutorial import ScoreCAM
from hooks_tutorial.metrics import pearson


def peers(model: torch.nn.Module, x: torch.Tensor, target: int) -> dict[str, Callable[[], object]]:
    size = (x.shape[-2], x.shape[-1])

    def run_pgc() -> object:
        # (stderr muted: its tqdm progress bars)
        with (
            pytorch_grad_cam.ScoreCAM(model=model, target_layers=[model.layer4]) as cam,
            contextlib.redirect_stderr(io.StringIO()),
        ):
            maps = cam(input_tensor=x, targets=[ClassifierOutputTarget(target)])
        return torch.from_numpy(maps)

    def run_torchcam() -> object:
        with TorchCamScoreCAM(model, "layer4") as extractor:
            with torch.no_grad():
                scores = model(x)
            maps = extractor(class_idx=target, scores=scores)[0]
        return F.interpolate(maps[:, None], size=size, mode="bilinear")[:, 0]

    return {"pytorch-grad-cam ScoreCAM": run_pgc, "torchcam ScoreCAM": run_torchcam}


def measure(
    fns: dict[str, Callable[[], object]], repeats: int
) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, object]]:
    """Wall and CPU seconds per round, the functions in a shuffled order each round."""
    wall: dict[str, list[float]] = {name: [] for name in fns}
    cpu: dict[str, list[float]] = {name: [] for name in fns}
    results: dict[str, object] = {}
    order = list(fns)
    shuffle = random.Random(0).shuffle
    for _ in range(repeats):
        shuffle(order)
        for name in order:
            start, start_cpu = time.perf_counter(), time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # peers may warn (deprecations)
                results[name] = fns[name]()
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
    return wall, cpu, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--batch-sizes", type=int, nargs="*", default=[])
    parser.add_argument("--budgets", type=int, nargs="*", default=[16, 32, 64, 128])
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None).eval()
    x = torch.randn(1, 3, args.size, args.size, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        target = int(model(x).argmax(1))
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, ResNet-18 (random "
        f"weights), x = {tuple(x.shape)}, layer4 (512 channels), class {target}; "
        f"load average {os.getloadavg()[0]:.1f}\n"
    )

    probability = ScoreCAM(model, "layer4")
    softmax = ScoreCAM(model, "layer4", weights="channel_softmax")
    fns: dict[str, Callable[[], object]] = {
        "ours, weights='probability'": lambda: probability(x, target),
        "ours, weights='channel_softmax'": lambda: softmax(x, target),
    }
    for batch in args.batch_sizes:
        cam = ScoreCAM(model, "layer4", weights="channel_softmax", batch_size=batch)
        fns[f"ours, channel_softmax, batch {batch}"] = lambda cam=cam: cam(x, target)
    peer_fns = peers(model, x, target)
    fns.update(peer_fns)
    with torch.no_grad():  # warm up the convolution kernels for every batch size used
        for batch in {16, 32, probability.batch_size, *args.batch_sizes}:
            model(torch.ones(batch, *x.shape[1:]))
    wall, cpu, results = measure(fns, args.repeats)

    print(f"{'exact Score-CAM, one image':<40} {'wall s (median)':>16} {'cpu s (median)':>15}")
    for name in fns:
        print(
            f"{name:<40} {statistics.median(wall[name]):16.1f} {statistics.median(cpu[name]):15.1f}"
        )
    print(f"(each: {args.repeats} rounds, shuffled order; all wall times: {wall})")
    for weights in ("probability", "channel_softmax"):
        ours = f"ours, weights='{weights}'"
        for clock, times in (("wall", wall), ("cpu", cpu)):
            own = statistics.median(times[ours])
            fastest = min(peer_fns, key=lambda n: statistics.median(times[n]))
            ratio = own / statistics.median(times[fastest])
            goal = "met" if ratio <= 1.1 else "MISSED"
            print(
                f"{weights:<16} {clock}: ours / fastest peer ({fastest}) {ratio:.2f} "
                f"(goal <= 1.1: {goal})"
            )
    ours_map = results["ours, weights='channel_softmax'"]
    assert isinstance(ours_map, torch.Tensor)
    for name in peer_fns:
        peer_map = results[name]
        assert isinstance(peer_map, torch.Tensor)
        r = float(pearson(ours_map, peer_map.to(ours_map.dtype))[0])
        print(f"Pearson(ours channel_softmax, {name}): {r:.4f} (their masks differ slightly)")

    # -- top_k: time and agreement with the exact maps -----------------------------
    print(f"\n{'top_k (both weightings)':<40} {'wall s':>8} {'cpu s':>8} {'Pearson vs exact':>17}")
    exact = {"probability": results["ours, weights='probability'"], "channel_softmax": ours_map}
    for k in args.budgets:
        for weights in ("probability", "channel_softmax"):
            cam = ScoreCAM(model, "layer4", top_k=k, weights=weights)  # type: ignore[arg-type]
            start, start_cpu = time.perf_counter(), time.process_time()
            maps = cam(x, target)
            seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - start_cpu
            reference_map = exact[weights]
            assert isinstance(reference_map, torch.Tensor)
            r = float(pearson(maps, reference_map)[0])
            label = f"top_k={k}, {weights}"
            print(f"{label:<40} {seconds:8.2f} {cpu_seconds:8.2f} {r:17.3f}")
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
