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
  and how to end them cleanly;
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

**To run this page yourself**, download its zip (at the end of the page): it
holds this script and the two files it needs,
:download:`_ddp_worker.py </../examples/06_pytorch_uses_hooks/_ddp_worker.py>`,
the code that each process runs, and
:download:`_launch.py </../examples/06_pytorch_uses_hooks/_launch.py>`,
which starts the processes. Keep the three files in one folder.
"""

# %%
# Two processes on one machine
# ----------------------------
#
# Each process (a *rank*) runs ``_ddp_worker.py`` with its rank, the number of
# ranks and a free TCP port on ``127.0.0.1`` where the ranks meet.
# ``run_ranks`` from ``_launch.py`` starts them and returns what each one
# printed, a JSON report; this page prints the reports in rank order, so the
# output is the same on every run. A deadline bounds the run: a rank still
# running after it, or after another rank failed, is killed, and
# ``run_ranks`` raises an error (with the messages of the rank that failed).

import torch
from _launch import run_ranks

print("torch", torch.__version__)
reports, processes = run_ranks("_ddp_worker.py", world_size=2)
print("ranks that reported:", len(reports))
print("processes still running:", sum(process.poll() is None for process in processes))


def show(section):
    for rank, report in enumerate(reports):
        for line in report[section]:
            print(f"rank {rank}: {line}")


# %%
# Every rank runs the worker's ``main``: it joins the process group, runs the
# sections below one after the other and tears the group down (see *A clean
# exit* below).
#
# .. literalinclude:: /../examples/06_pytorch_uses_hooks/_ddp_worker.py
#    :pyobject: main
#
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
# DDP groups gradients into *buckets* and, as soon as every gradient of a
# bucket is ready, averages the bucket across ranks with an all-reduce. ``ddp_model.register_comm_hook(state,
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
# index, its size and its parameters) and then averages it as DDP does by
# default: divide by the number of ranks, then all-reduce (a sum over the
# ranks). The tiny ``bucket_cap_mb`` makes DDP use several buckets even for
# this small model.
#
# .. literalinclude:: /../examples/06_pytorch_uses_hooks/_ddp_worker.py
#    :pyobject: logging_comm_hook

show("logging_comm_hook")

# %%
# In the first step DDP used one bucket for all 212 values. That is how this
# torch (2.14, printed at the top) lays out the first step when
# ``find_unused_parameters`` keeps its default, ``False``: DDP does not know
# yet in which order the gradients become ready, so it gives the first
# layout no size limit at all (``sys.maxsize``). During that step it records
# the order, and from the second step on it uses buckets in that order (last
# layer first), each closed as soon as it holds 314 bytes or more (our
# ``bucket_cap_mb=0.0003``): two buckets, of 84 and 128 values, that is 336
# and 512 bytes. Every rank logged the same buckets, and the gradients agree.
# Other settings lay out the first step differently (exercise 4).
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
# from autograd itself, not from module backward hooks (the backward columns
# above are 0): a tensor hook on each module's output gathers the parameters
# again before their gradients are computed, and a custom autograd function
# on the module's input reduce-scatters the gradients once they are.
#
# A clean exit
# ------------
#
# ``destroy_process_group()`` removes the process group from
# ``torch.distributed``, but the group, with its gloo threads, lives on as
# long as some object still refers to it: a DDP model or an FSDP state caught
# in a reference cycle (until the garbage collector frees it), or FSDP's
# ``DeviceMesh``. In torch 2.14, DTensor's caches keep that mesh until the
# process ends, which is why ``fsdp2_hooks`` ends with ``release_groups``. A
# process that exits while the group's threads still run can abort after it
# has printed its report: a gloo thread that frees a finished collective must
# take Python's GIL, and a Python that is shutting down ends such a thread,
# which kills the process ("terminate called without an active exception").
# So the worker collects the garbage before it destroys the group, and checks
# with a weak reference that the group is gone:
#
# .. literalinclude:: /../examples/06_pytorch_uses_hooks/_ddp_worker.py
#    :pyobject: release_groups
#
# .. literalinclude:: /../examples/06_pytorch_uses_hooks/_ddp_worker.py
#    :pyobject: tear_down

show("tear_down")

# %%
# Both ranks freed the group before they exited: no thread of it was left to
# run while Python shut down.
#
# Summary
# -------
#
# - Distributed training on one CPU: start one process per rank, meet on a
#   free ``127.0.0.1`` port with the gloo backend, and always stop the
#   processes (a deadline and ``kill``).
# - End each rank cleanly: drop what holds the process group (collect the
#   garbage, release FSDP's mesh), then ``destroy_process_group()``.
# - Module hooks and tensor hooks fire on every rank; a tensor hook on a
#   parameter sees the local gradient, before DDP averages it.
# - ``register_comm_hook`` replaces DDP's all-reduce of each bucket: with a
#   built-in hook (``fp16_compress_hook``) or with your own function.
# - With ``find_unused_parameters=False``, DDP rebuilds its buckets after the
#   first step that communicates, in the order the gradients became ready.
# - FSDP2 gathers a module's parameters in a forward pre-hook and frees them
#   in a forward hook; outside these two hooks each rank holds only its
#   shard.
#
# Exercises
# ---------
#
# 1. In ``logging_comm_hook``, run the backward pass of step 0 inside
#    ``with ddp_model.no_sync():`` and take three steps. Which buckets does
#    each step log?
# 2. Use ``default_hooks.bf16_compress_hook`` instead of
#    ``fp16_compress_hook``. Is the change of the averaged gradient larger or
#    smaller?
# 3. Call ``fully_shard(model[0], mesh=mesh, reshard_after_forward=False)``
#    in ``fsdp2_hooks``. What does the line "after FSDP's hook" show now?
# 4. In ``logging_comm_hook``, pass ``find_unused_parameters=True`` to
#    ``DDP``. Which buckets do the steps log now?
#
# .. dropdown:: Solutions
#
#    .. code-block:: python
#
#       # One rank is enough for these answers: they run on a one-rank gloo
#       # group in this process (for two ranks, change _ddp_worker.py)
#       import math
#
#       import torch
#       import torch.distributed as dist
#       from _ddp_worker import all_gradients, describe, local_batch, make_model
#       from _ddp_worker import release_groups, tear_down
#       from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
#       from torch.distributed.device_mesh import init_device_mesh
#       from torch.distributed.fsdp import fully_shard
#       from torch.nn.parallel import DistributedDataParallel as DDP
#
#       dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
#
#
#       def bucket_sizes(no_sync_in_step_0=False, **ddp_options):
#           """The sizes of the buckets DDP communicates in steps 0, 1 and 2."""
#           ddp_model = DDP(make_model(), bucket_cap_mb=0.0003, **ddp_options)
#           steps = []
#
#           def log_size(state, bucket):
#               steps[-1].append(bucket.buffer().numel())
#               future = dist.all_reduce(bucket.buffer(), async_op=True).get_future()
#               return future.then(lambda fut: fut.value()[0])
#
#           ddp_model.register_comm_hook(state=None, hook=log_size)
#           for step in range(3):
#               steps.append([])
#               ddp_model.zero_grad()
#               if no_sync_in_step_0 and step == 0:
#                   with ddp_model.no_sync():
#                       ddp_model(local_batch(0)).sum().backward()
#               else:
#                   ddp_model(local_batch(0)).sum().backward()
#           return ", ".join(f"step {step}: {sizes}" for step, sizes in enumerate(steps))
#
#
#       # 1. no bucket in step 0; the rebuilt buckets only from step 2
#       print("no_sync() in step 0 ->", bucket_sizes(no_sync_in_step_0=True))
#
#
#       # 2. bfloat16 changes the gradients more than float16
#       def largest_change(hook):
#           exact, compressed = make_model(), make_model()
#           DDP(exact)(local_batch(0)).sum().backward()
#           ddp_model = DDP(compressed)
#           ddp_model.register_comm_hook(state=None, hook=hook)
#           ddp_model(local_batch(0)).sum().backward()
#           return (all_gradients(compressed) - all_gradients(exact)).abs().max().item()
#
#
#       fp16 = largest_change(default_hooks.fp16_compress_hook)
#       bf16 = largest_change(default_hooks.bf16_compress_hook)
#       print(f"largest change: float16 {fp16:.1e}, bfloat16 {bf16:.1e} ({bf16 / fp16:.0f} times)")
#       bits = {t: 1 - round(math.log2(torch.finfo(t).eps)) for t in (torch.float16, torch.bfloat16)}
#       print(f"significant bits: float16 {bits[torch.float16]}, bfloat16 {bits[torch.bfloat16]}")
#
#
#       # 3. the full weight stays gathered after forward, for the backward pass
#       def weight_after_fsdp_hook(reshard_after_forward):
#           mesh = init_device_mesh("cpu", (1,))
#           model, seen = make_model(), []
#           fully_shard(model[0], mesh=mesh, reshard_after_forward=reshard_after_forward)
#           fully_shard(model, mesh=mesh)
#           with model[0].register_forward_hook(lambda m, a, out: seen.append(describe(m.weight))):
#               model(local_batch(0)).sum().backward()
#           release_groups(mesh)
#           return seen[0]
#
#
#       for reshard in (True, False):
#           print(f"reshard_after_forward={reshard} -> {weight_after_fsdp_hook(reshard)}")
#
#       # 4. three buckets from step 0 on, never rebuilt
#       print("find_unused_parameters=True ->", bucket_sizes(find_unused_parameters=True))
#       print("process group freed:", tear_down())
#
#    **Answers**
#
#    1. No bucket in step 0: under ``no_sync()`` DDP neither communicates nor
#       calls the hook, and each rank keeps its local gradient (without the
#       ``zero_grad()`` of the next step, the next synced backward pass would
#       add to it and average the sum). Step 1 logs the single bucket of 212
#       values, and only step 2 the rebuilt ones, of 84 and 128: DDP records
#       the order in which the gradients become ready only in a step that
#       communicates.
#    2. Larger: the largest change is 6.5e-03 with bfloat16 against 6.4e-04
#       with float16, 10 times as much. bfloat16 keeps the range of float32
#       but only 8 significant bits, against 11 for float16.
#    3. A full ``Parameter`` of shape (16, 8) instead of a ``DTensor`` shard:
#       with ``reshard_after_forward=False`` FSDP keeps the gathered weight
#       after the forward pass, so that the backward pass need not gather it
#       again (more memory, less communication).
#    4. Three buckets, of 4, 80 and 128 values, in step 0 and in every step
#       after it: with ``find_unused_parameters=True`` this torch caps the
#       buckets from the first step on (cut along ``model.parameters()``, then
#       used last bucket first) and never rebuilds them, because the set of
#       gradients that become ready may change from one step to the next.
