# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
Pruning is a forward pre-hook
=============================

.. index::
   ! pruning
   ! prune
   ! 剪枝

``torch.nn.utils.prune`` sets a fraction of a layer's weights to zero and keeps
them at zero during training. It does this with a hook you already know: a
forward pre-hook that rebuilds the weight from the original values and a mask
before every forward pass. Seeing it from the inside explains the odd
attribute names that pruning leaves on a model, why a pruned weight can be out
of date between two calls, and why PyTorch now also offers parametrizations,
which do the same job without any hook.

.. rubric:: What you will learn
   :heading-level: 2

- which hook ``prune.l1_unstructured`` registers, and how to find it with
  :obj:`hooks_tutorial.count_hooks`;
- how ``weight = weight_orig * weight_mask`` is recomputed before each
  forward pass, and why pruned weights stay zero although the optimizer
  still moves ``weight_orig``;
- how ``prune.remove`` makes the pruning permanent and removes the hook;
- how ``torch.nn.utils.parametrize`` does the same without a hook.

**Prerequisites**: :doc:`/auto_examples/02_module_hooks/plot_06_forward_pre_hooks`
and :doc:`/auto_examples/02_module_hooks/plot_08_handles_and_leaks`.
"""

# %%
# Prune a layer and count its hooks
# ---------------------------------
#
# A small linear layer, before and after pruning half of its weights (those
# with the smallest absolute value). :obj:`hooks_tutorial.count_hooks` lists
# the hooks on every module, one column per kind (``params`` counts the
# gradient hooks on the module's parameters).

import torch
from torch import nn
from torch.nn.utils import parametrize, prune

import hooks_tutorial as ht

print("torch", torch.__version__)
torch.manual_seed(0)
layer = nn.Linear(4, 3)
print("before pruning:", ht.count_hooks(layer))
# sphinx_gallery_start_ignore
assert not ht.count_hooks(layer)  # "before pruning": no hooks
# sphinx_gallery_end_ignore
prune.l1_unstructured(layer, "weight", amount=0.5)
print("after pruning:")
print(ht.count_hooks(layer))

# %%
# Pruning added one forward pre-hook. In plain PyTorch, the hook sits in the
# module's ``_forward_pre_hooks`` dictionary (a private attribute, fine for a
# look): it is the pruning method object itself, which is callable with the
# ``(module, args)`` signature of every forward pre-hook.

for hook in layer._forward_pre_hooks.values():  # keyed by a global handle id
    print(f"forward pre-hook: {type(hook).__name__}")
print("is a BasePruningMethod:", isinstance(hook, prune.BasePruningMethod))

# sphinx_gallery_start_ignore
# "Pruning added one forward pre-hook ... it is the pruning method object itself"
assert list(ht.count_hooks(layer)) == [""]
assert tuple(ht.count_hooks(layer)[""]) == (0, 1, 0, 0, 0)
assert [type(h) for h in layer._forward_pre_hooks.values()] == [prune.L1Unstructured]
# sphinx_gallery_end_ignore

# %%
# Where the weight went
# ---------------------
#
# The parameter ``weight`` is gone. Pruning renamed it ``weight_orig`` (still
# a parameter, still trained) and added a buffer ``weight_mask`` of zeros and
# ones. ``weight`` is now a plain attribute: a tensor computed from the two.

print("parameters:", [name for name, _ in layer.named_parameters()])
print("buffers:   ", [name for name, _ in layer.named_buffers()])
print("weight is a Parameter:", isinstance(layer.weight, nn.Parameter))
print("weight's grad_fn:", type(layer.weight.grad_fn).__name__)
print("mask:")
print(layer.weight_mask)
print("zeros in weight:", int((layer.weight == 0).sum()), "of", layer.weight.numel())

# sphinx_gallery_start_ignore
# "renamed it weight_orig (still a parameter ...) and added a buffer weight_mask of zeros
# and ones. weight is now a plain attribute: a tensor computed from the two"; "pruning
# half of its weights": 6 of 12
assert [name for name, _ in layer.named_parameters()] == ["bias", "weight_orig"]
assert [name for name, _ in layer.named_buffers()] == ["weight_mask"]
assert not isinstance(layer.weight, nn.Parameter)
assert type(layer.weight.grad_fn).__name__ == "MulBackward0"
assert set(layer.weight_mask.unique().tolist()) == {0.0, 1.0}
assert int((layer.weight == 0).sum()) == 6
# sphinx_gallery_end_ignore

# %%
# The pre-hook recomputes ``weight`` before each forward
# ------------------------------------------------------
#
# The hook runs only when the layer is called. So if we change
# ``weight_orig`` directly (as an optimizer step does), ``weight`` is out of
# date until the next forward pass brings it back in line.


def in_sync():
    return torch.equal(layer.weight, layer.weight_orig * layer.weight_mask)


synced = {"after pruning": in_sync()}
with torch.no_grad():
    layer.weight_orig.add_(1.0)  # what an optimizer step does
synced["after changing weight_orig"] = in_sync()
layer(torch.randn(2, 4))  # the pre-hook fires here
synced["after a forward pass"] = in_sync()
for moment, value in synced.items():
    print(f"in sync {moment}:", value)

# sphinx_gallery_start_ignore
# "weight is out of date until the next forward pass brings it back in line"
assert list(synced.values()) == [True, False, True], synced
# sphinx_gallery_end_ignore

# %%
# Why pruned weights stay zero
# ----------------------------
#
# Because ``weight`` is computed as ``weight_orig * weight_mask`` inside the
# graph, the gradient that reaches ``weight_orig`` is zero wherever the mask
# is zero.

layer(torch.randn(8, 4)).sum().backward()
pruned = layer.weight_mask == 0
print("gradient zero at all pruned positions:", bool((layer.weight_orig.grad[pruned] == 0).all()))
print("all nonzero elsewhere:", bool((layer.weight_orig.grad[~pruned] != 0).all()))

# sphinx_gallery_start_ignore
# "the gradient that reaches weight_orig is zero wherever the mask is zero"
assert bool((layer.weight_orig.grad[pruned] == 0).all())
assert bool((layer.weight_orig.grad[~pruned] != 0).all())
# sphinx_gallery_end_ignore

# %%
# A zero gradient does not freeze a weight, though
# (:doc:`/auto_examples/03_tensor_hooks/plot_11_parameter_hooks`): weight
# decay adds ``weight_decay * p`` to every gradient, and momentum keeps
# moving what earlier steps moved. Three optimizer steps with both:

optimizer = torch.optim.SGD(layer.parameters(), lr=0.1, momentum=0.9, weight_decay=0.1)
orig_before = layer.weight_orig.detach().clone()
for _ in range(3):
    optimizer.zero_grad()
    layer(torch.randn(8, 4)).sum().backward()
    optimizer.step()
moved = (layer.weight_orig.detach() - orig_before)[pruned].abs()
print(f"weight_orig moved at all pruned positions: {bool((moved > 0).all())}")
print(f"largest move at a pruned position: {moved.max():.3f}")
layer(torch.randn(1, 4))  # the pre-hook applies the mask again
print("weight still zero at all pruned positions:", bool((layer.weight[pruned] == 0).all()))

# sphinx_gallery_start_ignore
# "the optimizer does update weight_orig at the pruned positions; what keeps them pruned
# is the mask, which the pre-hook applies again"
assert bool((moved > 0).all()), moved
assert bool((layer.weight[pruned] == 0).all())
# "The same holds for momentum left over from training before pruning": momentum alone
# (no weight decay), built up before pruning, moves weight_orig at the pruned positions
torch.manual_seed(0)
trained = nn.Linear(4, 3)
sgd = torch.optim.SGD(trained.parameters(), lr=0.1, momentum=0.9)
for _ in range(3):
    sgd.zero_grad()
    trained(torch.randn(8, 4)).sum().backward()
    sgd.step()
prune.l1_unstructured(trained, "weight", amount=0.5)
assert trained.weight_orig is sgd.param_groups[0]["params"][0]  # the same Parameter
trained_pruned = trained.weight_mask == 0
orig_then = trained.weight_orig.detach().clone()
sgd.zero_grad()
trained(torch.randn(8, 4)).sum().backward()
assert bool((trained.weight_orig.grad[trained_pruned] == 0).all())
sgd.step()
assert bool((trained.weight_orig.detach() != orig_then)[trained_pruned].all())
trained(torch.randn(1, 4))
assert bool((trained.weight[trained_pruned] == 0).all())
prune.remove(trained, "weight")
del trained, sgd, trained_pruned, orig_then
# sphinx_gallery_end_ignore

# %%
# So the optimizer does update ``weight_orig`` at the pruned positions; what
# keeps them pruned is the mask, which the pre-hook applies again before
# every forward pass. The same holds for momentum left over from training
# before pruning, when these weights still had gradients.

# %%
# The same idea in plain PyTorch
# ------------------------------
#
# Take away the bookkeeping and pruning is a few lines: keep the original
# weights as a parameter, register a mask, and multiply them in a forward
# pre-hook. This layer behaves like the pruned one above.

my_layer = nn.Linear(4, 3)
my_layer.weight_orig = nn.Parameter(my_layer.weight.detach().clone())
del my_layer.weight  # remove the old parameter
my_layer.register_buffer("weight_mask", (my_layer.weight_orig.abs() > 0.2).float())


def apply_mask(module, args):
    module.weight = module.weight_orig * module.weight_mask


handle = my_layer.register_forward_pre_hook(apply_mask)
apply_mask(my_layer, ())  # so that weight exists before the first call
print(ht.count_hooks(my_layer))
same = torch.equal(my_layer.weight, my_layer.weight_orig * my_layer.weight_mask)
print("weight equals weight_orig * weight_mask:", same)

# sphinx_gallery_start_ignore
# "This layer behaves like the pruned one above": one forward pre-hook, a masked weight
assert tuple(ht.count_hooks(my_layer)[""]) == (0, 1, 0, 0, 0)
assert same
# sphinx_gallery_end_ignore

# %%
# Make it permanent: ``prune.remove``
# -----------------------------------
#
# Once training is over, ``prune.remove`` writes the current masked values
# into a normal ``weight`` parameter and deletes ``weight_orig``,
# ``weight_mask`` and the hook. The zeros stay; the machinery goes.

prune.remove(layer, "weight")
print("hooks after prune.remove:", ht.count_hooks(layer))
print("parameters:", [name for name, _ in layer.named_parameters()])
print("buffers:   ", [name for name, _ in layer.named_buffers()])
print("zeros in weight:", int((layer.weight == 0).sum()), "of", layer.weight.numel())

# sphinx_gallery_start_ignore
# "The zeros stay; the machinery goes."
assert not ht.count_hooks(layer)
assert [name for name, _ in layer.named_parameters()] == ["bias", "weight"]
assert not list(layer.named_buffers())
assert int((layer.weight == 0).sum()) == 6
# sphinx_gallery_end_ignore

# %%
# The modern alternative: parametrizations
# ----------------------------------------
#
# ``torch.nn.utils.parametrize.register_parametrization`` attaches a small
# module that computes ``weight`` from an ``original`` tensor. It uses no
# hook: it swaps the layer's class for a subclass in which ``weight`` is a
# property, computed each time it is read. So it is never out of date, even
# outside a forward pass.


class Mask(nn.Module):
    def __init__(self, mask):
        super().__init__()
        self.register_buffer("mask", mask)

    def forward(self, weight):
        return weight * self.mask


torch.manual_seed(0)
param_layer = nn.Linear(4, 3)
mask = (param_layer.weight.abs() >= param_layer.weight.abs().median()).float()
parametrize.register_parametrization(param_layer, "weight", Mask(mask))
print("hooks:", ht.count_hooks(param_layer))
print("class:", type(param_layer).__name__)
print("parameters:", [name for name, _ in param_layer.named_parameters()])

original = param_layer.parametrizations.weight.original
with torch.no_grad():
    original.add_(1.0)  # no forward pass after this
print("in sync without a forward pass:", torch.equal(param_layer.weight, original * mask))

# sphinx_gallery_start_ignore
# "It uses no hook: it swaps the layer's class for a subclass ... never out of date, even
# outside a forward pass"
assert not ht.count_hooks(param_layer)
assert type(param_layer).__name__ == "ParametrizedLinear"
assert isinstance(param_layer, nn.Linear)
assert type(param_layer) is not nn.Linear
assert [n for n, _ in param_layer.named_parameters()] == [
    "bias",
    "parametrizations.weight.original",
]
assert torch.equal(param_layer.weight, original * mask)
# sphinx_gallery_end_ignore

# %%
# Since the weight is recomputed on every read, a layer that reads it often
# pays for it each time; ``with parametrize.cached():`` computes it once per
# block. ``parametrize.remove_parametrizations(layer, "weight")`` is the
# counterpart of ``prune.remove``.

parametrize.remove_parametrizations(param_layer, "weight")
print("class after removal:", type(param_layer).__name__)
print("parameters:", [name for name, _ in param_layer.named_parameters()])

# sphinx_gallery_start_ignore
# "remove_parametrizations ... is the counterpart of prune.remove"
assert type(param_layer) is nn.Linear
assert [n for n, _ in param_layer.named_parameters()] == ["bias", "weight"]
# sphinx_gallery_end_ignore

# %%
# Summary
# -------
#
# - ``prune.l1_unstructured`` registers one forward pre-hook, the pruning
#   method object, which sets ``weight = weight_orig * weight_mask`` before
#   every forward pass.
# - ``weight_orig`` is the trained parameter and ``weight_mask`` a buffer;
#   ``weight`` is a plain tensor, out of date between an optimizer step and
#   the next forward pass.
# - Pruned positions get a zero gradient, but weight decay and momentum
#   still move ``weight_orig`` there; they stay zero in ``weight`` because
#   the pre-hook applies the mask before every forward pass.
# - ``prune.remove`` keeps the zeros and removes the hook, the mask and
#   ``weight_orig``.
# - ``parametrize`` reaches the same result without a hook: ``weight`` becomes
#   a property of a generated subclass, computed on every read.
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
# 1. *In words:* prune the same layer twice with
#    ``prune.l1_unstructured(layer, "weight", amount=0.5)``. How many hooks
#    does ``count_hooks`` report, what fraction of the weights is zero, and
#    why?
# 2. Write ``prune_together(model)``, which prunes the weights of both linear
#    layers of ``nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))``
#    together with ``prune.global_unstructured`` and ``amount=0.3``. How many
#    hooks are registered, and on which modules? Check:
#    ``ht.exercises.check("28.2", prune_together)``.
# 3. *In words:* remove ``my_layer``'s hook with ``handle.remove()``, call the
#    layer on an input ``x``, add 1 to ``my_layer.weight_orig`` and call it on
#    ``x`` again. Does the output change? Then call ``.sum().backward()`` on
#    both outputs, one after the other: what happens, and why?

# %%
# .. rst-class:: solution
#
# **Solution 1.** One hook: ``count_hooks`` reports 1. The second call adds no
# second hook; it replaces the first method with a ``PruningContainer`` that
# holds both. The second pruning takes half of the weights that are still
# nonzero, so the zeros go from 6 to 9 of 12, a fraction of 0.75: pruning
# twice by half does not prune everything.

torch.manual_seed(0)
twice = nn.Linear(4, 3)
for call in ("first", "second"):
    prune.l1_unstructured(twice, "weight", amount=0.5)
    zeros = int((twice.weight == 0).sum())
    print(f"zeros after the {call} pruning: {zeros} of {twice.weight.numel()}")
print(f"fraction of zeros: {(twice.weight == 0).float().mean():.2f}")
print("hooks:", ht.count_hooks(twice).total)
print([type(hook).__name__ for hook in twice._forward_pre_hooks.values()])

# sphinx_gallery_start_ignore
# "One hook ... a PruningContainer that holds both ... from 6 to 9 of 12"
assert ht.count_hooks(twice).total == 1
(container,) = twice._forward_pre_hooks.values()
assert isinstance(container, prune.PruningContainer)
assert len(container) == 2
assert zeros == 9
# sphinx_gallery_end_ignore

prune.remove(twice, "weight")  # done with this layer: keep the zeros, drop the hook

# %%
# .. rst-class:: solution
#
# **Solution 2.** Two hooks, one forward pre-hook on each pruned module
# (``"0"`` and ``"2"``); the ReLU gets none. Global pruning ranks the 48
# weights of both layers together and zeroes the 14 smallest
# (``amount=0.3`` of 48, rounded), wherever they are. The last two lines show how they fall in each
# layer: not the same fraction in each.


def prune_together(model):
    prune.global_unstructured(
        [(model[0], "weight"), (model[2], "weight")],
        pruning_method=prune.L1Unstructured,
        amount=0.3,
    )


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
prune_together(model)
print(ht.count_hooks(model))
weights = [model[0].weight, model[2].weight]
zeros = sum(int((w == 0).sum()) for w in weights)
print("zeros in total:", zeros, "of", sum(w.numel() for w in weights))
fractions = []
for name, weight in zip(("0", "2"), weights, strict=True):
    zeros = int((weight == 0).sum())
    fractions.append(zeros / weight.numel())
    print(f"layer {name}: {zeros} of {weight.numel()} zero ({fractions[-1]:.2f})")

# sphinx_gallery_start_ignore
# "Two hooks, one forward pre-hook on each pruned module ("0" and "2"); the ReLU gets
# none"; "zeroes the 14 smallest": round(0.3 * 48)
assert {name: tuple(c) for name, c in ht.count_hooks(model).items()} == {
    "0": (0, 1, 0, 0, 0),
    "2": (0, 1, 0, 0, 0),
}
assert sum(int((w == 0).sum()) for w in weights) == round(0.3 * 48) == 14
# "ranks the 48 weights of both layers together ... wherever they are": every pruned
# weight is smaller in magnitude than every kept one, across the two layers
magnitudes = torch.cat([model[0].weight_orig.abs().flatten(), model[2].weight_orig.abs().flatten()])
kept = torch.cat([model[0].weight_mask.flatten(), model[2].weight_mask.flatten()]) == 1
assert magnitudes[~kept].max() < magnitudes[kept].min()
# "not the same fraction in each": true on every machine, since equal fractions would take
# z zeros of 16 and 2z of 32, and 3z = 14 has no whole solution
assert fractions[0] != fractions[1], fractions
# sphinx_gallery_end_ignore

for module in (model[0], model[2]):
    prune.remove(module, "weight")

# %%

ht.exercises.check("28.2", prune_together)

# sphinx_gallery_start_ignore
from page_checks import assert_check  # docs/_ext: the build's checks


# each layer pruned by itself: each loses its own smallest 30%, not the smallest of all
def prune_each(model):
    prune.l1_unstructured(model[0], "weight", amount=0.3)
    prune.l1_unstructured(model[2], "weight", amount=0.3)


assert_check("28.2", prune_together, prune_each, "pruned_separately")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 3.** No: the output changed by 0.0. Without the hook nothing
# recomputes ``weight``: the layer keeps using the last tensor the hook
# computed, which still has the mask's zeros but ignores every change to
# ``weight_orig``. Training breaks too: that old tensor carries the graph of
# the multiplication that made it, so the second backward raises
# ``RuntimeError: Trying to backward through the graph a second time``. The
# pre-hook is what gives every forward pass a fresh ``weight`` and a fresh
# graph.

handle.remove()
x = torch.randn(2, 4)
before = my_layer(x)
with torch.no_grad():
    my_layer.weight_orig.add_(1.0)
after = my_layer(x)
print("output changed by:", (after - before).abs().max().item())
same = torch.equal(my_layer.weight, my_layer.weight_orig * my_layer.weight_mask)
print("weight equals weight_orig * weight_mask:", same)
before.sum().backward()
try:
    after.sum().backward()
except RuntimeError as error:
    message = str(error)
    print("RuntimeError:", message.partition(" (")[0])

# sphinx_gallery_start_ignore
# "the output changed by 0.0"; "ignores every change to weight_orig"; "the second
# backward raises RuntimeError: Trying to backward through the graph a second time"
assert torch.equal(after, before)
assert not same
assert message.startswith("Trying to backward through the graph a second time")
from page_checks import assert_exercises_checked, assert_no_hooks_left  # docs/_ext

assert_exercises_checked()
assert_no_hooks_left(globals())
# sphinx_gallery_end_ignore
