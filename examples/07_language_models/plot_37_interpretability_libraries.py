# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
# and nnsight, for its section: pip install "nnsight>=0.8.1,<0.9"
"""
The libraries practitioners use: hook points and wrappers
=========================================================

.. index::
   ! TransformerLens
   ! nnsight
   ! hook point
   ! run_with_cache
   ! 钩子点

People who look inside language models rarely call ``register_forward_hook``
themselves. They use TransformerLens (Nanda and Bloom, 2022), which gives
every activation of a transformer a name such as
``blocks.1.attn.hook_z``, or nnsight (Fiotto-Kaufman et al., 2024), which
lets you write an intervention as ordinary code inside a
``with model.trace(...)`` block. This page opens both. It rebuilds
TransformerLens's central piece, the *hook point*, in a dozen lines on the
chapter's small model, runs nnsight on the same model, and checks that both
give the numbers that plain forward hooks give: the logit difference with
one attention head removed and the logit lens.

.. rubric:: What you will learn
   :heading-level: 2

- that a TransformerLens hook point is a module that returns its input, there
  only so that forward hooks have a named place to attach;
- how names, a context that removes its hooks and ``run_with_cache`` are
  built from plain hooks, in a few lines each;
- how nnsight wraps the model you already have: it replaces each module's
  ``forward`` with a wrapper instead of registering hooks, and runs your
  code while the model is paused;
- what each abstraction adds, and what it costs.

**Prerequisites**: :doc:`/auto_examples/02_module_hooks/plot_05_forward_hooks`,
:doc:`/auto_examples/02_module_hooks/plot_06_forward_pre_hooks`,
:doc:`/auto_examples/02_module_hooks/plot_08_handles_and_leaks`, and the
previous pages of this chapter (the logit lens and head ablation).

**Needs nnsight** for its section: ``pip install "nnsight>=0.8.1,<0.9"``.
The rest of the page needs only PyTorch and this library.
"""

# %%
# The measurement, with plain hooks
# ---------------------------------
#
# First the numbers to reproduce, on the chapter's model and 500 test
# sentences. The *logit difference* is the answer's logit minus the
# subject's logit at the last position, averaged over the sentences.
# Head 3 of block 1 is the head the model cannot do without: zeroing its
# output (a forward pre-hook on ``attn.out``, whose input holds the heads side
# by side, 16 columns each) removes almost all of the difference. The logit
# lens applies the final LayerNorm and the unembedding to the residual stream
# after each block, recorded with forward hooks.

import copy
from contextlib import contextmanager

import matplotlib.pyplot as plt
import torch
from torch import nn

import hooks_tutorial as ht
from hooks_tutorial import lm

model = lm.pretrained_lm().requires_grad_(False)  # only forward passes: no autograd graph
data = lm.make_names(500, seed=1, split="test")
print("torch", torch.__version__, "| test sentences:", len(data))
prompts = data.prompts
LAYER, HEAD, D_HEAD = 1, 3, 16
columns = slice(HEAD * D_HEAD, (HEAD + 1) * D_HEAD)


def logit_difference(logits):
    last = logits[:, -1]
    right = last.gather(1, data.answers[:, None])
    wrong = last.gather(1, data.subjects[:, None])
    return (right - wrong).mean().item()


def lens_accuracy(residual):
    """Logit lens: does unembed(ln_final(residual)) at the last position pick the answer?"""
    guess = model.unembed(model.ln_final(residual[:, -1])).argmax(-1)
    return (guess == data.answers).float().mean().item()


def zero_the_head(module, args):
    (heads,) = args
    heads = heads.clone()
    heads[:, :, columns] = 0
    return (heads,)


residuals = []  # the clean run records the residual stream after each block
handles = [
    block.register_forward_hook(lambda module, args, output: residuals.append(output))
    for block in model.blocks
]
try:
    clean_logits = model(prompts)
finally:
    for handle in handles:
        handle.remove()

handle = model.blocks[LAYER].attn.out.register_forward_pre_hook(zero_the_head)
try:
    ablated_logits = model(prompts)
finally:
    handle.remove()
plain_lens = [lens_accuracy(residual) for residual in residuals]

