"""Speed of the CAM engine against its lower bound and against peer libraries.

Run: ``python benchmarks/bench_cam.py`` (``--quick`` for a short run).

What is measured (ResNet-18 with random weights, eval mode, CPU, 2 threads):

* Gradient methods, batch 8 x 3 x 224 x 224, target layer ``layer4``: the
  median time of ``cam(x)`` divided by the median time of the bound
  "forward + ``torch.autograd.grad(score, layer4 output)``" written by hand
  (no hooks, no post-processing). Goal: <= 1.05.
* Gradient-free methods (CAM, Eigen-CAM) against a ``no_grad`` forward.
* Guided backpropagation against "forward + ``torch.autograd.grad(score, x)``".
* Score-CAM at batch 1: exact (all 512 channels) and with channel budgets
  (``top_k``), with the agreement of the budgeted maps with the exact one.
* If installed: captum's ``LayerGradCam``, ``pytorch_grad_cam`` and
  ``torchcam`` on the same input, as ratios to the same bound.

Times are medians over interleaved repeats after warm-up; the machine may be
shared, so the load average is printed alongside.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import time
import warnings
from collections.abc import Callable

import torch
import torchvision

from hooks_tutorial.cam import (
    CAM,
    EigenCAM,
    GradCAM,
    GradCAMPlusPlus,
    GuidedBackprop,
    HiResCAM,
    LayerCAM,
    ScoreCAM,
    XGradCAM,
)
from hooks_tutorial.metrics import pearson, spearman


def measure(fns: dict[str, Callable[[], object]], repeats: int, warmup: int) -> dict[str, float]:
    """Median seconds per call; calls are interleaved so that load drifts hit all alike."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def resnet_parts(model: torch.nn.Module, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """torchvision's ResNet.forward by hand, returning (layer4 output, logits)."""
    out = model.maxpool(model.relu(model.bn1(model.conv1(x))))
    features = model.layer4(model.layer3(model.layer2(model.layer1(out))))
    return features, model.fc(torch.flatten(model.avgpool(features), 1))


def table(rows: list[tuple[str, float, float | None, str]], bound_name: str) -> None:
    print(f"{'method':<34} {'median ms':>10} {'ratio':>7}  note")
    for name, seconds, ratio, note in rows:
        r = f"{ratio:7.3f}" if ratio is not None else " " * 7
        print(f"{name:<34} {seconds * 1e3:10.1f} {r}  {note}")
    print(f"(ratio = median time / median time of {bound_name})\n")


