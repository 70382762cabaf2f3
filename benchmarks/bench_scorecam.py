"""Exact Score-CAM against pytorch-grad-cam's and torchcam's, and the ``top_k`` trade-off.

Run: ``python benchmarks/bench_scorecam.py`` (``--repeats 1`` for one round).

ResNet-18 with random weights, eval mode, ``layer4`` (512 channels), one
224 x 224 image, CPU, 2 threads. Timed, interleaved in a shuffled order in
each round:

* ``ScoreCAM(model, "layer4")`` with ``weights="probability"`` (the authors'
  weights) and ``weights="channel_softmax"`` (the peers' weights);
* ``previous``: both again through the previous exact path (every masked
  input built and run through the unchanged model: no BatchNorm folding, no
  factored first convolution), the reference the fast path must match
  (max difference of the normalised maps <= 1e-5);
* with ``--plain``, the channel-softmax Score-CAM written the plain way
  (one masked batch of 32 after another, standard memory format,
  ``no_grad``), a second reference;
* if installed, pytorch-grad-cam's ``ScoreCAM`` and torchcam's ``ScoreCAM``
  with their default batch sizes (16 and 32). Each peer's hooks are made
  and removed inside its own timed call, so that they do not slow the
  others' forward passes.

Goal: our time at most 0.6 x the fastest peer's. Then a profile of one of
our calls: how much of it the convolutions of the masked passes take, and
the ratio to the fastest peer that would remain if everything else cost
nothing (the bound any change outside the convolutions can reach). Then
``top_k``: time and agreement (Pearson correlation) with the exact map for
a few budgets.

The CPU-time column (process CPU seconds) is the steadier figure on a
shared machine; wall times are noisy there.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import os
import random
import resource
import statistics
import time
import warnings
from collections.abc import Callable, Iterator

import torch
import torch.nn.functional as F
import torchvision

from hooks_tutorial.cam import ScoreCAM, _fold
from hooks_tutorial.metrics import pearson


@contextlib.contextmanager
def previous_path() -> Iterator[None]:
    """Run ScoreCAM as before the fast path: nothing folded, the first conv not factored."""
    original = _fold.FoldedPasses.__init__

    def unfolded(self: _fold.FoldedPasses, model: torch.nn.Module, probe: torch.Tensor) -> None:
        del probe
        self.model = model
        self.folds = {}
        self.first = None
        self._basis = None

    _fold.FoldedPasses.__init__ = unfolded  # type: ignore[method-assign]
    try:
        yield
    finally:
        _fold.FoldedPasses.__init__ = original  # type: ignore[method-assign]


def plain_channel_softmax(model: torch.nn.Module, x: torch.Tensor, target: int) -> torch.Tensor:
    """Channel-softmax Score-CAM written the plain way: the reference for the fast path."""
    features: list[torch.Tensor] = []
    handle = model.layer4.register_forward_hook(lambda _m, _a, out: features.append(out))
    with torch.no_grad():
        model(x)
    handle.remove()
    a = features[0][0]  # [K, h, w]
    size = (x.shape[-2], x.shape[-1])
    logits = torch.empty(a.shape[0])
    with torch.no_grad():
        for start in range(0, a.shape[0], 32):
            up = F.interpolate(a[start : start + 32, None], size=size, mode="bilinear")
            lo = up.amin(dim=(2, 3), keepdim=True)
            span = up.amax(dim=(2, 3), keepdim=True) - lo
            masks = torch.where(span > 0, (up - lo) / span.clamp(min=1e-30), 0.0)
            logits[start : start + 32] = model(x * masks)[:, target]
    cam = torch.relu(torch.einsum("k,khw->hw", logits.softmax(0), a))[None, None]
    up = F.interpolate(cam, size=size, mode="bilinear")[:, 0]
    lo, hi = up.amin(), up.amax()
    return (up - lo) / (hi - lo)


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # peers may warn (deprecations); not our concern
        yield


def peers(model: torch.nn.Module, x: torch.Tensor, target: int) -> dict[str, Callable[[], object]]:
    out: dict[str, Callable[[], object]] = {}
    size = (x.shape[-2], x.shape[-1])
    if importlib.util.find_spec("pytorch_grad_cam") is not None:
        import pytorch_grad_cam  # noqa: PLC0415 - optional
        from pytorch_grad_cam.utils.model_targets import (  # noqa: PLC0415 - optional
            ClassifierOutputTarget,
        )

        def run_pgc() -> object:
            # (stderr muted: its tqdm progress bars)
            with (
                pytorch_grad_cam.ScoreCAM(model=model, target_layers=[model.layer4]) as cam,
                contextlib.redirect_stderr(io.StringIO()),
            ):
                maps = cam(input_tensor=x, targets=[ClassifierOutputTarget(target)])
            return torch.from_numpy(maps)

        out["pytorch-grad-cam ScoreCAM"] = run_pgc
    if importlib.util.find_spec("torchcam") is not None:
        from torchcam.methods import ScoreCAM as TorchCamScoreCAM  # noqa: PLC0415 - optional

        def run_torchcam() -> object:
            with TorchCamScoreCAM(model, "layer4") as extractor:
                with torch.no_grad():
                    scores = model(x)
                maps = extractor(class_idx=target, scores=scores)[0]
            return F.interpolate(maps[:, None], size=size, mode="bilinear")[:, 0]

        out["torchcam ScoreCAM"] = run_torchcam
    return out


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
            results[name] = fns[name]()
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
    return wall, cpu, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--budgets", type=int, nargs="*", default=[16, 32, 64, 128])
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--plain", action="store_true", help="also time the plain reference")
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

    def previous(cam: ScoreCAM) -> Callable[[], object]:
        def run() -> object:
            with previous_path():
                return cam(x, target)

        return run

    fns: dict[str, Callable[[], object]] = {
        "ours, weights='probability'": lambda: probability(x, target),
        "ours, weights='channel_softmax'": lambda: softmax(x, target),
        "previous path, 'probability'": previous(probability),
        "previous path, 'channel_softmax'": previous(softmax),
    }
    if args.plain:
        fns["plain channel softmax"] = lambda: plain_channel_softmax(model, x, target)
    peer_fns = {} if args.no_peers else peers(model, x, target)
    fns.update(peer_fns)
    with torch.no_grad():  # warm up the convolution kernels for every batch size used
        for batch in (16, 32, 64):
            ones = torch.ones(batch, *x.shape[1:])
            model(ones)
            model(ones.contiguous(memory_format=torch.channels_last))
    with quiet():
        wall, cpu, results = measure(fns, args.repeats)

    print(f"{'exact Score-CAM, batch 1':<36} {'wall s (median)':>16} {'cpu s (median)':>15}")
    for name in fns:
        print(
            f"{name:<36} {statistics.median(wall[name]):16.1f} {statistics.median(cpu[name]):15.1f}"
        )
    print(f"(each: {args.repeats} rounds, shuffled order; all wall times: {wall})")
    for weights in ("probability", "channel_softmax"):
        ours = f"ours, weights='{weights}'"
        for clock, times in (("wall", wall), ("cpu", cpu)):
            own = statistics.median(times[ours])
            before = statistics.median(times[f"previous path, '{weights}'"])
            line = f"{weights:<16} {clock}: ours / previous path {own / before:.2f}"
            if peer_fns:
                fastest = min(peer_fns, key=lambda n: statistics.median(times[n]))
                ratio = own / statistics.median(times[fastest])
                goal = "met" if ratio <= 0.6 else "MISSED"
                line += f", ours / fastest peer ({fastest}) {ratio:.2f} (goal <= 0.6: {goal})"
            print(line)
    for weights in ("probability", "channel_softmax"):
        ours_map = results[f"ours, weights='{weights}'"]
        before_map = results[f"previous path, '{weights}'"]
        assert isinstance(ours_map, torch.Tensor)
        assert isinstance(before_map, torch.Tensor)
        print(
            f"max |ours - previous path| ({weights}, normalised maps): "
            f"{float((ours_map - before_map).abs().max()):.2e} (goal <= 1e-5)"
        )
    ours_map = results["ours, weights='channel_softmax'"]
    assert isinstance(ours_map, torch.Tensor)
    if args.plain:
        plain = results["plain channel softmax"]
        assert isinstance(plain, torch.Tensor)
        print(f"max |ours - plain| (channel_softmax): {float((ours_map - plain).abs().max()):.2e}")
    for name in peer_fns:
        peer_map = results[name]
        assert isinstance(peer_map, torch.Tensor)
        r = float(pearson(ours_map, peer_map.to(ours_map.dtype))[0])
        print(f"Pearson(ours channel_softmax, {name}): {r:.4f} (their masks differ slightly)")

    # -- where one call's time goes ------------------------------------------------
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        start = time.perf_counter()
        softmax(x, target)
        profiled = time.perf_counter() - start
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    ops = prof.key_averages()
    conv = sum(e.self_cpu_time_total for e in ops if "convolution" in e.key) / 1e6
    print(
        f"\nprofile of one call (weights='channel_softmax'): {profiled:.1f} s, of which the "
        f"convolutions {conv:.1f} s ({conv / profiled:.0%})"
    )
    for e in sorted(ops, key=lambda e: -e.self_cpu_time_total)[:6]:
        print(f"  {e.key:<34} {e.self_cpu_time_total / 1e6:6.2f} s in {e.count} calls")
    print(
        f"minor page faults in the call: {faults} ({faults * resource.getpagesize() / 2**30:.1f} "
        "GiB of fresh memory first written: the allocator hands each pass new pages)"
    )
    if peer_fns:
        fastest = min(peer_fns, key=lambda n: statistics.median(wall[n]))
        peer = statistics.median(wall[fastest])
        print(
            f"convolutions alone / fastest peer's call: {conv / peer:.2f} "
            f"(0.6 x {peer:.1f} s = {0.6 * peer:.1f} s)"
        )

    # -- top_k: time and agreement with the exact maps -----------------------------
    print(f"\n{'top_k (both weightings)':<36} {'wall s':>8} {'cpu s':>8} {'Pearson vs exact':>17}")
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
            print(f"{label:<36} {seconds:8.2f} {cpu_seconds:8.2f} {r:17.3f}")
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