print(f"logit difference, clean:            {logit_difference(clean_logits):.2f}")
print(f"logit difference, head 1.3 zeroed:  {logit_difference(ablated_logits):.2f}")
print("logit lens accuracy after each block:", [f"{a:.2f}" for a in plain_lens])
print("hooks left on the model:", ht.count_hooks(model))

# sphinx_gallery_start_ignore
# "on the chapter's model and 500 test sentences"; "the heads side by side, 16 columns each"
assert len(data) == 500
assert model.blocks[LAYER].attn.n_heads * D_HEAD == model.embed.embedding_dim
# "zeroing its output ... removes almost all of the difference" (6.82 -> 0.01 so far; on
# 100 other draws of the 500 sentences -0.13 on average with a spread of 0.15, down to
# -0.62, so 5% of the clean difference failed on some draws; 15% is 1.0, 6 spreads)
assert logit_difference(clean_logits) > 5
assert abs(logit_difference(ablated_logits)) < 0.15 * logit_difference(clean_logits)
assert not ht.count_hooks(model)
# sphinx_gallery_end_ignore

# %%
# A hook point is an identity module
# ----------------------------------
#
# Some values a researcher wants are not any module's output: the heads'
# outputs above are the *input* of ``attn.out``, and the residual stream in
# the middle of a block is nobody's output at all. TransformerLens puts a
# ``HookPoint`` wherever it wants a value: a module whose ``forward`` returns
# its input, called on that value inside the model's ``forward``. It changes
# nothing, but it is a module, so it has a name and takes forward hooks. A
# hook that returns a new tensor replaces the value for the rest of the
# model.
#
# TransformerLens first wrote each model anew with hook points inside its
# ``forward`` (``HookedTransformer``). For a model we did not write, we wrap
# its modules instead, as TransformerLens's ``TransformerBridge`` does with
# Hugging Face models: ``WithHookPoints`` runs a module between two hook
# points, ``hook_in`` (its input) and ``hook_out`` (its output). Wrapping
# every linear layer, LayerNorm, softmax and GELU of a copy of the model
# gives each of their inputs and outputs a name. (The embeddings stay as they
# are: ``TinyLM`` reads their sizes.)


class HookPoint(nn.Identity):
    """Returns its input unchanged: a named place to attach forward hooks."""


class WithHookPoints(nn.Module):
    """Runs ``module`` between two hook points, ``hook_in`` and ``hook_out``."""

    def __init__(self, module):
        super().__init__()
        self.hook_in = HookPoint()
        self.module = module
        self.hook_out = HookPoint()

    def forward(self, x):
        return self.hook_out(self.module(self.hook_in(x)))


def add_hook_points(model, kinds=(nn.Linear, nn.LayerNorm, nn.Softmax, nn.GELU)):
    """A copy of ``model`` with every module of ``kinds`` wrapped in hook points."""
    hooked = copy.deepcopy(model)
    for name, module in list(hooked.named_modules()):
        if isinstance(module, kinds):
            parent_name, _, child = name.rpartition(".")
            setattr(hooked.get_submodule(parent_name), child, WithHookPoints(module))
    return hooked


hooked_model = add_hook_points(model)
hook_points = {
    name: module for name, module in hooked_model.named_modules() if isinstance(module, HookPoint)
}
print("hook points:", len(hook_points))
print("in block 1:", [name for name in hook_points if name.startswith("blocks.1.attn")])
print(hooked_model.blocks[1].attn.out)
difference = (hooked_model(prompts) - clean_logits).abs().max().item()
print("max abs difference from the model without hook points:", difference)

# sphinx_gallery_start_ignore
# "Every hook point changes nothing, so the copy computes exactly the same logits"
assert difference == 0.0
assert isinstance(HookPoint(), nn.Identity)
x = torch.randn(2, 3)
assert HookPoint()(x) is x
# "blocks.1.attn.out.hook_in holds the four heads' outputs of block 1, blocks.2.ln1.hook_in
# is the residual stream that enters block 2 (the one after block 1), and ln_final.hook_in
# the one after the last block" (checked after run_with_cache, below)
# "(The embeddings stay as they are: TinyLM reads their sizes.)"
wrapped_embeddings = copy.deepcopy(model)
wrapped_embeddings.embed = WithHookPoints(wrapped_embeddings.embed)
try:
    wrapped_embeddings(prompts[:2])
