"""Throughput of CAM calls from 1, 2 and 4 threads sharing one model.

Run: ``python benchmarks/bench_threads.py`` (``--calls 8`` for a short run).

ResNet-18 (random weights, eval mode), one 224 x 224 image per call, target
layer ``layer4``; each thread makes its share of ``--calls`` calls, cycling
through Grad-CAM, Grad-CAM++, Layer-CAM and Eigen-CAM on shared objects. Each
request thread uses ``--intra`` intra-op threads (``torch.set_num_threads``),
as a service would size them to the cores. Prints calls per second and the
speed-up over one thread, and checks that every map equals the sequential one
(the hooks of a call act only on its own forward pass).
"""

from __future__ import annotations

import argparse
import os
import threading
import time

import torch
import torchvision

from hooks_tutorial import count_hooks
from hooks_tutorial.cam import EigenCAM, GradCAM, GradCAMPlusPlus, LayerCAM


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=24, help="calls per thread count")
    parser.add_argument("--intra", type=int, default=1, help="torch.set_num_threads")
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--threads", type=int, nargs="*", default=[1, 2, 4])
    args = parser.parse_args()

    torch.set_num_threads(args.intra)
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None).eval()
    methods = [
        GradCAM(model, "layer4"),
        GradCAMPlusPlus(model, "layer4"),
        LayerCAM(model, "layer4"),
        EigenCAM(model, "layer4"),
    ]
    inputs = [
        torch.randn(1, 3, args.size, args.size, generator=torch.Generator().manual_seed(i))
        for i in range(args.calls)
    ]
    jobs = [(methods[i % len(methods)], inputs[i]) for i in range(args.calls)]
    expected = [method(x) for method, x in jobs]  # also the warm-up
    print(
        f"torch {torch.__version__}, {os.cpu_count()} CPUs, {args.intra} intra-op thread(s) "
        f"per request thread, ResNet-18 layer4, {args.calls} calls of 1 x 3 x {args.size} x "
        f"{args.size}; load average {os.getloadavg()[0]:.1f}\n"
    )
    print(f"{'threads':>7} {'seconds':>8} {'calls/s':>8} {'speed-up':>9} {'equal':>6}")
    base = 0.0
    for n in args.threads:
        shares = [list(range(i, args.calls, n)) for i in range(n)]
        equal = [True] * args.calls

        def work(share: list[int], equal: list[bool] = equal) -> None:
            torch.set_num_threads(args.intra)
            for i in share:
                method, x = jobs[i]
                equal[i] = torch.equal(method(x), expected[i])

        threads = [threading.Thread(target=work, args=(share,)) for share in shares]
        start = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        seconds = time.perf_counter() - start
        rate = args.calls / seconds
        base = base or rate
        print(f"{n:7d} {seconds:8.2f} {rate:8.2f} {rate / base:9.2f} {all(equal)!s:>6}")
    print(f"\nhooks left on the model: {count_hooks(model).total}")
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
