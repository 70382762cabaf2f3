# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
Error messages: causes and fixes
================================

.. index::
   ! element 0 of tensors does not require grad and does not have a grad_fn
   ! Output 0 of BackwardHookFunction is a view and is being modified inplace
   ! Trying to backward through the graph a second time
   ! Inference tensors cannot be saved for backward
   ! cannot register a hook on a tensor that doesn't require gradient
   ! Using a non-full backward hook when the forward contains multiple autograd Nodes is deprecated
   ! Cannot use both regular backward hooks and full backward hooks on a single Module
   ! one of the variables needed for gradient computation has been modified by an inplace operation
   ! GradCAM needs gradients
   ! no submodule named
   ! is out of range for a model with
   ! CAM methods need a feature map
   ! error message
   ! 报错信息

You searched for an error message and landed here: good. Each section below
starts with a message that learners meet when they use hooks or CAM methods,
printed in full by code that triggers it on this page. Then comes the cause,
and a fix that runs. The last sections are about hooks that fail *silently*:
no error, just a hook that never fires or fires twice.

.. rubric:: What you will learn
   :heading-level: 2

- what each of these errors means, in terms of the autograd graph and the
  module calls that hooks attach to;
- the fix for each, shown working;
- how to notice a hook that does not fire, or fires more often than you think.