except AttributeError as error:
    message = str(error)
else:
    message = "a model with wrapped embeddings ran"
assert "num_embeddings" in message, message
del wrapped_embeddings
# sphinx_gallery_end_ignore

# %%
# Every hook point changes nothing, so the copy computes exactly the same
# logits. The names say where each value is: ``blocks.1.attn.out.hook_in``
# holds the four heads' outputs of block 1, ``blocks.2.ln1.hook_in`` is the
# residual stream that enters block 2 (the one after block 1), and
# ``ln_final.hook_in`` the one after the last block.
#
# Hooks by name, removed on exit
# ------------------------------
#
# With names, three helpers give most of what TransformerLens's
# ``HookedRootModule`` offers. ``hooks`` is a context manager that registers
# hooks by name and removes them in ``finally``, even after an error. A hook
# function takes the activation and the hook point's name (TransformerLens
# passes the hook point itself, as ``hook=``, and its ``.name`` is the name)
# and may return a new activation. ``run_with_hooks`` runs the model inside
# it, and ``run_with_cache`` runs it with hooks that save activations under
# their names.


@contextmanager
def hooks(model, fwd_hooks):
    """Add (name, hook(activation, name)) pairs as forward hooks; remove them on exit."""
    points = dict(model.named_modules())
    handles = []
    try:
        for name, hook in fwd_hooks:
            # output is the activation: a hook point returns its input
            def forward_hook(module, args, output, hook=hook, name=name):
                return hook(output, name)

            handles.append(points[name].register_forward_hook(forward_hook))
        yield model
    finally:
        for handle in handles:
            handle.remove()


def run_with_hooks(model, tokens, fwd_hooks):
    with hooks(model, fwd_hooks):
        return model(tokens)


def run_with_cache(model, tokens, names):
    cache = {}

    def save(activation, name):
        cache[name] = activation

    logits = run_with_hooks(model, tokens, [(name, save) for name in names])
    return logits, cache


# %%
# The head ablation, now by name. The hook also prints what hangs on the
# hook point while the model runs: its type, and its ``_forward_hooks``
# dictionary, where ``register_forward_hook`` put the hook.


def zero_head_by_name(heads, name):
    point = hook_points[name]
    print(f"  in the hook: {type(point).__name__} {name!r}, forward hooks:")
    print("   ", {key: hook.__qualname__ for key, hook in point._forward_hooks.items()})
    heads = heads.clone()
    heads[:, :, columns] = 0
    return heads


z_name = f"blocks.{LAYER}.attn.out.hook_in"
by_name = run_with_hooks(hooked_model, prompts, [(z_name, zero_head_by_name)])
print(f"logit difference, head 1.3 zeroed by name: {logit_difference(by_name):.2f}")
print("max abs difference from the plain hook:", (by_name - ablated_logits).abs().max().item())
print("forward hooks on the hook point afterwards:", dict(hook_points[z_name]._forward_hooks))

# sphinx_gallery_start_ignore
# the hook sits in the hook point's _forward_hooks while the model runs, and is gone after;
# "the same number" as the plain hook
while_running = []
run_with_hooks(
    hooked_model,
    prompts[:4],
    [(z_name, lambda heads, name: while_running.append(dict(hook_points[name]._forward_hooks)))],
)
assert [next(iter(h.values())).__qualname__ for h in while_running] == [
    "hooks.<locals>.forward_hook"
]
assert not hook_points[z_name]._forward_hooks
assert torch.equal(by_name, ablated_logits)
# sphinx_gallery_end_ignore

# %%
# The logit lens from a cache: the residual stream after block ``i`` is the
# input of block ``i + 1``'s first LayerNorm, and after the last block the
# input of ``ln_final``.

names = [f"blocks.{i + 1}.ln1.hook_in" for i in range(2)] + ["ln_final.hook_in"]
_, cache = run_with_cache(hooked_model, prompts, names)
cached_lens = [lens_accuracy(cache[name]) for name in names]
print("cached:", list(cache))
print("logit lens accuracy after each block:", [f"{a:.2f}" for a in cached_lens])
largest = max((cache[n] - r).abs().max().item() for n, r in zip(names, residuals, strict=True))
print("max abs difference from the plain hooks' residuals:", largest)
print("hooks left on the copy:", ht.count_hooks(hooked_model))

