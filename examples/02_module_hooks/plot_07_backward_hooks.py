# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
Backward hooks: gradients at a module's boundary
================================================

.. index::
   ! register_full_backward_hook
   ! backward hook
   ! register_backward_hook
   ! 反向钩子
   ! 完整反向钩子
   ! grad_input
   ! grad_output

Forward hooks see what flows *into* and *out of* a module; backward hooks see
the gradients flowing back through the same boundary during
``loss.backward()``. Grad-CAM needs exactly this: the gradient of a class
score with respect to a layer's output. PyTorch has two module backward hook
APIs. The course notes use the old one, ``register_backward_hook``, which is
deprecated and gives wrong gradients for many modules. This page runs both
side by side, so you can see what each really returns.

.. rubric:: What you will learn
   :heading-level: 2

- what ``grad_input`` and ``grad_output`` are in
  ``register_full_backward_hook``;
- what the deprecated ``register_backward_hook`` returns instead, and why it
  is wrong for a module with several operations;
- the warning the old API emits, and the error when both are mixed on one
  module;
- how a full backward *pre*-hook can change ``grad_output`` before the
  module's gradients are computed.

**Prerequisites**: :doc:`/auto_examples/02_module_hooks/plot_05_forward_hooks`,
and ``loss.backward()`` with ``x.grad``.
"""

# %%
# The course notes' backward hook
# -------------------------------
#
# The notes register ``register_backward_hook`` on a convolutional layer and
# print how many gradients it receives. We run that code, and record the
# warnings PyTorch emits while doing so.

import warnings

import torch
import torch.nn.functional as F
from torch import nn

import hooks_tutorial as ht

torch.manual_seed(0)


def shapes(grads):
    return [None if g is None else tuple(g.shape) for g in grads]


def backward_hook(module, grad_input, grad_output):
    print(f"backward hook called! module type: {type(module).__name__}")
    print(f"number of input gradients:  {len(grad_input)}, shapes {shapes(grad_input)}")
    print(f"number of output gradients: {len(grad_output)}, shapes {shapes(grad_output)}")


conv = nn.Conv2d(1, 2, kernel_size=2)
x = torch.randn(1, 1, 4, 4, requires_grad=True)

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    hook_handle = conv.register_backward_hook(backward_hook)
    print("warnings after registering:", len(caught))
    # sphinx_gallery_start_ignore
    # "The deprecation warning comes from the forward pass, not from the registration."
    assert len(caught) == 0
    # sphinx_gallery_end_ignore
    output = conv(x)
    print("warnings after the forward pass:", len(caught))
    # sphinx_gallery_start_ignore
    # "The deprecation warning comes from the forward pass"
    assert len(caught) == 1
    # sphinx_gallery_end_ignore
    loss = output.sum()
    loss.backward()
hook_handle.remove()

for warning in caught:
    print(f"{warning.category.__name__}: {str(warning.message)[:110]}...")

# sphinx_gallery_start_ignore
# one FutureWarning, from the forward pass ("multiple autograd Nodes", quoted below)
assert [w.category for w in caught] == [FutureWarning]
assert str(caught[0].message).startswith(
    "Using a non-full backward hook when the forward contains multiple autograd Nodes"
)
# "Three input gradients ...: their shapes are those of x, of the weight and of the bias":
# the same hook's arguments, recorded instead of printed
old_hook_grads = []
with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)
    with conv.register_backward_hook(lambda _m, grad_in, _out: old_hook_grads.append(grad_in)):
        conv(x).sum().backward()
assert shapes(old_hook_grads[0]) == [tuple(x.shape), tuple(conv.weight.shape), (2,)]
# sphinx_gallery_end_ignore

# %%
# Three "input gradients" for a layer that takes one input: their shapes are
# those of ``x``, of the weight and of the bias. The old hook is attached to
# the *last autograd operation* of ``forward`` and reports the gradients of
# that operation's inputs, which for ``Conv2d`` are the input, the weight and
# the bias. The deprecation warning comes from the forward pass, not from the
# registration.
#
# Why "multiple autograd Nodes" for one convolution?
# --------------------------------------------------
#
# The warning says that the forward "contains multiple autograd Nodes", yet
# ``Conv2d`` runs a single operation. The words come from a test that
# PyTorch runs after the forward pass: it compares the nodes that feed the
# node which made the output with the nodes that made the module's inputs
# (their ``grad_fn``). Here they differ:

output = conv(x)  # the hook is gone: this only builds the graph
print("node that made the output:", type(output.grad_fn).__name__)
print("nodes feeding it:", [type(node).__name__ for node, _ in output.grad_fn.next_functions])
print("grad_fn of the module's input x:", x.grad_fn)

# sphinx_gallery_start_ignore
# "The convolution node has three inputs: x, the weight and the bias, each a leaf and so
# fed by an AccumulateGrad node. The module's input x is a leaf with no grad_fn at all."
assert type(output.grad_fn).__name__ == "ConvolutionBackward0"
feeding = [type(node).__name__ for node, _ in output.grad_fn.next_functions]
assert feeding == ["AccumulateGrad"] * 3
assert x.is_leaf
assert x.grad_fn is None
# sphinx_gallery_end_ignore

# %%
# The convolution node has three inputs: ``x``, the weight and the bias, each
# a leaf and so fed by an ``AccumulateGrad`` node. The module's input ``x`` is
# a leaf with no ``grad_fn`` at all. The two sets match only when each node
# feeding the output's node made one of the module's inputs. Two things break
# that here, and neither is about several operations:
#
# - **parameters**: a weight or a bias is fed by its own ``AccumulateGrad``
#   node, which is never an input's ``grad_fn``, so every layer with
#   parameters gets this warning;
# - **a leaf input**: the leaf ``x`` is fed by an ``AccumulateGrad`` node too,
#   but it has no ``grad_fn`` to match it, so any module called on a leaf gets
#   the warning.
#
# The function below runs a module once with an old-style hook and reports
# whether the warning came. A bare ``nn.ReLU`` (one operation, no parameters)
# warns on the leaf ``x`` and not on ``x * 1``, a tensor made by an operation.
# A convolution warns on ``x * 1`` too (its parameters), and so do two
# operations in a row, the case the wording describes.


def warns_multiple_nodes(module, inputs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with module.register_backward_hook(lambda _module, _grad_in, _grad_out: None):
            module(inputs)
    return any("multiple autograd Nodes" in str(w.message) for w in caught)


cases = {
    "ReLU on the leaf x": (nn.ReLU(), x),
    "ReLU on x * 1": (nn.ReLU(), x * 1),
    "Conv2d on x * 1": (nn.Conv2d(1, 2, kernel_size=2), x * 1),
    "ReLU then Tanh on x * 1": (nn.Sequential(nn.ReLU(), nn.Tanh()), x * 1),
}
warns = {}
for name, (module, inputs) in cases.items():
    warns[name] = warns_multiple_nodes(module, inputs)
    print(f"{name:24s} warns: {warns[name]}")

# sphinx_gallery_start_ignore
# "A bare nn.ReLU ... warns on the leaf x and not on x * 1 ... A convolution warns on
# x * 1 too (its parameters), and so do two operations in a row"
assert warns == {
    "ReLU on the leaf x": True,
    "ReLU on x * 1": False,
    "Conv2d on x * 1": True,
    "ReLU then Tanh on x * 1": True,
}
# "every layer with parameters gets this warning" (even frozen ones); "any module called
# on a leaf gets the warning"
frozen = nn.Conv2d(1, 2, kernel_size=2, bias=False).requires_grad_(False)
assert warns_multiple_nodes(frozen, x * 1)
assert warns_multiple_nodes(nn.Linear(4, 2), x.view(4, 4) * 1)
assert warns_multiple_nodes(nn.Tanh(), x)
# sphinx_gallery_end_ignore

# %%
# The wording is loose, but the conclusion holds: this ``grad_input`` is not
# the gradient of the module's inputs alone.
#
# The full backward hook
# ----------------------
#
# ``register_full_backward_hook`` calls ``hook(module, grad_input,
# grad_output)`` where ``grad_output`` holds the gradients of the loss with
# respect to the module's outputs and ``grad_input`` those with respect to its
# positional inputs: one entry per input.

full_conv = nn.Conv2d(1, 2, kernel_size=2)
recorded = {}


def record_grads(module, grad_input, grad_output):
    recorded["grad_input"] = grad_input
    recorded["grad_output"] = grad_output


handle = full_conv.register_full_backward_hook(record_grads)
x = torch.randn(1, 1, 4, 4, requires_grad=True)
full_conv(x).sum().backward()
handle.remove()

print("grad_input: ", shapes(recorded["grad_input"]))
print("grad_output:", shapes(recorded["grad_output"]))
print("grad_input[0] equals x.grad:", torch.equal(recorded["grad_input"][0], x.grad))
print("grad_output is all ones:", bool((recorded["grad_output"][0] == 1).all()))

# sphinx_gallery_start_ignore
# "grad_input those with respect to its positional inputs: one entry per input";
# "The loss is a plain sum, so grad_output is all ones"
assert shapes(recorded["grad_input"]) == [(1, 1, 4, 4)]
assert shapes(recorded["grad_output"]) == [(1, 2, 3, 3)]
assert torch.equal(recorded["grad_input"][0], x.grad)
assert bool((recorded["grad_output"][0] == 1).all())
# sphinx_gallery_end_ignore

# %%
# The loss is a plain sum, so ``grad_output`` is all ones. The parameters'
# gradients are not part of ``grad_input``: they go to
# ``full_conv.weight.grad`` and ``full_conv.bias.grad`` as usual.
#
# When no input requires a gradient
# ---------------------------------
#
# The first layer of a network gets the images, which do not require
# gradients. Its full backward hook still fires, with ``grad_input = (None,)``,
# and PyTorch warns about it.

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    handle = full_conv.register_full_backward_hook(record_grads)
    full_conv(torch.randn(1, 1, 4, 4)).sum().backward()
    handle.remove()

print("grad_input:", recorded["grad_input"])
for warning in caught:
    print(f"{warning.category.__name__}: {str(warning.message)[:95]}...")

# sphinx_gallery_start_ignore
# "Its full backward hook still fires, with grad_input = (None,), and PyTorch warns"
assert recorded["grad_input"] == (None,)
assert [w.category for w in caught] == [UserWarning]
assert str(caught[0].message).startswith("Full backward hook is firing")
# sphinx_gallery_end_ignore

# %%
# Where the old hook is wrong: several operations
# -----------------------------------------------
#
# Take a module whose ``forward`` is ``relu(x) * 5``. For
# ``x = [-1, 2, -3, 4]`` and the loss ``sum(output)``, the true gradient is
# 5 where ``x > 0`` and 0 elsewhere. The old hook only sees the last operation,
# the multiplication by 5.


class ReluTimesFive(nn.Module):
    def forward(self, x):
        return F.relu(x) * 5


def keep_grad_input(store, key):
    def hook(module, grad_input, grad_output):
        store[key] = grad_input[0]

    return hook


grads = {}

old_module = ReluTimesFive()
with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)  # shown above already
    with old_module.register_backward_hook(keep_grad_input(grads, "old hook")):
        x = torch.tensor([-1.0, 2.0, -3.0, 4.0], requires_grad=True)
        old_module(x).sum().backward()
grads["autograd (x.grad)"] = x.grad

full_module = ReluTimesFive()
with full_module.register_full_backward_hook(keep_grad_input(grads, "full hook")):
    x = torch.tensor([-1.0, 2.0, -3.0, 4.0], requires_grad=True)
    full_module(x).sum().backward()

for name, grad in grads.items():
    print(f"{name:18s} {grad}")
print("full hook == autograd:", torch.equal(grads["full hook"], grads["autograd (x.grad)"]))
print("old hook == autograd: ", torch.equal(grads["old hook"], grads["autograd (x.grad)"]))

# sphinx_gallery_start_ignore
# "the true gradient is 5 where x > 0 and 0 elsewhere. The old hook only sees ... the
# multiplication by 5"; the summary quotes [5, 5, 5, 5] instead of [0, 5, 0, 5]
assert grads["autograd (x.grad)"].tolist() == [0.0, 5.0, 0.0, 5.0]
assert grads["full hook"].tolist() == [0.0, 5.0, 0.0, 5.0]
assert grads["old hook"].tolist() == [5.0, 5.0, 5.0, 5.0]
# sphinx_gallery_end_ignore

# %%
# The old hook reports ``d(loss)/d(relu(x))``, the gradient at the input of
# the multiplication, as if the ReLU did not exist. The full hook reports
# ``d(loss)/dx``, which is what "gradient with respect to the module's input"
# means.
#
# ``nn.Linear``: three entries against one
# ----------------------------------------
#
# For a linear layer the last operation is a matrix multiply-add with three
# inputs, so the old hook's ``grad_input`` holds the gradients for the bias,
# the input and the transposed weight. The full hook's has one entry, for the
# input.

x = torch.randn(4, 3, requires_grad=True)
for api in ["register_backward_hook", "register_full_backward_hook"]:
    linear = nn.Linear(3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with getattr(linear, api)(record_grads):
            linear(x).sum().backward()
    grad_input = recorded["grad_input"]
    print(f"{api:28s} len(grad_input) = {len(grad_input)}, shapes {shapes(grad_input)}")
    # sphinx_gallery_start_ignore
    # "the old hook's grad_input holds the gradients for the bias, the input and the
    # transposed weight. The full hook's has one entry, for the input."
    expected = {
        "register_backward_hook": [(2,), (4, 3), (3, 2)],
        "register_full_backward_hook": [(4, 3)],
    }
    assert shapes(grad_input) == expected[api]
    # sphinx_gallery_end_ignore

# %%
# Mixing both APIs raises ``RuntimeError``
# ----------------------------------------
#
# A module accepts one kind of backward hook. Registering the other kind
# raises an error at once.

linear = nn.Linear(3, 2)
full_handle = linear.register_full_backward_hook(record_grads)
# sphinx_gallery_start_ignore
error_message = None  # set by the except clause below
# sphinx_gallery_end_ignore
try:
    linear.register_backward_hook(record_grads)
except RuntimeError as error:
    print("RuntimeError:", error)
    # sphinx_gallery_start_ignore
    error_message = str(error)
    # sphinx_gallery_end_ignore

# sphinx_gallery_start_ignore
# "Registering the other kind raises an error at once"
assert error_message is not None, "no RuntimeError"
assert "Cannot use both regular backward hooks and full backward hooks" in error_message
# sphinx_gallery_end_ignore

# %%
# The module remembers the kind even after the handle is removed: a layer that
# once had an old-style hook cannot take a full one, so the old API is best
# avoided altogether.

full_handle.remove()
linear = nn.Linear(3, 2)
old_handle = linear.register_backward_hook(record_grads)
old_handle.remove()
# sphinx_gallery_start_ignore
error_message = None  # set by the except clause below
# sphinx_gallery_end_ignore
try:
    linear.register_full_backward_hook(record_grads)
except RuntimeError as error:
    print("RuntimeError after remove():", error)
    # sphinx_gallery_start_ignore
    error_message = str(error)
    # sphinx_gallery_end_ignore

# sphinx_gallery_start_ignore
# "The module remembers the kind even after the handle is removed"
assert error_message is not None, "no RuntimeError"
assert "Cannot use both regular backward hooks and full backward hooks" in error_message
from hooks_tutorial import count_hooks

assert count_hooks(linear).total == 0  # the old hook is gone; only its kind is remembered
# sphinx_gallery_end_ignore

# %%
# Full backward pre-hooks: changing ``grad_output``
# -------------------------------------------------
#
# ``register_full_backward_pre_hook`` calls ``hook(module, grad_output)``
# *before* the module's gradients are computed. Returning a new
# ``grad_output`` changes every gradient computed from it: the input's and the
# parameters'. Below, doubling ``grad_output`` doubles both ``x.grad`` and
# ``linear.weight.grad``.

linear = nn.Linear(3, 2)
x = torch.randn(4, 3, requires_grad=True)

linear(x).sum().backward()
plain_x_grad = x.grad.clone()
plain_weight_grad = linear.weight.grad.clone()

x.grad = None
linear.weight.grad = None


def double_grad_output(module, grad_output):
    return tuple(2 * g for g in grad_output)


with linear.register_full_backward_pre_hook(double_grad_output):
    linear(x).sum().backward()

print("x.grad doubled:     ", torch.allclose(x.grad, 2 * plain_x_grad))
print("weight.grad doubled:", torch.allclose(linear.weight.grad, 2 * plain_weight_grad))

# sphinx_gallery_start_ignore
# "doubling grad_output doubles both x.grad and linear.weight.grad"
assert torch.allclose(x.grad, 2 * plain_x_grad)
assert torch.allclose(linear.weight.grad, 2 * plain_weight_grad)
# sphinx_gallery_end_ignore

# %%
# A full backward hook may return a new ``grad_input`` in the same way. That
# replaces only the gradient passed on towards the module's inputs: below,
# ``x.grad`` becomes zero while the weight's gradient is the plain one.

x.grad = None
linear.weight.grad = None


def zero_grad_input(module, grad_input, grad_output):
    return tuple(torch.zeros_like(g) for g in grad_input)


with linear.register_full_backward_hook(zero_grad_input):
    linear(x).sum().backward()

print("x.grad all zero:      ", bool((x.grad == 0).all()))
print("weight.grad unchanged:", torch.allclose(linear.weight.grad, plain_weight_grad))

# sphinx_gallery_start_ignore
# "x.grad becomes zero while the weight's gradient is the plain one"
assert bool((x.grad == 0).all())
assert torch.allclose(linear.weight.grad, plain_weight_grad)
# sphinx_gallery_end_ignore

# %%
#
# Summary
# -------
#
# - ``register_full_backward_hook(hook)`` calls ``hook(module, grad_input,
#   grad_output)``: gradients of the loss with respect to the module's
#   positional inputs and outputs. Inputs that do not require gradients give
#   ``None``.
# - ``register_backward_hook`` is deprecated: it reports the gradients of the
#   inputs of the *last* operation of ``forward`` (``[5, 5, 5, 5]`` instead of
#   ``[0, 5, 0, 5]`` above; three entries for ``nn.Linear``), and PyTorch warns
#   with a ``FutureWarning`` when the module runs. The warning speaks of
#   "multiple autograd Nodes", but parameters or a leaf input bring it on
#   with a single operation.
# - One module cannot carry both kinds; trying raises ``RuntimeError``.
# - ``register_full_backward_pre_hook(hook)`` calls ``hook(module,
#   grad_output)`` first; a returned ``grad_output`` changes the input and
#   parameter gradients.
#
# Exercises
# ---------
#
# Exercises that ask for code come with a check that runs offline, in the
# downloaded notebook or script: write your answer, then run the
# ``ht.exercises.check(...)`` call that ends the exercise. The check says what
# is wrong, or what is right, in the language of the download, and leaves no
# hook behind; each solution ends with the same call.
#
# 1. Write ``backward_grads(module, x)``: it registers a full backward hook on
#    ``module``, runs ``module(x).sum().backward()`` and returns the hook's
#    ``grad_input[0]`` and ``grad_output[0]``. For ``nn.Sigmoid()``, check that
#    ``grad_input[0]`` equals ``grad_output[0] * s * (1 - s)`` where ``s`` is
#    the sigmoid's output. Check: ``ht.exercises.check("07.1", backward_grads)``.
# 2. Use a full backward pre-hook ``keep_unit_0(module, grad_output)`` to keep
#    only the gradient of output unit 0 of a ``nn.Linear(3, 2)`` (zero the
#    other), and check that the weight's gradient row 1 is then zero. Check:
#    ``ht.exercises.check("07.2", keep_unit_0)``.
# 3. Write a full backward hook ``clamp_grad_input(module, grad_input,
#    grad_output)`` that returns ``grad_input`` clamped to ``[-1, 1]``, and
#    check on ``ReluTimesFive`` that ``x.grad`` is then at most 1. Check:
#    ``ht.exercises.check("07.3", clamp_grad_input)``.

# %%
# .. rst-class:: solution
#
# **Solution 1.** The hook stores both gradients, and ``s`` is the sigmoid's
# output. It prints ``True``: ``grad_input[0]`` is ``grad_output[0]`` times
# the sigmoid's local derivative ``s * (1 - s)``, the chain rule for one
# module.


def backward_grads(module, x):
    store = {}
    with module.register_full_backward_hook(
        lambda m, grad_input, grad_output: store.update(gi=grad_input[0], go=grad_output[0])
    ):
        module(x).sum().backward()
    return store["gi"], store["go"]


sigmoid = nn.Sigmoid()
x = torch.randn(5, requires_grad=True)
grad_input, grad_output = backward_grads(sigmoid, x)
s = sigmoid(x).detach()
print(torch.allclose(grad_input, grad_output * s * (1 - s)))

# sphinx_gallery_start_ignore
# "It prints True": grad_input[0] is grad_output[0] * s * (1 - s) (allclose: autograd's
# sigmoid backward and this product may round differently)
assert torch.allclose(grad_input, grad_output * s * (1 - s))
# sphinx_gallery_end_ignore

ht.exercises.check("07.1", backward_grads)

# sphinx_gallery_start_ignore
from page_checks import assert_check  # docs/_ext: the build's checks


# a hook whose parameters are named in the wrong order returns the two gradients swapped
def backward_grads_swapped(module, x):
    store = {}
    with module.register_full_backward_hook(
        lambda m, grad_output, grad_input: store.update(gi=grad_input[0], go=grad_output[0])
    ):
        module(x).sum().backward()
    return store["gi"], store["go"]


assert_check("07.1", backward_grads, backward_grads_swapped, "swapped")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 2.** The pre-hook zeroes the gradient of output unit 1 before
# the module's gradients are computed, so the weight gradient's row for unit 1
# is ``tensor([0., 0., 0.])``: that unit's weights get no gradient, while
# those of unit 0 get their usual one.

linear = nn.Linear(3, 2)


def keep_unit_0(module, grad_output):
    mask = torch.tensor([1.0, 0.0])
    return (grad_output[0] * mask,)


inputs = torch.randn(4, 3)
with linear.register_full_backward_pre_hook(keep_unit_0):
    linear(inputs).sum().backward()
print("weight.grad, row of unit 0:", linear.weight.grad[0])
print("weight.grad, row of unit 1:", linear.weight.grad[1])

# sphinx_gallery_start_ignore
# "the weight gradient's row for unit 1 is tensor([0., 0., 0.])"
assert torch.equal(linear.weight.grad[1], torch.zeros(3))
# "those of unit 0 get their usual one": without a hook, the gradient of sum(output) with
# respect to row 0 is the sum of the inputs over the batch (allclose: summation order)
assert torch.allclose(linear.weight.grad[0], inputs.sum(dim=0))
assert bool((linear.weight.grad[0] != 0).all())
# sphinx_gallery_end_ignore

ht.exercises.check("07.2", keep_unit_0)

# sphinx_gallery_start_ignore


# a pre-hook that computes the masked gradient but does not return it changes nothing
def keep_unit_0_without_return(module, grad_output):
    grad_output[0] * torch.tensor([1.0, 0.0])


assert_check("07.2", keep_unit_0, keep_unit_0_without_return, "returned_none")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 3.** The hook's return value replaces ``grad_input``. It prints
# ``tensor([0., 1., 0., 1.])``: the true gradient ``[0, 5, 0, 5]``, clamped
# to at most 1, and ``x.grad`` receives the clamped values.


def clamp_grad_input(module, grad_input, grad_output):
    return tuple(g.clamp(-1.0, 1.0) for g in grad_input)


module = ReluTimesFive()
with module.register_full_backward_hook(clamp_grad_input):
    x = torch.tensor([-1.0, 2.0, -3.0, 4.0], requires_grad=True)
    module(x).sum().backward()
print(x.grad)

# sphinx_gallery_start_ignore
# "It prints tensor([0., 1., 0., 1.]): the true gradient [0, 5, 0, 5], clamped to at most 1"
assert x.grad.tolist() == [0.0, 1.0, 0.0, 1.0]
# sphinx_gallery_end_ignore

ht.exercises.check("07.3", clamp_grad_input)

# sphinx_gallery_start_ignore


# clamping grad_output instead passes 1 on where the ReLU's gradient is 0
def clamp_grad_output(module, grad_input, grad_output):
    return tuple(g.clamp(-1.0, 1.0) for g in grad_output)


assert_check("07.3", clamp_grad_input, clamp_grad_output, "used_grad_output")
from page_checks import assert_exercises_checked, assert_no_hooks_left  # docs/_ext

assert_exercises_checked()
assert_no_hooks_left(globals())
# sphinx_gallery_end_ignore
