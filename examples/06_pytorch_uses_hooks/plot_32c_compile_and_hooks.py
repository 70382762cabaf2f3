# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
``torch.compile`` and hooks, shown working
==========================================

.. index::
   ! skip_nnmodule_hook_guards
   ! compiled autograd

:doc:`/auto_examples/03_tensor_hooks/plot_14_pitfalls` showed two ways in
which ``torch.compile`` and hooks disagree: a forward hook added after
compiling is silently ignored, and a module backward hook leaves nothing
compiled at all. Both have a switch in ``torch._dynamo.config``. This page
turns them on, one at a time, inside a ``with`` block that restores the
setting, and counts what gets compiled. Everything here was run on torch
2.9.1 and 2.14.1, with the same results; the page prints the version it runs
on. ``torch._dynamo.config`` is Dynamo's private configuration (the leading
underscore says so): its settings are not part of PyTorch's public API and
may change or disappear in any release, so check them again on a newer
torch.

.. rubric:: What you will learn
   :heading-level: 2

- why a hook added after compiling is ignored (Dynamo skips the guards on
  hook dictionaries), and how ``skip_nnmodule_hook_guards = False`` makes it
  recompile for that model only, where ``torch.compiler.reset()`` throws
  away every compiled graph;
- how compiled autograd (``torch._dynamo.config.compiled_autograd``) lets
  a module backward hook be compiled, and runs tensor hooks inside a
  compiled backward pass.

**Prerequisites**: :doc:`/auto_examples/03_tensor_hooks/plot_14_pitfalls`
and :doc:`/auto_examples/06_pytorch_uses_hooks/plot_32_autograd_graph_hooks`.
"""

# %%
# A backend that counts graphs
# ----------------------------
#
# ``torch.compile`` has two halves. Dynamo traces Python into graphs and
# attaches *guards* to each graph, checks that decide whether the next call
# may reuse it; a *backend* then turns each graph into code. The default
# backend, ``inductor``, generates C++ and compiles it, which takes seconds
# per graph on a CPU. Which hooks a graph contains and when Dynamo traces
# again are decided by Dynamo, before any backend runs, so this page uses a
# backend of its own that records each graph it receives and runs it
# unchanged. Its list is our count of compilations.

from unittest import mock

import torch
import torch._dynamo.config as dynamo_config
from torch import nn
from torch._dynamo.utils import counters

import hooks_tutorial as ht  # ht.exercises.check, for the exercises at the end

print("torch", torch.__version__)
torch.manual_seed(0)

graphs = []


def counting_backend(graph_module, example_inputs):
    graphs.append(graph_module)
    return graph_module.forward  # run the traced graph as it is


def recording_hook(calls):
    """A module hook that appends its layer's class name to the list ``calls``."""
    # sphinx_gallery_start_ignore
    # Developer note: a closure, not a global list. torch.compile traces the hook, and
    # in a process that has run other scripts (this site's build: page 14 before this
    # one) it can bind a global to theirs.
    # sphinx_gallery_end_ignore
    return lambda module, args, output: calls.append(type(module).__name__)


# sphinx_gallery_start_ignore
# "Everything here was run on torch 2.9.1 and 2.14.1, with the same results": with another
# torch, run the page and name its version in the prose (both languages)
assert ".".join(torch.__version__.split(".")[:2]) in {"2.9", "2.14"}, torch.__version__
settings_before = (dynamo_config.skip_nnmodule_hook_guards, dynamo_config.compiled_autograd)
# sphinx_gallery_end_ignore

# %%
# The default: a hook added after compiling is ignored
# ----------------------------------------------------
#
# The model is compiled and called once, then a forward hook is added to its
# first layer and the compiled model is called again.

print("skip_nnmodule_hook_guards:", dynamo_config.skip_nnmodule_hook_guards)
torch.compiler.reset()
graphs.clear()
calls = []
model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
compiled = torch.compile(model, backend=counting_backend)
x = torch.randn(2, 4)
compiled(x)
handle = model[0].register_forward_hook(recording_hook(calls))
compiled(x)
print("hook calls:", calls, "| graphs compiled:", len(graphs))
handle.remove()

# sphinx_gallery_start_ignore
# next cell: "is True by default ... the hook never ran, and nothing was compiled again"
assert dynamo_config.skip_nnmodule_hook_guards is True
assert calls == [], calls
assert len(graphs) == 1, len(graphs)
# sphinx_gallery_end_ignore