# sphinx_gallery_start_ignore
assert cached_lens == plain_lens
assert largest == 0.0
assert not ht.count_hooks(hooked_model)
# the names above: the heads' outputs of block 1, the residual after block 1 and after block 2
plain = {}
handles = [
    model.blocks[1].attn.out.register_forward_pre_hook(lambda m, args: plain.update(z=args[0])),
    model.blocks[1].register_forward_hook(lambda m, a, output: plain.update(after_1=output)),
    model.blocks[2].register_forward_hook(lambda m, a, output: plain.update(after_2=output)),
]
try:
    model(prompts[:8])
finally:
    for handle in handles:
        handle.remove()
_, named = run_with_cache(
    hooked_model, prompts[:8], [z_name, "blocks.2.ln1.hook_in", "ln_final.hook_in"]
)
assert torch.equal(named[z_name], plain["z"])
assert torch.equal(named["blocks.2.ln1.hook_in"], plain["after_1"])
assert torch.equal(named["ln_final.hook_in"], plain["after_2"])
# sphinx_gallery_end_ignore

# %%
# This is how TransformerLens works. Its ``HookPoint`` is a module whose
# ``forward`` returns its input; ``HookPoint.add_hook`` registers a forward
# hook that calls your function as ``hook(activation, hook=the_hook_point)``;
# ``HookedRootModule.setup`` collects the hook points by name; and its
# ``hooks``, ``run_with_hooks`` and ``run_with_cache`` remove their hooks in
# ``finally``. Its documentation names the reason: hooks are global state,
# and one left behind keeps changing every later run (page 8's leak).
#
# Its ``TransformerBridge`` (new in version 3.0, and the only way to load a
# model since version 4.0 removed ``HookedTransformer``) wraps the modules of
# a Hugging Face model (embeddings, blocks, attention, MLP, norms) in
# components with a ``hook_in`` and a ``hook_out`` hook point each, as
# ``WithHookPoints`` does here, instead of shipping its own copy of each
# architecture. What the library adds on top is a great deal of work that
# this page does not need: hook points at every interesting place (queries,
# keys, values, each head's output, the residual stream before and after
# each part) under the same names for every architecture, models loaded by
# name from the Hugging Face hub, and tools for patching and attribution.
# It also brings many dependencies (among them transformers, datasets,
# pandas and wandb), so this site does not install it: the dozen lines above
# are its core idea, and its models come from the hub, which this offline
# site never reaches.
#
# nnsight wraps the model you already have
# ----------------------------------------
#
# nnsight takes any ``nn.Module`` as it is: ``NNsight(model)``. Inside
# ``with nn_model.trace(tokens):`` you write code that reads and writes
# ``.input`` and ``.output`` of any submodule, in the order the model runs
# them; nnsight runs the model and pauses it at each value your code asks
# for. Only what you ``.save()`` leaves the ``with`` block.

import nnsight
from nnsight import NNsight
from nnsight.intervention.interleaver import OutOfOrderError

print("nnsight", nnsight.__version__)
out_layer = model.blocks[LAYER].attn.out
print("forward of blocks[1].attn.out before:", type(out_layer.forward).__name__)
nn_model = NNsight(model)
print("forward of blocks[1].attn.out after: ", type(out_layer.forward).__name__)

with nn_model.trace(prompts):
    heads = nn_model.blocks[LAYER].attn.out.input  # the model is paused here
    print("  paused at blocks[1].attn.out: forward hooks", dict(out_layer._forward_hooks))
    print("  forward pre-hooks", dict(out_layer._forward_pre_hooks))
    heads[:, :, columns] = 0  # edits the input that the layer then reads
    nn_logits = nn_model.output.save()

print(f"logit difference, head 1.3 zeroed with nnsight: {logit_difference(nn_logits):.2f}")
print("max abs difference from the plain hook:", (nn_logits - ablated_logits).abs().max().item())

