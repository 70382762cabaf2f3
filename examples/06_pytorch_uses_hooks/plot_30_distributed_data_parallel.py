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

- that a tensor hook on a parameter sees the local gradient, before the
  gradients are averaged, and that module hooks fire in every process;
- how ``register_comm_hook`` replaces DDP's all-reduce, with a built-in hook
  (``fp16_compress_hook``) and with your own hook that logs the buckets;
- which hooks FSDP2's ``fully_shard`` registers, and what the parameters look
  like before and after them;
- how to start two processes that train together on one CPU (gloo backend),
  and how to end them cleanly.

**Prerequisites**: :doc:`/auto_examples/02_module_hooks/plot_06_forward_pre_hooks`
and :doc:`/auto_examples/03_tensor_hooks/plot_11_parameter_hooks`.

**Needs PyTorch 2.6 or later**: FSDP2's ``fully_shard`` became public in
``torch.distributed.fsdp`` in that release.

**To run this page yourself**, download its zip (at the end of the page): it
holds this script and the three files it needs,
:download:`_ddp_worker.py </../examples/06_pytorch_uses_hooks/_ddp_worker.py>`,
the code that each process runs,
:download:`_ddp_solutions.py </../examples/06_pytorch_uses_hooks/_ddp_solutions.py>`,
the solutions of the exercises, and
:download:`_launch.py </../examples/06_pytorch_uses_hooks/_launch.py>`,
which starts the processes. Keep the four files in one folder.
"""

# %%
# Two processes on one machine
# ----------------------------
#
# Each process (a *rank*) runs ``_ddp_worker.py``; the ranks meet on a free
# port of ``127.0.0.1``. ``run_ranks`` from ``_launch.py`` starts them and
# returns the report each one wrote to a file; this page prints the reports
# in rank order, so the output is the same on every run. A deadline bounds
# the run: a rank still running after it, or after another rank failed, is
# killed, and ``run_ranks`` raises an error.

import torch
from _launch import run_ranks

import hooks_tutorial as ht  # ht.exercises.check, for the exercises at the end

print("torch", torch.__version__)
reports, processes = run_ranks("_ddp_worker.py", world_size=2)
print("ranks that reported:", len(reports))
print("processes still running:", sum(process.poll() is None for process in processes))


def show(section, reports=reports):
    for rank, report in enumerate(reports):
        for line in report[section]:
            print(f"rank {rank}: {line}")


# sphinx_gallery_start_ignore
# "a rank still running after it ... is killed": none is left; both ranks reported
assert len(reports) == 2
assert all(process.poll() is not None for process in processes)
values = [report["values"] for report in reports]  # what each rank's sections returned
# "A deadline bounds the run: a rank still running after it, or after another rank
# failed, is killed, and run_ranks raises an error" (with the messages of the rank that
# failed); "the report each one wrote to a file": checked with tiny scripts that import
# nothing heavy
import tempfile
from pathlib import Path

with tempfile.TemporaryDirectory() as folder:
    scripts = {
        # a rank's report goes to the file named by its last argument; what it prints (gloo
        # prints a line when a rank has connected, in torch 2.9) is no part of it
        "report": "import json, pathlib, sys\nprint('[Gloo] Rank', sys.argv[1], 'is connected')\n"
        "pathlib.Path(sys.argv[4]).write_text(json.dumps({'rank': int(sys.argv[1])}))\n",
        "silent": "import sys\nprint('rank', sys.argv[1], 'reports nothing')\n",
        "fail": "import sys, time\nif sys.argv[1] == '1':\n    sys.exit('rank 1 breaks')\n"
        "time.sleep(60)\n",
        "hang": "import time\ntime.sleep(60)\n",
    }
    for name, code in scripts.items():
        (Path(folder) / f"{name}.py").write_text(code)
    ordered, ordered_processes = run_ranks(str(Path(folder) / "report.py"), world_size=3)
    assert ordered == [{"rank": 0}, {"rank": 1}, {"rank": 2}]
    assert [process.poll() for process in ordered_processes] == [0, 0, 0]
    failures = {}
    for name, timeout in (("fail", 60), ("hang", 1), ("silent", 60)):
        try:
            run_ranks(str(Path(folder) / f"{name}.py"), timeout=timeout)
        except RuntimeError as error:
            failures[name] = str(error)
assert failures["fail"].startswith("rank 1 failed with exit code 1:\nrank 1 breaks"), failures
assert failures["hang"].startswith("the ranks did not finish within 1 s and were stopped")
assert failures["silent"].startswith(
    "rank 0 exited without writing its report report-0.json:\nrank 0 reports nothing"
), failures
try:
    run_ranks("_missing_worker.py")
except FileNotFoundError as error:
    failures["missing"] = str(error)
assert "put it next to _launch.py" in failures["missing"], failures
# sphinx_gallery_end_ignore


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

# sphinx_gallery_start_ignore
# "The hook fired once on each rank, and each saw a different batch"; "Wrapping the model
# in DDP added no module hook of its own"
seen = [v["module_hooks_on_every_rank"] for v in values]
assert [s["hooks"] for s in seen] == [0, 0]
assert [len(s["means"]) for s in seen] == [1, 1]
assert seen[0]["means"] != seen[1]["means"]
# sphinx_gallery_end_ignore

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

# sphinx_gallery_start_ignore
# "The two hooks saw different gradients, one per batch; after backward() both ranks hold
# the same weight.grad, the mean of the two local gradients"
seen = [v["local_gradient_before_all_reduce"] for v in values]
assert seen[0]["local"] != seen[1]["local"]
assert seen[0]["final"] == seen[1]["final"]
assert all(s["final"] != s["local"] for s in seen)
assert all(s["mean"] and s["same"] for s in seen)
# sphinx_gallery_end_ignore

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
# bucket is ready, averages the bucket across ranks with an all-reduce.
# ``ddp_model.register_comm_hook(state, hook)`` replaces that step:
# ``hook(state, bucket)`` receives the bucket, a ``GradBucket`` whose
# ``buffer()`` holds its gradients in one flat tensor, and must return a
# ``Future`` of the averaged tensor (returning the tensor itself is an
# error). PyTorch ships a few such hooks, such as ``fp16_compress_hook``,
# which halves the traffic by sending float16.
#
# .. literalinclude:: /../examples/06_pytorch_uses_hooks/_ddp_worker.py
#    :pyobject: builtin_comm_hook

show("builtin_comm_hook")

# sphinx_gallery_start_ignore
# "differs from the exact one by rounding only, and all ranks still agree": float16
# rounds each rank's gradient and the sum to 11 significant bits, so the change stays
# below 2**-9 of the largest gradient (a bound with room: each rounding is at most
# 2**-11 of its value); 7.5e-04 against a largest gradient of 4.0 in the builds so far
for s in (v["builtin_comm_hook"] for v in values):
    assert 0 < s["change"] < 2**-9 * s["largest gradient"], s
    assert s["same"]
# sphinx_gallery_end_ignore

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

# sphinx_gallery_start_ignore
seen = [v["logging_comm_hook"] for v in values]
# "Every rank logged the same buckets, and the gradients agree."
assert seen[0] == seen[1]
assert seen[0]["same"]
# "314 bytes or more (our bucket_cap_mb=0.0003)"
assert seen[0]["limit"] == int(0.0003 * 1024 * 1024) == 314
step_0, step_1 = seen[0]["steps"]
# "In the first step DDP used one bucket for all 212 values."
assert 8 * 16 + 16 + 16 * 4 + 4 == 212
assert step_0 == [[0, 212, ["0.weight", "0.bias", "2.weight", "2.bias"]]], step_0
# "two buckets, of 84 and 128 values, that is 336 and 512 bytes", "last layer first",
# "each closed as soon as it holds 314 bytes or more": the first closed with 0.bias
assert step_1 == [[0, 84, ["2.bias", "2.weight", "0.bias"]], [1, 128, ["0.weight"]]], step_1
assert (84 * 4, 128 * 4) == (336, 512)
assert 84 * 4 >= 314 > (84 - 16) * 4
# "when find_unused_parameters keeps its default, False: ... it gives the first layout no
# size limit at all": one bucket for a model of 27 MB, larger than every limit DDP knows
# (ours, its first bucket's default of 1 MiB and its bucket_cap_mb default of 25 MiB);
# with find_unused_parameters=True the first layout has our limit (exercise 4). Checked on
# one rank, with public API only, in torch 2.9.1 and 2.14.1
no_limit = """
import gc, json, pathlib, sys
from datetime import timedelta
import torch, torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

