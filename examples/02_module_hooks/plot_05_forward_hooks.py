# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
Forward hooks: look inside a model while it runs
================================================

.. index::
   ! register_forward_hook
   ! forward hook
   ! 钩子
   ! 前向钩子
   ! hook

A model's ``forward`` returns only its final output: the feature maps of the
layers in between are computed and thrown away. A *forward hook* is a function
that a module calls right after its own ``forward``, with the module, its
inputs and its output, so you can look at (or keep) what happens inside
without changing the model's code. This page runs the course notes' forward
hook, corrects what it says about ``input``, and ends with a figure of real
feature maps captured by a hook.

.. rubric:: What you will learn
   :heading-level: 2

- how to register a forward hook with ``register_forward_hook`` and remove it
  with its handle;
- what the hook's ``input`` argument really holds (and why it is never
  ``(image, label)``);
- how to see keyword arguments with ``with_kwargs=True``;
- why stored outputs are ``detach()``-ed, and when to ``clone()`` as well;
- how to collect the feature maps of several layers in a dictionary and plot
  them;
- why ``model(x)`` runs hooks and ``model.forward(x)`` does not.

**Prerequisites**: :doc:`/auto_examples/01_python_foundations/plot_01_callbacks`
and basic ``torch.nn`` (a module, ``forward``, a convolutional layer).
"""

# %%
# A tiny model
# ------------
#
# The course notes hook a model with a convolutional layer called ``conv`` and
# feed it a ``1x1x4x4`` input. Here is such a model, written out in full so
# that every layer is visible.

import matplotlib.pyplot as plt
import torch
from torch import nn

import hooks_tutorial as ht
from hooks_tutorial import count_hooks

torch.manual_seed(0)


class TinyConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, kernel_size=2)  # 1x4x4 -> 2x3x3
        self.relu = nn.ReLU()
        self.fc = nn.Linear(2 * 3 * 3, 3)

    def forward(self, x):
        x = self.relu(self.conv(x))
        return self.fc(x.flatten(1))


model = TinyConvNet()
print(model)

# %%
# The course notes' forward hook
# ------------------------------
#
# The hook receives the module, its input and its output. It prints them and
# keeps a detached copy of the output. ``register_forward_hook`` returns a
# *handle*; ``handle.remove()`` takes the hook off again.

conv_outputs = []


def forward_hook(module, input, output):
    print(f"hook called! module type: {type(module)}")
    print(f"input shape: {input[0].shape}")
    print(f"output shape: {output.shape}")
    conv_outputs.append(output.detach())


hook_handle = model.conv.register_forward_hook(forward_hook)

x = torch.randn(1, 1, 4, 4)  # batch 1, channel 1, height 4, width 4
output = model(x)  # the hook runs inside this call

hook_handle.remove()
print("stored outputs:", len(conv_outputs), tuple(conv_outputs[0].shape))

# sphinx_gallery_start_ignore
# the notes' 1x1x4x4 input; the hook ran once and stored conv's 2 channels of 3x3
assert x.shape == (1, 1, 4, 4)
assert len(conv_outputs) == 1
assert conv_outputs[0].shape == (1, 2, 3, 3)
assert not conv_outputs[0].requires_grad  # "keeps a detached copy of the output"
# sphinx_gallery_end_ignore

# %%
# After ``remove()`` the layer has no hook left, so a second call prints
# nothing and stores nothing: still one stored output.
# :obj:`hooks_tutorial.count_hooks` counts the hooks left on the model and its
# layers.

output = model(x)
print("stored outputs:", len(conv_outputs))
print("hooks left on the model:", count_hooks(model).total)

# sphinx_gallery_start_ignore
# "a second call prints nothing and stores nothing: still one stored output"
assert len(conv_outputs) == 1
assert count_hooks(model).total == 0
# sphinx_gallery_end_ignore

# %%
# What ``input`` really holds
# ---------------------------
#
# The notes say that ``input`` "corresponds to (image, label)". It does not:
# ``input`` is the tuple of *positional arguments* passed to that module's
# ``forward``. In a training loop the label goes to the loss function, never
# into the model, and an inner layer's input is simply the previous layer's
# output. The hook below records both, for every layer.

inputs = {}
outputs = {}


def record(module, args, output):
    name = module_names[module]
    inputs[name] = args
    outputs[name] = output.detach()


module_names = {module: name for name, module in model.named_children()}
handles = [module.register_forward_hook(record) for module in module_names]

images = torch.randn(8, 1, 4, 4)
labels = torch.randint(0, 3, (8,))  # used by the loss, not by the model
logits = model(images)

for handle in handles:
    handle.remove()

for name, args in inputs.items():
    print(
        f"{name:5s} input: {type(args).__name__} of length {len(args)}, shape {tuple(args[0].shape)}"
    )

# sphinx_gallery_start_ignore
# "input is the tuple of positional arguments passed to that module's forward"
assert list(inputs) == ["conv", "relu", "fc"]
assert all(type(args) is tuple and len(args) == 1 for args in inputs.values())
assert inputs["conv"][0] is images
assert inputs["fc"][0].shape == (8, 18)
# sphinx_gallery_end_ignore

# %%
# The ``relu`` layer's input is exactly the ``conv`` layer's output, so
# ``torch.equal`` prints ``True``. The labels appear nowhere.

print(torch.equal(inputs["relu"][0], outputs["conv"]))

# sphinx_gallery_start_ignore
# "The relu layer's input is exactly the conv layer's output ... The labels appear nowhere"
assert torch.equal(inputs["relu"][0], outputs["conv"])
assert all(arg.dtype.is_floating_point for args in inputs.values() for arg in args)
assert not any(arg is labels for args in inputs.values() for arg in args)
# sphinx_gallery_end_ignore

# %%
# Since this argument is a tuple, name it ``args`` (as PyTorch's
# documentation does) rather than ``input``, which also hides Python's
# built-in ``input`` function.
#
# Keyword arguments: ``with_kwargs=True``
# ---------------------------------------
#
# Arguments passed by keyword do not appear in ``args``. Register the hook
# with ``with_kwargs=True`` and it receives them as a dictionary, in the
# signature ``hook(module, args, kwargs, output)``.


class Scale(nn.Module):
    def forward(self, x, factor=1.0):
        return x * factor


scale = Scale()


def show_args(module, args, output):
    print("without kwargs: len(args) =", len(args))


def show_args_and_kwargs(module, args, kwargs, output):
    print("with kwargs:    len(args) =", len(args), "kwargs =", kwargs)


handle_plain = scale.register_forward_hook(show_args)
handle_kwargs = scale.register_forward_hook(show_args_and_kwargs, with_kwargs=True)
result = scale(torch.ones(3), factor=2.0)
handle_plain.remove()
handle_kwargs.remove()

# sphinx_gallery_start_ignore
# "Arguments passed by keyword do not appear in args ... it receives them as a dictionary"
received = []
with scale.register_forward_hook(
    lambda _m, args, kwargs, _out: received.append((args, kwargs)), with_kwargs=True
):
    scale(torch.ones(3), factor=2.0)
assert len(received[0][0]) == 1
assert received[0][1] == {"factor": 2.0}
# sphinx_gallery_end_ignore

# %%
# Why ``detach()``
# ----------------
#
# During training the output of a layer is part of the autograd graph: it
# carries a ``grad_fn``, and through it the graph keeps the tensors needed for
# the backward pass. ``detach()`` returns a tensor with the same values but no
# link to the graph, so storing it does not keep the graph alive.


def grad_fn_name(tensor):
    return None if tensor.grad_fn is None else type(tensor.grad_fn).__name__


def compare_stored(module, args, output):
    detached = output.detach()
    print("output:   requires_grad =", output.requires_grad, " grad_fn =", grad_fn_name(output))
    print("detached: requires_grad =", detached.requires_grad, " grad_fn =", grad_fn_name(detached))
    print("same memory:", detached.data_ptr() == output.data_ptr())


handle = model.conv.register_forward_hook(compare_stored)
output = model(x)
handle.remove()

# sphinx_gallery_start_ignore
# "it carries a grad_fn"; "detach() returns a tensor with the same values but no link to
# the graph"; "The last line shows that detach() does not copy"
conv_output = model.conv(x)
assert grad_fn_name(conv_output) == "ConvolutionBackward0"
assert conv_output.detach().grad_fn is None
assert not conv_output.detach().requires_grad
assert conv_output.detach().data_ptr() == conv_output.data_ptr()
# sphinx_gallery_end_ignore

# %%
# The last line shows that ``detach()`` does not copy: the detached tensor
# shares memory with the output. If a later *in-place* operation changes that
# output, the stored values change too. Below, ``ReLU(inplace=True)`` runs
# after the convolution: the detached copy has lost its negative values, the
# cloned copy still has them.

inplace_model = nn.Sequential(nn.Conv2d(1, 2, kernel_size=2), nn.ReLU(inplace=True))
stored = {}


def store_both(module, args, output):
    stored["detach"] = output.detach()
    stored["detach + clone"] = output.detach().clone()


handle = inplace_model[0].register_forward_hook(store_both)
inplace_model(x)
handle.remove()
for how, tensor in stored.items():
    print(f"{how:15s} smallest value: {tensor.min().item():.4f}")

# sphinx_gallery_start_ignore
# "the detached copy has lost its negative values, the cloned copy still has them"
assert stored["detach"].min() >= 0
assert stored["detach + clone"].min() < 0
# sphinx_gallery_end_ignore

# %%
# Feature maps of several layers, by name
# ---------------------------------------
#
# To collect many layers at once, register one hook per layer and key the
# results by the layer's name from ``named_modules()``. A small function that
# *makes* the hook (a closure over ``name``) gives every hook its own name.
# Keep the handles in a list and remove them in a ``finally`` block, so no hook
# stays behind even if the forward pass fails.

feature_maps = {}


def save_output_as(name):
    def hook(module, args, output):
        feature_maps[name] = output.detach()

    return hook


handles = []
try:
    for name, module in model.named_modules():
        if name:  # "" is the model itself
            handles.append(module.register_forward_hook(save_output_as(name)))
    model(x)
finally:
    for handle in handles:
        handle.remove()

for name, tensor in feature_maps.items():
    print(f"{name:5s} {tuple(tensor.shape)}")

# sphinx_gallery_start_ignore
# "register one hook per layer and key the results by the layer's name"; none stays behind
assert list(feature_maps) == ["conv", "relu", "fc"]
assert feature_maps["fc"].shape == (1, 3)
assert count_hooks(model).total == 0
# sphinx_gallery_end_ignore

# %%
# A figure of real feature maps
# -----------------------------
#
# Random weights make noisy feature maps. To see what a hook captures, we set
# the four kernels of a convolutional layer by hand: two Sobel edge detectors,
# a Laplacian and a blur. The image is a generated shape from
# :obj:`hooks_tutorial.make_shapes`, turned to grey.

from hooks_tutorial import make_shapes

image = make_shapes(8, seed=3).images[2]  # [3, 64, 64], values in [0, 1]
grey = image.mean(dim=0, keepdim=True).unsqueeze(0)  # [1, 1, 64, 64]

kernels = torch.tensor(
    [
        [[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]],  # vertical edges
        [[-1.0, -2.0, -1.0], [0.0, 0.0, 0.0], [1.0, 2.0, 1.0]],  # horizontal edges
        [[0.0, 1.0, 0.0], [1.0, -4.0, 1.0], [0.0, 1.0, 0.0]],  # Laplacian
        [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]],  # blur
    ]
)
kernels[3] /= 9.0
edge_net = nn.Sequential(nn.Conv2d(1, 4, kernel_size=3, padding=1, bias=False), nn.ReLU())
with torch.no_grad():
    edge_net[0].weight.copy_(kernels.unsqueeze(1))

with edge_net[0].register_forward_hook(save_output_as("edges")):
    edge_net(grey)
captured = feature_maps["edges"][0]  # [4, 64, 64], before the ReLU
print(tuple(captured.shape))

# sphinx_gallery_start_ignore
# "the four kernels of a convolutional layer" on a 64x64 image; "the edge maps show both
# signs" (the output before the ReLU); "The with statement removes the hook at its end"
assert captured.shape == (4, 64, 64)
assert captured[0].min() < 0 < captured[0].max()
assert captured[1].min() < 0 < captured[1].max()
assert count_hooks(edge_net).total == 0
# sphinx_gallery_end_ignore

# %%
# The hook kept the convolution's output *before* the ReLU, so the edge maps
# show both signs. (The ``with`` statement removes the hook at its end; the
# :doc:`handles page </auto_examples/02_module_hooks/plot_08_handles_and_leaks>`
# explains it.)

titles = ["vertical edges", "horizontal edges", "Laplacian", "blur"]
fig, axes = plt.subplots(2, 3, figsize=(5.2, 4), layout="constrained")
axes[0, 0].imshow(image.permute(1, 2, 0))
axes[0, 0].set_title("input image")
for ax, channel, title in zip(axes.flat[1:], captured, titles, strict=False):
    ax.imshow(channel, cmap="viridis")
    ax.set_title(title)
for ax in axes.flat:
    ax.set_xticks([])
    ax.set_yticks([])
axes[1, 2].axis("off")
fig.suptitle("The conv layer's output channels")
plt.show()

# %%
# ``model(x)`` runs hooks, ``model.forward(x)`` does not
# ------------------------------------------------------
#
# Hooks are called by ``nn.Module.__call__``, which wraps ``forward``. Calling
# ``forward`` directly skips the hooks of that module. Its sub-layers are still
# called through ``__call__`` inside ``forward``, so *their* hooks still run.
# (The hooks here are ``lambda`` functions; a leading underscore marks an
# argument that a function does not use.)

calls = []
model_handle = model.register_forward_hook(lambda _module, _args, _output: calls.append("model"))
conv_handle = model.conv.register_forward_hook(lambda _module, _args, _output: calls.append("conv"))

model(x)
print("model(x):         ", calls)
# sphinx_gallery_start_ignore
# model(x) runs both hooks (conv's first: it returns first)
assert calls == ["conv", "model"]
# sphinx_gallery_end_ignore
calls.clear()
model.forward(x)
print("model.forward(x): ", calls)
# sphinx_gallery_start_ignore
# "Calling forward directly skips the hooks of that module ... *their* hooks still run"
assert calls == ["conv"]
# sphinx_gallery_end_ignore

model_handle.remove()
conv_handle.remove()

# %%
# Always call the module, ``model(x)``, and never its ``forward`` method.
#
# Summary
# -------
#
# - ``module.register_forward_hook(hook)`` calls ``hook(module, args, output)``
#   after every forward pass of that module; the returned handle's
#   ``remove()`` takes it off.
# - ``args`` is the tuple of positional arguments of that module's
#   ``forward``: for an inner layer, the previous layer's output, never a label.
#   ``with_kwargs=True`` adds the keyword arguments.
# - Store ``output.detach()`` so the stored tensor does not keep the autograd
#   graph alive; add ``.clone()`` when an in-place operation follows.
# - A hook factory and a dictionary keyed by layer name collect many feature
#   maps at once; remove the handles in ``finally``.
# - Only ``model(x)`` runs the model's own hooks.
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
# 1. Write a forward hook ``print_stats(module, args, output)`` that prints the
#    mean and the standard deviation of the output, and register it on every
#    layer of ``TinyConvNet``. Check: ``ht.exercises.check("05.1", print_stats)``.
# 2. *In words:* call ``model(images, labels)`` with the hook from the "What
#    ``input`` really holds" section registered. What happens, and why does it
#    show that the notes' comment cannot be right?
# 3. Write ``conv_and_relu(net, x)``, which returns the outputs of ``net[0]``
#    and ``net[1]`` for the input ``x``, kept by forward hooks that it removes
#    again. Show with ``torch.equal`` that for ``edge_net`` the second is the
#    first clamped at zero, also when ``net[1]`` is ``nn.ReLU(inplace=True)``.
#    Check: ``ht.exercises.check("05.3", conv_and_relu)``.

# %%
# .. rst-class:: solution
#
# **Solution 1.** One hook, registered on every child layer, prints one line
# per layer: ``Conv2d``, ``ReLU``, then ``Linear``, in the order they run. The
# ReLU's mean is higher than the convolution's because it sets the negative
# values to zero and keeps the others.


layer_stats = []  # (layer type, mean), kept to compare


def print_stats(module, args, output):
    print(
        f"{type(module).__name__:6s} mean {output.mean().item():.3f}  std {output.std().item():.3f}"
    )
    layer_stats.append((type(module).__name__, output.mean().item()))


handles = [module.register_forward_hook(print_stats) for module in model.children()]
model(images)
for handle in handles:
    handle.remove()

# sphinx_gallery_start_ignore
# "one line per layer: Conv2d, ReLU, then Linear"; "The ReLU's mean is higher than the
# convolution's" (relu(v) >= v everywhere, and conv's output has negative values)
assert [kind for kind, _ in layer_stats] == ["Conv2d", "ReLU", "Linear"]
assert layer_stats[1][1] > layer_stats[0][1], layer_stats
# sphinx_gallery_end_ignore

ht.exercises.check("05.1", print_stats)

# sphinx_gallery_start_ignore
from page_checks import assert_check  # docs/_ext: the build's checks


# a hook that returns the statistics it computes replaces the layer's output
def stats_returned(module, args, output):
    return output.mean(), output.std()


assert_check("05.1", print_stats, stats_returned, "replaced_output")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 2.** The call raises a ``TypeError``, and the hooks ran on 0
# layers: the error comes when ``forward`` is called, before any layer runs.
# ``forward`` takes the images only, so a label cannot reach a layer's
# ``input`` this way; in a training loop it goes to the loss function.

inputs.clear()
handles = [module.register_forward_hook(record) for module in module_names]
try:
    model(images, labels)
except TypeError as error:
    message = str(error)
    print("TypeError:", message)
finally:
    for handle in handles:
        handle.remove()
print("layers whose hook ran:", len(inputs))

# sphinx_gallery_start_ignore
# "raises a TypeError" (forward takes 2 positional arguments, self and x) "and the hooks
# ran on 0 layers"
assert "takes 2 positional arguments but 3 were given" in message
assert len(inputs) == 0
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 3.** Two hooks keep the two outputs, each as
# ``output.detach().clone()``. It prints ``True`` twice: the ReLU's output is
# the convolution's output clamped at zero, so the convolution's hook caught
# the values before the ReLU, negative ones included. The ``clone()`` keeps
# them when the ReLU works in place; with ``detach()`` alone, the in-place ReLU
# would overwrite the kept tensor, and the check says so.


def conv_and_relu(net, x):
    kept = {}
    with (
        net[0].register_forward_hook(lambda m, args, out: kept.update(conv=out.detach().clone())),
        net[1].register_forward_hook(lambda m, args, out: kept.update(relu=out.detach().clone())),
    ):
        net(x)
    return kept["conv"], kept["relu"]


conv_out, relu_out = conv_and_relu(edge_net, grey)
print(torch.equal(relu_out, conv_out.clamp(min=0)))
inplace_net = nn.Sequential(edge_net[0], nn.ReLU(inplace=True))
conv_out_inplace, relu_out_inplace = conv_and_relu(inplace_net, grey)
print(torch.equal(relu_out_inplace, conv_out_inplace.clamp(min=0)))

# sphinx_gallery_start_ignore
# "It prints True twice ... negative ones included"
assert torch.equal(relu_out, conv_out.clamp(min=0))
assert torch.equal(relu_out_inplace, conv_out_inplace.clamp(min=0))
assert conv_out.min() < 0
assert conv_out_inplace.min() < 0
# sphinx_gallery_end_ignore

ht.exercises.check("05.3", conv_and_relu)

# sphinx_gallery_start_ignore


# "with detach() alone, the in-place ReLU would overwrite the kept tensor, and the check says so"
def conv_and_relu_detached(net, x):
    kept = {}
    with (
        net[0].register_forward_hook(lambda m, args, out: kept.update(conv=out.detach())),
        net[1].register_forward_hook(lambda m, args, out: kept.update(relu=out.detach())),
    ):
        net(x)
    return kept["conv"], kept["relu"]


assert_check("05.3", conv_and_relu, conv_and_relu_detached, "overwritten")
from page_checks import assert_exercises_checked, assert_no_hooks_left  # docs/_ext

assert_exercises_checked()
assert_no_hooks_left(globals())
# sphinx_gallery_end_ignore