# sphinx_gallery_start_ignore
assert nnsight.__version__.startswith("0.8."), nnsight.__version__
# "it replaces each submodule's forward with a Controller"; no hooks while paused
assert type(out_layer.forward).__name__ == "Controller"
assert all(
    type(module.__dict__.get("forward")).__name__ == "Controller" for module in model.modules()
)
paused = []
with nn_model.trace(prompts[:4]):
    paused_at = nn_model.blocks[LAYER].attn.out.input
    paused.append((dict(out_layer._forward_hooks), dict(out_layer._forward_pre_hooks)))
assert paused == [({}, {})], paused
assert torch.equal(nn_logits, ablated_logits)  # "Same number again"
# sphinx_gallery_end_ignore

# %%
# Same number again. But look at how nnsight reached the heads: while the
# model was paused at ``attn.out``, that module had no forward hook and no
# forward pre-hook. nnsight 0.8 reads and writes ``.input`` and ``.output``
# without any hook. When it wraps a model it replaces each submodule's
# ``forward`` with a ``Controller``: a wrapper that hands the module's input
# to the running trace, calls the original ``forward``, and hands its output
# to the trace. Outside a trace the wrapper only calls the original.
# (Gradients are the exception: reading ``.grad`` inside
# ``with loss.backward():`` registers tensor hooks (page 10), which remove
# themselves.)
#
# Because the wrapper *is* the module's ``forward``, plain hooks still work
# on the wrapped model, and they run around it: a forward pre-hook runs
# before the trace sees ``.input``, and a forward hook runs after the trace
# has seen (and may have edited) ``.output``.

order = []
handles = [
    out_layer.register_forward_pre_hook(lambda module, args: order.append("forward pre-hook")),
    out_layer.register_forward_hook(lambda module, args, output: order.append("forward hook")),
]
try:
    with nn_model.trace(prompts[:4]):
        heads_in = nn_model.blocks[LAYER].attn.out.input
        order.append("trace reads .input")
        heads_out = nn_model.blocks[LAYER].attn.out.output
        order.append("trace reads .output")
finally:
    for handle in handles:
        handle.remove()
print(" -> ".join(order))

# sphinx_gallery_start_ignore
# "a forward pre-hook runs before the trace sees .input, and a forward hook runs after the
# trace has seen (and may have edited) .output": what each one sees
assert order == ["forward pre-hook", "trace reads .input", "trace reads .output", "forward hook"]
seen = {}
handles = [
    out_layer.register_forward_pre_hook(lambda m, args: (torch.full_like(args[0], 7.0),)),
    out_layer.register_forward_hook(lambda m, a, output: seen.update(hook=output.abs().max())),
]
try:
    with nn_model.trace(prompts[:4]):
        seen["trace"] = nn_model.blocks[LAYER].attn.out.input.min().save()
        nn_model.blocks[LAYER].attn.out.output = torch.zeros(4, 15, 64)
finally:
    for handle in handles:
        handle.remove()
assert (seen["trace"], seen["hook"]) == (7.0, 0.0), seen
# "Outside a trace the wrapper only calls the original"
assert torch.equal(model(prompts[:4]), lm.pretrained_lm()(prompts[:4]))
# "Only what you .save() leaves the with block" (the section's opening)
with nn_model.trace(prompts[:4]):
    kept = nn_model.blocks[0].output.save()
    dropped = nn_model.blocks[1].output
assert kept.shape == (4, 15, 64)
assert "dropped" not in globals()
# "(Gradients are the exception: reading .grad inside with loss.backward(): registers tensor
# hooks, which remove themselves.)"
registered = []
original_register_hook = torch.Tensor.register_hook


def counting_register_hook(self, hook):
    registered.append(self)
    return original_register_hook(self, hook)


grad_model = lm.pretrained_lm()
with_grad = NNsight(grad_model)
torch.Tensor.register_hook = counting_register_hook
try:
    with with_grad.trace(prompts[:4]):
        residual = with_grad.blocks[0].output.save()
        loss = with_grad.output.sum()
        with loss.backward():
            grad = residual.grad.save()
finally:
    torch.Tensor.register_hook = original_register_hook
assert grad.shape == (4, 15, 64)
assert len(registered) == 1
assert not registered[0]._backward_hooks
assert not ht.count_hooks(grad_model)
# sphinx_gallery_end_ignore

