# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
Firing order and global hooks
=============================

.. index::
   ! hook order
   ! firing order
   ! 钩子顺序
   ! 触发顺序

When hooks sit on a container and on the layers inside it, which runs first?
And how do you hook *every* module without registering hooks one by one? This
page prints the order in which forward pre-hooks, forward hooks, backward
pre-hooks and backward hooks fire through a small ``nn.Sequential``, then
uses PyTorch's global module hooks, and ends with a layer-by-layer summary of
a model, written by hand and then with :obj:`hooks_tutorial.trace`.

.. rubric:: What you will learn
   :heading-level: 2

- the order of all four kinds of module hooks through nested modules, in the
  forward and the backward pass;
- how global hooks (``torch.nn.modules.module.register_module_forward_hook``)
  fire for every module, before the per-module hooks, and why their handle
  must be removed;
- how to build a layer summary (name, type, output shape, parameters) from
  hooks, and how :obj:`hooks_tutorial.trace` does it in one call.

**Prerequisites**: :doc:`/auto_examples/02_module_hooks/plot_06_forward_pre_hooks`,
:doc:`/auto_examples/02_module_hooks/plot_07_backward_hooks` and
:doc:`/auto_examples/02_module_hooks/plot_08_handles_and_leaks`.
"""

# %%
# A trace of every hook
# ---------------------
#
# We put all four kinds of hooks on the container and on each layer of
# ``nn.Sequential(nn.Linear(3, 2), nn.ReLU())``. Each hook appends a label to
# a list. The ``label=label`` default argument binds the current label to each
# ``lambda``; without it, every ``lambda`` would see the last label of the loop.

import torch
from torch import nn
from torch.nn.modules.module import register_module_forward_hook

import hooks_tutorial as ht

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
events = []

with ht.HookGroup() as hooks:
    for module in model.modules():
        label = type(module).__name__
        hooks.forward_pre(
            module, lambda _m, _args, label=label: events.append(f"forward pre-hook   {label}")
        )
        hooks.forward(
            module,
            lambda _m, _args, _out, label=label: events.append(f"forward hook       {label}"),
        )
        hooks.full_backward_pre(
            module, lambda _m, _gout, label=label: events.append(f"backward pre-hook  {label}")
        )
        hooks.full_backward(
            module,
            lambda _m, _gin, _gout, label=label: events.append(f"backward hook      {label}"),
        )

    x = torch.randn(4, 3, requires_grad=True)
    output = model(x)
    events.append("--- loss.backward() ---")
    output.sum().backward()

print("\n".join(events))

# sphinx_gallery_start_ignore
# "the container's pre-hook fires when model(x) starts, each layer's pre-hook and hook
# fire around that layer, and the container's forward hook fires last"; backward: "the
# container's backward pre-hook first ..., then ReLU before Linear, and the container's
# backward hook last"
assert events == [
    "forward pre-hook   Sequential",
    "forward pre-hook   Linear",
    "forward hook       Linear",
    "forward pre-hook   ReLU",
    "forward hook       ReLU",
    "forward hook       Sequential",
    "--- loss.backward() ---",
    "backward pre-hook  Sequential",
    "backward pre-hook  ReLU",
    "backward hook      ReLU",
    "backward pre-hook  Linear",
    "backward hook      Linear",
    "backward hook      Sequential",
]
assert len(hooks) == 0  # the group removed its handles
# sphinx_gallery_end_ignore

# %%
# Read the forward part as nested calls: the container's pre-hook fires when
# ``model(x)`` starts, each layer's pre-hook and hook fire around that layer,
# and the container's forward hook fires last, when its ``forward`` returns.
# The backward pass visits the modules in reverse: the container's backward
# pre-hook first (the gradient of its output is known first), then ReLU before
# Linear, and the container's backward hook last (the gradient of its input is
# known last).
#
# Global hooks: every module, everywhere
# --------------------------------------
#
# ``torch.nn.modules.module.register_module_forward_hook(hook)`` registers a
# forward hook for *all* modules in the process, with the same signature
# ``hook(module, args, output)``. PyTorch's documentation describes it as a
# tool for debugging and profiling. Global hooks fire before the per-module
# hooks of the same kind.

events = []
global_handle = register_module_forward_hook(
    lambda module, _args, _output: events.append(f"global hook      {type(module).__name__}")
)
try:
    with model[0].register_forward_hook(
        lambda _m, _args, _out: events.append("per-module hook  Linear")
    ):
        model(x)
    nn.Tanh()(x)  # a module created after the global hook was registered
finally:
    global_handle.remove()
print("\n".join(events))

# sphinx_gallery_start_ignore
# "Global hooks fire before the per-module hooks of the same kind"; the last line is a
# Tanh that is not part of model
assert events == [
    "global hook      Linear",
    "per-module hook  Linear",
    "global hook      ReLU",
    "global hook      Sequential",
    "global hook      Tanh",
]
# sphinx_gallery_end_ignore

# %%
# The last line is a ``Tanh`` that is not part of ``model`` and did not even
# exist when the hook was registered. A global hook reaches every module of
# every model, including those of code you did not write, until its handle is
# removed. That is why the ``try``/``finally`` above matters. The global hook
# is gone now:

events = []
model(x)
print("events after remove():", events)

# sphinx_gallery_start_ignore
# "The global hook is gone now"
assert events == []
# sphinx_gallery_end_ignore

# %%
# Global hooks are not attached to any module, so
# :obj:`hooks_tutorial.count_hooks` (which reads the modules' own hook
# dictionaries) does not see them. Counterparts exist for the other kinds:
# ``register_module_forward_pre_hook``, ``register_module_full_backward_hook``
# and ``register_module_full_backward_pre_hook``.
#
# A layer-by-layer summary from hooks
# -----------------------------------
#
# Hooks make a quick model summary: one forward pass with a hook that notes
# each layer's name, type, output shape and number of parameters. We use the
# CNN that the Grad-CAM chapter trains, :obj:`hooks_tutorial.SimpleCNN` (three
# convolutional blocks, then a global pooling and a linear layer), with random
# weights, and a global hook that ignores modules outside it.

cnn = ht.SimpleCNN(seed=0).eval()
images = torch.rand(2, 3, 64, 64)

names = {module: name for name, module in cnn.named_modules() if name}
rows = []


def summarise(module, args, output):
    if module in names and not list(module.children()):  # layers of cnn only
        params = sum(p.numel() for p in module.parameters())
        rows.append((names[module], type(module).__name__, tuple(output.shape), params))


global_handle = register_module_forward_hook(summarise)
try:
    # sphinx_gallery_start_ignore
    # "Global hooks are not attached to any module, so count_hooks ... does not see them"
    assert ht.count_hooks(cnn) == {}
    # sphinx_gallery_end_ignore
    with torch.no_grad():
        cnn(images)
finally:
    global_handle.remove()

print(f"{'name':8s} {'type':18s} {'output shape':16s} {'params':>7s}")
for name, kind, shape, params in rows:
    print(f"{name:8s} {kind:18s} {list(shape)!s:16s} {params:7,d}")
print(f"{'total':44s} {sum(p.numel() for p in cnn.parameters()):7,d}")

# sphinx_gallery_start_ignore
# "three convolutional blocks, then a global pooling and a linear layer"
kinds = {name: kind for name, kind, _, _ in rows}
assert [name for name, kind in kinds.items() if kind == "Conv2d"] == ["conv1", "conv2", "conv3"]
assert kinds["gap"].startswith("Adaptive")
assert rows[-1][:2] == ("fc", "Linear")
assert all(shape[2:] == (1, 1) for name, _, shape, _ in rows if name == "gap")
# "Per-module hooks on the layers of cnn would give the same table"
per_module_rows = []
with ht.HookGroup() as per_module:
    for leaf_name, leaf in cnn.named_modules():
        if leaf_name and not list(leaf.children()):
            per_module.forward(
                leaf,
                lambda m, _args, out, leaf_name=leaf_name: per_module_rows.append(
                    (
                        leaf_name,
                        type(m).__name__,
                        tuple(out.shape),
                        sum(p.numel() for p in m.parameters()),
                    )
                ),
            )
    with torch.no_grad():
        cnn(images)
assert per_module_rows == rows
# sphinx_gallery_end_ignore

# %%
# Per-module hooks on the layers of ``cnn`` would give the same table, without
# the ``module in names`` filter, at the cost of registering and removing one
# hook per layer.
#
# The same with ``hooks_tutorial.trace``
# --------------------------------------
#
# ``hooks_tutorial.trace(model, example_input)`` runs the model once with a
# forward pre-hook and a forward hook on every layer, removes them all, and
# returns the rows, which print as a table with the input shapes as well.
# ``to_text(times=False)`` leaves out the time column, whose values change
# from run to run.

summary = ht.trace(cnn, images)
print(summary.to_text(times=False))
print("hooks left on cnn:", ht.count_hooks(cnn).total)

# sphinx_gallery_start_ignore
# "removes them all, and returns the rows ... with the input shapes as well"
assert ht.count_hooks(cnn).total == 0
assert [(row.name, row.type, row.output_shapes[0], row.params) for row in summary] == rows
assert summary[0].input_shapes == ((2, 3, 64, 64),)
# "to_text(times=False) leaves out the time column"
assert "time" in summary.to_text().splitlines()[0]
assert "time" not in summary.to_text(times=False)
# sphinx_gallery_end_ignore

# %%
# The rows are named tuples, so they can be used in code as well:

largest = max(summary, key=lambda row: row.params)
print(f"layer with the most parameters: {largest.name} ({largest.type}, {largest.params:,})")
print("same total as our table:", summary.total_params == sum(p.numel() for p in cnn.parameters()))

# sphinx_gallery_start_ignore
assert (largest.name, largest.type) == ("conv3", "Conv2d")
assert summary.total_params == sum(p.numel() for p in cnn.parameters())
# sphinx_gallery_end_ignore

# %%
# Summary
# -------
#
# - Forward: a container's pre-hook fires first and its forward hook last;
#   each inner layer's pre-hook and hook fire around that layer.
# - Backward: the same modules in reverse order; the container's backward
#   pre-hook fires first and its backward hook last.
# - ``register_module_forward_hook`` and its counterparts hook every module in
#   the process, before the per-module hooks; always remove their handle in
#   ``finally``.
# - A forward hook that records name, type, output shape and parameters gives
#   a model summary; :obj:`hooks_tutorial.trace` returns it as rows and a table.
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
# 1. Add an ``nn.Sequential`` inside ``model`` (for example
#    ``nn.Sequential(nn.Linear(3, 2), nn.Sequential(nn.ReLU(), nn.Tanh()))``)
#    and predict the order of the forward hooks before running the trace. For
#    this example, write your prediction as a list of type names, one per
#    module, the outer ``Sequential`` included. Check:
#    ``ht.exercises.check("09.1", ["Linear", ...])``.
# 2. Write ``module_calls(model, x)``: with
#    ``register_module_forward_pre_hook``, it lists the modules that a forward
#    pass of ``model`` calls, one entry per call. Compare the number of calls
#    for ``cnn`` with ``len(list(cnn.modules()))``. Check:
#    ``ht.exercises.check("09.2", module_calls)``.
# 3. Write ``find_model_row(result)``, which finds the row of the model itself
#    in the result of ``ht.trace(cnn, images, leaves_only=False)``. What is its
#    output shape? Check: ``ht.exercises.check("09.3", find_model_row)``.

# %%
# .. rst-class:: solution
#
# **Solution 1.** The order is ``['Linear', 'ReLU', 'Tanh', 'Sequential',
# 'Sequential']``: a forward hook fires when its module's ``forward``
# returns, so the inner ``Sequential`` comes after ``ReLU`` and ``Tanh``, and
# the outer one, which returns last, comes last.

nested = nn.Sequential(nn.Linear(3, 2), nn.Sequential(nn.ReLU(), nn.Tanh()))
order = []
with ht.HookGroup() as hooks:
    for module in nested.modules():
        label = type(module).__name__
        hooks.forward(module, lambda m, args, out, label=label: order.append(label))
    nested(x)
print(order)

# sphinx_gallery_start_ignore
# "The order is ['Linear', 'ReLU', 'Tanh', 'Sequential', 'Sequential']": inner before outer
assert order == ["Linear", "ReLU", "Tanh", "Sequential", "Sequential"]
# sphinx_gallery_end_ignore

ht.exercises.check("09.1", ["Linear", "ReLU", "Tanh", "Sequential", "Sequential"])

# sphinx_gallery_start_ignore
from page_checks import assert_check  # docs/_ext: the build's checks

# the order in which the modules start (pre-order), not the one in which they return
assert_check(
    "09.1",
    ["Linear", "ReLU", "Tanh", "Sequential", "Sequential"],
    ["Sequential", "Linear", "Sequential", "ReLU", "Tanh"],
    "containers_first",
)
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 2.** A global pre-hook sees every module call. A forward pass of
# ``cnn`` makes 15 module calls to 15 distinct modules, and ``cnn`` has 15
# modules (itself included): each module is called exactly once. A module
# called twice in ``forward`` would make the calls outnumber the distinct
# modules; a module never called would leave fewer distinct modules than
# modules.

from torch.nn.modules.module import register_module_forward_pre_hook


def module_calls(model, x):
    calls = []
    handle = register_module_forward_pre_hook(lambda m, args: calls.append(m))
    try:
        with torch.no_grad():
            model(x)
    finally:
        handle.remove()
    return calls


calls = module_calls(cnn, images)
distinct = len({id(module) for module in calls})
print("module calls:", len(calls), " distinct modules called:", distinct)
print("modules of cnn:", len(list(cnn.modules())))

# sphinx_gallery_start_ignore
# "15 module calls to 15 distinct modules, and cnn has 15 modules (itself included): each
# module is called exactly once"
assert len(calls) == distinct == len(list(cnn.modules())) == 15
assert {id(m) for m in calls} == {id(m) for m in cnn.modules()}
# sphinx_gallery_end_ignore

ht.exercises.check("09.2", module_calls)

# sphinx_gallery_start_ignore
# counting the modules instead of the calls: a module called twice counts once
assert_check("09.2", module_calls, lambda model, x: list(model.modules()), "counted_modules")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 3.** With ``leaves_only=False`` the containers get rows too. The
# model's own row is the one whose ``name`` is the empty string, the name
# ``named_modules()`` gives the model itself (the table shows it as
# ``(model)``). It prints ``SimpleCNN ((2, 5),)``: ``output_shapes`` holds one
# shape per output, and the model's single output has shape ``(2, 5)``, one
# row of five class scores for each of the two images.


def find_model_row(result):
    return next(row for row in result if row.name == "")


full = ht.trace(cnn, images, leaves_only=False)
model_row = find_model_row(full)
print(model_row.type, model_row.output_shapes)

# sphinx_gallery_start_ignore
# "the one whose name is the empty string ... (the table shows it as (model))"
assert next(name for name, module in cnn.named_modules() if module is cnn) == ""
assert full.to_text(times=False).splitlines()[1].startswith("(model)")
# "It prints SimpleCNN ((2, 5),)": one output, of shape (2, 5)
assert (model_row.type, model_row.output_shapes) == ("SimpleCNN", ((2, 5),))
# "one row of five class scores for each of the two images"
assert images.shape[0] == 2
assert cnn.fc.out_features == 5
# sphinx_gallery_end_ignore

ht.exercises.check("09.3", find_model_row)

# sphinx_gallery_start_ignore
# the last row is the last module called, not the model
assert_check("09.3", find_model_row, lambda result: result[-1], "wrong_row")
from page_checks import assert_exercises_checked, assert_no_hooks_left  # docs/_ext

assert_exercises_checked()
assert_no_hooks_left(globals())
# sphinx_gallery_end_ignore
