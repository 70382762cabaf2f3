# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
Tensor hooks: reading and changing a gradient
=============================================

.. index::
   ! register_hook
   ! tensor hook
   ! 张量钩子
   ! 梯度
   ! gradient
   ! retain_grad

Module hooks watch a whole layer. A *tensor hook* is finer: it is attached to
one tensor and called with that tensor's gradient during the backward pass, and
whatever it returns becomes the gradient that autograd passes on. This page
runs the course notes' example, checks its arithmetic with code, and corrects
the notes' list of tensor hook methods.

.. rubric:: What you will learn
   :heading-level: 2

- how ``Tensor.register_hook`` receives a gradient and can replace it;
- why the notes' example gives ``x.grad`` = 96 with the hook and 192 without;
- what ``retain_grad()`` stores when a hook changes the gradient;
- which hook methods tensors really have (and which they do not);
- how to get the gradient with respect to a layer's output with a forward hook
  and a tensor hook together.

**Prerequisites**: :doc:`/auto_examples/01_python_foundations/plot_01_callbacks`,
:doc:`/auto_examples/02_module_hooks/plot_05_forward_hooks` and the basics of
``loss.backward()``.
"""

# %%
# The course notes' example
# -------------------------
#
# ``x`` is a leaf tensor, ``y = x ** 2`` and ``z = y ** 3``. The hook on ``y``
# prints the gradient that arrives at ``y`` and returns half of it.

import torch
from torch import nn

import hooks_tutorial as ht

torch.manual_seed(0)


def tensor_hook(grad):
    print(f"original gradient arriving at y: {grad}")
    return grad / 2  # the returned tensor replaces the gradient


x = torch.tensor([2.0], requires_grad=True)
y = x**2
z = y**3

hook_handle = y.register_hook(tensor_hook)
z.backward()
print(f"x.grad with the hook: {x.grad}")
print("x.grad == 96:", x.grad.item() == 96.0)
hook_handle.remove()

# sphinx_gallery_start_ignore
# "why the notes' example gives x.grad = 96 with the hook" (exact: small integers, no rounding)
x_grad_with_hook = x.grad.item()
assert x_grad_with_hook == 96, x_grad_with_hook
# sphinx_gallery_end_ignore

# %%
# The same computation without any hook gives twice as much:

x = torch.tensor([2.0], requires_grad=True)
y = x**2
z = y**3
z.backward()
print(f"x.grad without a hook: {x.grad}")
print("x.grad == 192:", x.grad.item() == 192.0)

# sphinx_gallery_start_ignore
# "The same computation without any hook gives twice as much": 192 (exact)
x_grad_without_hook = x.grad.item()
assert x_grad_without_hook == 192 == 2 * x_grad_with_hook, x_grad_without_hook
# sphinx_gallery_end_ignore

# %%
# Where 96 and 192 come from
# --------------------------
#
# The chain rule multiplies two local derivatives. The hook sits between them:
# it changes dz/dy before autograd multiplies it by dy/dx. The code below
# computes each step.

x_value = 2.0
y_value = x_value**2
dz_dy = 3 * y_value**2  # derivative of y**3
dz_dy_halved = dz_dy / 2  # what the hook returns
dy_dx = 2 * x_value  # derivative of x**2
print(f"y = {y_value}, dz/dy = 3*y**2 = {dz_dy}, halved by the hook to {dz_dy_halved}")
print(f"dy/dx = 2*x = {dy_dx}")
print(f"with the hook:    {dz_dy_halved} * {dy_dx} = {dz_dy_halved * dy_dx}")
print(f"without the hook: {dz_dy} * {dy_dx} = {dz_dy * dy_dx}")

# sphinx_gallery_start_ignore
# "it changes dz/dy before autograd multiplies it by dy/dx"; summary: "the hook halves
# dz/dy from 48 to 24, so x.grad becomes 24 * 4 = 96 instead of 192": the hand-computed
# chain rule gives what autograd gave above
assert (dz_dy, dz_dy_halved, dy_dx) == (48, 24, 4)
assert dz_dy_halved * dy_dx == x_grad_with_hook
assert dz_dy * dy_dx == x_grad_without_hook
# sphinx_gallery_end_ignore

# %%
# ``retain_grad()`` stores the gradient after the hook
# ----------------------------------------------------
#
# ``y`` is not a leaf, so autograd does not keep ``y.grad`` unless asked with
# ``y.retain_grad()``. It then stores the gradient *after* the tensor's hooks
# have run, whichever was registered first.


def run(order):
    x = torch.tensor([2.0], requires_grad=True)
    y = x**2
    if order == "hook first":
        y.register_hook(lambda grad: grad / 2)
        y.retain_grad()
    else:
        y.retain_grad()
        y.register_hook(lambda grad: grad / 2)
    z = y**3
    z.backward()
    return x, y


for order in ["hook first", "retain_grad first"]:
    x_leaf, y_kept = run(order)
    print(f"{order:>17}: y.grad = {y_kept.grad.item()}, x.grad = {x_leaf.grad.item()}")

# sphinx_gallery_start_ignore
import warnings

# "It then stores the gradient *after* the tensor's hooks have run, whichever was
# registered first": the halved 24 in both orders, and x.grad is 96 in both
for order in ["hook first", "retain_grad first"]:
    x_leaf, y_kept = run(order)
    assert (y_kept.grad.item(), x_leaf.grad.item()) == (24, 96), order
# "y is not a leaf, so autograd does not keep y.grad unless asked with y.retain_grad()"
x_leaf = torch.tensor([2.0], requires_grad=True)
y_plain, y_kept = x_leaf**2, x_leaf**2
y_kept.retain_grad()
(y_plain**3 + y_kept**3).backward()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # torch warns when .grad of a non-leaf is read
    assert y_plain.grad is None
assert y_kept.grad.item() == 48
del y_plain  # (the build's backreference scan would read y_plain.grad, and torch warn)
# sphinx_gallery_end_ignore

# %%
# Removing a tensor hook
# ----------------------
#
# ``register_hook`` returns a handle, like the module hooks of chapter 2.
# After ``handle.remove()`` the hook no longer fires, so the next backward
# pass through the same graph gives the unmodified gradient.

x = torch.tensor([2.0], requires_grad=True)
y = x**2
z = y**3
handle = y.register_hook(tensor_hook)
z.backward(retain_graph=True)  # keep the graph for a second backward pass
print("with the hook:", x.grad.item())

handle.remove()
x.grad = None
z.backward()
print("after handle.remove():", x.grad.item())

# sphinx_gallery_start_ignore
# "After handle.remove() the hook no longer fires, so the next backward pass through the
# same graph gives the unmodified gradient": 192, not the hooked 96
assert x.grad.item() == 192, x.grad
# sphinx_gallery_end_ignore

# %%
# Which hook methods does a tensor have?
# --------------------------------------
#
# The course notes list ``register_full_backward_hook`` as a second tensor
# hook. That is not right: it is a method of ``nn.Module``, covered on the
# :doc:`backward hooks page </auto_examples/02_module_hooks/plot_07_backward_hooks>`.
# Tensors have ``register_hook`` and ``register_post_accumulate_grad_hook``,
# as the table below shows.

for name in ["register_hook", "register_post_accumulate_grad_hook", "register_full_backward_hook"]:
    print(
        f"{name:36} on torch.Tensor: {hasattr(torch.Tensor, name)!s:5}"
        f"  on nn.Module: {hasattr(nn.Module, name)}"
    )

# sphinx_gallery_start_ignore
# "it is a method of nn.Module"; "Tensors have register_hook and
# register_post_accumulate_grad_hook, as the table below shows"
assert hasattr(torch.Tensor, "register_hook")
assert hasattr(torch.Tensor, "register_post_accumulate_grad_hook")
assert not hasattr(torch.Tensor, "register_full_backward_hook")
assert hasattr(nn.Module, "register_full_backward_hook")
assert not hasattr(nn.Module, "register_hook")
assert not hasattr(nn.Module, "register_post_accumulate_grad_hook")
# sphinx_gallery_end_ignore

# %%
# The two tensor hooks receive different things. ``register_hook`` gets the
# gradient and may return a new one. ``register_post_accumulate_grad_hook``
# gets the tensor itself, after its ``.grad`` has been accumulated, and works
# on leaf tensors only. The page
# :doc:`/auto_examples/03_tensor_hooks/plot_11_parameter_hooks` uses it.

w = torch.tensor([3.0], requires_grad=True)  # a leaf tensor
w.register_hook(lambda grad: print(f"register_hook got the gradient {grad}"))
w.register_post_accumulate_grad_hook(lambda t: print(f"post-accumulate hook: w.grad = {t.grad}"))
(w * 5).backward()

non_leaf = w * 2
try:
    non_leaf.register_post_accumulate_grad_hook(lambda _tensor: None)
except RuntimeError as error:
    print(f"RuntimeError: {error}")

# sphinx_gallery_start_ignore
# "register_hook gets the gradient ... register_post_accumulate_grad_hook gets the tensor
# itself, after its .grad has been accumulated, and works on leaf tensors only"
assert w.grad.item() == 5, w.grad
events = []
w_check = torch.tensor([3.0], requires_grad=True)
w_check.register_hook(lambda grad: events.append(("gradient", grad.item())))
w_check.register_post_accumulate_grad_hook(
    lambda tensor: events.append(("tensor", tensor is w_check, tensor.grad.item()))
)
(w_check * 5).backward()
assert events == [("gradient", 5), ("tensor", True, 5)], events
try:
    (w_check * 2).register_post_accumulate_grad_hook(lambda _tensor: None)
    message = "no error"
except RuntimeError as error:
    message = str(error)
assert "non-leaf" in message, message
# sphinx_gallery_end_ignore

# %%
# The gradient with respect to a layer's output
# ---------------------------------------------
#
# Tensor hooks and module hooks combine well. A forward hook sees the layer's
# output tensor while the forward pass runs; registering a tensor hook on that
# output makes autograd hand us its gradient during the backward pass. Grad-CAM
# in chapter 4 is built on exactly this.

model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
saved = {}


def save_output_and_its_gradient(module, args, output):
    saved["activation"] = output.detach()

    def save_gradient(grad):
        saved["gradient"] = grad

    output.register_hook(save_gradient)  # no return: the output stays unchanged


forward_handle = model[1].register_forward_hook(save_output_and_its_gradient)
inputs = torch.randn(3, 4)
loss = model(inputs).sum()
loss.backward()
forward_handle.remove()

print("activation shape:", tuple(saved["activation"].shape))
print("gradient shape:  ", tuple(saved["gradient"].shape))

# sphinx_gallery_start_ignore
# "registering a tensor hook on that output makes autograd hand us its gradient"
assert saved["activation"].shape == saved["gradient"].shape == (3, 8)
# sphinx_gallery_end_ignore

# %%
# A check: the loss is the sum of ``output @ W.T + b`` of the last layer, so
# its gradient with respect to the ReLU output is the column sum of ``W`` for
# every row of the batch.

expected = model[2].weight.sum(dim=0).expand(3, 8)
print("matches the hand-derived gradient:", torch.allclose(saved["gradient"], expected))

# sphinx_gallery_start_ignore
# "its gradient with respect to the ReLU output is the column sum of W for every row"
assert torch.allclose(saved["gradient"], expected)
# next paragraph: "Written as lambda m, args, out: out.register_hook(...) it would return
# the handle, and a forward hook that returns something other than None replaces the
# module's output."
with torch.random.fork_rng():  # draw no random numbers that the download would not
    layer = nn.Linear(4, 8)
    with layer.register_forward_hook(lambda m, args, out: out.register_hook(lambda g: None)):
        replaced = layer(torch.randn(3, 4))
assert not isinstance(replaced, torch.Tensor), type(replaced)
assert hasattr(replaced, "remove"), type(replaced)  # a RemovableHandle took its place
del layer, replaced
# sphinx_gallery_end_ignore

# %%
# The forward hook above is a ``def`` that returns nothing. Written as
# ``lambda m, args, out: out.register_hook(...)`` it would return the handle,
# and a forward hook that returns something other than ``None`` replaces the
# module's output. The page
# :doc:`/auto_examples/03_tensor_hooks/plot_14_pitfalls` collects more traps
# of this kind.
#
# Summary
# -------
#
# - ``tensor.register_hook(hook)`` calls ``hook(grad)`` when the gradient of
#   that tensor is computed; a returned tensor replaces the gradient for the
#   rest of the backward pass.
# - In the notes' example the hook halves dz/dy from 48 to 24, so ``x.grad``
#   becomes 24 * 4 = 96 instead of 192.
# - ``retain_grad()`` keeps the gradient after the hooks, in either
#   registration order.
# - Tensors have ``register_hook`` and ``register_post_accumulate_grad_hook``
#   (leaf tensors only); ``register_full_backward_hook`` belongs to
#   ``nn.Module``.
# - A forward hook plus ``output.register_hook`` gives the gradient with
#   respect to any layer's output.
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
# 1. Change the hook in the notes' example into ``triple(grad)``, which
#    triples the gradient. Which value of ``x.grad`` do you expect? Check it.
#    Check: ``ht.exercises.check("10.1", triple)``.
# 2. Register two hooks on ``y``: ``halve(grad)``, which halves, and
#    ``add_one(grad)``, which adds 1. Does the order of registration change
#    ``x.grad``? Check: ``ht.exercises.check("10.2", (halve, add_one))``.
# 3. Write ``pre_relu_gradient(model, inputs)``, which uses a forward hook and
#    a tensor hook to record the gradient with respect to the output of
#    ``model[0]`` (before the ReLU) and returns it. Which entries are
#    different from the gradient after the ReLU? Check:
#    ``ht.exercises.check("10.3", pre_relu_gradient)``.

# %%
# .. rst-class:: solution
#
# **Solution 1.** ``x.grad`` is 576: the hook turns dz/dy = 48 into 144, and
# autograd multiplies that by dy/dx = 4. Whatever factor the hook applies at
# ``y`` reaches ``x.grad`` unchanged.


def triple(grad):
    print(f"gradient arriving at y: {grad.item()}, tripled: {3 * grad.item()}")
    return grad * 3


x = torch.tensor([2.0], requires_grad=True)
y = x**2
y.register_hook(triple)
(y**3).backward()
print(f"dy/dx = 2*x = {2 * x.item()}, x.grad = {x.grad.item()}")

# sphinx_gallery_start_ignore
# "x.grad is 576": 3 * 48 * 4, exact
assert x.grad.item() == 576 == 3 * 48 * 4, x.grad
# sphinx_gallery_end_ignore

ht.exercises.check("10.1", triple)

# sphinx_gallery_start_ignore
from page_checks import assert_check  # docs/_ext: the build's checks


# a hook that prints the tripled gradient and returns nothing leaves the gradient as it was
def triple_printed(grad):
    print(grad * 3)


assert_check("10.1", triple, triple_printed, "returned_none")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 2.** Yes. Hooks on one tensor run in registration order, each
# receiving what the previous one returned: halving first gives
# ``(48 / 2 + 1) * 4``, so ``x.grad`` is 100; adding 1 first gives
# ``(48 + 1) / 2 * 4``, so 98.


def halve(grad):
    return grad / 2


def add_one(grad):
    return grad + 1


results = {}
for name, first, second in [
    ("halve, then add 1", halve, add_one),
    ("add 1, then halve", add_one, halve),
]:
    x = torch.tensor([2.0], requires_grad=True)
    y = x**2
    y.register_hook(first)
    y.register_hook(second)
    (y**3).backward()
    results[name] = x.grad.item()
    print(f"{name}: x.grad = {results[name]}")

# sphinx_gallery_start_ignore
# "halving first gives (48 / 2 + 1) * 4, so x.grad is 100; adding 1 first gives
# (48 + 1) / 2 * 4, so 98" (exact)
assert results == {"halve, then add 1": 100, "add 1, then halve": 98}, results
assert ((48 / 2 + 1) * 4, (48 + 1) / 2 * 4) == (100, 98)
# sphinx_gallery_end_ignore

ht.exercises.check("10.2", (halve, add_one))

# sphinx_gallery_start_ignore


# add_one without return: the sum is made and dropped, and the gradient goes on unchanged
def add_one_not_returned(grad):
    grad + 1


assert_check("10.2", (halve, add_one), (halve, add_one_not_returned), "returned_none")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 3.** The two gradients are equal where the ReLU is active and
# differ exactly where its output is zero (the last line prints both counts,
# which are equal): there the ReLU passes no gradient back, so the gradient
# before it is zero, while the gradient after it is not.


def pre_relu_gradient(model, inputs):
    grads = {}

    def save_pre_relu_gradient(module, args, output):
        output.register_hook(lambda grad: grads.update(pre_relu=grad))

    with model[0].register_forward_hook(save_pre_relu_gradient):
        model(inputs).sum().backward()
    return grads["pre_relu"]


pre_relu = pre_relu_gradient(model, inputs)
active = model[1](model[0](inputs)) > 0
differ = pre_relu != saved["gradient"]
print(
    "equal where the ReLU is active:",
    torch.equal(pre_relu[active], saved["gradient"][active]),
)
print("zero before the ReLU where it is inactive:", bool((pre_relu[~active] == 0).all()))
print(
    f"entries that differ: {int(differ.sum())} of {differ.numel()},"
    f" inactive entries: {int((~active).sum())}"
)

# sphinx_gallery_start_ignore
# "equal where the ReLU is active and differ exactly where its output is zero"; "the
# gradient before it is zero, while the gradient after it is not"
assert torch.equal(pre_relu[active], saved["gradient"][active])
assert bool((pre_relu[~active] == 0).all())
assert bool((saved["gradient"][~active] != 0).all())
assert torch.equal(differ, ~active)
# "the last line prints both counts, which are equal" (and the claim is not empty: some
# entries are inactive, some active)
assert int(differ.sum()) == int((~active).sum())
assert 0 < int((~active).sum()) < active.numel(), active
# sphinx_gallery_end_ignore

ht.exercises.check("10.3", pre_relu_gradient)

# sphinx_gallery_start_ignore


# the tensor hook on the ReLU's output records the gradient after the ReLU
def post_relu_gradient(model, inputs):
    grads = {}

    def save_post_relu_gradient(module, args, output):
        output.register_hook(lambda grad: grads.update(post_relu=grad))

    with model[1].register_forward_hook(save_post_relu_gradient):
        model(inputs).sum().backward()
    return grads["post_relu"]


assert_check("10.3", pre_relu_gradient, post_relu_gradient, "after_relu")
from page_checks import assert_exercises_checked, assert_no_hooks_left  # docs/_ext

assert_exercises_checked()
assert_no_hooks_left(globals())
# sphinx_gallery_end_ignore