# %%
# The wrapper stays on the model after the trace (printed below): nnsight
# changed ``model`` itself, not a copy, and it has no call that takes the
# wrapper off again. The wrapped model computes the same logits outside a
# trace, but it is no longer quite the module you loaded (``count_hooks``
# finds no hooks, yet every ``forward`` is a ``Controller``). To keep a plain
# model, wrap a copy, ``NNsight(copy.deepcopy(model))``, or load a fresh one
# with ``lm.pretrained_lm()``.
#
# The logit lens with nnsight: save every block's output (in the order the
# model produces them) and apply the lens afterwards.

with nn_model.trace(prompts):
    nn_residuals = nnsight.save([block.output for block in nn_model.blocks])

nn_lens = [lens_accuracy(residual) for residual in nn_residuals]
print("logit lens accuracy after each block:", [f"{a:.2f}" for a in nn_lens])
largest = max((a - b).abs().max().item() for a, b in zip(nn_residuals, residuals, strict=True))
print("max abs difference from the plain hooks' residuals:", largest)
print("hooks left on the model:", ht.count_hooks(model))
print("forward of blocks[1].attn.out after the traces:", type(out_layer.forward).__name__)

# sphinx_gallery_start_ignore
# "All three gave ... the same logit lens"; the residuals are the same tensors' values
assert nn_lens == plain_lens
assert largest == 0.0
# "The wrapper stays on the model after the trace ... count_hooks finds no hooks"
assert type(out_layer.forward).__name__ == "Controller"
assert not ht.count_hooks(model)
# sphinx_gallery_end_ignore

# %%
# Asking for values out of order is an error, because the model has already
# run past them: reading block 0's output after block 2's in the same trace
# fails, and nnsight says why.

try:
    with nn_model.trace(prompts):
        late = nn_model.blocks[2].output.save()
        early = nn_model.blocks[0].output.save()
except OutOfOrderError as error:
    print(type(error).__name__ + ":", error)

# sphinx_gallery_start_ignore
# "reading block 0's output after block 2's in the same trace fails, and nnsight says why"
try:
    with nn_model.trace(prompts[:4]):
        late = nn_model.blocks[2].output.save()
        early = nn_model.blocks[0].output.save()
except OutOfOrderError as error:
    message = str(error)
else:
    message = "reading block 0 after block 2 did not fail"
assert "was requested but the model already ran past it" in message, message
# sphinx_gallery_end_ignore

# %%
# Three ways, one measurement
# ---------------------------
#
# The figure puts the logit lens of the three ways side by side, and the
# table below it sums up what each abstraction adds over plain hooks.

x = torch.arange(len(plain_lens))
fig, ax = plt.subplots(figsize=(5.2, 3.4), layout="constrained")
for offset, (label, values) in zip(
    (-0.25, 0.0, 0.25),
    [("plain hooks", plain_lens), ("hook points", cached_lens), ("nnsight", nn_lens)],
    strict=True,
):
    ax.bar(x + offset, values, width=0.25, label=label)
ax.set_xticks(x, [f"after block {i}" for i in range(len(plain_lens))])
ax.set_ylabel("logit lens accuracy")
ax.set_ylim(0, 1.05)
ax.set_title("The same logit lens, three ways")
ax.legend(loc="upper left")
plt.show()

