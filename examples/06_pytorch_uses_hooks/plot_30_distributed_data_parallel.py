# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
Distributed data parallel: hooks on two processes
=================================================

.. index::
   ! FSDP
   ! DDP
   ! DistributedDataParallel
   ! register_comm_hook
   ! 通信钩子

When one machine is not enough, ``DistributedDataParallel`` (DDP) runs a copy
of the model in every process, each on its own part of the batch, and
averages the gradients between them after every backward pass. FSDP goes
further and splits the parameters themselves between the processes. Both
rest on hooks: DDP lets you replace its gradient communication with a
*communication hook*, and FSDP2 gathers and frees parameters in forward
pre-hooks and forward hooks. This page starts two processes on this
machine's CPU and prints what each of them saw.

.. rubric:: What you will learn
   :heading-level: 2

- how to start two processes that train together on one CPU (gloo backend),
  without leaving any process behind;
- that module hooks fire in every process, and that a tensor hook on a
  parameter sees the local gradient, before the gradients are averaged;
- how ``register_comm_hook`` replaces DDP's all-reduce, with a built-in hook
  (``fp16_compress_hook``) and with your own hook that logs the buckets;
- which hooks FSDP2's ``fully_shard`` registers, and what the parameters look
  like before and after them.

**Prerequisites**: :doc:`/auto_examples/02_module_hooks/plot_06_forward_pre_hooks`
and :doc:`/auto_examples/03_tensor_hooks/plot_11_parameter_hooks`.

**Needs PyTorch 2.6 or later**: FSDP2's ``fully_shard`` became public in
``torch.distributed.fsdp`` in that release.