rank, world_size, port = (int(arg) for arg in sys.argv[1:4])
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                        world_size=world_size, timeout=timedelta(seconds=60))
found = {}
for find_unused_parameters in (False, True):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(2600, 2600), nn.Linear(2600, 1))
    ddp_model = DDP(model, bucket_cap_mb=0.0003, find_unused_parameters=find_unused_parameters)
    sizes = found[str(find_unused_parameters)] = []

    def keep(state, bucket):
        sizes.append(bucket.buffer().numel())
        future = torch.futures.Future()
        future.set_result(bucket.buffer())  # one rank: its gradient is the average
        return future

    ddp_model.register_comm_hook(state=None, hook=keep)
    ddp_model(torch.randn(1, 2600)).sum().backward()


def not_a_future(state, bucket):
    found["bucket"] = type(bucket).__name__
    return bucket.buffer()


model = nn.Linear(2, 1)
ddp_model = DDP(model)
ddp_model.register_comm_hook(state=None, hook=not_a_future)
try:
    ddp_model(torch.randn(1, 2)).sum().backward()
    found["tensor returned"] = "no error"
except RuntimeError:
    found["tensor returned"] = "RuntimeError"
del model, ddp_model
gc.collect()
dist.destroy_process_group()
pathlib.Path(sys.argv[4]).write_text(json.dumps(found))
"""
with tempfile.TemporaryDirectory() as folder:
    (Path(folder) / "no_limit.py").write_text(no_limit)
    ([first_layouts], _) = run_ranks(str(Path(folder) / "no_limit.py"), world_size=1)
total = 2600 * 2600 + 2600 + 2600 + 1
assert total * 4 > 25 * 2**20 > 2**20 > 314
assert first_layouts["False"] == [total], first_layouts
assert first_layouts["True"] == [1, 2600, 2600, 2600 * 2600], first_layouts  # one per parameter
# "receives the bucket, a GradBucket ... and must return a Future ... (returning the tensor
# itself is an error)": checked in the same script, in torch 2.9.1 and 2.14.1
assert first_layouts["bucket"] == "GradBucket", first_layouts
assert first_layouts["tensor returned"] == "RuntimeError", first_layouts
# "(in torch 2.9 as in torch 2.14)": these checks passed on torch 2.9.1 and 2.14.1; with
# another torch, run the page and name its version in the prose (both languages)
torch_version = ".".join(torch.__version__.split(".")[:2])
assert torch_version in {"2.9", "2.14"}, torch.__version__
# sphinx_gallery_end_ignore

# %%
# Every rank logged the same buckets, and the gradients agree. In the first
# step DDP used one bucket for all 212 values, from the second step on two,
# of 84 and 128 values.
#
# .. dropdown:: Why the buckets change after the first step
#
#    That is how DDP lays out the first step when ``find_unused_parameters``
#    keeps its default, ``False`` (in torch 2.9 as in torch 2.14): it does not
#    know yet in which order the gradients become ready, so it gives the first
#    layout no size limit at all. During that step it records the order, and
#    from the second step on it uses buckets in that order (last layer first),
#    each closed as soon as it holds 314 bytes or more (our
#    ``bucket_cap_mb=0.0003``): 84 and 128 values are 336 and 512 bytes. Other
#    settings lay out the first step differently (exercise 4).
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

# sphinx_gallery_start_ignore
sharded = ["DTensor", [16, 8], [8, 8]]
full = ["Parameter", [16, 8], [16, 8]]
for s in (v["fsdp2_hooks"] for v in values):
    # "Each sharded module got one forward pre-hook (_pre_forward ...) and one forward hook
    # (_post_forward ...)"; "the backward columns above are 0"
    assert s["counts"] == {name: [1, 1, 0, 0, 0] for name in ("", "0", "2")}, s["counts"]
    fsdp_hooks = [["FSDPState._pre_forward"], ["FSDPState._post_forward"]]
    assert s["hooks"] == dict.fromkeys(("(model)", "0", "2"), fsdp_hooks), s["hooks"]
    # "Between them the weight is a full Parameter of shape (16, 8); before and after, each
    # rank holds only its (8, 8) half"; "each rank keeps the (8, 8) half" of the gradient
    assert s["before forward"] == s["before FSDP's pre-hook"] == sharded
    assert s["after FSDP's pre-hook"] == s["before FSDP's hook"] == full
    assert s["after FSDP's hook"] == s["gradient after backward"] == sharded
    # "a tensor hook on each module's output gathers the parameters again ..., and a
    # custom autograd function on the module's input reduce-scatters the gradients"
    assert s["layer 2"] == [["FSDPState._pre_backward"], "RegisterPostBackwardFunctionBackward"]
# sphinx_gallery_end_ignore

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
# on the module's input reduce-scatters the gradients once they are (the two
# lines about layer 2 show both).
#
# A clean exit
# ------------
#
# A rank ends by destroying its process group. If some object still holds
# the group, its gloo threads live on, and a process that exits while they
# run can crash. So the worker collects the garbage before it destroys the
# group, and checks with a weak reference that the group is gone:
#
# .. literalinclude:: /../examples/06_pytorch_uses_hooks/_ddp_worker.py
#    :pyobject: tear_down
#
# .. dropdown:: What holds the group, and why exiting with its threads crashes
#
#    ``destroy_process_group()`` removes the process group from
#    ``torch.distributed``, but the group lives on as long as some object
#    still refers to it: a DDP model or an FSDP state caught in a reference
#    cycle (until the garbage collector frees it), or FSDP's ``DeviceMesh``.
#    DTensor's caches keep that mesh until the process ends (in torch 2.9 as
#    in torch 2.14; each rank counts the meshes still alive after the
#    sections, below), and in torch 2.14 the mesh holds the process group,
#    which is why ``fsdp2_hooks`` ends with ``release_groups`` (torch 2.9's
#    mesh holds none: there it releases nothing). A gloo thread that frees a
#    finished collective must take Python's GIL, and a Python that is
#    shutting down ends such a thread, which kills the process ("terminate
#    called without an active exception"), even after it has written its
#    report.
#
#    .. literalinclude:: /../examples/06_pytorch_uses_hooks/_ddp_worker.py
#       :pyobject: release_groups

show("tear_down")

# sphinx_gallery_start_ignore
# "DTensor's caches keep that mesh until the process ends ... which is why fsdp2_hooks ends
# with release_groups"; "Both ranks freed the group before they exited"
assert [v["tear_down"] for v in values] == [{"meshes": 1, "freed": True}] * 2, values
# "in torch 2.14 the mesh holds the process group ... (torch 2.9's mesh holds none: there it
# releases nothing)": the registry that release_groups empties
import inspect

import torch.distributed.device_mesh

registry = "_pg_registry" in inspect.getsource(torch.distributed.device_mesh)
assert registry == (torch_version == "2.14"), (torch.__version__, registry)
# sphinx_gallery_end_ignore

# %%
# Both ranks freed the group before they exited, although the mesh was still
# alive: no thread of the group was left to run while Python shut down.
#
# Summary
# -------
#
# - ``register_comm_hook`` replaces DDP's all-reduce of each bucket: with a
#   built-in hook (``fp16_compress_hook``) or with your own function.
# - Module hooks and tensor hooks fire on every rank; a tensor hook on a
#   parameter sees the local gradient, before DDP averages it.
# - FSDP2 gathers a module's parameters in a forward pre-hook and frees them
#   in a forward hook; outside these two hooks each rank holds only its
#   shard.
# - With ``find_unused_parameters=False``, DDP rebuilds its buckets after the
#   first step that communicates, in the order the gradients became ready.
# - Distributed training on one CPU: start one process per rank, meet on a
#   free ``127.0.0.1`` port with the gloo backend, and always stop the
#   processes (a deadline and ``kill``).
# - End each rank cleanly: drop what holds the process group (collect the
#   garbage, release FSDP's mesh), then ``destroy_process_group()``.
#
# Exercises
# ---------
#
# Exercises that ask for code come with a check that runs offline, in the
# downloaded notebook or script: write your answer, then run the
# ``ht.exercises.check(...)`` call that ends the exercise. The check says what
# is wrong, or what is right, in the language of the download, and leaves no
# hook behind; each solution ends with the same call. Exercises marked *in
# words* ask why: they have no check.
#
# 1. Write ``three_steps(ddp_model, batch)``, which takes three training steps
#    on ``batch``, step 0 (its forward and backward passes) inside
#    ``with ddp_model.no_sync():``. Take these steps in ``logging_comm_hook``:
#    which buckets does each step log? Check:
#    ``ht.exercises.check("30.1", three_steps)``.
# 2. *In words:* use ``default_hooks.bf16_compress_hook`` instead of
#    ``fp16_compress_hook``. Is the change of the averaged gradient larger or
#    smaller, and why?
# 3. *In words:* call ``fully_shard(model[0], mesh=mesh,
#    reshard_after_forward=False)`` in ``fsdp2_hooks``. What does the line
#    "after FSDP's hook" show now, and why?
# 4. *In words:* in ``logging_comm_hook``, pass ``find_unused_parameters=True``
#    to ``DDP``. Which buckets do the steps log now, and why?

# %%
# .. rst-class:: solution
#
# **Solution 1.** No bucket in step 0: under ``no_sync()`` DDP neither
# communicates nor calls the hook, and each rank keeps its local gradient
# (without the ``zero_grad()`` of the next step, the next synced backward pass
# would add to it and average the sum). Step 1 logs the single bucket of 212
# values, and only step 2 the rebuilt ones, of 84 and 128: DDP records the
# order in which the gradients become ready only in a step that communicates.
#
# The solutions run on two ranks, as the page does: ``_ddp_solutions.py``
# holds one function per exercise, and ``run_ranks`` starts it the way it
# started ``_ddp_worker.py``. For this exercise, a communication hook logs the
# size of each bucket in three steps, the first one under ``no_sync()``:
#
# .. literalinclude:: /../examples/06_pytorch_uses_hooks/_ddp_solutions.py
#    :pyobject: three_steps
#
# .. literalinclude:: /../examples/06_pytorch_uses_hooks/_ddp_solutions.py
#    :pyobject: bucket_sizes
#
# .. literalinclude:: /../examples/06_pytorch_uses_hooks/_ddp_solutions.py
#    :pyobject: no_sync_in_step_0

solution_reports, solution_processes = run_ranks("_ddp_solutions.py", world_size=2)
print("ranks that reported:", len(solution_reports))
print("processes still running:", sum(p.poll() is None for p in solution_processes))
show("no_sync_in_step_0", solution_reports)

# sphinx_gallery_start_ignore
assert len(solution_reports) == 2
assert all(process.poll() is not None for process in solution_processes)
solutions = [report["values"] for report in solution_reports]
# "No bucket in step 0 ... Step 1 logs the single bucket of 212 values, and only step 2
# the rebuilt ones, of 84 and 128"
assert [s["no_sync_in_step_0"] for s in solutions] == [[[], [212], [84, 128]]] * 2, solutions
# sphinx_gallery_end_ignore

# %%
# Step 0's forward pass belongs inside ``no_sync()`` too: DDP decides in the
# forward pass whether the coming backward pass communicates. The check runs
# ``three_steps`` in this process, in a process group of its own with a
# single rank:

from _ddp_solutions import three_steps

ht.exercises.check("30.1", three_steps)

# sphinx_gallery_start_ignore
from page_checks import assert_check  # docs/_ext: the build's checks


# "Step 0's forward pass belongs inside no_sync() too": with only its backward pass
# inside, step 0 still communicates, and the check says why
def three_steps_forward_outside(ddp_model, batch):
    for step in range(3):
        ddp_model.zero_grad()
        loss = ddp_model(batch).sum()
        if step == 0:
            with ddp_model.no_sync():
                loss.backward()
        else:
            loss.backward()


assert_check("30.1", three_steps, three_steps_forward_outside, "forward_outside")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 2.** Larger: bfloat16 changes the averaged gradients more than
# float16 does (the second line of each rank compares them). bfloat16 keeps
# the range of float32 but only 8 significant bits, against 11 for float16.
#
# .. literalinclude:: /../examples/06_pytorch_uses_hooks/_ddp_solutions.py
#    :pyobject: largest_change
#
# .. literalinclude:: /../examples/06_pytorch_uses_hooks/_ddp_solutions.py
#    :pyobject: bf16_compress_hook

show("bf16_compress_hook", solution_reports)

# sphinx_gallery_start_ignore
# "bfloat16 changes the averaged gradients more than float16": 9.7e-03 against 7.5e-04
# in the builds so far; 8 significant bits against 11 makes bfloat16's rounding about
# 2**3 times coarser
for s in (s["bf16_compress_hook"] for s in solutions):
    assert s["bfloat16"] > s["float16"] > 0, s
assert torch.finfo(torch.bfloat16).eps == 2**-7  # 8 significant bits
assert torch.finfo(torch.float16).eps == 2**-10  # 11 significant bits
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 3.** A full ``Parameter`` of shape (16, 8) on every rank, instead
# of a ``DTensor`` of which each rank holds an (8, 8) half: with
# ``reshard_after_forward=False`` FSDP keeps the gathered weight after the
# forward pass, so that the backward pass need not gather it again (more
# memory, less communication).
#
# .. literalinclude:: /../examples/06_pytorch_uses_hooks/_ddp_solutions.py
#    :pyobject: weight_after_fsdp_hook
#
# .. literalinclude:: /../examples/06_pytorch_uses_hooks/_ddp_solutions.py
#    :pyobject: reshard_after_forward

show("reshard_after_forward", solution_reports)

# sphinx_gallery_start_ignore
# "A full Parameter of shape (16, 8) on every rank, instead of a DTensor of which each
# rank holds an (8, 8) half"
for s in (s["reshard_after_forward"] for s in solutions):
    assert s == {"True": sharded, "False": full}, s
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 4.** Three buckets, of 4, 80 and 128 values, in step 0 and in
# every step after it: with ``find_unused_parameters=True``, DDP caps the
# buckets from the first step on (torch 2.9 and torch 2.14 alike). It cuts
# them along ``model.parameters()`` (``0.weight`` alone fills the first,
# ``0.bias`` and ``2.weight`` the next, ``2.bias`` is left over) and uses them
# last bucket first. It never rebuilds them, because the set of gradients that
# become ready may change from one step to the next.
#
# .. literalinclude:: /../examples/06_pytorch_uses_hooks/_ddp_solutions.py
#    :pyobject: find_unused_parameters

print("torch", torch.__version__)  # the torch that laid out these buckets
show("find_unused_parameters", solution_reports)
show("tear_down", solution_reports)

# sphinx_gallery_start_ignore
# "Three buckets, of 4, 80 and 128 values, in step 0 and in every step after it"; "cuts
# them along model.parameters() (0.weight alone fills the first, 0.bias and 2.weight the
# next, 2.bias is left over) and uses them last bucket first": a bucket closes at 314
# bytes or more, 0.weight has 512, 0.bias + 2.weight 64 + 256, 2.bias 16
assert [s["find_unused_parameters"] for s in solutions] == [[[4, 80, 128]] * 3] * 2
assert 128 * 4 >= 314  # 0.weight alone fills a bucket
assert 16 * 4 < 314 <= (16 + 64) * 4  # 0.bias alone does not, with 2.weight it does
assert [s["tear_down"]["freed"] for s in solutions] == [True, True]
from page_checks import assert_exercises_checked, assert_no_hooks_left  # docs/_ext

assert_exercises_checked()
assert_no_hooks_left(globals())
# sphinx_gallery_end_ignore