# %%
# .. list-table::
#    :header-rows: 1
#
#    * - abstraction
#      - what it is, underneath
#    * - a name for every activation
#      - an identity module (a hook point) at each place in ``forward``: a forward hook on it reads or replaces the value
#    * - self-removing hooks
#      - a context manager that removes the handles in ``finally`` (``hooks``, ``run_with_hooks``)
#    * - ``run_with_cache``
#      - forward hooks that store each activation in a dict under its name, and are removed afterwards
#    * - tracing (nnsight)
#      - each module's ``forward`` replaced by a wrapper that pauses the model where your code asks for a value; only ``.save()`` values leave the trace
#
# What the tiny model can and cannot tell: the mechanism is the same on a
# model with billions of parameters, and the numbers match to the last digit
# here because every way runs the same operations. What the libraries are
# really for does not show on a model this small: loading published
# checkpoints, models spread over several GPUs, and (for nnsight) running
# the trace on a remote server that holds a model too large for your
# machine.
#
# Summary
# -------
#
# - TransformerLens's hook point is an identity module placed in the model's
#   ``forward``; its hooks are ordinary forward hooks, and its
#   ``run_with_hooks`` and ``run_with_cache`` remove them in ``finally``.
# - A dozen lines wrap a model's modules in hook points and reproduce the
#   plain hooks' numbers exactly.
# - nnsight 0.8 wraps each module's ``forward`` instead of adding hooks, and
#   leaves the wrapper on the model; its trace pauses the model where your
#   code reads or writes a value, so the code must follow the model's order,
#   and only saved values leave it.
# - All three gave the same logit difference with head 1.3 zeroed and the
#   same logit lens.
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
# 1. Cache the attention pattern of block 1 by name
#    (``blocks.1.attn.softmax.hook_out``) with ``run_with_cache``, and with
#    ``pattern_by_hook(model, tokens)``, a function you write that returns it
#    from a plain forward hook on ``model.blocks[1].attn.softmax``. How much
#    does head 3 attend from the last position to the subject (position 10),
#    and do the two ways agree?
#    Check: ``ht.exercises.check("37.1", pattern_by_hook)``.
# 2. Activation patching with nnsight: save the residual stream after block 0
#    in the clean run, then run the corrupted prompts
#    (``data.with_other_subject().prompts``) and write the clean value into
#    position 10 of block 0's output. What share of the clean logit difference
#    does it restore, and does a plain forward hook give the same share? Write
#    that hook's maker, ``patch_position(clean_output, position)``.
#    Check: ``ht.exercises.check("37.2", patch_position)``.
# 3. Pass ``run_with_hooks`` a hook ``broken(activation, name)`` that raises
#    an error. How many hooks are left on ``hooked_model`` after the error?
#    Check: ``ht.exercises.check("37.3", broken)``.

# %%
# .. rst-class:: solution
#
# **Solution 1.** Head 1.3 gives most of its attention at the last position
# to position 10, the subject, on average. Not in every sentence: in about
# four in five it reads the subject most, and in most of the others the
# answer's name (the direct logit attribution on
# :doc:`the page on attention patterns and head ablation
# </auto_examples/07_language_models/plot_34_attention_and_ablation>` shows
# what it writes in each case: it pushes the subject down, or, in sentences
# whose answer is one of a few names, raises the answer). The pattern cached
# by name and the one from the plain hook are the same tensor (max abs
# difference 0.0): the hook point on the softmax's output sees exactly the
# output that a forward hook on the softmax receives.

S = lm.POSITIONS["S"]  # the subject; the last prompt position is "end"
name = "blocks.1.attn.softmax.hook_out"
_, cache = run_with_cache(hooked_model, prompts, [name])


def pattern_by_hook(model, tokens):
    patterns = []
    handle = model.blocks[1].attn.softmax.register_forward_hook(
        lambda module, args, output: patterns.append(output)
    )
    try:
        model(tokens)
    finally:
        handle.remove()
    return patterns[0]


pattern = pattern_by_hook(model, prompts)
weight = cache[name][:, HEAD, -1, S].mean().item()
print(f"head 1.3, last position -> position 10: {weight:.2f}")
looks_at = cache[name][:, HEAD, -1].argmax(-1)  # where it reads most, per sentence
answer_position = torch.where(prompts[:, 2] == data.answers, 2, 4)  # A or B
at_subject = (looks_at == S).float().mean().item()
at_answer = (looks_at == answer_position).float().mean().item()
print(
    f"reads most: the subject in {at_subject:.3f} of the sentences, the answer in {at_answer:.3f}"
)
print("max abs difference:", (cache[name] - pattern).abs().max().item())

# sphinx_gallery_start_ignore
assert weight > 0.5, weight  # "most of its attention" (0.78 so far)
# "in about four in five it reads the subject most, and in most of the others the answer's
# name": 0.794 and 0.142 so far; over 30 draws of 500 sentences 0.81 (spread 0.018) and
# 0.73 of the others (spread 0.05), as page 34 checks with the DLA
assert 0.72 < at_subject < 0.9, at_subject
assert at_answer > 0.5 * (1 - at_subject), (at_subject, at_answer)
assert torch.equal(cache[name], pattern)  # "the same tensor"
# sphinx_gallery_end_ignore

ht.exercises.check("37.1", pattern_by_hook)

