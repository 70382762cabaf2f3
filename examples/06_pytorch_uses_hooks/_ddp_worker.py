# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""One rank of the two-process run of ``plot_30_distributed_data_parallel.py``.

The page starts one copy of this script per rank with ``run_ranks`` from
``_launch.py``: ``python _ddp_worker.py RANK WORLD_SIZE PORT REPORT``. Each
copy joins the process group, runs the sections below one after the other,
tears the group down, and writes its report as JSON to the file REPORT: what
this rank saw, section by section (the lines it logged, and under ``"values"``
what each section returned, for the page's checks). ``_ddp_solutions.py`` runs the exercises' solutions the
same way. Keep this file next to the page's script.
"""

from __future__ import annotations

import gc
import json
import sys
import weakref
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor
from torch.nn.parallel import DistributedDataParallel as DDP

import hooks_tutorial as ht


def make_model():
    torch.manual_seed(0)  # same initial weights on every rank
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


def local_batch(rank):
    generator = torch.Generator().manual_seed(100 + rank)  # different data per rank
    return torch.randn(4, 8, generator=generator)


def gather(tensor):
    """The tensor of every rank, in rank order."""
    tensors = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(tensors, tensor)
    return tensors


def all_gradients(model):
    return torch.cat([p.grad.flatten() for p in model.parameters()])


def module_hooks_on_every_rank(rank, log):
    model = make_model()
    ddp_model = DDP(model)
    hooks = ht.count_hooks(ddp_model).total
    log(f"hooks on the wrapped model: {hooks}")
    means = []

    def forward_hook(module, args, output):
        means.append(args[0].mean().item())
        log(f"forward hook on layer 0: input batch mean {means[-1]:+.4f}")

    with model[0].register_forward_hook(forward_hook):
        ddp_model(local_batch(rank)).sum().backward()
    return {"hooks": hooks, "means": means}


def local_gradient_before_all_reduce(rank, log):
    model = make_model()
    ddp_model = DDP(model)
    seen = {}

    def tensor_hook(grad):
        seen["local"] = grad.clone()

    with model[2].weight.register_hook(tensor_hook):
        ddp_model(local_batch(rank)).sum().backward()
    local, final = seen["local"], model[2].weight.grad
    log(f"tensor hook saw a gradient of norm {local.norm():.4f}")
    log(f"weight.grad after backward has norm {final.norm():.4f}")
    mean_of_local = torch.stack(gather(local)).mean(dim=0)
    is_mean = torch.allclose(mean_of_local, final)
    log(f"weight.grad equals the mean of the local gradients: {is_mean}")
    same = all(torch.equal(final, g) for g in gather(final))
    log(f"weight.grad equal on all ranks: {same}")
    return {
        "local": local.norm().item(),
        "final": final.norm().item(),
        "mean": is_mean,
        "same": same,
    }


def builtin_comm_hook(rank, log):
    gradients = {}
    for name, hook in [("all-reduce", None), ("fp16", default_hooks.fp16_compress_hook)]:
        model = make_model()
        ddp_model = DDP(model)
        if hook is not None:
            ddp_model.register_comm_hook(state=None, hook=hook)
        ddp_model(local_batch(rank)).sum().backward()
        gradients[name] = all_gradients(model)
    difference = (gradients["fp16"] - gradients["all-reduce"]).abs().max().item()
    log(f"largest change made by fp16 compression: {difference:.1e}")
    same = all(torch.equal(gradients["fp16"], g) for g in gather(gradients["fp16"]))
    log(f"gradients equal on all ranks with fp16_compress_hook: {same}")
    largest = gradients["all-reduce"].abs().max().item()
    return {"change": difference, "largest gradient": largest, "same": same}


def logging_comm_hook(rank, log):
    model = make_model()
    ddp_model = DDP(model, bucket_cap_mb=0.0003)  # tiny buckets, to see several
    log(f"bucket size limit: {ddp_model.bucket_bytes_cap} bytes")
    names = {param: name for name, param in model.named_parameters()}
    steps = []

    def log_buckets(state, bucket):
        params = [names[p] for p in bucket.parameters()]
        steps[-1].append([bucket.index(), bucket.buffer().numel(), params])
        log(f"  bucket {bucket.index()}: {bucket.buffer().numel()} values ({', '.join(params)})")
        buffer = bucket.buffer().div_(dist.get_world_size())
        future = dist.all_reduce(buffer, async_op=True).get_future()
        return future.then(lambda fut: fut.value()[0])

    ddp_model.register_comm_hook(state=None, hook=log_buckets)
    for step in range(2):
        log(f"step {step}:")
        steps.append([])
        ddp_model.zero_grad()
        ddp_model(local_batch(rank)).sum().backward()
    same = all(torch.equal(all_gradients(model), g) for g in gather(all_gradients(model)))
    log(f"gradients equal on all ranks: {same}")
    return {"limit": ddp_model.bucket_bytes_cap, "steps": steps, "same": same}


def layout(weight):
    """The tensor's kind, its shape and the shape of the part this rank holds."""
    kind = "DTensor" if isinstance(weight, DTensor) else type(weight).__name__
    local = weight.to_local() if isinstance(weight, DTensor) else weight
    return kind, tuple(weight.shape), tuple(local.shape)


def describe(weight):
    kind, shape, local_shape = layout(weight)
    return f"{kind}, shape {shape}, this rank holds {local_shape}"


def fsdp2_hooks(rank, log):
    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    model = make_model()
    fully_shard(model[0], mesh=mesh)
    fully_shard(model[2], mesh=mesh)
    fully_shard(model, mesh=mesh)
    counts = ht.count_hooks(model)
    for line in str(counts).splitlines():
        log(line)
    names = {}
    for name, module in model.named_modules():
        pre = [hook.__qualname__ for hook in module._forward_pre_hooks.values()]
        post = [hook.__qualname__ for hook in module._forward_hooks.values()]
        if pre or post:
            names[name or "(model)"] = [pre, post]
            log(f"{name or '(model)'}: pre-hooks {pre}, hooks {post}")

    layer = model[0]
    log(f"before forward: weight is a {describe(layer.weight)}")
    seen = {"before forward": layout(layer.weight)}

    def show_weight(moment):
        def hook(module, *args):
            seen[moment] = layout(module.weight)
            log(f"{moment + ':':23} {describe(module.weight)}")

        return hook

    def show_autograd_hooks(module, args, output):
        tensor_hooks = [hook.__qualname__ for hook in output._backward_hooks.values()]
        seen["layer 2"] = [tensor_hooks, type(args[0].grad_fn).__name__]
        log(f"layer 2's output has the tensor hooks {tensor_hooks}")
        log(f"layer 2's input comes from {type(args[0].grad_fn).__name__}")

    hooks = [
        layer.register_forward_pre_hook(show_weight("before FSDP's pre-hook"), prepend=True),
        layer.register_forward_pre_hook(show_weight("after FSDP's pre-hook")),
        layer.register_forward_hook(show_weight("before FSDP's hook"), prepend=True),
        layer.register_forward_hook(show_weight("after FSDP's hook")),
        model[2].register_forward_hook(show_autograd_hooks),
    ]
    model(local_batch(rank)).sum().backward()
    log(f"after backward: weight.grad is a {describe(layer.weight.grad)}")
    seen["gradient after backward"] = layout(layer.weight.grad)
    for hook in hooks:
        hook.remove()
    release_groups(mesh)
    return {"counts": {name: list(c) for name, c in counts.items()}, "hooks": names, **seen}


def release_groups(mesh):
    """Drop the mesh's references to its process groups, before ``tear_down``.

    In torch 2.14, DTensor's caches keep a ``DeviceMesh`` alive until the
    process ends (the first of equal meshes: later ones reuse its entries), and
    the mesh holds its process groups (in a registry that only ``torch.compile``
    reads): ``destroy_process_group`` could not free them. A torch whose mesh
    has no such registry (torch 2.9) keeps no group in it: there is nothing to
    release.
    """
    getattr(mesh, "_pg_registry", {}).clear()


def tear_down():
    """Destroy the process group; return True if it is gone, with its threads."""
    group = weakref.ref(dist.group.WORLD)
    gc.collect()  # DDP models and FSDP states caught in reference cycles hold it
    dist.destroy_process_group()
    return group() is None


SECTIONS = [
    module_hooks_on_every_rank,
    local_gradient_before_all_reduce,
    builtin_comm_hook,
    logging_comm_hook,
    fsdp2_hooks,
]


def main(sections=SECTIONS):
    rank, world_size, port = (int(arg) for arg in sys.argv[1:4])
    report_file = Path(sys.argv[4])  # where run_ranks reads this rank's report
    torch.set_num_threads(1)  # the ranks share this machine's cores
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world_size,
        timeout=timedelta(seconds=60),  # a stuck collective fails instead of hanging
    )
    report, values = {}, {}
    try:
        for section in sections:
            log = report.setdefault(section.__name__, []).append
            values[section.__name__] = section(rank, log)
        dist.barrier()  # no rank tears down while another still communicates
    finally:
        gc.collect()
        meshes = sum(isinstance(obj, DeviceMesh) for obj in gc.get_objects())
        freed = tear_down()
    report["tear_down"] = [
        f"device meshes still alive after the sections: {meshes}",
        f"process group freed by destroy_process_group: {freed}",
    ]
    report["values"] = {**values, "tear_down": {"meshes": meshes, "freed": freed}}
    report_file.write_text(json.dumps(report))


if __name__ == "__main__":
    main()
