# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""The solutions of the exercises of ``plot_30_distributed_data_parallel.py``, on every rank.

The page starts one copy of this script per rank, as it does ``_ddp_worker.py``:
``run_ranks("_ddp_solutions.py")`` runs ``python _ddp_solutions.py RANK
WORLD_SIZE PORT REPORT``. Each copy joins the process group, runs the four
solutions below one after the other with ``_ddp_worker.main``, tears the group
down and writes its report to the file REPORT. Keep this file next to
``_ddp_worker.py``.
"""

from __future__ import annotations

import math

import torch
import torch.distributed as dist
from _ddp_worker import (
    all_gradients,
    describe,
    layout,
    local_batch,
    main,
    make_model,
    release_groups,
)
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.nn.parallel import DistributedDataParallel as DDP


def three_steps(ddp_model, batch):
    """Three training steps; step 0, its forward and backward passes, under ``no_sync()``."""
    for step in range(3):
        ddp_model.zero_grad()
        if step == 0:
            with ddp_model.no_sync():  # no communication in this step
                ddp_model(batch).sum().backward()
        else:
            ddp_model(batch).sum().backward()


def three_synced_steps(ddp_model, batch):
    for _ in range(3):
        ddp_model.zero_grad()
        ddp_model(batch).sum().backward()


def bucket_sizes(rank, take_steps, **ddp_options):
    """The sizes of the buckets DDP communicates in each step of ``take_steps``."""
    ddp_model = DDP(make_model(), bucket_cap_mb=0.0003, **ddp_options)
    steps = []

    def log_size(state, bucket):
        steps[-1].append(bucket.buffer().numel())
        buffer = bucket.buffer().div_(dist.get_world_size())
        future = dist.all_reduce(buffer, async_op=True).get_future()
        return future.then(lambda fut: fut.value()[0])

    ddp_model.register_comm_hook(state=None, hook=log_size)
    # each forward pass starts a step: a new list of bucket sizes
    with ddp_model.module.register_forward_pre_hook(lambda module, args: steps.append([])):
        take_steps(ddp_model, local_batch(rank))
    return steps


def no_sync_in_step_0(rank, log):
    steps = bucket_sizes(rank, three_steps)
    for step, sizes in enumerate(steps):
        log(f"step {step}: buckets of {sizes} values")
    return steps


def largest_change(rank, hook):
    """The largest change that ``hook`` makes to the averaged gradients."""
    exact, compressed = make_model(), make_model()
    ddp_exact = DDP(exact)  # keep the wrapper: without it, backward does not average
    ddp_exact(local_batch(rank)).sum().backward()
    ddp_compressed = DDP(compressed)
    ddp_compressed.register_comm_hook(state=None, hook=hook)
    ddp_compressed(local_batch(rank)).sum().backward()
    return (all_gradients(compressed) - all_gradients(exact)).abs().max().item()


def bf16_compress_hook(rank, log):
    fp16 = largest_change(rank, default_hooks.fp16_compress_hook)
    bf16 = largest_change(rank, default_hooks.bf16_compress_hook)
    log(f"largest change: float16 {fp16:.1e}, bfloat16 {bf16:.1e}")
    log(f"bfloat16 changes the gradients more: {bf16 > fp16}")
    bits = {t: 1 - round(math.log2(torch.finfo(t).eps)) for t in (torch.float16, torch.bfloat16)}
    log(f"significant bits: float16 {bits[torch.float16]}, bfloat16 {bits[torch.bfloat16]}")
    return {"float16": fp16, "bfloat16": bf16}


def weight_after_fsdp_hook(rank, reshard_after_forward):
    """The weight of layer 0 right after FSDP's forward hook."""
    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    model, seen = make_model(), []
    fully_shard(model[0], mesh=mesh, reshard_after_forward=reshard_after_forward)
    fully_shard(model, mesh=mesh)
    with model[0].register_forward_hook(lambda m, args, out: seen.append(m.weight)):
        model(local_batch(rank)).sum().backward()
    release_groups(mesh)
    return seen[0]


def reshard_after_forward(rank, log):
    found = {}
    for reshard in (True, False):
        weight = weight_after_fsdp_hook(rank, reshard)
        found[str(reshard)] = layout(weight)
        log(f"reshard_after_forward={reshard}: after FSDP's hook: {describe(weight)}")
    return found


def find_unused_parameters(rank, log):
    steps = bucket_sizes(rank, three_synced_steps, find_unused_parameters=True)
    for step, sizes in enumerate(steps):
        log(f"step {step}: buckets of {sizes} values")
    return steps


SOLUTIONS = [no_sync_in_step_0, bf16_compress_hook, reshard_after_forward, find_unused_parameters]

if __name__ == "__main__":
    main(SOLUTIONS)