**To run this page yourself**, put
:download:`_ddp_worker.py </../examples/06_pytorch_uses_hooks/_ddp_worker.py>`
in the same folder as this script and start the script from that folder:
the code that each process runs lives in that file.
"""

# %%
# Two processes on one machine
# ----------------------------
#
# Each process (a *rank*) runs ``_ddp_worker.py`` with its rank, the number of
# ranks and a TCP port on ``127.0.0.1`` where they meet. The port is a free
# one, chosen at run time. The ranks print what they saw as one JSON line;
# this page collects both and prints them in rank order, so the output is the
# same on every run. A deadline guarantees that the page never hangs: any
# rank still running after it is killed, and the page fails with a clear
# error. A rank that dies from a signal (a crash inside C++ code, for
# example) is different: like ``torchrun --max-restarts=1``, the page then
# starts all ranks once more, and says so.

import json
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import torch

print("torch", torch.__version__)
WORKER = Path("_ddp_worker.py")
WORLD_SIZE = 2
TIMEOUT = 240  # seconds, generous for a busy machine


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))  # port 0: the system picks a free one
        return probe.getsockname()[1]


def start_ranks(port, logs):
    return [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(rank), str(WORLD_SIZE), str(port)],
            stdout=logs[rank][0],
            stderr=logs[rank][1],
            text=True,
        )
        for rank in range(WORLD_SIZE)
    ]


def wait_or_stop(ranks):
    """Wait until all ranks exit, one fails, or the deadline; then kill the rest."""
    deadline = time.monotonic() + TIMEOUT
    try:
        while any(rank.poll() is None for rank in ranks) and time.monotonic() < deadline:
            if any(rank.poll() not in (None, 0) for rank in ranks):
                break  # one rank failed: the other would wait for it
            time.sleep(0.1)
    finally:
        stopped = [rank.poll() is None for rank in ranks]
        for rank in ranks:
            if rank.poll() is None:
                rank.kill()  # no process left behind
            rank.wait()
    return stopped


def run_once():
    with ExitStack() as files:
        logs = [
            [files.enter_context(tempfile.TemporaryFile(mode="w+")) for _ in ("out", "err")]
            for _ in range(WORLD_SIZE)
        ]
        ranks = start_ranks(free_port(), logs)
        stopped = wait_or_stop(ranks)
        for log in (log for pair in logs for log in pair):
            log.seek(0)
        texts = [[log.read() for log in pair] for pair in logs]
    return ranks, stopped, texts


def run_ranks(restarts=1):
    if not WORKER.is_file():
        msg = f"{WORKER} not found in {Path.cwd()}: put it next to this script and run from there"
        raise FileNotFoundError(msg)
    ranks, stopped, texts = run_once()
    for _ in range(restarts):
        # a negative exit code: the rank died from a signal (a crash, not an exception)
        killed = [r for r, p in enumerate(ranks) if p.returncode < 0 and not stopped[r]]
        if not killed:
            break
        print(f"rank {killed[0]} died from signal {-ranks[killed[0]].returncode}: starting again")
        ranks, stopped, texts = run_once()
    for rank, process in enumerate(ranks):
        if process.returncode != 0 and not stopped[rank]:
            msg = f"rank {rank} failed with exit code {process.returncode}:\n{texts[rank][1]}"
            raise RuntimeError(msg[-3000:])
    if any(stopped):
        msg = f"the ranks did not finish within {TIMEOUT} s and were stopped (is the machine busy?)"
        raise RuntimeError(msg)
    return [json.loads(out) for out, _ in texts], ranks


reports, processes = run_ranks()
print("ranks that reported:", len(reports))
print("processes still running:", sum(process.poll() is None for process in processes))


def show(section):
    for rank, report in enumerate(reports):
        for line in report[section]:
            print(f"rank {rank}: {line}")


# %%
# Module hooks fire on every rank
# -------------------------------
#
# Each rank builds the same model (same seed), wraps it in ``DDP`` and
# registers a forward hook on its first layer. Each rank feeds its own batch.
#
# .. literalinclude:: /../examples/06_pytorch_uses_hooks/_ddp_worker.py
#    :pyobject: module_hooks_on_every_rank

show("module_hooks_on_every_rank")

# %%
# The hook fired once on each rank, and each saw a different batch: the model
# is replicated, and so are its hooks. Wrapping the model in ``DDP`` added no
# module hook of its own: DDP learns that a gradient is ready from autograd
# hooks inside its C++ reducer, which ``count_hooks`` does not see.
#
# A tensor hook sees the local gradient
# -------------------------------------
#
# A tensor hook on a parameter runs when autograd computes that parameter's
# gradient on this rank, before DDP averages the gradients of all ranks.
#
# .. literalinclude:: /../examples/06_pytorch_uses_hooks/_ddp_worker.py
#    :pyobject: local_gradient_before_all_reduce

show("local_gradient_before_all_reduce")

# %%
# The two hooks saw different gradients, one per batch; after ``backward()``
# both ranks hold the same ``weight.grad``, the mean of the two local
# gradients. So a hook that clips or logs gradients sees each rank's own
# gradient: to act on the averaged one, act after ``backward()`` (or in a
# communication hook).
#
# Communication hooks replace the all-reduce
# ------------------------------------------
#
# DDP groups gradients into *buckets* and, when a bucket is full, averages it
# across ranks with an all-reduce. ``ddp_model.register_comm_hook(state,
# hook)`` replaces that step: ``hook(state, bucket)`` receives the bucket and
# returns a ``Future`` of the averaged tensor. PyTorch ships a few, such as
# ``fp16_compress_hook``, which halves the traffic by sending float16.
#
# .. literalinclude:: /../examples/06_pytorch_uses_hooks/_ddp_worker.py
#    :pyobject: builtin_comm_hook

show("builtin_comm_hook")

# %%
# The compressed average differs from the exact one by rounding only, and
# all ranks still agree, so the replicas stay identical.
#
# Your own communication hook
# ---------------------------
#
# A communication hook is a plain function. This one logs each bucket (its
# index, its size and its parameters) and then does what the default does:
# divide by the number of ranks and all-reduce. The tiny ``bucket_cap_mb``
# makes DDP use several buckets even for this small model.
#
# .. literalinclude:: /../examples/06_pytorch_uses_hooks/_ddp_worker.py
#    :pyobject: logging_comm_hook

show("logging_comm_hook")

# %%
# In the first step DDP used one bucket for all 212 values. It does not know
# yet in which order the gradients become ready, so it starts with one
# initial layout; during that step it records the order, and from the second
# step on it uses buckets in that order (last layer first), capped at the
# size we asked for: two buckets, of 84 and 128 values. Every rank logged the
# same buckets, and the gradients agree.
#
# FSDP2: parameters gathered in a pre-hook, freed in a hook
# ---------------------------------------------------------
#
# ``fully_shard`` (FSDP2) splits every parameter between the ranks: each rank
# keeps one half as a ``DTensor``. To run a layer, the full parameters must
# be gathered first and can be freed after. FSDP2 does both in module hooks.
# We list them, then add our own hooks on the first layer, before
# (``prepend=True``) and after FSDP's, to see the weight at each moment.
#
# .. literalinclude:: /../examples/06_pytorch_uses_hooks/_ddp_worker.py
#    :pyobject: fsdp2_hooks

show("fsdp2_hooks")

# %%
# Each sharded module got one forward pre-hook (``_pre_forward``, which
# all-gathers the parameters) and one forward hook (``_post_forward``, which
# frees them again). Between them the weight is a full ``Parameter`` of shape
# (16, 8); before and after, each rank holds only its (8, 8) half. After
# the backward pass, the gradient is sharded the same way: each rank keeps
# the (8, 8) half that belongs to its shard. FSDP2 drives its backward work
# from autograd hooks on tensors, not from module backward hooks: the
# backward columns above are 0.
#
# Summary
# -------
#
# - Distributed training on one CPU: start one process per rank, meet on a
#   free ``127.0.0.1`` port with the gloo backend, and always stop the
#   processes (a deadline and ``kill``).
# - Module hooks and tensor hooks fire on every rank; a tensor hook on a
#   parameter sees the local gradient, before DDP averages it.
# - ``register_comm_hook`` replaces DDP's all-reduce of each bucket: with a
#   built-in hook (``fp16_compress_hook``) or with your own function.
# - DDP rebuilds its buckets after the first step, in the order the
#   gradients become ready.
# - FSDP2 gathers a module's parameters in a forward pre-hook and frees them
#   in a forward hook; outside these two hooks each rank holds only its
#   shard.
#
# Exercises
# ---------
#
# 1. In ``logging_comm_hook``, run the backward pass of step 0 inside
#    ``with ddp_model.no_sync():``. How many buckets are logged in that step?
# 2. Use ``default_hooks.bf16_compress_hook`` instead of
#    ``fp16_compress_hook``. Is the change of the averaged gradient larger or
#    smaller?
# 3. Call ``fully_shard(model[0], mesh=mesh, reshard_after_forward=False)``
#    in ``fsdp2_hooks``. What does the line "after FSDP's hook" show now?
#
# .. dropdown:: Solutions
#
#    .. code-block:: python
#
#       # 1. none: under no_sync() DDP skips the communication (and the hook);
#       #    the gradients stay local and are averaged at the next synced step
#       with ddp_model.no_sync():
#           ddp_model(local_batch(rank)).sum().backward()
#
#       # 2. larger: bfloat16 keeps float32's range but only 8 bits of
#       #    precision, against 11 for float16
#       ddp_model.register_comm_hook(state=None, hook=default_hooks.bf16_compress_hook)
#
#       # 3. a full Parameter of shape (16, 8): the weight stays gathered after
#       #    forward, so backward need not gather it again (more memory, less
#       #    communication)
#       fully_shard(model[0], mesh=mesh, reshard_after_forward=False)
