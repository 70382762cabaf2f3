# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
Handles and leaks: remove every hook you register
=================================================

.. index::
   ! remove
   ! remove hook
   ! RemovableHandle
   ! handle
   ! 句柄
   ! 移除钩子

A hook stays on its module until someone removes it. Forget to, and every
later forward pass runs it again: a helper function that registers a hook on
each call piles up copies, slows the model down and keeps tensors alive. This
page shows the leak, the handle that prevents it, ways to make removal
automatic, and the helpers of ``hooks_tutorial`` that do the bookkeeping.

.. rubric:: What you will learn
   :heading-level: 2

- how hooks pile up when handles are thrown away, and how to see it;
- how ``handle.remove()`` works, and that calling it twice is harmless;
- how to use a handle as a context manager, and ``try``/``finally`` for
  several handles;
- :obj:`hooks_tutorial.HookGroup`, :obj:`hooks_tutorial.count_hooks`,
  :obj:`hooks_tutorial.capture_activations` and, as a last resort,
  :obj:`hooks_tutorial.remove_all_hooks`;
- why a stored output that is not detached keeps its input alive.

**Prerequisites**: :doc:`/auto_examples/02_module_hooks/plot_05_forward_hooks`
and :doc:`/auto_examples/02_module_hooks/plot_07_backward_hooks`.
"""

# %%
# A leaky helper
# --------------
#
# The function below returns the activation of one layer. It registers a
# forward hook and throws away the handle that ``register_forward_hook``
# returns, so the hook is never removed. We call it five times and count the
# hooks on the layer with :obj:`hooks_tutorial.count_hooks` (more on it
# below), and how many times a hook ran during each call.

import gc
import weakref

import torch
from torch import nn

import hooks_tutorial as ht

torch.manual_seed(0)
model = ht.TinyConvNet()
x = torch.randn(1, 1, 4, 4)
print(model)

hook_runs = 0


def get_activation(model, layer, x):
    store = {}

    def hook(module, args, output):
        global hook_runs
        hook_runs += 1
        store["activation"] = output.detach()

    layer.register_forward_hook(hook)  # the handle is lost
    model(x)
    return store["activation"]


for call in range(1, 6):
    hook_runs = 0
    activation = get_activation(model, model.conv, x)
    print(
        f"call {call}: hooks on model.conv = {ht.count_hooks(model.conv).total}, "
        f"hooks that ran = {hook_runs}"
    )
    # sphinx_gallery_start_ignore
    # "Every call adds one hook, and every hook runs on every later forward pass"
    assert ht.count_hooks(model.conv).total == call
    assert hook_runs == call
    # sphinx_gallery_end_ignore

# %%
# Every call adds one hook, and every hook runs on every later forward pass
# (call 5 ran five hooks), including ordinary ones that have nothing to do
# with ``get_activation``:

hook_runs = 0
model(x)
print("hooks that ran during a plain model(x):", hook_runs)

# sphinx_gallery_start_ignore
# "including ordinary ones that have nothing to do with get_activation": all five
assert hook_runs == 5
# sphinx_gallery_end_ignore

# %%
# With a real network and a backward hook as well (as in a naive Grad-CAM
# function), each call adds work to every later forward and backward pass,
# and the stores of old calls stay referenced by their hooks. We keep this
# leaky model and clean it up at the end of the page.
#
# ``handle.remove()``
# -------------------
#
# Every method that registers a hook on a module or a tensor
# (``register_forward_hook``, ``register_full_backward_hook``,
# ``Tensor.register_hook``, ...) returns a ``torch.utils.hooks.RemovableHandle``.
# Its ``remove()`` takes the hook off; a second ``remove()`` does nothing.

clean_model = ht.TinyConvNet()
handle = clean_model.conv.register_forward_hook(lambda _module, _args, _output: None)
print("hooks after register:", ht.count_hooks(clean_model.conv).total)
# sphinx_gallery_start_ignore
assert ht.count_hooks(clean_model.conv).total == 1
# sphinx_gallery_end_ignore
handle.remove()
print("hooks after remove():", ht.count_hooks(clean_model.conv).total)
# sphinx_gallery_start_ignore
# "Its remove() takes the hook off"
assert ht.count_hooks(clean_model.conv).total == 0
# sphinx_gallery_end_ignore
handle.remove()  # idempotent: no error
print("hooks after a second remove():", ht.count_hooks(clean_model.conv).total)

# sphinx_gallery_start_ignore
# "a second remove() does nothing"
assert ht.count_hooks(clean_model.conv).total == 0
# sphinx_gallery_end_ignore

# %%
# The fixed helper removes its hook in a ``finally`` block, so the hook goes
# away even when the forward pass raises.


def get_activation_safely(model, layer, x):
    store = {}

    def hook(module, args, output):
        store["activation"] = output.detach()

    handle = layer.register_forward_hook(hook)
    try:
        model(x)
    finally:
        handle.remove()
    return store["activation"]


for _ in range(5):
    activation = get_activation_safely(clean_model, clean_model.conv, x)
print("hooks after 5 calls:", ht.count_hooks(clean_model.conv).total)

# sphinx_gallery_start_ignore
# "The fixed helper removes its hook in a finally block"
assert ht.count_hooks(clean_model.conv).total == 0
# sphinx_gallery_end_ignore

# %%
# Handles are context managers
# ----------------------------
#
# A ``RemovableHandle`` can be used in a ``with`` statement: the hook is
# removed when the block ends, whichever way it ends. This is the shortest
# correct form.

with clean_model.conv.register_forward_hook(lambda _module, _args, _output: print("  hook ran")):
    print("inside the with block:", ht.count_hooks(clean_model.conv).total, "hook")
    # sphinx_gallery_start_ignore
    assert ht.count_hooks(clean_model.conv).total == 1
    # sphinx_gallery_end_ignore
    clean_model(x)
print("after the with block:", ht.count_hooks(clean_model.conv).total, "hooks")

# sphinx_gallery_start_ignore
# "the hook is removed when the block ends"
assert ht.count_hooks(clean_model.conv).total == 0
# sphinx_gallery_end_ignore

# %%
# Even an exception inside the block removes the hook:

# sphinx_gallery_start_ignore
error_message = None  # set by the except clause below
# sphinx_gallery_end_ignore
try:
    with clean_model.conv.register_forward_hook(lambda _module, _args, _output: None):
        clean_model(torch.randn(1, 3, 4, 4))  # wrong number of channels
except RuntimeError as error:
    print("RuntimeError:", str(error).splitlines()[0][:80], "...")
    # sphinx_gallery_start_ignore
    error_message = str(error)
    # sphinx_gallery_end_ignore
print("hooks left:", ht.count_hooks(clean_model.conv).total)

# sphinx_gallery_start_ignore
# "Even an exception inside the block removes the hook" (the exception did happen)
assert error_message is not None, "no RuntimeError"
assert "expected input[1, 3, 4, 4] to have 1 channels" in error_message
assert ht.count_hooks(clean_model.conv).total == 0
# sphinx_gallery_end_ignore

# %%
# Many hooks at once: ``HookGroup``
# ---------------------------------
#
# With several hooks (forward and backward, on several layers), keep the
# handles in a list and remove them all in ``finally``. These are the lines
# that :obj:`hooks_tutorial.HookGroup` replaces.

events = []
handles = []
try:
    handles.append(
        clean_model.conv.register_forward_hook(lambda _m, _args, _out: events.append("forward"))
    )
    handles.append(
        clean_model.fc.register_full_backward_hook(
            lambda _m, _gin, _gout: events.append("backward")
        )
    )
    clean_model(x).sum().backward()
finally:
    for handle in handles:
        handle.remove()
print(events)

# sphinx_gallery_start_ignore
assert events == ["forward", "backward"]
assert ht.count_hooks(clean_model).total == 0
# sphinx_gallery_end_ignore

# %%
# A ``HookGroup`` registers through short methods (``forward``,
# ``forward_pre``, ``full_backward``, ``full_backward_pre``, ``tensor``...),
# owns every handle, and removes them all when its ``with`` block ends, also
# on an exception, which it lets through.

events = []
with ht.HookGroup() as hooks:
    hooks.forward(clean_model.conv, lambda _m, _args, _out: events.append("forward"))
    hooks.full_backward(clean_model.fc, lambda _m, _gin, _gout: events.append("backward"))
    print("handles in the group:", len(hooks))
    # sphinx_gallery_start_ignore
    assert len(hooks) == 2
    # sphinx_gallery_end_ignore
    clean_model(x).sum().backward()
print(events)
print("handles after the block:", len(hooks))

# sphinx_gallery_start_ignore
# "owns every handle, and removes them all when its with block ends"
assert events == ["forward", "backward"]
assert len(hooks) == 0
assert ht.count_hooks(clean_model).total == 0
# sphinx_gallery_end_ignore

# %%
# Counting hooks: ``count_hooks``
# -------------------------------
#
# ``hooks_tutorial.count_hooks(model)`` lists the hooks on every module that
# has any, as a table when printed. It is how you find a leak, and how a test
# checks that none is left. On the leaky model from the top of the page:

print(ht.count_hooks(model))

# sphinx_gallery_start_ignore
# the leak: the five forward hooks on conv, nothing elsewhere
assert list(ht.count_hooks(model)) == ["conv"]
assert ht.count_hooks(model)["conv"].forward == 5
assert ht.count_hooks(model).total == 5
# sphinx_gallery_end_ignore

# %%
# On the clean model, the report is empty:

print(ht.count_hooks(clean_model))
print(ht.count_hooks(clean_model) == {})

# sphinx_gallery_start_ignore
# "On the clean model, the report is empty"
assert ht.count_hooks(clean_model) == {}
# sphinx_gallery_end_ignore

# %%
# Recording activations: ``capture_activations``
# ----------------------------------------------
#
# Storing the outputs of some layers is the most common use of forward hooks.
# On :doc:`the forward hook page
# </auto_examples/02_module_hooks/plot_05_forward_hooks>` it took a hook
# factory, a dictionary and a loop over handles. ``capture_activations`` does
# the same for the layers you name: it stores the latest detached output of
# each, and removes its hooks when the ``with`` block ends. The values stay
# readable afterwards.

with ht.capture_activations(clean_model, ["conv", "relu", "fc"]) as acts:
    logits = clean_model(x)

for name, activation in acts.items():
    print(f"{name:5s} {tuple(activation.shape)}")
print(
    "relu output equals conv output clamped at 0:",
    torch.equal(acts["relu"], acts["conv"].clamp(min=0)),
)
print("hooks left:", ht.count_hooks(clean_model).total)

# sphinx_gallery_start_ignore
# "it stores the latest detached output of each, and removes its hooks ... The values
# stay readable afterwards"
assert list(acts) == ["conv", "relu", "fc"]
assert torch.equal(acts["fc"], logits.detach())
assert not acts["fc"].requires_grad
assert torch.equal(acts["relu"], acts["conv"].clamp(min=0))
assert ht.count_hooks(clean_model).total == 0
# sphinx_gallery_end_ignore

# %%
# Asking for a layer that does not exist gives an error that lists the close
# names, and no hook is left behind:

# sphinx_gallery_start_ignore
error_message = None  # set by the except clause below
# sphinx_gallery_end_ignore
try:
    with ht.capture_activations(clean_model, ["conv", "rleu"]) as acts:
        clean_model(x)
except ValueError as error:
    print("ValueError:", error)
    # sphinx_gallery_start_ignore
    error_message = str(error)
    # sphinx_gallery_end_ignore
print("hooks left:", ht.count_hooks(clean_model).total)

# sphinx_gallery_start_ignore
# "an error that lists the close names"
assert error_message is not None, "no ValueError"
assert "did you mean 'relu'?" in error_message
# "and no hook is left behind"
assert ht.count_hooks(clean_model).total == 0
# sphinx_gallery_end_ignore

# %%
# The last resort: ``remove_all_hooks``
# -------------------------------------
#
# The leaky model's handles are lost, so nothing can remove its hooks one by
# one. ``hooks_tutorial.remove_all_hooks(model)`` empties every hook
# dictionary of the model (PyTorch internals such as ``module._forward_hooks``,
# private attributes that user code should not touch) and returns how many
# hooks it removed: the five of the leak. It also
# removes hooks that other code registered on purpose, so use it only to
# rescue a model like this one, never as routine clean-up.

removed = ht.remove_all_hooks(model)
print("removed:", removed)
print(ht.count_hooks(model))

# sphinx_gallery_start_ignore
# "returns how many hooks it removed: the five of the leak"
assert removed == 5
assert ht.count_hooks(model) == {}
# sphinx_gallery_end_ignore

# %%
# Undetached outputs keep their graph alive
# -----------------------------------------
#
# A hook that stores ``output`` without ``.detach()`` also stores its
# ``grad_fn``, and through it every tensor the backward pass would need, for
# a linear layer the input batch. Below we store the outputs of three forward
# passes, drop our own references to the inputs, and ask (with weak
# references, which do not keep an object alive) whether the inputs still
# exist.

layer = nn.Linear(1000, 10)


def inputs_still_alive(store_output):
    stored = []
    input_refs = []
    with layer.register_forward_hook(lambda _m, _args, out: stored.append(store_output(out))):
        for _ in range(3):
            batch = torch.randn(64, 1000)
            input_refs.append(weakref.ref(batch))
            layer(batch)
        del batch
    gc.collect()
    return [ref() is not None for ref in input_refs]


alive_with_output = inputs_still_alive(lambda out: out)
alive_with_detached = inputs_still_alive(lambda out: out.detach())
print("stored output:          ", alive_with_output)
print("stored output.detach(): ", alive_with_detached)

# sphinx_gallery_start_ignore
# a stored output keeps its input batch alive; a detached one does not
assert alive_with_output == [True, True, True]
assert alive_with_detached == [False, False, False]
# sphinx_gallery_end_ignore

# %%
# In a training loop this grows by one graph and one input batch per step:
# the memory leak that :doc:`the pitfalls page
# </auto_examples/03_tensor_hooks/plot_14_pitfalls>` measures. Storing
# ``output.detach()`` (as ``capture_activations`` does) keeps only the values.
#
# Summary
# -------
#
# - A hook lives until its handle's ``remove()`` is called; a function that
#   registers a hook on every call without removing it piles up hooks that all
#   run on every forward pass.
# - ``handle.remove()`` is idempotent; call it in ``finally``, or use the
#   handle as a context manager: ``with layer.register_forward_hook(fn):``.
# - :obj:`hooks_tutorial.HookGroup` owns many handles and removes them together;
#   :obj:`hooks_tutorial.count_hooks` shows what is left;
#   :obj:`hooks_tutorial.capture_activations` records layer outputs without
#   leaving hooks; :obj:`hooks_tutorial.remove_all_hooks` is for lost handles
#   only.
# - Store ``output.detach()``: an undetached output keeps its graph and its
#   inputs alive.
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
# 1. Rewrite ``get_activation(model, layer_name, x)`` with
#    ``ht.capture_activations`` and check with ``ht.count_hooks`` that five
#    calls leave no hook. Check: ``ht.exercises.check("08.1", get_activation)``.
# 2. Write ``hooks_then_error(module)``: it registers a forward hook and a full
#    backward hook on ``module`` inside one ``ht.HookGroup`` and raises a
#    ``ValueError`` inside the ``with`` block. Call it on ``clean_model.conv``,
#    catch the error outside, and check that no hook is left. Check:
#    ``ht.exercises.check("08.2", hooks_then_error)``.
# 3. *In words:* make ``inputs_still_alive`` store ``out.detach().clone()``
#    instead. Are the inputs kept alive? Why is that?

# %%
# .. rst-class:: solution
#
# **Solution 1.** ``capture_activations`` removes its hook when the ``with``
# block ends, so no hook is left after 5 calls (``True``): each call's hook
# lives only inside its ``with`` block, and nothing piles up, unlike the leaky
# ``get_activation`` at the top of the page.


def get_activation(model, layer_name, x):
    with ht.capture_activations(model, [layer_name]) as acts:
        model(x)
    return acts[layer_name]


for _ in range(5):
    get_activation(clean_model, "conv", x)
print("no hook left after 5 calls:", ht.count_hooks(clean_model) == {})

# sphinx_gallery_start_ignore
# "no hook is left after 5 calls"; the rewritten helper still returns the activation
assert ht.count_hooks(clean_model) == {}
assert get_activation(clean_model, "conv", x).shape == (1, 2, 4, 4)
# sphinx_gallery_end_ignore

ht.exercises.check("08.1", get_activation)

# sphinx_gallery_start_ignore
from page_checks import assert_check  # docs/_ext: the build's checks


# the leaky helper at the top of the page, by layer name: every call leaves a hook
def get_activation_leaky(model, layer_name, x):
    store = {}
    getattr(model, layer_name).register_forward_hook(
        lambda m, args, out: store.update(activation=out.detach())
    )
    model(x)
    return store["activation"]


assert_check("08.1", get_activation, get_activation_leaky, "piled_up")
assert ht.count_hooks(clean_model) == {}
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 2.** The error reaches the ``except`` clause (``caught: something
# went wrong``) and no hook is left (``True``): the group removed both hooks
# on its way out and did not swallow the exception.

# sphinx_gallery_start_ignore
error_message = None  # set by the except clause below
# sphinx_gallery_end_ignore


def hooks_then_error(module):
    with ht.HookGroup() as hooks:
        hooks.forward(module, lambda m, args, out: None)
        hooks.full_backward(module, lambda m, grad_in, grad_out: None)
        msg = "something went wrong"
        raise ValueError(msg)


try:
    hooks_then_error(clean_model.conv)
except ValueError as error:
    print("caught:", error)
    # sphinx_gallery_start_ignore
    error_message = str(error)
    # sphinx_gallery_end_ignore
print("no hook left after the error:", ht.count_hooks(clean_model) == {})

# sphinx_gallery_start_ignore
# "The error reaches the except clause ... and no hook is left": the group removed both
assert error_message == "something went wrong"
assert ht.count_hooks(clean_model) == {}
# sphinx_gallery_end_ignore

ht.exercises.check("08.2", hooks_then_error)

# sphinx_gallery_start_ignore


# hooks registered on the module directly are not the group's: they stay
def hooks_beside_the_group(module):
    with ht.HookGroup():
        module.register_forward_hook(lambda m, args, out: None)
        module.register_full_backward_hook(lambda m, grad_in, grad_out: None)
        msg = "something went wrong"
        raise ValueError(msg)


assert_check("08.2", hooks_then_error, hooks_beside_the_group, "outside_group")
assert ht.count_hooks(clean_model) == {}
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 3.** It prints ``[False, False, False]``: the inputs are freed,
# as with ``detach()`` alone. ``detach()`` already cut the link to the graph;
# ``clone()`` only copies the output's values into new memory, a tensor with
# no ``grad_fn``, so nothing links it to the graph or to the input batches.

alive_with_clone = inputs_still_alive(lambda out: out.detach().clone())
print(alive_with_clone)

# sphinx_gallery_start_ignore
# "It prints [False, False, False]: the inputs are freed, as with detach() alone"
assert alive_with_clone == [False, False, False]
assert alive_with_clone == alive_with_detached
from page_checks import assert_exercises_checked, assert_no_hooks_left  # docs/_ext

assert_exercises_checked()
assert_no_hooks_left(globals())
# sphinx_gallery_end_ignore