# %%
# ``skip_nnmodule_hook_guards`` is ``True`` by default: Dynamo adds no guard
# on a module's hook dictionaries (``_forward_hooks`` and friends), because
# checking them on every call costs time and hooks rarely change. So the
# second call reused the first graph, the hook never ran, and nothing was
# compiled again.
#
# Guards on hooks: the targeted fix
# ---------------------------------
#
# With the setting ``False``, Dynamo guards on the hook dictionaries, and a
# call after a hook was added or removed fails the guard and traces again.
# ``mock.patch.object`` sets it for the ``with`` block only and restores it
# afterwards, even if the block raises. The setting must be in force when
# the model is *traced* (its first call), because that is when the guards
# are made.

torch.compiler.reset()
graphs.clear()
calls = []
model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
compiled = torch.compile(model, backend=counting_backend)
with mock.patch.object(dynamo_config, "skip_nnmodule_hook_guards", False):
    compiled(x)
    print("without the hook: hook calls:", calls, "| graphs compiled:", len(graphs))
    handle = model[0].register_forward_hook(recording_hook(calls))
    compiled(x)
    print("with the hook:    hook calls:", calls, "| graphs compiled:", len(graphs))
    handle.remove()
    compiled(x)
    print("hook removed:     hook calls:", calls, "| graphs compiled:", len(graphs))
print("skip_nnmodule_hook_guards after the block:", dynamo_config.skip_nnmodule_hook_guards)

# sphinx_gallery_start_ignore
# next cell: "The hook ran once ... one recompilation. Removing the hook compiled nothing new"
assert calls == ["Linear"], calls
assert len(graphs) == 2, len(graphs)
assert dynamo_config.skip_nnmodule_hook_guards is True  # "restores it afterwards"
# sphinx_gallery_end_ignore

# %%
# The hook ran once, at the cost of one recompilation. Removing the hook
# compiled nothing new: the model's cache keeps both graphs, each with its
# guards, and the hook-free call matched the first one again.
#
# The blunt fix: ``torch.compiler.reset()``
# -----------------------------------------
#
# Page 14 made the hook run by calling ``torch.compiler.reset()``, which
# empties the cache of *every* compiled model. With two compiled models and a
# hook added to one of them, a reset makes both trace again; the guards
# above retrace only the model whose hooks changed.


def retraced_after_a_new_hook(fix):
    """Compile two models, hook the first one, and count the graphs compiled after that."""
    torch.compiler.reset()
    graphs.clear()
    hooked = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    other = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    compiled_hooked = torch.compile(hooked, backend=counting_backend)
    compiled_other = torch.compile(other, backend=counting_backend)
    with mock.patch.object(dynamo_config, "skip_nnmodule_hook_guards", fix != "guards"):
        compiled_hooked(x)
        compiled_other(x)
        before = len(graphs)
        handle = hooked[0].register_forward_hook(recording_hook(calls))
        if fix == "reset":
            torch.compiler.reset()
        compiled_hooked(x)
        compiled_other(x)
        handle.remove()
    return len(graphs) - before


for fix in ["guards", "reset"]:
    calls = []
    retraced = retraced_after_a_new_hook(fix)
    print(f"{fix:6}: graphs compiled again: {retraced}, hook calls: {calls}")
    # sphinx_gallery_start_ignore
    # next cell: "Both make the hook run; the reset compiled both models again, the guards only
    # the hooked one"
    assert calls == ["Linear"], (fix, calls)
    assert retraced == (1 if fix == "guards" else 2), (fix, retraced)
    # sphinx_gallery_end_ignore

# %%
# Both make the hook run; the reset compiled both models again, the guards
# only the hooked one. With ``inductor`` each of those graphs costs seconds
# of code generation, and a reset also discards graphs of models that have
# nothing to do with the hook. The price of the guards is a check of the
# hook dictionaries on every call, which is why they are off by default.
#
# Compiled autograd: backward hooks in compiled code
# --------------------------------------------------
#
# Dynamo traces the forward pass; the backward pass is run by autograd's
# engine, which calls tensor hooks and module backward hooks one by one. A
# module backward hook stops Dynamo from tracing the forward at all (page
# 14). *Compiled autograd*, switched on with
# ``torch._dynamo.config.compiled_autograd``, traces the backward pass too,
# hooks included. Unlike the guards' setting, this one is read by
# ``torch.compile`` itself, when it wraps the model (torch 2.9.1 and
# 2.14.1), so the ``with`` block must contain the ``torch.compile`` call.