**Prerequisites**: :doc:`/auto_examples/02_module_hooks/plot_05_forward_hooks`,
:doc:`/auto_examples/03_tensor_hooks/plot_10_tensor_hooks`. The pitfalls page,
:doc:`/auto_examples/03_tensor_hooks/plot_14_pitfalls`, explains several of
these errors at length.
"""

# %%
# Every demonstration calls ``show_error``: it runs a function, prints the
# exception's type and its whole message (wrapped to fit the page), or says
# that nothing was raised.

import textwrap
import warnings

import torch
from torch import nn

import hooks_tutorial as ht

# sphinx_gallery_start_ignore
shown = []  # every message show_error printed, unwrapped: the checks below read them
# sphinx_gallery_end_ignore


def show_error(function):
    try:
        function()
    except Exception as error:  # noqa: BLE001 (the page prints any error it meets)
        message = f"{type(error).__name__}: {error}"
        print(textwrap.fill(message, width=88, break_on_hyphens=False))
        # sphinx_gallery_start_ignore
        shown.append(message)
        # sphinx_gallery_end_ignore
    else:
        print("no error")
        # sphinx_gallery_start_ignore
        shown.append("no error")
        # sphinx_gallery_end_ignore


torch.manual_seed(0)
model = ht.pretrained("simple_cnn-shapes").eval()  # the small CNN of chapter 4
images = ht.make_shapes(4, split="test").images

# %%
# "element 0 of tensors does not require grad and does not have a grad_fn"
# ------------------------------------------------------------------------
#
# A hand-written Grad-CAM records the activation with a forward hook and then
# calls ``backward()`` on a class score. Here the forward pass runs inside
# ``torch.no_grad()``, as inference code usually does:


def grad_cam_under_no_grad():
    saved = {}
    handle = model.relu3.register_forward_hook(
        lambda module, args, output: saved.update(activation=output)
    )
    try:
        with torch.no_grad():
            scores = model(images)
        scores[:, 0].sum().backward()
    finally:
        handle.remove()


show_error(grad_cam_under_no_grad)

# sphinx_gallery_start_ignore
# the section's title is the start of the message
assert shown[-1].startswith(
    "RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn"
), shown[-1]
# sphinx_gallery_end_ignore

# %%
# **Cause.** Under ``torch.no_grad()`` autograd records nothing, so the
# scores have no ``grad_fn``: there is no graph to go backward through. The
# forward hook still fired; a backward hook never could.
#
# **Fix.** Run the forward pass with gradients enabled (``torch.enable_grad()``
# inside the ``no_grad`` block works too). The library's CAM methods do this
# themselves, so they work inside ``torch.no_grad()``:

with torch.no_grad():
    maps = ht.GradCAM(model, "relu3")(images)
print("maps:", tuple(maps.shape), "| hooks left:", ht.count_hooks(model).total)

# sphinx_gallery_start_ignore
# "The forward hook still fired": under no_grad it runs, and sees an output without a graph
fired_under_no_grad = []
check_handle = model.relu3.register_forward_hook(
    lambda module, args, output: fired_under_no_grad.append(output.grad_fn)
)
with torch.no_grad():
    model(images)
check_handle.remove()
assert fired_under_no_grad == [None], fired_under_no_grad
# "The library's CAM methods do this themselves, so they work inside torch.no_grad()"
assert maps.shape == (4, 64, 64)
assert ht.count_hooks(model).total == 0
# sphinx_gallery_end_ignore

# %%
# Under ``torch.inference_mode()`` gradients cannot be enabled again, so the
# library refuses with a message that names the fix:

with torch.inference_mode():
    show_error(lambda: ht.GradCAM(model, "relu3")(images))

# sphinx_gallery_start_ignore
# "the library refuses with a message that names the fix"
assert shown[-1].startswith("RuntimeError: GradCAM needs gradients, which torch.inference_mode()")
assert "outside the inference_mode() block" in shown[-1], shown[-1]
# sphinx_gallery_end_ignore

# %%
# "Output 0 of BackwardHookFunction is a view and is being modified inplace"
# --------------------------------------------------------------------------
#
# A full backward hook on a layer whose output an in-place operation then
# changes (torchvision's ResNets use ``nn.ReLU(inplace=True)``):

net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(inplace=True))
handle = net[0].register_full_backward_hook(lambda module, grad_input, grad_output: None)
show_error(lambda: net(torch.randn(1, 3, 8, 8)))
handle.remove()

# sphinx_gallery_start_ignore
# "PyTorch refuses, already in the forward pass": the call above only ran forward; "the
# message names it BackwardHookFunction; torch 2.9 says BackwardHookFunctionBackward"
import re

assert re.match(
    r"RuntimeError: Output 0 of BackwardHookFunction(Backward)? is a view and is being "
    "modified inplace",
    shown[-1],
), shown[-1]
assert ("FunctionBackward is" in shown[-1]) == torch.__version__.startswith("2.9."), shown[-1]
assert ht.count_hooks(net).total == 0
# sphinx_gallery_end_ignore

# %%
# **Cause.** ``register_full_backward_hook`` wraps the module's output in a
# special autograd function so that it can see the gradient (torch 2.14's
# message names it ``BackwardHookFunction``, torch 2.9's
# ``BackwardHookFunctionBackward``); an in-place operation on that wrapped
# output would bypass it, so PyTorch refuses, already in the *forward* pass.
#
# **Fix.** Record the gradient with a tensor hook registered from a forward
# hook (the pattern of :doc:`/auto_examples/03_tensor_hooks/plot_14_pitfalls`),
# or make the ReLU out-of-place. ``hooks_tutorial.capture_gradients`` uses the
# tensor hook:

with ht.capture_gradients(net, ["0"]) as grads:
    net(torch.randn(1, 3, 8, 8)).sum().backward()
print("gradient of the conv output:", tuple(grads["0"].shape))
print("hooks left:", ht.count_hooks(net).total)

# sphinx_gallery_start_ignore
# "capture_gradients uses the tensor hook": the gradient of the conv output, no hook left
assert grads["0"].shape == (1, 4, 6, 6)
assert ht.count_hooks(net).total == 0
# sphinx_gallery_end_ignore

# %%
# "Trying to backward through the graph a second time"
# ----------------------------------------------------
#
# Two backward passes through one graph, as a loop that computes two
# attribution maps from one forward pass would do:


def backward_twice():
    scores = model(images)
    scores[:, 0].sum().backward()
    scores[:, 1].sum().backward()


show_error(backward_twice)
model.zero_grad()

# sphinx_gallery_start_ignore
# the section's title is the start of the message
assert shown[-1].startswith("RuntimeError: Trying to backward through the graph a second time")
# sphinx_gallery_end_ignore

# %%
# **Cause.** To save memory, autograd frees the tensors a graph saved for its
# backward pass as soon as that pass ends.
#
# **Fix.** Run the forward pass again for each backward pass (what the CAM
# methods do for each call), or keep the graph with ``retain_graph=True`` on
# all but the last backward pass, as here:

scores = model(images)
scores[:, 0].sum().backward(retain_graph=True)
scores[:, 1].sum().backward()
print("two backward passes through one graph with retain_graph=True: done")
model.zero_grad()

# %%
# ``retain_graph=True`` works, but it keeps every tensor the graph saved alive
# until the last backward pass, so it costs memory. For two maps from one
# forward pass, one backward pass can give both: ``torch.autograd.grad`` with
# ``is_grads_batched=True`` takes one output gradient per class at once:

inputs = images.detach().requires_grad_()
scores = model(inputs)
per_class = torch.eye(scores.shape[1])[:2, None, :].expand(2, *scores.shape)
(both_maps,) = torch.autograd.grad(scores, inputs, per_class, is_grads_batched=True)
print("gradients for classes 0 and 1, one forward and one backward pass:", tuple(both_maps.shape))

# sphinx_gallery_start_ignore
# "one backward pass can give both": equal to two separate backward passes
# (float32 sums in a different order: tolerance 1e-5)
for target in range(2):
    (separate,) = torch.autograd.grad(model(inputs)[:, target].sum(), inputs)
    assert torch.allclose(both_maps[target], separate, atol=1e-5), target
# sphinx_gallery_end_ignore

# %%
# "Inference tensors cannot be saved for backward"
# ------------------------------------------------
#
# A tensor created under ``torch.inference_mode()`` (for example, a batch
# prepared by a data pipeline that uses it) then used in a computation that
# autograd records:


def inference_tensor_in_autograd():
    with torch.inference_mode():
        batch = torch.randn(2, 3)
    layer = nn.Linear(3, 2)
    layer(batch).sum().backward()


show_error(inference_tensor_in_autograd)

# sphinx_gallery_start_ignore
# the section's title is the start of the message
assert shown[-1].startswith("RuntimeError: Inference tensors cannot be saved for backward")
# sphinx_gallery_end_ignore

# %%
# **Cause.** Inference tensors skip the bookkeeping (version counters) that
# autograd needs for what it saves.
#
# **Fix.** Clone the tensor outside inference mode, or prepare data under
# ``torch.no_grad()``, whose tensors are normal tensors:

with torch.inference_mode():
    batch = torch.randn(2, 3)
layer = nn.Linear(3, 2)
layer(batch.clone()).sum().backward()
print("gradient of the layer's weight:", tuple(layer.weight.grad.shape))

# sphinx_gallery_start_ignore
# "Clone the tensor outside inference mode": the backward pass ran
assert layer.weight.grad.shape == (2, 3)
# sphinx_gallery_end_ignore

# %%
# "cannot register a hook on a tensor that doesn't require gradient"
# ------------------------------------------------------------------
#
# A tensor hook on the input images, to see the gradient that reaches them:

show_error(lambda: images.register_hook(lambda grad: grad))

# sphinx_gallery_start_ignore
# the section's title is the start of the message
assert shown[-1].startswith(
    "RuntimeError: cannot register a hook on a tensor that doesn't require gradient"
), shown[-1]
# sphinx_gallery_end_ignore

# %%
# **Cause.** A tensor hook fires when autograd computes that tensor's
# gradient; a tensor that does not require grad never gets one.
#
# **Fix.** Ask for the gradient first:

pixels = images.clone().requires_grad_(True)
seen = []
handle = pixels.register_hook(lambda grad: seen.append(tuple(grad.shape)))
model(pixels)[:, 0].sum().backward()
handle.remove()
model.zero_grad()
print("the hook saw a gradient of shape", seen[0])

# sphinx_gallery_start_ignore
# "Ask for the gradient first": the hook fired once, with the gradient of the images
assert seen == [tuple(images.shape)], seen
# sphinx_gallery_end_ignore

# %%
# "one of the variables needed for gradient computation has been modified by an inplace operation"
# ------------------------------------------------------------------------------------------------
#
# A hook (or any code) that edits, in place, a tensor that autograd saved:


def edit_a_saved_tensor():
    x = torch.randn(3, requires_grad=True)
    y = x.sigmoid()  # sigmoid saves its output for the backward pass
    y.mul_(2)  # ... which this in-place edit changes
    y.sum().backward()


show_error(edit_a_saved_tensor)

# sphinx_gallery_start_ignore
# the section's title is the start of the message
assert shown[-1].startswith(
    "RuntimeError: one of the variables needed for gradient computation has been modified by an"
    " inplace operation"
), shown[-1]
# sphinx_gallery_end_ignore

# %%
# **Cause.** Autograd counts the changes of every tensor it saved (its
# *version*) and refuses to use one that changed since.
#
# **Fix.** Work on a copy (``y = y * 2``, or ``output.clone()`` in a hook that
# edits what it returns):

x = torch.randn(3, requires_grad=True)
y = x.sigmoid() * 2
y.sum().backward()
print("x.grad:", x.grad)

# sphinx_gallery_start_ignore
# "Work on a copy": the gradient is right, 2 * sigmoid'(x)
assert torch.allclose(x.grad, 2 * x.sigmoid() * (1 - x.sigmoid()))
# sphinx_gallery_end_ignore

# %%
# "Using a non-full backward hook when the forward contains multiple autograd Nodes is deprecated"
# ------------------------------------------------------------------------------------------------
#
# This one is a warning, not an error. The old ``register_backward_hook`` on a
# module whose forward pass runs several operations:

block = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    handle = block.register_backward_hook(lambda module, grad_input, grad_output: None)
    block(torch.randn(2, 3, requires_grad=True)).sum().backward()
    handle.remove()
for warning in caught:
    print(textwrap.fill(f"{warning.category.__name__}: {warning.message}", width=88))

# sphinx_gallery_start_ignore
# "This one is a warning, not an error": the section's title starts its message
warned = [f"{warning.category.__name__}: {warning.message}" for warning in caught]
assert any(
    message.startswith(
        "FutureWarning: Using a non-full backward hook when the forward contains multiple"
        " autograd Nodes is deprecated"
    )
    for message in warned
), warned
# sphinx_gallery_end_ignore

# %%
# **Cause.** The old hook attaches to the *last* operation of the forward
# pass only (here the ReLU), so its ``grad_input`` is not the gradient with
# respect to the module's inputs. :doc:`/auto_examples/02_module_hooks/plot_07_backward_hooks`
# shows the wrong numbers it gives.
#
# **Fix.** ``register_full_backward_hook``, which sees the gradient with
# respect to the module's inputs. Not on the same module, though: the old hook
# marked it for good, even after ``handle.remove()``:

show_error(lambda: block.register_full_backward_hook(lambda module, grad_input, grad_output: None))

# sphinx_gallery_start_ignore
# "the old hook marked it for good, even after handle.remove()": no hook is left on it
assert ht.count_hooks(block).total == 0
assert shown[-1].startswith(
    "RuntimeError: Cannot use both regular backward hooks and full backward hooks on a single"
    " Module"
), shown[-1]
# sphinx_gallery_end_ignore

# %%
# A fresh module (or a model built again) takes the full hook, and nothing
# warns:

block = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    handle = block.register_full_backward_hook(lambda module, grad_input, grad_output: None)
    block(torch.randn(2, 3, requires_grad=True)).sum().backward()
    handle.remove()
print("warnings with the full backward hook:", len(caught))

# sphinx_gallery_start_ignore
# "A fresh module ... takes the full hook, and nothing warns"
assert len(caught) == 0, [str(w.message) for w in caught]
# sphinx_gallery_end_ignore

# %%
# The library's own errors
# ------------------------
#
# The library checks its arguments before it registers any hook, and each
# message names the fix. A layer name with a typo:

show_error(lambda: ht.GradCAM(model, "relu4"))

# sphinx_gallery_start_ignore
# "each message names the fix"
assert shown[-1].startswith("ValueError: no submodule named 'relu4'; did you mean 'relu3'")
# sphinx_gallery_end_ignore

# %%
# A target class that the model does not have (it has five):

show_error(lambda: ht.GradCAM(model, "relu3")(images, 7))

# sphinx_gallery_start_ignore
# "A target class that the model does not have (it has five)"
assert model.fc.out_features == 5
assert shown[-1].startswith(
    "IndexError: target class 7 is out of range for a model with 5 outputs"
), shown[-1]
# sphinx_gallery_end_ignore

# %%
# A layer whose output is a sequence of tokens ``[B, tokens, channels]``, as
# in a vision transformer, given to a CAM method without a
# ``reshape_transform`` that turns the tokens back into a grid:


class TinyTokenModel(nn.Module):
    """Cuts the image into 16 patches of 16x16 pixels, one token each."""

    def __init__(self) -> None:
        super().__init__()
        self.patches = nn.Conv2d(3, 8, kernel_size=16, stride=16)
        self.tokens = nn.Identity()  # the layer to explain: [B, 16, 8]
        self.head = nn.Linear(8, 5)

    def forward(self, x):
        tokens = self.tokens(self.patches(x).flatten(2).transpose(1, 2))
        return self.head(tokens.mean(dim=1))


tokens_model = TinyTokenModel().eval()
show_error(lambda: ht.GradCAM(tokens_model, "tokens")(images))

# sphinx_gallery_start_ignore
# "Cuts the image into 16 patches of 16x16 pixels, one token each"; "as the message says"
assert tokens_model.tokens(tokens_model.patches(images).flatten(2).transpose(1, 2)).shape == (
    4,
    16,
    8,
)
assert (
    "CAM methods need a feature map [B, C, H, W]; for transformer tokens [B, tokens, C] pass"
    " reshape_transform=token_reshape_transform"
) in shown[-1], shown[-1]
# sphinx_gallery_end_ignore

# %%
# **Fix**, as the message says: ``token_reshape_transform`` (see
# :doc:`/auto_examples/04_grad_cam/plot_22_beyond_cnns`), here with no class
# token in front of the 16 patch tokens:

import functools

to_grid = functools.partial(ht.token_reshape_transform, prefix_tokens=0)
maps = ht.GradCAM(tokens_model, "tokens", reshape_transform=to_grid)(images)
print("maps:", tuple(maps.shape), "| hooks left:", ht.count_hooks(tokens_model).total)

# sphinx_gallery_start_ignore
# "Fix, as the message says": a map per image, no hook left
assert maps.shape == (4, 64, 64)
assert ht.count_hooks(tokens_model).total == 0
# sphinx_gallery_end_ignore

# %%
# Hooks that fail silently
# ------------------------
#
# No message at all is the hardest case. Three common ones follow, each with
# a counter that shows what happened.
#
# **A hook added after** ``torch.compile``. The compiled model keeps the trace
# it made without the hook (``backend="eager"`` traces as the default backend
# does, without generating code):

torch.compiler.reset()


def counting_hook(calls):
    # sphinx_gallery_start_ignore
    # Developer note: a closure, not a global list. torch.compile traces the hook, and
    # in a process that has run other scripts (this site's build) it can bind a global
    # to theirs.
    # sphinx_gallery_end_ignore
    return lambda module, args, output: calls.append("fired")


small = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
compiled = torch.compile(small, backend="eager")
compiled(torch.randn(2, 4))
calls = []
handle = small[0].register_forward_hook(counting_hook(calls))
compiled(torch.randn(2, 4))
print("hook added after compiling, calls of the compiled model:", len(calls))
# sphinx_gallery_start_ignore
# "The compiled model keeps the trace it made without the hook"
assert len(calls) == 0, calls
# sphinx_gallery_end_ignore
small(torch.randn(2, 4))
print("after one call of the model itself:", len(calls))
# sphinx_gallery_start_ignore
assert len(calls) == 1, calls  # the hook is on the module: the model itself runs it
# sphinx_gallery_end_ignore
handle.remove()
torch.compiler.reset()

# %%
# **Fix.** Register hooks before compiling, or call ``torch.compiler.reset()``
# after adding one: the next call traces the model again, hook included
# (:doc:`/auto_examples/03_tensor_hooks/plot_14_pitfalls` shows which hooks
# compiled code keeps):

calls = []
handle = small[0].register_forward_hook(counting_hook(calls))
torch.compiler.reset()
compiled(torch.randn(2, 4))
print("hook added, then torch.compiler.reset(), calls of the compiled model:", len(calls))

# sphinx_gallery_start_ignore
# "the next call traces the model again, hook included"
assert len(calls) == 1, calls
# sphinx_gallery_end_ignore
handle.remove()
torch.compiler.reset()

# %%
# The targeted fix is ``torch._dynamo.config.skip_nnmodule_hook_guards = False``
# (its default is ``True``): Dynamo then guards on the hook dictionaries and
# traces again when a hook is added, where ``torch.compiler.reset()`` discards
# every compiled model:

import torch._dynamo

print("default skip_nnmodule_hook_guards:", torch._dynamo.config.skip_nnmodule_hook_guards)
with torch._dynamo.config.patch(skip_nnmodule_hook_guards=False):
    compiled = torch.compile(small, backend="eager")
    compiled(torch.randn(2, 4))
    calls = []
    handle = small[0].register_forward_hook(counting_hook(calls))
    compiled(torch.randn(2, 4))
    print("with the guards on, hook added after compiling, calls:", len(calls))
handle.remove()
torch.compiler.reset()

# sphinx_gallery_start_ignore
# "its default is True" and "traces again when a hook is added" (torch 2.14.1 and 2.9.1)
assert torch._dynamo.config.skip_nnmodule_hook_guards is True
assert len(calls) == 1, calls
# sphinx_gallery_end_ignore

# %%
# **A hook on a module that the forward pass never calls.** This model keeps
# an ``nn.ReLU`` as an attribute, but its ``forward`` calls
# ``torch.relu`` instead, so a hook on ``model.act`` never fires:


class FunctionalReLU(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.act = nn.ReLU()  # registered, but never called

    def forward(self, x):
        return torch.relu(self.linear(x))


calls = []
functional = FunctionalReLU()
handle = functional.act.register_forward_hook(lambda module, args, output: calls.append("fired"))
functional(torch.randn(2, 4))
handle.remove()
print("hook on a module that forward never calls:", len(calls), "calls")

# sphinx_gallery_start_ignore
# "a hook on model.act never fires"
assert len(calls) == 0, calls
# sphinx_gallery_end_ignore

# %%
# **Fix.** Read the model's ``forward`` (or trace a call with
# ``hooks_tutorial.trace``) and hook a module that it calls: here
# ``functional.linear``.
#
# **A module called twice.** One ``nn.ReLU`` object used at two places of the
# forward pass runs its hooks twice per call, and a hook that stores "the"
# activation keeps the second one:


class SharedReLU(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first, self.second = nn.Linear(4, 8), nn.Linear(8, 2)
        self.act = nn.ReLU()  # used after both layers

    def forward(self, x):
        return self.act(self.second(self.act(self.first(x))))


shapes = []
shared = SharedReLU()
handle = shared.act.register_forward_hook(
    lambda module, args, output: shapes.append(tuple(output.shape))
)
shared(torch.randn(3, 4))
handle.remove()
print("the shared ReLU's hook fired", len(shapes), "times, with outputs", shapes)

# sphinx_gallery_start_ignore
# "runs its hooks twice per call, and a hook that stores "the" activation keeps the second one"
assert shapes == [(3, 8), (3, 2)], shapes
# The page's opening: each section title quotes the start of a message that the page's code
# printed, and each message's start is a main index entry (`! ...`), so the site's search
# finds this page for it.
import re
import sys
from pathlib import Path

source = Path(sys.argv[0]).read_text(encoding="utf-8")  # sphinx-gallery sets argv[0] too
printed = " ".join([*shown, *warned]).lower()
# the title quotes torch 2.14, which names the function BackwardHookFunction ("Cause")
printed = printed.replace("backwardhookfunctionbackward", "backwardhookfunction")
titles = re.findall(r'^# "(.+)"\n# -+$', source, flags=re.MULTILINE)
entries = re.findall(r"^   ! (.+)$", source, flags=re.MULTILINE)
assert len(titles) == 7, titles
assert len(entries) == 14, entries
for quoted in [*titles, *entries[:-2]]:  # the last two: "error message", "报错信息"
    assert quoted.lower() in printed, quoted
for title in titles:
    assert title in entries, title
# sphinx_gallery_end_ignore

# %%
# **Fix.** Give each place its own module (``self.act1``, ``self.act2``), or
# make the hook keep a list, as above. torchvision's ``BasicBlock`` calls its
# ``relu`` twice, so a hook on ``resnet.layer4[1].relu`` fires twice per
# image batch.

# %%
# Summary
# -------
#
# - Gradients need a graph: ``no_grad`` and ``inference_mode`` stop it from
#   being recorded, and a backward pass frees it unless asked not to.
# - In-place operations clash with full backward hooks and with tensors that
#   autograd saved: work on copies, or hook the tensor instead of the module.
# - A hook that never fires or fires twice raises nothing: count its calls.
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
# 1. Write ``grads_after_cam(model, layer, images)``, which calls the
#    library's ``GradCAM`` on ``model`` inside ``torch.no_grad()`` and returns
#    the maps and the number of the model's parameters that have a ``.grad``.
#    Check that the parameters still have no ``.grad``.
#    Check: ``ht.exercises.check("40.1", grads_after_cam)``.
# 2. Write ``count_fires(model, module, x)``, which puts a forward hook on
#    ``module``, runs ``model(x)``, removes the hook and returns how often it
#    fired. Count for ``resnet.layer4[1].relu`` of a torchvision
#    ``resnet18(weights=None)`` and one batch.
#    Check: ``ht.exercises.check("40.2", count_fires)``.
# 3. Which of the three silent cases does ``hooks_tutorial.trace``
#    reveal? Write ``called_names(model, x)``, which returns the names of the
#    modules that one call of ``model(x)`` calls, one per call, from
#    ``ht.trace``, and use it on ``shared``.
#    Check: ``ht.exercises.check("40.3", called_names)``.

# %%
# .. rst-class:: solution
#
# **Solution 1.** The call leaves 0 parameters with a ``.grad``: the library
# takes the gradient with ``torch.autograd.grad``, with respect to the
# activation only, so unlike ``backward()`` it never fills the parameters'
# ``.grad``.


def grads_after_cam(model, layer, images):
    with torch.no_grad():
        maps = ht.GradCAM(model, layer)(images)
    return maps, sum(p.grad is not None for p in model.parameters())


model.zero_grad(set_to_none=True)
maps, with_grad = grads_after_cam(model, "relu3", images)
print("parameters with a .grad:", with_grad)

# sphinx_gallery_start_ignore
assert with_grad == 0
assert all(p.grad is None for p in model.parameters())
assert ht.count_hooks(model).total == 0
# sphinx_gallery_end_ignore

ht.exercises.check("40.1", grads_after_cam)

# sphinx_gallery_start_ignore
from page_checks import assert_check  # docs/_ext: the build's checks


# a backward() on the scores fills the parameters' .grad
def grads_after_backward(model, layer, images):
    model(images).max(1).values.sum().backward()
    return grads_after_cam(model, layer, images)


assert_check("40.1", grads_after_cam, grads_after_backward, "filled_grads")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 2.** The hook fires 2 times for one batch: ``BasicBlock.forward``
# calls ``self.relu`` after its first convolution (and batch norm) and again
# after the residual addition.

import torchvision


def count_fires(model, module, x):
    fired = []
    handle = module.register_forward_hook(lambda m, args, output: fired.append(1))
    try:
        with torch.no_grad():
            model(x)
    finally:
        handle.remove()
    return len(fired)


resnet = torchvision.models.resnet18(weights=None).eval()
fires = count_fires(resnet, resnet.layer4[1].relu, torch.randn(1, 3, 64, 64))
print("layer4[1].relu fired", fires, "times")

# sphinx_gallery_start_ignore
assert fires == 2, fires
# sphinx_gallery_end_ignore

ht.exercises.check("40.2", count_fires)

# sphinx_gallery_start_ignore


# a set of the modules that fired counts each module once, however often it is called
def count_modules_fired(model, module, x):
    fired = set()
    with module.register_forward_hook(lambda m, args, output: fired.add(m)), torch.no_grad():
        model(x)
    return len(fired)


assert_check("40.2", count_fires, count_modules_fired, "once_per_module")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 3.** Two of the three. The trace lists every module call, so it
# shows ``act`` twice for ``shared`` (the module called twice), and it leaves
# out a module that is never called (``act`` is missing from the trace of
# ``functional``). The compiled case does not show, because the trace runs the
# model itself, not the compiled one.


def called_names(model, x):
    return [row.name for row in ht.trace(model, x).rows]


names = called_names(shared, torch.randn(3, 4))
print(names)
print(called_names(functional, torch.randn(2, 4)))

# sphinx_gallery_start_ignore
assert names.count("act") == 2, names
assert "act" not in called_names(functional, torch.randn(2, 4))
# sphinx_gallery_end_ignore

ht.exercises.check("40.3", called_names)

# sphinx_gallery_start_ignore


# named_modules() lists each module once, in the order they were assigned
def module_names(model, x):
    return [name for name, _ in model.named_modules() if name]


assert_check("40.3", called_names, module_names, "modules_not_calls")
from page_checks import assert_exercises_checked, assert_no_hooks_left  # docs/_ext

assert_exercises_checked()
assert_no_hooks_left(globals())
# sphinx_gallery_end_ignore