# sphinx_gallery_start_ignore
from page_checks import assert_check  # docs/_ext: the build's checks


# args[0] is the softmax's input: the scores, not the pattern
def scores_by_hook(model, tokens):
    kept = []
    with model.blocks[1].attn.softmax.register_forward_hook(
        lambda module, args, output: kept.append(args[0])
    ):
        model(tokens)
    return kept[0]


assert_check("37.1", pattern_by_hook, scores_by_hook, "scores")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 2.** The patch restores the whole clean logit difference (a
# share of about 1) with nnsight, and the same share with the plain forward
# hook; the two patched runs give the same logits (max abs difference 0.0).
# Writing to ``nn_model.blocks[0].output`` inside the trace does what a
# forward hook that returns an edited output does. The clean value must come
# from a first trace and be saved: a trace sees only its own run. (nnsight's
# ``LanguageModel``, for Hugging Face models, can batch the clean and the
# corrupted prompts as two invokes of one trace; the plain ``NNsight``
# wrapper cannot, and says so.)

corrupted = data.with_other_subject().prompts
with nn_model.trace(prompts):
    clean_resid = nn_model.blocks[0].output.save()
with nn_model.trace(corrupted):
    nn_model.blocks[0].output[:, S] = clean_resid[:, S]
    patched = nn_model.output.save()


def patch_position(clean_output, position):
    def hook(module, args, output):
        output = output.clone()
        output[:, position] = clean_output[:, position]
        return output

    return hook


handle = model.blocks[0].register_forward_hook(patch_position(clean_resid, S))
try:
    hooked_patch = model(corrupted)
finally:
    handle.remove()
clean, bad = logit_difference(clean_logits), logit_difference(model(corrupted))
shares = {}
for label, logits in [("nnsight", patched), ("plain hook", hooked_patch)]:
    shares[label] = (logit_difference(logits) - bad) / (clean - bad)
    print(f"{label}: share restored {shares[label]:.2f}")
print("max abs difference:", (patched - hooked_patch).abs().max().item())

# sphinx_gallery_start_ignore
# "the whole clean logit difference (a share of about 1)" (1.01 so far); "the same logits"
assert abs(shares["nnsight"] - 1) < 0.05, shares
assert torch.equal(patched, hooked_patch)
# "the plain NNsight wrapper cannot [batch two invokes], and says so"
from nnsight import LanguageModel

assert LanguageModel._batch is not NNsight._batch
try:
    with nn_model.trace() as tracer:
        with tracer.invoke(prompts[:4]):
            first_run = nn_model.blocks[0].output[:, S]
        with tracer.invoke(corrupted[:4]):
            nn_model.blocks[0].output[:, S] = first_run
except NotImplementedError as error:
    message = str(error)
else:
    message = "two invokes in one trace of a plain NNsight model did not fail"
assert "does not support batching multiple invokes" in message, message
# sphinx_gallery_end_ignore

ht.exercises.check("37.2", patch_position)

# sphinx_gallery_start_ignore


# output[position] is a sentence of the batch, not a position
def patch_sentence(clean_output, position):
    def hook(module, args, output):
        output = output.clone()
        output[position] = clean_output[position]
        return output

    return hook


assert_check("37.2", patch_position, patch_sentence, "one_sentence")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 3.** None: ``hooks`` removes its handles in ``finally``, so the
# error reaches you and no hook stays behind on ``hooked_model``.
# TransformerLens's ``hooks`` context does the same.


def broken(activation, name):
    msg = "broken hook"
    raise ValueError(msg)


try:
    run_with_hooks(hooked_model, prompts, [(z_name, broken)])
except ValueError as error:
    print("error:", error)
print("hooks left on hooked_model:", ht.count_hooks(hooked_model))

# sphinx_gallery_start_ignore
assert not ht.count_hooks(hooked_model)  # "None"
# sphinx_gallery_end_ignore

ht.exercises.check("37.3", broken)

# sphinx_gallery_start_ignore
# a hook that returns instead of raising shows nothing about errors
assert_check("37.3", broken, lambda activation, name: activation, "did_not_raise")
from page_checks import assert_exercises_checked, assert_no_hooks_left  # docs/_ext

assert_exercises_checked()
assert_no_hooks_left(globals())
# sphinx_gallery_end_ignore
