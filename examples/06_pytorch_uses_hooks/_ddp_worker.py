# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""One rank of the two-process run of ``plot_30_distributed_data_parallel.py``.

The page starts one copy of this script per rank with ``run_ranks`` from
``_launch.py``: ``python _ddp_worker.py RANK WORLD_SIZE PORT``. Each copy joins
the process group, runs the sections below one after the other, tears the
group down, and prints one JSON line: what this rank saw, section by section.
Keep this file next to the page's script.
"""

from __future__ import annotations

import gc
import json
import sys
import weakref
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.distributed.device_mesh import init_device_mesh
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
    log(f"hooks on the wrapped model: {ht.count_hooks(ddp_model).total}")

    def forward_hook(module, args, output):
        log(f"forward hook on layer 0: input batch mean {args[0].mean():+.4f}")

    with model[0].register_forward_hook(forward_hook):
        ddp_model(local_batch(rank)).sum().backward()


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
    log(
        f"weight.grad equals the mean of the local gradients: {torch.allclose(mean_of_local, final)}"
    )
    log(f"weight.grad equal on all ranks: {all(torch.equal(final, g) for g in gather(final))}")


def builtin_comm_hook(rank, log):
    gradients = {}
    for name, hook in [("all-reduce", None), ("fp16", default_hooks.fp16_compress_hook)]:
        model = make_model()
        ddp_model = DDP(model)
        if hook is not None:
            ddp_model.register_comm_hook(state=None, hook=hook)
        ddp_model(local_batch(rank)).sum().backward()
        gradients[name] = all_gradients(model)
    difference = (gradients["fp16"] - gradients["all-reduce"]).abs().max()
    log(f"largest change made by fp16 compression: {difference:.1e}")
    same = all(torch.equal(gradients["fp16"], g) for g in gather(gradients["fp16"]))
    log(f"gradients equal on all ranks with fp16_compress_hook: {same}")


def logging_comm_hook(rank, log):
    model = make_model()
    ddp_model = DDP(model, bucket_cap_mb=0.0003)  # tiny buckets, to see several
    log(f"bucket size limit: {ddp_model.bucket_bytes_cap} bytes")
    names = {param: name for name, param in model.named_parameters()}

    def log_buckets(state, bucket):
        params = ", ".join(names[p] for p in bucket.parameters())
        log(f"  bucket {bucket.index()}: {bucket.buffer().numel()} values ({params})")
        buffer = bucket.buffer().div_(dist.get_world_size())
        future = dist.all_reduce(buffer, async_op=True).get_future()
        return future.then(lambda fut: fut.value()[0])

    ddp_model.register_comm_hook(state=None, hook=log_buckets)
    for step in range(2):
        log(f"step {step}:")
        ddp_model.zero_grad()
        ddp_model(local_batch(rank)).sum().backward()
    same = all(torch.equal(all_gradients(model), g) for g in gather(all_gradients(model)))
    log(f"gradients equal on all ranks: {same}")


def describe(weight):
    kind = "DTensor" if isinstance(weight, DTensor) else type(weight).__name__
    local = weight.to_local() if isinstance(weight, DTensor) else weight
    return f"{kind}, shape {tuple(weight.shape)}, this rank holds {tuple(local.shape)}"


def fsdp2_hooks(rank, log):
    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    model = make_model()
    fully_shard(model[0], mesh=mesh)
    fully_shard(model[2], mesh=mesh)
    fully_shard(model, mesh=mesh)
    for line in str(ht.count_hooks(model)).splitlines():
        log(line)
    for name, module in model.named_modules():
        pre = [hook.__qualname__ for hook in module._forward_pre_hooks.values()]
        post = [hook.__qualname__ for hook in module._forward_hooks.values()]
        if pre or post:
            log(f"{name or '(model)'}: pre-hooks {pre}, hooks {post}")

    layer = model[0]
    log(f"before forward: weight is a {describe(layer.weight)}")
    hooks = [
        layer.register_forward_pre_hook(
            lambda m, args: log(f"before FSDP's pre-hook: {describe(m.weight)}"), prepend=True
        ),
        layer.register_forward_pre_hook(
            lambda m, args: log(f"after FSDP's pre-hook:  {describe(m.weight)}")
        ),
        layer.register_forward_hook(
            lambda m, args, out: log(f"before FSDP's hook:     {describe(m.weight)}"),
            prepend=True,
        ),
        layer.register_forward_hook(
            lambda m, args, out: log(f"after FSDP's hook:      {describe(m.weight)}")
        ),
    ]
    model(local_batch(rank)).sum().backward()
    log(f"after backward: weight.grad is a {describe(layer.weight.grad)}")
    for hook in hooks:
        hook.remove()
    release_groups(mesh)


def release_groups(mesh):
    """Drop the mesh's references to its process groups, before ``tear_down``.

    In torch 2.14, DTensor's caches keep every ``DeviceMesh`` alive until the
    process ends, and the mesh holds its process groups (in a registry that
    only ``torch.compile`` reads): ``destroy_process_group`` could not free them.
    Older versions keep no group in the mesh: there is nothing to release.
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


def main():
    rank, world_size, port = (int(arg) for arg in sys.argv[1:4])
    torch.set_num_threads(1)  # the ranks share this machine's cores
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world_size,
        timeout=timedelta(seconds=60),  # a stuck collective fails instead of hanging
    )
    report = {}
    try:
        for section in SECTIONS:
            section(rank, report.setdefault(section.__name__, []).append)
        dist.barrier()  # no rank tears down while another still communicates
    finally:
        freed = tear_down()
    report["tear_down"] = [f"process group freed by destroy_process_group: {freed}"]
    print(json.dumps(report))


if __name__ == "__main__":
    main()