def optional_peers(
    model: torch.nn.Module, x: torch.Tensor, target: list[int]
) -> dict[str, Callable[[], object]]:
    peers: dict[str, Callable[[], object]] = {}
    size = (x.shape[-2], x.shape[-1])
    if importlib.util.find_spec("captum") is not None:
        from captum.attr import LayerAttribution, LayerGradCam

        captum_cam = LayerGradCam(model, model.layer4)

        def run_captum() -> object:
            a = captum_cam.attribute(x, target=target, relu_attributions=True)
            return LayerAttribution.interpolate(a, size, interpolate_mode="bilinear")

        peers["captum LayerGradCam (+upsample)"] = run_captum
    if importlib.util.find_spec("pytorch_grad_cam") is not None:
        import pytorch_grad_cam
        from pytorch_grad_cam.utils.model_targets import ClassifierOutputTarget

        pgc = pytorch_grad_cam.GradCAM(model=model, target_layers=[model.layer4])
        pgc_targets = [ClassifierOutputTarget(t) for t in target]
        peers["pytorch_grad_cam GradCAM"] = lambda: pgc(input_tensor=x, targets=pgc_targets)
    if importlib.util.find_spec("torchcam") is not None:
        from torchcam.methods import GradCAM as TorchCamGradCAM

        extractor = TorchCamGradCAM(model, "layer4")

        def run_torchcam() -> object:
            scores = model(x)
            maps = extractor(class_idx=target, scores=scores)[0]
            return torch.nn.functional.interpolate(maps[:, None], size=size, mode="bilinear")

        peers["torchcam GradCAM (+upsample)"] = run_torchcam
    return peers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--score-repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="fewer repeats, no exact Score-CAM")
    parser.add_argument("--no-peers", action="store_true", help="skip captum & co.")
    args = parser.parse_args()
    if args.quick:
        args.repeats, args.warmup, args.score_repeats = 5, 1, 1

    torch.set_num_threads(2)
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None).eval()
    x = torch.randn(args.batch, 3, args.size, args.size)
    with torch.no_grad():
        target = model(x).argmax(1).tolist()

    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, ResNet-18 (random "
        f"weights), x = {tuple(x.shape)}, layer4; load average {os.getloadavg()[0]:.1f}\n"
    )

    # -- gradient methods against forward + autograd.grad -------------------------
    def bound() -> object:
        features, logits = resnet_parts(model, x)
        score = logits.gather(1, logits.argmax(1, keepdim=True)).sum()
        return torch.autograd.grad(score, features)

    methods = {
        cls.__name__: cls(model, "layer4")
        for cls in (GradCAM, GradCAMPlusPlus, XGradCAM, LayerCAM, HiResCAM)
    }
    fns: dict[str, Callable[[], object]] = {"bound": bound}
    fns.update({name: (lambda cam=cam: cam(x)) for name, cam in methods.items()})
    peers = {} if args.no_peers else optional_peers(model, x, target)
    fns.update(peers)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # peers may warn (deprecations); not our concern here
        t = measure(fns, args.repeats, args.warmup)
    rows = [("forward + autograd.grad (bound)", t["bound"], 1.0, "")]
    for name in methods:
        ratio = t[name] / t["bound"]
        rows.append(
            (name, t[name], ratio, "goal <= 1.05: " + ("met" if ratio <= 1.05 else "MISSED"))
        )
    rows += [(name, t[name], t[name] / t["bound"], "peer, for comparison") for name in peers]
    table(rows, "forward + autograd.grad(score, layer4 output)")

    # -- gradient-free methods against a no_grad forward ------------------------------
    def forward_only() -> object:
        with torch.no_grad():
            return model(x)

    eigen, cam = EigenCAM(model, "layer4"), CAM(model, "layer4", "fc")
    t = measure(
        {"forward": forward_only, "EigenCAM": lambda: eigen(x), "CAM": lambda: cam(x)},
        args.repeats,
        args.warmup,
    )
    table(
        [
            ("no_grad forward (bound)", t["forward"], 1.0, ""),
            ("CAM", t["CAM"], t["CAM"] / t["forward"], ""),
            ("EigenCAM", t["EigenCAM"], t["EigenCAM"] / t["forward"], "includes a batched SVD"),
        ],
        "a no_grad forward",
    )

    # -- guided backpropagation against forward + autograd.grad(score, x) ----------
    def input_bound() -> object:
        xi = x.detach().clone().requires_grad_(True)
        logits = model(xi)
        return torch.autograd.grad(logits.gather(1, logits.argmax(1, keepdim=True)).sum(), xi)

    guided = GuidedBackprop(model)
    t = measure({"bound": input_bound, "guided": lambda: guided(x)}, args.repeats, args.warmup)
    table(
        [
            ("forward + autograd.grad(score, x)", t["bound"], 1.0, ""),
            ("GuidedBackprop", t["guided"], t["guided"] / t["bound"], ""),
        ],
        "forward + autograd.grad(score, x)",
    )

    # -- Score-CAM at batch 1: exact and with channel budgets ---------------------------
    x1 = x[:1]
    exact = ScoreCAM(model, "layer4", batch_size=64)
    budgets = [16, 64, 128]
    score_fns: dict[str, Callable[[], object]] = {}
    if not args.quick:
        score_fns["exact (512 channels)"] = lambda: exact(x1)
    for k in budgets:
        budgeted = ScoreCAM(model, "layer4", batch_size=64, top_k=k)
        score_fns[f"top_k={k}"] = lambda budgeted=budgeted: budgeted(x1)
    t_forward = measure({"forward": lambda: model(x1)}, args.repeats, args.warmup)["forward"]
    t = measure(score_fns, args.score_repeats, 1 if not args.quick else 0)
    reference = exact(x1)
    exact_time = t.get("exact (512 channels)")
    rows = [("no_grad forward, batch 1", t_forward, None, "")]
    for name, seconds in t.items():
        note = f"{seconds / t_forward:.0f} forwards"
        if exact_time is not None and name != "exact (512 channels)":
            note += f", {exact_time / seconds:.1f}x faster than exact"
        if name.startswith("top_k"):
            maps = ScoreCAM(model, "layer4", batch_size=64, top_k=int(name.split("=")[1]))(x1)
            note += (
                f"; agreement with exact: Pearson {float(pearson(maps, reference)[0]):.3f}, "
                f"Spearman {float(spearman(maps, reference)[0]):.3f}"
            )
        rows.append((f"ScoreCAM {name}", seconds, None, note))
    table(rows, "-")


if __name__ == "__main__":
    main()
