# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
Checkpointing and offloading: forward hooks that fire twice
===========================================================

.. index::
   ! checkpoint
   ! activation checkpointing
   ! 检查点
   ! 激活检查点

Activation checkpointing trades compute for memory: instead of keeping every
intermediate activation until the backward pass, it keeps only the input of a
block and runs the block's forward pass again when the backward pass needs
the activations. Your forward hooks run again too, and so do their side
effects. This page counts those calls, measures the memory that
checkpointing saves, and shows the saved-tensor hooks it is built on, which
also let you offload saved tensors somewhere else.

.. rubric:: What you will learn
   :heading-level: 2

- how ``torch.utils.checkpoint.checkpoint`` re-runs a block's forward pass
  during the backward pass, and that forward hooks fire twice;
- how to write hooks whose side effects survive the second call;
- why ``use_reentrant=False`` is the mode to choose, and what goes wrong
  with a hook under ``use_reentrant=True``;
- how many bytes checkpointing keeps for the backward pass, counted with a
  saved-tensor hook;
- how saved-tensor hooks offload saved tensors (``save_on_cpu``, or a file).

**Prerequisites**: :doc:`/auto_examples/02_module_hooks/plot_05_forward_hooks`
and :doc:`/auto_examples/03_tensor_hooks/plot_12_saved_tensor_hooks`.
"""

# %%
# A model of four blocks
# ----------------------
#
# Each block is ``Linear -> ReLU -> Linear``. A forward hook on every linear
# layer counts its calls. First a normal training step, without
# checkpointing.

from collections import Counter

import matplotlib.pyplot as plt
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

import hooks_tutorial as ht  # ht.exercises.check, for the exercises at the end

print("torch", torch.__version__)
torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self, use_checkpoint):
        super().__init__()
        self.use_checkpoint = use_checkpoint
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 128)) for _ in range(4)
        )

    def forward(self, x):
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=False) if self.use_checkpoint else block(x)
        return x.sum()


model = Net(use_checkpoint=False)
inputs = torch.randn(64, 128)
calls = Counter()
pre_calls = Counter()  # forward pre-hook calls, counted the same way


def count_call(module, args, output):
    calls[module.name] += 1


def count_pre_call(module, args):
    pre_calls[module.name] += 1


handles = []
for name, module in model.named_modules():
    if isinstance(module, nn.Linear):
        module.name = name
        handles.append(module.register_forward_hook(count_call))
        handles.append(module.register_forward_pre_hook(count_pre_call))

loss = model(inputs)
after_forward = sum(calls.values())
print("hook calls after forward: ", after_forward)
loss.backward()
print("hook calls after backward:", sum(calls.values()))

# sphinx_gallery_start_ignore
# "Eight linear layers, eight calls, and the backward pass adds none."
assert after_forward == sum(calls.values()) == 8, calls
# sphinx_gallery_end_ignore

# %%
# Eight linear layers, eight calls, and the backward pass adds none. Now the
# same model with every block checkpointed.

model.use_checkpoint = True
calls.clear()
pre_calls.clear()
loss = model(inputs)
after_forward = sum(calls.values())
print("hook calls after forward: ", after_forward)
loss.backward()
print("hook calls after backward:", sum(calls.values()))
early_stop_calls = dict(calls)
early_stop_pre_calls = dict(pre_calls)

# sphinx_gallery_start_ignore
# "each checkpointed block ran its forward pass again ... But not all of them"
assert after_forward == 8
assert 8 < sum(calls.values()) < 16, calls
# sphinx_gallery_end_ignore

# %%
# During the backward pass, each checkpointed block ran its forward pass
# again, and its forward hooks fired again. But not all of them: the
# recomputation stops as soon as it has rebuilt every tensor the backward
# pass needs ("early stop"). The last tensors a block saved are the inputs of
# the matrix product in its second linear layer (the ReLU's output and the
# weight): the rerun is aborted as soon as autograd saves them again for
# that product (it saves a product's inputs before computing it), inside the
# layer's call, before the layer returns. So that layer's forward
# *pre*-hooks fire twice, but its forward hooks only once.
# ``set_checkpoint_early_stop(False)`` turns this off, and then every layer
# runs twice.

from torch.utils.checkpoint import set_checkpoint_early_stop

calls.clear()
with set_checkpoint_early_stop(False):
    model(inputs).backward()
print(f"{'layer':10} {'pre-hook calls':>15} {'hook calls':>11} {'hook calls (no early stop)':>27}")
for name, count in early_stop_calls.items():
    print(f"{name:10} {early_stop_pre_calls[name]:>15} {count:>11} {calls[name]:>27}")

# sphinx_gallery_start_ignore
# "that layer's forward *pre*-hooks fire twice, but its forward hooks only once";
# "set_checkpoint_early_stop(False) turns this off, and then every layer runs twice"
assert len(early_stop_calls) == 8
for name, count in early_stop_calls.items():
    assert early_stop_pre_calls[name] == 2, name
    assert count == (2 if name.endswith(".0") else 1), name
    assert calls[name] == 2, name
# sphinx_gallery_end_ignore

# %%
# A hook that counts batches now counts each batch twice or once, depending
# on the layer it sits on.
#
# Side effects happen twice
# -------------------------
#
# A hook on the first linear layer that *appends* each activation to a list
# collects two per training step. The recomputed activation has the same
# values (the operations are deterministic, and ``checkpoint`` restores the
# random-number state before the rerun, so even dropout would draw the same
# mask), so a hook that *stores under a key*, overwriting, is unaffected.
# Write checkpoint-safe hooks that way: idempotent.

appended = []
stored = {}


def append_activation(module, args, output):
    appended.append(output.detach())


def store_activation(module, args, output):
    stored[module.name] = output.detach()


first_layer = model.blocks[0][0]
with (
    first_layer.register_forward_hook(append_activation),
    first_layer.register_forward_hook(store_activation),
):
    model(inputs).backward()
print("activations appended:", len(appended))
print("activations stored:  ", len(stored))
print("recomputed equals original:", torch.equal(appended[0], appended[1]))

# sphinx_gallery_start_ignore
# "collects two per training step"; "a hook that stores under a key ... is unaffected"
assert len(appended) == 2
assert len(stored) == 1
assert torch.equal(appended[0], appended[1])
# "checkpoint restores the random-number state before the rerun, so even dropout would
# draw the same mask" (and without preserve_rng_state it draws another one)
dropout_block = nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.5), nn.Linear(16, 8))
dropout_input = torch.randn(4, 8, requires_grad=True)
for preserve, same_mask in ((True, True), (False, False)):
    dropout_outputs = []
    with dropout_block[1].register_forward_hook(
        lambda m, args, out: dropout_outputs.append(out.detach())
    ):
        checkpoint(
            dropout_block, dropout_input, use_reentrant=False, preserve_rng_state=preserve
        ).sum().backward()
    assert len(dropout_outputs) == 2
    assert torch.equal(dropout_outputs[0], dropout_outputs[1]) is same_mask, preserve
# sphinx_gallery_end_ignore

# %%
# ``use_reentrant``: pass it explicitly
# -------------------------------------
#
# ``checkpoint`` has two implementations. The older one
# (``use_reentrant=True``) runs the first forward pass under
# ``torch.no_grad()``, so a hook cannot attach a tensor hook to the output:
# the output does not require a gradient. The newer one
# (``use_reentrant=False``) records the graph normally and is the one PyTorch
# recommends. Calling ``checkpoint`` without the argument gives a warning.


def tensor_hook_on_output(module, args, output):
    output.register_hook(lambda grad: None)


block_input = inputs.clone().requires_grad_()
outcomes = {}
for reentrant in (True, False):
    with first_layer.register_forward_hook(tensor_hook_on_output):
        try:
            checkpoint(model.blocks[0], block_input, use_reentrant=reentrant).sum().backward()
            outcomes[reentrant] = "works"
        except RuntimeError as error:
            outcomes[reentrant] = f"RuntimeError: {error}"
    print(f"use_reentrant={reentrant}: {outcomes[reentrant]}")

# sphinx_gallery_start_ignore
# "a hook cannot attach a tensor hook to the output: the output does not require a
# gradient"; the newer mode works
assert outcomes[True] == (
    "RuntimeError: cannot register a hook on a tensor that doesn't require gradient"
), outcomes
assert outcomes[False] == "works"
# "Calling checkpoint without the argument gives a warning."
import warnings

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    checkpoint(model.blocks[0], block_input)
assert any("use_reentrant parameter should be passed explicitly" in str(w.message) for w in caught)
# sphinx_gallery_end_ignore

# %%
# How much memory does checkpointing save?
# ----------------------------------------
#
# Autograd keeps the tensors it saved for the backward pass until that pass
# runs. A saved-tensor hook sees each one as it is saved, so we can add up
# their bytes, as on
# :doc:`/auto_examples/03_tensor_hooks/plot_12_saved_tensor_hooks`: distinct
# storages, parameters excluded (they stay in memory anyway), and empty ones
# too (torch 2.9's checkpoint saves an empty tensor per block). This count is
# exact and the same on every run, unlike a reading of the process's memory.


def bytes_saved_for_backward(net):
    parameters = {p.untyped_storage().data_ptr() for p in net.parameters()}
    sizes = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        if storage.nbytes() and storage.data_ptr() not in parameters:
            sizes[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        loss = net(inputs)
    loss.backward()
    return sum(sizes.values()), len(sizes)


for hook in handles:
    hook.remove()
saved = {}
for use_checkpoint in (False, True):
    model.use_checkpoint = use_checkpoint
    saved[use_checkpoint] = bytes_saved_for_backward(model)
    label = "with checkpoint:   " if use_checkpoint else "without checkpoint:"
    print(f"{label} {saved[use_checkpoint][0]:>7} bytes in {saved[use_checkpoint][1]} tensors")
print(f"ratio: {saved[True][0] / saved[False][0]:.3f}")

# sphinx_gallery_start_ignore
# "each block keeps its input and its hidden activation (four times wider). With it,
# only the input of each block is kept: one 64×128 float32 tensor per block"
block_bytes = 64 * 128 * 4
assert saved[False] == (4 * (block_bytes + 4 * block_bytes), 8), saved
assert saved[True] == (4 * block_bytes, 4), saved
# "empty ones too (torch 2.9's checkpoint saves an empty tensor per block)"
empty = []
with torch.autograd.graph.saved_tensors_hooks(
    lambda tensor: empty.append(tensor.numel() == 0) or tensor, lambda tensor: tensor
):
    model(inputs).backward()
assert sum(empty) == (4 if torch.__version__.startswith("2.9.") else 0), (torch.__version__, empty)
# sphinx_gallery_end_ignore

# %%
# Without checkpointing, each block keeps its input and its hidden
# activation (four times wider). With it, only the input of each block is
# kept: one 64×128 float32 tensor per block.
#
# Saved-tensor hooks underneath
# -----------------------------
#
# Inside a checkpointed block our pack hook was not called for the hidden
# activations at all. ``checkpoint(use_reentrant=False)`` installs its own
# saved-tensor hooks around the block (the innermost hooks win): its pack
# hook stores a small placeholder instead of the tensor, and its unpack hook
# re-runs the forward pass to get the tensor back. The class it uses is a
# private one, fine for a look:

import torch.utils.checkpoint as checkpoint_module

print(
    "checkpoint's hooks are saved_tensors_hooks:",
    issubclass(checkpoint_module._checkpoint_hook, torch.autograd.graph.saved_tensors_hooks),
)

# sphinx_gallery_start_ignore
# "checkpoint(use_reentrant=False) installs its own saved-tensor hooks around the block"
assert issubclass(checkpoint_module._checkpoint_hook, torch.autograd.graph.saved_tensors_hooks)
# sphinx_gallery_end_ignore

# %%
# Offloading: keep saved tensors elsewhere
# ----------------------------------------
#
# The other way to save memory is to keep the saved tensors, but not in the
# scarce memory. ``torch.autograd.graph.save_on_cpu()`` is a pair of
# saved-tensor hooks that copy each saved tensor from the GPU to CPU memory
# and back. On this CPU-only machine it would move nothing, so here is the
# same idea with a temporary file: the pack hook writes the tensor to disk
# and returns the file name, the unpack hook reads it back.

import tempfile
from pathlib import Path


def gradients(net, hooks):
    net.zero_grad()
    with hooks:
        loss = net(inputs)
    loss.backward()
    return [p.grad.clone() for p in net.parameters()]


model.use_checkpoint = False
with tempfile.TemporaryDirectory() as folder:
    files = []

    def pack_to_disk(tensor):
        path = Path(folder) / f"saved_{len(files)}.pt"
        torch.save(tensor, path)
        files.append(path)
        return path

    def unpack_from_disk(path):
        return torch.load(path, weights_only=True)

    on_disk = gradients(
        model, torch.autograd.graph.saved_tensors_hooks(pack_to_disk, unpack_from_disk)
    )
    print("tensors written to disk:", len(files))
reference = gradients(model, torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t))
print(
    "gradients identical:", all(torch.equal(a, b) for a, b in zip(reference, on_disk, strict=True))
)
print(
    "save_on_cpu is a saved_tensors_hooks:",
    issubclass(torch.autograd.graph.save_on_cpu, torch.autograd.graph.saved_tensors_hooks),
)

# sphinx_gallery_start_ignore
# "the pack hook writes the tensor to disk ... the unpack hook reads it back";
# "save_on_cpu() is a pair of saved-tensor hooks"
assert files
assert all(torch.equal(a, b) for a, b in zip(reference, on_disk, strict=True))
assert issubclass(torch.autograd.graph.save_on_cpu, torch.autograd.graph.saved_tensors_hooks)
# sphinx_gallery_end_ignore

# %%
# Writing every saved tensor, parameter views included, is slow: a real
# offloading hook skips parameters and small tensors, and copies in the
# background. The principle stays the same two functions.
#
# The price: a second forward call
# --------------------------------
#
# What does the second forward call cost? ``FlopCounterMode`` from
# ``torch.utils.flop_counter`` counts the floating-point operations of the
# matrix products (the bulk of the work here) that run inside it: the
# backward pass of the checkpointed model against the plain one, and one
# forward pass for scale.

from torch.utils.flop_counter import FlopCounterMode


def flops(run):
    with FlopCounterMode(display=False) as counter:
        run()
    return counter.get_total_flops()


backward_flops = {}
for use_checkpoint in (False, True):
    model.use_checkpoint = use_checkpoint
    loss = model(inputs)
    backward_flops[use_checkpoint] = flops(loss.backward)
forward_flops = flops(lambda: model(inputs))
recompute_flops = backward_flops[True] - backward_flops[False]
print(f"one forward pass:                  {forward_flops:>10} FLOPs")
print(f"backward pass without checkpoint:  {backward_flops[False]:>10} FLOPs")
print(f"backward pass with checkpoint:     {backward_flops[True]:>10} FLOPs")
print(f"recomputation: {recompute_flops / forward_flops:.2f} of a forward pass")

# sphinx_gallery_start_ignore
# "The recomputation costs half a forward pass ... the first linear layer of each block
# runs again, and the second is stopped before its matrix product" (so autograd saved the
# product's inputs, where the rerun stops, before computing it): one 64x128 @ 128x512
# product (2 FLOPs per multiply-add) per block; "a second forward call for half of the
# layers": 4 of the 8 layers fire twice
assert recompute_flops * 2 == forward_flops
assert recompute_flops == 4 * 2 * 64 * 128 * 512
assert sum(count == 2 for count in early_stop_calls.values()) == 4
# sphinx_gallery_end_ignore

# %%
# The recomputation costs half a forward pass, not a whole one: the first
# linear layer of each block runs again, and the second is stopped before
# its matrix product. The trade-off in one figure: activation
# checkpointing keeps fewer bytes for the backward pass, and pays with a
# second forward call for half of the layers.

fig, axes = plt.subplot_mosaic(
    [["memory", "flops"], ["calls", "calls"]], figsize=(5.4, 6.4), layout="constrained"
)
ax_memory, ax_flops, ax_calls = axes["memory"], axes["flops"], axes["calls"]
labels = ["no checkpoint", "checkpoint"]
colors = ["#3b528b", "#5ec962"]
ax_memory.bar(labels, [saved[False][0] / 1024, saved[True][0] / 1024], color=colors)
ax_memory.set_ylabel("KiB kept for backward")
ax_memory.set_title("Memory kept\nfor the backward pass")
ax_flops.bar(
    labels,
    [(forward_flops + backward_flops[c]) / 1e6 for c in (False, True)],
    color=colors,
)
ax_flops.set_ylabel("MFLOPs (matrix products)")
ax_flops.set_title("Compute per\ntraining step")
layer_names = list(early_stop_calls)
positions = range(len(layer_names))
ax_calls.bar([p - 0.2 for p in positions], [1] * len(layer_names), 0.4, color=colors[0])
ax_calls.bar([p + 0.2 for p in positions], list(early_stop_calls.values()), 0.4, color=colors[1])
ax_calls.set_xticks(list(positions), layer_names, rotation=45)
ax_calls.set_ylabel("forward hook calls")
ax_calls.set_yticks([0, 1, 2])
ax_calls.set_ylim(0, 2.8)
ax_calls.legend(labels, loc="upper left", ncols=2)
ax_calls.set_title("Forward hook calls per training step")
plt.show()

# %%
# Summary
# -------
#
# - ``checkpoint`` keeps only a block's input and re-runs its forward pass
#   during the backward pass, so forward hooks in the block fire twice,
#   except on the layer inside which the recomputation stops (with the
#   default early stop); forward pre-hooks fire twice even there.
# - Hooks with side effects must tolerate that: store by key, do not append
#   or count.
# - Pass ``use_reentrant=False``: the older mode runs the first forward pass
#   without gradients, and a hook that registers a tensor hook fails there.
# - Counted with a saved-tensor hook, checkpointing kept a fraction of the
#   bytes that the plain model saves for the backward pass, and paid with
#   half a forward pass of extra compute.
# - ``checkpoint(use_reentrant=False)`` is built on saved-tensor hooks, and
#   so is offloading:
#   ``save_on_cpu`` moves saved tensors to CPU memory, and a pack hook can
#   just as well write them to disk.
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
# 1. *In words:* call ``checkpoint(model.blocks[0], inputs,
#    use_reentrant=False)`` inside ``torch.no_grad()`` and count the forward
#    hook calls. Does the block run once or twice, and why?
# 2. Write ``HalfCheckpointed``, a subclass of ``Net`` whose ``forward``
#    checkpoints only every second block. How many bytes are kept for the
#    backward pass now, compared with the two runs above? Check:
#    ``ht.exercises.check("29.2", HalfCheckpointed)``.
# 3. *In words:* use ``torch.utils.checkpoint.checkpoint_sequential`` on
#    ``nn.Sequential(*model.blocks)`` with 2 segments, and count the forward
#    calls of every linear layer in one training step. Which layers fire
#    twice, and why?

# %%
# .. rst-class:: solution
#
# **Solution 1.** Once: the forward hook fired 1 time. Under
# ``torch.no_grad()`` autograd saves no tensor for a backward pass, so there
# is nothing to recompute, and ``checkpoint`` simply runs the block.

calls.clear()
with torch.no_grad(), model.blocks[0][0].register_forward_hook(count_call):
    checkpoint(model.blocks[0], inputs, use_reentrant=False)
print("forward hook calls:", sum(calls.values()))

# sphinx_gallery_start_ignore
assert sum(calls.values()) == 1, calls  # "Once: the forward hook fired 1 time"
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 2.** 393216 bytes in 6 tensors, between the 131072 bytes
# (4 tensors) of the fully checkpointed model and the 655360 bytes
# (8 tensors) of the plain one: each of the two plain blocks keeps its input
# and its hidden activation, each of the two checkpointed blocks only its
# input.


class HalfCheckpointed(Net):
    def forward(self, x):
        for i, block in enumerate(self.blocks):
            x = checkpoint(block, x, use_reentrant=False) if i % 2 else block(x)
        return x.sum()


half = HalfCheckpointed(use_checkpoint=True)
saved_bytes, tensors = bytes_saved_for_backward(half)
print(f"every second block: {saved_bytes} bytes in {tensors} tensors")
print(f"no block:           {saved[False][0]} bytes in {saved[False][1]} tensors")
print(f"every block:        {saved[True][0]} bytes in {saved[True][1]} tensors")

# sphinx_gallery_start_ignore
# "each of the two plain blocks keeps its input and its hidden activation, each of the
# two checkpointed blocks only its input"
assert (saved_bytes, tensors) == (2 * (block_bytes + 4 * block_bytes) + 2 * block_bytes, 6)
assert (saved_bytes, tensors) == (393216, 6)
# sphinx_gallery_end_ignore

ht.exercises.check("29.2", HalfCheckpointed)

# sphinx_gallery_start_ignore
from page_checks import assert_check  # docs/_ext: the build's checks

# Net itself, with use_checkpoint=True, checkpoints every block: all four run twice
assert_check("29.2", HalfCheckpointed, Net, "checkpointed_all")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 3.** ``blocks.0.0``, ``blocks.0.2`` and ``blocks.1.0`` fire
# twice, the other five layers once. ``checkpoint_sequential`` checkpoints
# every segment but the last, which the backward pass needs first anyway (the
# last two blocks), and in the first segment the early stop spares the last
# linear layer, ``blocks.1.2``.

from torch.utils.checkpoint import checkpoint_sequential

sequential = nn.Sequential(*model.blocks)
calls.clear()
hooks = [
    layer.register_forward_hook(count_call)
    for block in sequential
    for layer in block
    if isinstance(layer, nn.Linear)
]
checkpoint_sequential(sequential, 2, inputs, use_reentrant=False).sum().backward()
for hook in hooks:
    hook.remove()
print("twice:", [name for name, n in calls.items() if n == 2])
print("once: ", [name for name, n in calls.items() if n == 1])

# sphinx_gallery_start_ignore
# "blocks.0.0, blocks.0.2 and blocks.1.0 fire twice, the other five layers once"
assert [name for name, n in calls.items() if n == 2] == ["blocks.0.0", "blocks.0.2", "blocks.1.0"]
assert sum(n == 1 for n in calls.values()) == 5
assert len(calls) == 8
from page_checks import assert_exercises_checked, assert_no_hooks_left  # docs/_ext

assert_exercises_checked()
assert_no_hooks_left(globals())
# sphinx_gallery_end_ignore
