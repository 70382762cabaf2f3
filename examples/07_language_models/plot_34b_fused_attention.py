# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
Attention weights under fused attention
=======================================

.. index::
   ! scaled_dot_product_attention
   ! fused attention
   ! eager attention
   ! 融合注意力

The previous page read the attention pattern with a forward hook on
``attn.softmax``. Most models written today have no such module: they
compute attention with one call of
``torch.nn.functional.scaled_dot_product_attention``, which takes the
queries, keys and values and returns only the mix of the values. Fused
kernels such as FlashAttention (Dao et al. 2022) compute that mix tile by
tile, without ever storing the whole pattern, so no module hook sees it,
because no tensor holds it. This page switches the small language model to such a fused path, shows
what hooks still see, and gets the pattern back in two ways.

.. rubric:: What you will learn
   :heading-level: 2

- why a module hook cannot see the attention pattern when attention runs
  through ``scaled_dot_product_attention``;
- how to check that a fused path computes the same function as the
  explicit one, with a tolerance for float rounding;
- the two ways out: run the explicit (*eager*) path while you record, or
  recompute the pattern from the queries and keys that a forward hook on
  their projection captured;
- how Hugging Face transformers offers the same choice.

**Prerequisites**: :doc:`/auto_examples/02_module_hooks/plot_05_forward_hooks`
and :doc:`/auto_examples/07_language_models/plot_34_attention_and_ablation`.
"""

# %%
# One function for the whole attention
# ------------------------------------
#
# In each block, ``attn.qkv`` projects the input to queries, keys and
# values. With ``d`` the width of a head, the pattern is
# ``softmax(q @ k.T / sqrt(d))`` with the future masked out, and each
# position's output is the pattern times the values. TinyLM computes these
# steps one by one, the softmax in its own module: the *eager* path. With
# ``attn.fused = True``, a block's attention calls instead
#
# .. code-block:: python
#
#    F.scaled_dot_product_attention(q, k, v, is_causal=True)
#
# one function for the scores, the mask, the softmax and the mix of the
# values. Both paths must compute the same function: on 500 test sentences,
# the logits agree up to float rounding, and every answer is the same.

import math

import torch
from torch.utils._python_dispatch import TorchDispatchMode

import hooks_tutorial as ht
from hooks_tutorial import lm

print("torch", torch.__version__)
model = lm.pretrained_lm()
test = lm.make_names(500, seed=1, split="test")


def set_fused(model, fused):
    for block in model.blocks:
        block.attn.fused = fused


with torch.no_grad():
    eager_logits = model(test.prompts)
    set_fused(model, True)
    fused_logits = model(test.prompts)

difference = (fused_logits - eager_logits).abs().max().item()
print(f"largest |fused - eager| logit: {difference:.1e}")
print(f"largest |logit|: {eager_logits.abs().max().item():.1f}")
same_answers = torch.equal(fused_logits[:, -1].argmax(-1), eager_logits[:, -1].argmax(-1))
print("same answer in every sentence:", same_answers)
# float32 rounding only (the fused kernel adds in another order); a missing mask or a
# missing scale moves the logits by more than 1
torch.testing.assert_close(fused_logits, eager_logits, rtol=1e-5, atol=1e-4)

# sphinx_gallery_start_ignore
# "TinyLM computes these steps one by one": eager is what pretrained_lm() gives
assert not any(block.attn.fused for block in lm.pretrained_lm().blocks)
assert all(block.attn.fused for block in model.blocks)
assert same_answers
# "a missing mask or a missing scale moves the logits by more than 1": the tolerance
# above catches either mistake (the lm module calls torch.nn.functional's function)
sdpa = torch.nn.functional.scaled_dot_product_attention
for mistake in (
    lambda q, k, v, **kwargs: sdpa(q, k, v),  # no causal mask
    lambda q, k, v, **kwargs: sdpa(q, k, v, is_causal=True, scale=1.0),  # no 1/sqrt(d)
):
    torch.nn.functional.scaled_dot_product_attention = mistake
    try:
        with torch.no_grad():
            wrong_logits = model(test.prompts)
    finally:
        torch.nn.functional.scaled_dot_product_attention = sdpa
    assert (wrong_logits - eager_logits).abs().max() > 1, (wrong_logits - eager_logits).abs().max()
assert torch.nn.functional.scaled_dot_product_attention is sdpa
# sphinx_gallery_end_ignore

# %%
# What the hooks see
# ------------------
#
# Now the model runs fused. The forward hook on ``attn.softmax`` of the
# previous page, on every block, and a forward hook on every module that
# records the shape of its output:

patterns = {}
output_shapes = set()


def keep_pattern(block):
    def hook(module, args, output):
        patterns[block] = output

    return hook


def keep_shape(module, args, output):
    output_shapes.add(tuple(output.shape))


handles = [
    block.attn.softmax.register_forward_hook(keep_pattern(i))
    for i, block in enumerate(model.blocks)
]
handles += [module.register_forward_hook(keep_shape) for module in model.modules()]
try:
    with torch.no_grad():
        model(test.prompts)
finally:
    for handle in handles:
        handle.remove()
print("patterns recorded:", len(patterns))
print("shapes of the modules' outputs:", sorted(output_shapes))
print("hooks left on the model:", ht.count_hooks(model).total)

# sphinx_gallery_start_ignore
# "no pattern: attn.softmax never ran, and no module returns [500, 4, 15, 15]"
assert patterns == {}
assert (500, 4, 15, 15) not in output_shapes
assert not any(shape[-2:] == (15, 15) for shape in output_shapes), output_shapes
# "the output of the attention module itself is [500, 15, 64]"
assert (500, 15, 64) in output_shapes
assert ht.count_hooks(model).total == 0
# sphinx_gallery_end_ignore

# %%
# No pattern: ``attn.softmax`` never ran, and no module returns a
# ``[500, 4, 15, 15]`` tensor. A hook on the attention module itself does
# not help either: its output is the heads' mix after ``out``,
# ``[500, 15, 64]``.
#
# Not even a hook on every operation sees the pattern. A dispatch mode (page
# 32b) that lists each ``aten`` operation with the shapes of its outputs
# shows what the fused call became:


class OutputShapes(TorchDispatchMode):
    """Each aten operation that runs, with the shapes of its outputs."""

    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        outs = out if isinstance(out, (tuple, list)) else (out,)
        shapes = [list(o.shape) for o in outs if isinstance(o, torch.Tensor)]
        self.ops.append((str(func), shapes))
        return out


with torch.no_grad(), OutputShapes() as seen:
    model(test.prompts)
attention_ops = [(name, shapes) for name, shapes in seen.ops if "attention" in name]
print(f"{len(seen.ops)} operations, {len(attention_ops)} of them attention:")
for name, shapes in attention_ops:
    print(" ", name, shapes)
square = [name for name, shapes in seen.ops if any(s[-2:] == [15, 15] for s in shapes)]
print("operations with a [15, 15] output:", square)

# sphinx_gallery_start_ignore
# "one operation per block", its outputs the mix [500, 4, 15, 16] and one number per head
# and position [500, 4, 15]; nothing of the pattern's shape
assert len(attention_ops) == len(model.blocks)
assert all(shapes == [[500, 4, 15, 16], [500, 4, 15]] for _, shapes in attention_ops)
assert square == []


# "the log of the softmax's denominator for that row": the second output is
# logsumexp(masked scores) (float rounding: the kernel sums in blocks)
class KeepOutputs(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.outputs = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if "attention" in str(func):
            self.outputs.append(out)
        return out


block0 = model.blocks[0].attn
with torch.no_grad():
    x0 = model.blocks[0].ln1(model.embed(test.prompts) + model.pos_embed(torch.arange(15)))
    q0, k0, _ = block0.qkv(x0).view(500, 15, 3, 4, 16).permute(2, 0, 3, 1, 4)
    with KeepOutputs() as kept:
        block0(x0)
future0 = torch.ones(15, 15, dtype=torch.bool).triu(1)
lse = torch.logsumexp((q0 @ k0.transpose(-1, -2) / 4).masked_fill(future0, float("-inf")), -1)
torch.testing.assert_close(kept.outputs[0][1], lse, rtol=1e-5, atol=1e-5)
# sphinx_gallery_end_ignore

# %%
# The whole attention of a block is one operation (its name says which
# kernel PyTorch chose for this CPU and this torch). Its first output is the
# heads' mix, ``[500, 4, 15, 16]``; its second holds one number per head and
# position: the logarithm of that row's softmax denominator (the
# ``logsumexp`` of its scores). That is all a FlashAttention kernel keeps,
# enough for the backward pass to recompute the pattern piece by piece. The
# pattern itself never exists as a tensor.
#
# Way out 1: run the eager path
# -----------------------------
#
# The plain fix is the switch: run the explicit steps while recording, with
# the same hooks as the previous page, and switch back in ``finally``, so
# the model is left as it was even if the run fails.

patterns = {}
handles = [
    block.attn.softmax.register_forward_hook(keep_pattern(i))
    for i, block in enumerate(model.blocks)
]
set_fused(model, False)
try:
    with torch.no_grad():
        model(test.prompts)
finally:
    set_fused(model, True)
    for handle in handles:
        handle.remove()
eager_patterns = dict(patterns)
print("patterns recorded:", {block: list(p.shape) for block, p in eager_patterns.items()})
reads = eager_patterns[1][:, 3, -1].mean(0)
print(f"head 1.3 at the last position reads position {reads.argmax().item()} on average")
print("the model runs fused again:", all(block.attn.fused for block in model.blocks))
print(f"one head's pattern for 8,192 tokens in float32: {8192 * 8192 * 4 / 2**20:.0f} MiB")

# sphinx_gallery_start_ignore
# "as on the previous page": head 1.3 reads the subject at position 10 on average
assert reads.argmax().item() == 10, reads
assert all(block.attn.fused for block in model.blocks)
assert ht.count_hooks(model).total == 0
# "T x T numbers per head": 8192 * 8192 * 4 bytes is 256 MiB
assert 8192 * 8192 * 4 == 256 * 2**20
# sphinx_gallery_end_ignore

# %%
# The pattern is back, and head 1.3 reads the subject on average, as on the
# previous page. The price is what fusing saves: the eager path builds ``T x T``
# numbers per head, layer and sentence. For 15 tokens that is nothing; for
# long inputs it is the memory that fused kernels exist to avoid (the last
# line above). And the eager path must compute the same function as the
# fused one, which the logit check above showed for this model.
#
# Way out 2: recompute the pattern from the queries and keys
# ----------------------------------------------------------
#
# The fused call hides the pattern, not its inputs: ``attn.qkv`` is still a
# module, and a forward hook on it receives the queries, keys and values side
# by side, ``[batch, T, 3 * 64]``. From the query and the key, the pattern
# takes a few lines, the same steps as the eager path; the model itself runs
# fused.


def pattern_from_qkv(qkv_output, n_heads):
    """The causal attention pattern [batch, heads, T, T] from the output of attn.qkv."""
    batch, length, width3 = qkv_output.shape
    d_head = width3 // 3 // n_heads
    q, k, _ = qkv_output.view(batch, length, 3, n_heads, d_head).permute(2, 0, 3, 1, 4)
    scores = q @ k.transpose(-1, -2) / math.sqrt(d_head)
    future = torch.ones(length, length, dtype=torch.bool).triu(1)
    return torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)


qkv_outputs = {}


def keep_qkv(block):
    def hook(module, args, output):
        qkv_outputs[block] = output

    return hook


handles = [
    block.attn.qkv.register_forward_hook(keep_qkv(i)) for i, block in enumerate(model.blocks)
]
try:
    with torch.no_grad():
        model(test.prompts)  # fused
finally:
    for handle in handles:
        handle.remove()

gaps = {}
for block, qkv_output in qkv_outputs.items():
    recomputed = pattern_from_qkv(qkv_output, model.blocks[block].attn.n_heads)
    gaps[block] = (recomputed - eager_patterns[block]).abs().max().item()
    print(f"block {block}: largest |recomputed - eager| weight {gaps[block]:.1e}")
    # weights lie in [0, 1]: float rounding moves them by about 1e-6 at most here, a
    # missing mask or scale by 0.1 or more
    torch.testing.assert_close(recomputed, eager_patterns[block], rtol=1e-5, atol=1e-5)

# sphinx_gallery_start_ignore
# "Block 0's recomputed pattern is the eager one exactly; blocks 1 and 2 agree up to float
# rounding"
assert gaps[0] == 0.0, gaps
assert all(gaps[block] < 1e-5 for block in (1, 2)), gaps
assert all(block.attn.fused for block in model.blocks)
assert ht.count_hooks(model).total == 0
# the tolerance's reason: "a missing mask or scale by 0.1 or more"
qkv_output = qkv_outputs[1]
q1, k1, _ = qkv_output.view(500, 15, 3, 4, 16).permute(2, 0, 3, 1, 4)
no_mask = torch.softmax(q1 @ k1.transpose(-1, -2) / 4, dim=-1)
future1 = torch.ones(15, 15, dtype=torch.bool).triu(1)
no_scale = torch.softmax((q1 @ k1.transpose(-1, -2)).masked_fill(future1, float("-inf")), -1)
assert (no_mask - eager_patterns[1]).abs().max() > 0.1
assert (no_scale - eager_patterns[1]).abs().max() > 0.1
# sphinx_gallery_end_ignore

# %%
# Block 0's recomputed pattern is the eager one exactly; blocks 1 and 2
# agree up to float rounding (exercise 3 asks why). The recomputation costs
# the same ``T x T`` numbers as the eager path, but only for the blocks you
# hook, and it can compute less: the last row alone needs one query
# (exercise 1).
#
# In larger models, hook what the model really multiplies. Many have one
# projection module each for the queries and the keys (``q_proj`` and
# ``k_proj`` in Llama-style models), so the hook goes on both. With rotary
# position embeddings (Su et al. 2021), the query and key are rotated
# *after* these projections, inside the attention's ``forward``, so the
# rotation has to be redone on what the hooks captured; with grouped-query
# attention (Ainslie et al. 2023) several query heads share one key head.
# Check the recomputed pattern against an eager run of the same model, as
# above, before you trust it.
#
# Hugging Face transformers makes the same choice when it loads a model:
# ``attn_implementation="eager"`` selects the explicit path and ``"sdpa"``
# the fused function, and a forward call with ``output_attentions=True``
# returns the attention weights, which only the eager path computes. Asked
# for weights while set to SDPA, transformers has, depending on its version
# and on how you asked, fallen back to the eager path with a warning,
# refused with an error, or warned and returned ``None`` for the weights; to
# read the weights, ask for ``"eager"`` yourself. (This tutorial does not
# install transformers, so this paragraph is not run here.)
#
# Summary
# -------
#
# - ``scaled_dot_product_attention`` does the scores, the mask, the softmax
#   and the mix of the values in one call and returns only the mix: no
#   module computes the pattern, and a fused kernel never stores it whole,
#   so no hook can read it.
# - A fused path must compute the same function as the eager one: compare
#   the logits with a tolerance for float rounding that a real mistake
#   (a missing mask or scale) would exceed.
# - Way out 1: switch to the eager path while you record, and back in
#   ``finally``; it costs ``T x T`` numbers per head.
# - Way out 2: a forward hook on the query and key projections, then
#   ``softmax(q @ k.T / sqrt(d))`` with the causal mask; the model keeps
#   running fused. Redo every step the model applies after the projections.
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
# 1. Write ``last_row(qkv_output, n_heads)``, which returns only the last
#    row of the attention pattern, ``[batch, heads, T]``: where the last
#    position looks, computed from the last query and every key. Does it need
#    the mask? Use it on the fused run's ``qkv_outputs[1]`` to find where
#    head 1.3 looks. Check: ``ht.exercises.check("34b.1", last_row)``.
# 2. Write a context manager ``eager_attention(model)`` that runs every
#    block on the eager path inside its ``with`` block and afterwards puts
#    back what each block had before (fused or not), also when the code
#    inside raises. Check: ``ht.exercises.check("34b.2", eager_attention)``.
# 3. *In words:* the pattern recomputed from the fused run equals the eager
#    pattern exactly in block 0, but only up to float rounding in blocks 1
#    and 2. Why?

# %%
# .. rst-class:: solution
#
# **Solution 1.** No mask is needed: the last position may read every
# position, so its row has nothing to hide. One query against all the keys
# gives ``T`` weights per head instead of ``T x T``. On the fused run, head
# 1.3's last row matches the eager pattern's, and reads the subject at
# position 10 on average.


def last_row(qkv_output, n_heads):
    batch, length, width3 = qkv_output.shape
    d_head = width3 // 3 // n_heads
    q, k, _ = qkv_output.view(batch, length, 3, n_heads, d_head).permute(2, 0, 3, 1, 4)
    scores = q[:, :, -1:] @ k.transpose(-1, -2) / math.sqrt(d_head)  # [batch, heads, 1, T]
    return torch.softmax(scores[:, :, 0], dim=-1)


row = last_row(qkv_outputs[1], n_heads=4)
print("last rows of block 1:", list(row.shape))
print(f"head 1.3 reads position {row[:, 3].mean(0).argmax().item()} on average")

# sphinx_gallery_start_ignore
# "matches the eager pattern's" (float rounding, as for the whole pattern above)
torch.testing.assert_close(row, eager_patterns[1][:, :, -1], rtol=1e-5, atol=1e-5)
assert row[:, 3].mean(0).argmax().item() == 10
# sphinx_gallery_end_ignore

ht.exercises.check("34b.1", last_row)

# sphinx_gallery_start_ignore
from page_checks import assert_check  # docs/_ext: the build's checks


# the first query instead of the last
def first_row(qkv_output, n_heads):
    batch, length, width3 = qkv_output.shape
    d_head = width3 // 3 // n_heads
    q, k, _ = qkv_output.view(batch, length, 3, n_heads, d_head).permute(2, 0, 3, 1, 4)
    return torch.softmax(q[:, :, :1] @ k.transpose(-1, -2) / math.sqrt(d_head), -1)[:, :, 0]


assert_check("34b.1", last_row, first_row, "first_row")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 2.** Save each block's setting, switch every block to eager,
# and restore the saved settings in ``finally``, around the ``yield``: the
# settings come back when the ``with`` block ends, and also when the code
# inside raises, and the error still reaches the caller. Inside, a hook on
# ``attn.softmax`` sees the pattern; afterwards the model runs fused again.

from contextlib import contextmanager


@contextmanager
def eager_attention(model):
    before = [block.attn.fused for block in model.blocks]
    for block in model.blocks:
        block.attn.fused = False
    try:
        yield model
    finally:
        for block, fused in zip(model.blocks, before, strict=True):
            block.attn.fused = fused


patterns = {}
with eager_attention(model), ht.HookGroup() as hooks:
    hooks.forward(model.blocks[1].attn.softmax, keep_pattern(1))
    with torch.no_grad():
        model(test.prompts)
print("pattern of block 1:", list(patterns[1].shape))
print("the model runs fused again:", all(block.attn.fused for block in model.blocks))

# sphinx_gallery_start_ignore
assert torch.equal(patterns[1], eager_patterns[1])
assert all(block.attn.fused for block in model.blocks)
assert ht.count_hooks(model).total == 0
# "also when the code inside raises, and the error still reaches the caller"
reached = False
try:
    with eager_attention(model):
        raise KeyError(0)
except KeyError:
    reached = True
assert reached
assert all(block.attn.fused for block in model.blocks)
# sphinx_gallery_end_ignore

ht.exercises.check("34b.2", eager_attention)

# sphinx_gallery_start_ignore


# without try/finally, an error inside the with block leaves the model eager
@contextmanager
def eager_attention_without_finally(model):
    before = [block.attn.fused for block in model.blocks]
    for block in model.blocks:
        block.attn.fused = False
    yield model
    for block, fused in zip(model.blocks, before, strict=True):
        block.attn.fused = fused


assert_check("34b.2", eager_attention, eager_attention_without_finally, "not_restored_after_error")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 3.** Block 0 reads the embeddings, which both runs compute with
# the same operations, so its queries and keys are the same to the last bit,
# and ``pattern_from_qkv`` repeats the eager steps on them exactly. But
# block 0's fused kernel computes the softmax and the mix of the values in
# its own order (it divides by the softmax's denominator after the mix
# rather than before), so its output differs from ``pattern @ v`` in the
# last bits; blocks 1 and 2 read a residual stream that carries that
# difference, so their queries and keys differ a little, and so do their
# patterns. The outputs of ``attn.qkv`` in the two runs show it:

qkv_outputs = {}
with ht.HookGroup() as hooks:
    for i, block in enumerate(model.blocks):
        hooks.forward(block.attn.qkv, keep_qkv(i))
    with torch.no_grad():
        model(test.prompts)  # fused
        fused_qkv = dict(qkv_outputs)
        with eager_attention(model):
            model(test.prompts)
        eager_qkv = dict(qkv_outputs)
for block in range(3):
    same = torch.equal(eager_qkv[block], fused_qkv[block])
    print(f"block {block}: attn.qkv gives the same output in both runs: {same}")

# sphinx_gallery_start_ignore
# "its queries and keys are the same to the last bit"; later blocks "differ a little"
assert torch.equal(eager_qkv[0], fused_qkv[0])
assert not torch.equal(eager_qkv[1], fused_qkv[1])
assert (eager_qkv[2] - fused_qkv[2]).abs().max() < 1e-4
# "its output differs from pattern @ v in the last bits": same queries, keys and values,
# the fused kernel's mix is not bit-equal to the eager one, and within float rounding
q0, k0, v0 = fused_qkv[0].view(500, 15, 3, 4, 16).permute(2, 0, 3, 1, 4)
with torch.no_grad():
    fused_mix = torch.nn.functional.scaled_dot_product_attention(q0, k0, v0, is_causal=True)
eager_mix = eager_patterns[0] @ v0
assert not torch.equal(fused_mix, eager_mix)
torch.testing.assert_close(fused_mix, eager_mix, rtol=1e-5, atol=1e-5)
from page_checks import assert_exercises_checked, assert_no_hooks_left  # docs/_ext

assert_exercises_checked()
assert_no_hooks_left(globals())
# sphinx_gallery_end_ignore