for enabled in [False, True]:
    torch.compiler.reset()
    graphs.clear()
    calls = []
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    handle = model[1].register_full_backward_hook(recording_hook(calls))
    with mock.patch.object(dynamo_config, "compiled_autograd", enabled):
        compiled = torch.compile(model, backend=counting_backend)
        compiled(torch.randn(2, 4)).sum().backward()
    handle.remove()
    print(f"compiled_autograd={enabled!s:5}: forward graphs: {len(graphs)}, hook calls: {calls}")
    # sphinx_gallery_start_ignore
    # next cell: "Without compiled autograd nothing was compiled; with it the forward is one graph
    # ... The hook ran both times."
    assert len(graphs) == (1 if enabled else 0), (enabled, len(graphs))
    assert calls == ["ReLU"], (enabled, calls)
    # sphinx_gallery_end_ignore

# sphinx_gallery_start_ignore
# previous cell: "read by torch.compile itself ... the with block must contain the torch.compile
# call": the setting around torch.compile alone compiles the forward, around the calls alone not


def forward_graphs(setting_at_compile):
    torch.compiler.reset()
    graphs.clear()
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    handle = model[1].register_full_backward_hook(lambda *args: None)
    with mock.patch.object(dynamo_config, "compiled_autograd", setting_at_compile):
        compiled = torch.compile(model, backend=counting_backend)
    with mock.patch.object(dynamo_config, "compiled_autograd", not setting_at_compile):
        compiled(torch.randn(2, 4)).sum().backward()
    handle.remove()
    return len(graphs)


assert forward_graphs(setting_at_compile=True) == 1
assert forward_graphs(setting_at_compile=False) == 0
# sphinx_gallery_end_ignore

# %%
# Without compiled autograd nothing was compiled; with it the forward is one
# graph, which registers the hook for the backward pass. The hook ran both
# times.
#
# For the backward pass itself to be compiled, it must run inside the
# compiled function: here a training step that computes the loss and calls
# ``backward()``. A tensor hook on the first layer's weight doubles its
# gradient. Dynamo's ``counters`` (a dictionary of statistics in
# ``torch._dynamo.utils``, private too) count the backward graphs that
# compiled autograd captured.

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 1))


def doubling_hook(calls):
    """A tensor hook that doubles the gradient and appends "double" to ``calls``."""

    def double(grad):
        calls.append("double")
        return 2 * grad

    return double


calls = []
handle = model[0].weight.register_hook(doubling_hook(calls))
model(x).sum().backward()
eager_grad = model[0].weight.grad.clone()


def train_step(x):
    loss = model(x).sum()
    loss.backward()
    return loss


captured = {}
for enabled in [False, True]:
    torch.compiler.reset()
    model.zero_grad()  # .grad back to None
    calls.clear()
    before = counters["compiled_autograd"]["captures"]
    with mock.patch.object(dynamo_config, "compiled_autograd", enabled):
        torch.compile(train_step, backend=counting_backend)(x)
    captured[enabled] = counters["compiled_autograd"]["captures"] - before
    same = torch.allclose(model[0].weight.grad, eager_grad)
    print(
        f"compiled_autograd={enabled!s:5}: backward graphs captured: {captured[enabled]}, "
        f"hook calls: {calls}, gradient as in eager mode: {same}"
    )
    # sphinx_gallery_start_ignore
    # next cell: "Without it, the backward ran in autograd's engine, uncompiled; with it, one
    # backward graph was captured ... gradient doubled by the hook, the same as in eager mode"
    assert calls == ["double"], (enabled, calls)
    # float tolerance: the compiled backward runs the same operations, possibly in another
    # order of accumulation
    torch.testing.assert_close(model[0].weight.grad, eager_grad)
    # sphinx_gallery_end_ignore
handle.remove()

# sphinx_gallery_start_ignore
assert captured == {False: 0, True: 1}, captured
# sphinx_gallery_end_ignore

# %%
# Without it, the backward ran in autograd's engine, uncompiled; with it,
# one backward graph was captured and handed to the backend, the tensor hook
# inside it. Both times the hook ran once and the gradient is the one it
# doubled, the same as in eager mode.
#
# Summary
# -------
#
# - ``torch._dynamo.config.skip_nnmodule_hook_guards`` is ``True`` by
#   default (torch 2.9.1 and 2.14.1): compiled code ignores hooks added or
#   removed after it was traced.
# - Setting it ``False`` while the model is traced makes Dynamo guard on the
#   hook dictionaries: a changed hook recompiles that model only, and the
#   cache keeps one graph per set of hooks. ``torch.compiler.reset()`` also
#   makes the hook run, by discarding every compiled graph.
# - ``torch._dynamo.config.compiled_autograd = True`` traces the backward
#   pass, so module backward hooks no longer stop compilation, and tensor
#   hooks run inside a compiled backward when ``backward()`` is called in
#   the compiled function.
# - Change these settings with ``mock.patch.object`` (or
#   ``torch._dynamo.config.patch``), so they are restored.
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
# 1. Write ``hook_calls_after_compiling(model, x)``: compile ``model`` (with
#    ``backend="eager"``), call it on ``x``, add a forward hook to ``model``
#    that counts its calls, call the compiled model on ``x`` again, remove
#    the hook and return the count. The hook must run, without
#    ``torch.compiler.reset()`` and leaving ``torch._dynamo.config`` as it
#    was. Check: ``ht.exercises.check("32c.1", hook_calls_after_compiling)``.
# 2. *In words:* in the guards demonstration, why did removing the hook
#    compile nothing new, while adding it did?
# 3. *In words:* in the first compiled-autograd demonstration the hook ran,
#    yet ``captures`` would have stayed at zero. Why?

# %%
# .. rst-class:: solution
#
# **Solution 1.** The guards are made when the model is traced, so the
# setting must cover the first call as well as the second: the whole body
# runs inside ``mock.patch.object``, which restores the setting on the way
# out. The check itself starts from an empty cache (it calls
# ``torch.compiler.reset()`` before it runs your function), so that code
# compiled earlier in your session cannot change its result.


def hook_calls_after_compiling(model, x):
    calls = []
    compiled = torch.compile(model, backend="eager")
    with mock.patch.object(dynamo_config, "skip_nnmodule_hook_guards", False):
        compiled(x)
        handle = model.register_forward_hook(lambda module, args, output: calls.append(1))
        try:
            compiled(x)
        finally:
            handle.remove()
    return len(calls)


torch.compiler.reset()
print("hook calls:", hook_calls_after_compiling(nn.Linear(4, 4), x))

# sphinx_gallery_start_ignore
assert hook_calls_after_compiling(nn.Linear(4, 4), x) == 1
assert dynamo_config.skip_nnmodule_hook_guards is True  # "restores the setting"
# sphinx_gallery_end_ignore

ht.exercises.check("32c.1", hook_calls_after_compiling)

# sphinx_gallery_start_ignore
from page_checks import assert_check  # docs/_ext: the build's checks


def hook_calls_by_default(model, x):  # the default setting: the hook is ignored
    calls = []
    compiled = torch.compile(model, backend="eager")
    compiled(x)
    handle = model.register_forward_hook(lambda module, args, output: calls.append(1))
    compiled(x)
    handle.remove()
    return len(calls)


assert_check("32c.1", hook_calls_after_compiling, hook_calls_by_default, "hook_ignored")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 2.** Each compiled model keeps a cache of graphs, each with its
# guards. Adding the hook failed the guards of the only graph, so Dynamo
# traced a second one; after removing it, the call matched the first graph's
# guards again and reused it.

# %%
# .. rst-class:: solution
#
# **Solution 3.** There the backward pass was called on the compiled
# model's output, outside any compiled function. Compiled autograd only
# compiles a backward pass that runs inside a compiled function; this one
# ran in autograd's engine, which called the hook as usual. The forward graph
# registered the hook, and that is what the setting changed.

torch.compiler.reset()
model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
before = counters["compiled_autograd"]["captures"]
with mock.patch.object(dynamo_config, "compiled_autograd", True):
    torch.compile(model, backend=counting_backend)(x).sum().backward()
print("backward graphs captured:", counters["compiled_autograd"]["captures"] - before)

# sphinx_gallery_start_ignore
assert counters["compiled_autograd"]["captures"] == before
# the page leaves nothing global behind: settings restored, compiled code discarded
assert (dynamo_config.skip_nnmodule_hook_guards, dynamo_config.compiled_autograd) == (
    settings_before
)
torch.compiler.reset()
from page_checks import assert_exercises_checked, assert_no_hooks_left  # docs/_ext

assert_exercises_checked()
assert_no_hooks_left(globals())
# sphinx_gallery_end_ignore
