# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
Pitfalls: when hooks surprise you
=================================

.. index::
   ! in-place
   ! inplace
   ! pitfalls
   ! torch.compile
   ! 原地操作
   ! 陷阱

Hooks run inside PyTorch's machinery, so they meet its corner cases: in-place
operations, gradient modes, the autograd graph's lifetime and the compiler.
Each section below triggers one trap on purpose, shows what happens, and
shows the fix.

.. rubric:: What you will learn
   :heading-level: 2

- why a full backward hook breaks when an in-place ReLU follows the module,
  and the tensor-hook pattern that does not;
- why ``.detach()`` is not a copy, and when to ``.clone()``;
- what ``torch.no_grad()``, ``torch.inference_mode()`` and ``model.eval()``
  do (and do not do) to hooks;
- how storing outputs without ``.detach()`` keeps whole graphs alive,
  measured;
- which hooks ``torch.compile`` sees, which it silently ignores, and how a
  backward hook can leave nothing compiled at all.

**Prerequisites**: :doc:`/auto_examples/03_tensor_hooks/plot_10_tensor_hooks`
and :doc:`/auto_examples/03_tensor_hooks/plot_12_saved_tensor_hooks`.
"""

# %%
# Pitfall 1: in-place ReLU after a full backward hook
# ---------------------------------------------------
#
# Many networks (torchvision's ResNet among them) use ``nn.ReLU(inplace=True)``.
# A full backward hook wraps the module's output in a special autograd
# function; the in-place ReLU that follows then modifies that output, and
# PyTorch refuses already in the *forward* pass.

import weakref

import matplotlib.pyplot as plt
import torch
from torch import nn

import hooks_tutorial as ht

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(inplace=True), nn.Linear(6, 2))
inputs = torch.randn(3, 4)

handle = model[0].register_full_backward_hook(lambda _module, _grad_in, _grad_out: None)
try:
    model(inputs)
except RuntimeError as error:
    first_sentence = str(error).split(". ")[0]
    print(f"RuntimeError: {first_sentence}.")
finally:
    handle.remove()

# sphinx_gallery_start_ignore
# "the in-place ReLU that follows then modifies that output, and PyTorch refuses already in
# the *forward* pass" (this cell runs the forward pass only). The function's name is
# BackwardHookFunction in torch 2.14, BackwardHookFunctionBackward in torch 2.9 (its
# backward node): the sentence names neither
assert first_sentence in {
    f"Output 0 of {name} is a view and is being modified inplace"
    for name in ("BackwardHookFunction", "BackwardHookFunctionBackward")
}, first_sentence
# "Many networks (torchvision's ResNet among them) use nn.ReLU(inplace=True)"
from torchvision.models.resnet import BasicBlock, Bottleneck

with torch.random.fork_rng():  # draw no random numbers that the download would not
    assert BasicBlock(8, 8).relu.inplace
    assert Bottleneck(32, 8).relu.inplace
# sphinx_gallery_end_ignore

# %%
# The robust alternative is a forward hook that registers a tensor hook on the
# module's output (as on the
# :doc:`tensor hooks page </auto_examples/03_tensor_hooks/plot_10_tensor_hooks>`).
# It works with the in-place ReLU. The hook below also stores the output
# twice: once with ``.detach()``, once with ``.detach().clone()``.

stored = {}


def keep_output_and_gradient(module, args, output):
    stored["output_address"] = output.data_ptr()
    stored["detached"] = output.detach()  # shares memory with output
    stored["cloned"] = output.detach().clone()  # an independent copy
    output.register_hook(lambda grad: stored.update(gradient=grad))


handle = model[0].register_forward_hook(keep_output_and_gradient)
model(inputs).sum().backward()
handle.remove()

print("gradient w.r.t. the Linear output, shape:", tuple(stored["gradient"].shape))
print("smallest value stored with .detach():        ", stored["detached"].min().item())
print("smallest value stored with .detach().clone():", stored["cloned"].min().item())
for kind in ["detached", "cloned"]:
    shares = stored[kind].data_ptr() == stored["output_address"]
    print(f"{kind} tensor shares memory with the output: {shares}")

# sphinx_gallery_start_ignore
# "It works with the in-place ReLU"; next cell: ".detach() returns a tensor that shares
# memory with the original ... the "detached" copy lost its negative values ... .clone()
# kept the values the hook saw"
assert stored["gradient"].shape == (3, 6)
assert stored["detached"].data_ptr() == stored["output_address"]
assert stored["cloned"].data_ptr() != stored["output_address"]
assert stored["detached"].min().item() == 0.0
assert stored["cloned"].min().item() < 0
assert torch.equal(stored["detached"], stored["cloned"].relu())
# sphinx_gallery_end_ignore

# %%
# ``.detach()`` returns a tensor that shares memory with the original. The
# in-place ReLU ran after the hook and overwrote that memory, so the
# "detached" copy lost its negative values: it now holds the ReLU output, not
# the Linear output. ``.clone()`` kept the values the hook saw. The gradient
# from the tensor hook is still the gradient w.r.t. the Linear output: zero
# where the ReLU was inactive. A check against the chain rule:

active = (stored["cloned"] > 0).float()
expected = active * model[2].weight.sum(dim=0)
print("gradient matches the chain rule:", torch.allclose(stored["gradient"], expected))

# sphinx_gallery_start_ignore
# "still the gradient w.r.t. the Linear output: zero where the ReLU was inactive"
assert torch.allclose(stored["gradient"], expected)
assert bool((stored["gradient"][stored["cloned"] <= 0] == 0).all())
# sphinx_gallery_end_ignore

# %%
# Pitfall 2: gradient modes and ``eval()``
# ----------------------------------------
#
# Under ``torch.no_grad()`` or ``torch.inference_mode()`` forward hooks still
# fire, but no graph is built, so there is no backward pass to hook: the
# output does not require grad, and registering a tensor hook fails. A full
# backward hook on a module, by contrast, raises nothing: it is registered and
# the forward pass runs, but with no backward pass it never fires.

model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Dropout(0.5), nn.Linear(8, 2))
calls = []


def try_tensor_hook(module, args, output):
    calls.append(type(module).__name__)
    try:
        output.register_hook(lambda _grad: None)
        print("  tensor hook registered")
    except RuntimeError as error:
        print(f"  RuntimeError: {error}")


handle = model[0].register_forward_hook(try_tensor_hook)
for mode_name, mode in [("no_grad", torch.no_grad), ("inference_mode", torch.inference_mode)]:
    print(f"under torch.{mode_name}():")
    with mode():
        output = model(torch.randn(5, 4))
    print(f"  forward hook fired: {calls.pop()}; output.requires_grad = {output.requires_grad}")
handle.remove()

# sphinx_gallery_start_ignore
# "forward hooks still fire, but no graph is built ...: the output does not require grad,
# and registering a tensor hook fails" (on a copy, whose BatchNorm statistics may change)
import copy

outcomes = []


def record_outcome(module, args, output):
    try:
        output.register_hook(lambda _grad: None)
        outcomes.append((output.requires_grad, "registered"))
    except RuntimeError as error:
        outcomes.append((output.requires_grad, str(error)))


model_copy = copy.deepcopy(model)
with torch.random.fork_rng(), model_copy[0].register_forward_hook(record_outcome):
    for mode in [torch.no_grad, torch.inference_mode]:
        with mode():
            model_copy(torch.randn(5, 4))
assert (
    outcomes == [(False, "cannot register a hook on a tensor that doesn't require gradient")] * 2
), outcomes
# "A full backward hook on a module ... raises nothing: it is registered and the forward
# pass runs, but with no backward pass it never fires" (checked on torch 2.14.1 and 2.9.1)
backward_calls = []
backward_copy = copy.deepcopy(model)
with torch.random.fork_rng():
    backward_handle = backward_copy[0].register_full_backward_hook(
        lambda module, grad_input, grad_output: backward_calls.append(1)
    )
    for mode in [torch.no_grad, torch.inference_mode]:
        with mode():
            assert not backward_copy(torch.randn(5, 4)).requires_grad
    backward_handle.remove()
assert backward_calls == [], backward_calls
# sphinx_gallery_end_ignore

# %%
# ``model.eval()`` is a different switch. It does not touch gradients; it
# tells layers such as Dropout and BatchNorm to use their evaluation
# behaviour. The next cell calls each layer twice in training mode and once in
# eval mode on the same input, and compares the results (and, in the last
# column, the eval-mode output with the layer's input).

batch = torch.randn(5, 4)
features = batch
# sphinx_gallery_start_ignore
behaviour = []
# sphinx_gallery_end_ignore
for layer in model:
    layer.train()
    first, second = layer(features), layer(features)
    layer.eval()
    evaluated = layer(features)
    print(
        f"{type(layer).__name__:11} train twice equal: {torch.equal(first, second)!s:5}"
        f"  train == eval: {torch.equal(first, evaluated)!s:5}"
        f"  eval output requires grad: {evaluated.requires_grad!s:5}"
        f"  eval output == input: {torch.equal(evaluated, features)}"
    )
    # sphinx_gallery_start_ignore
    behaviour.append(
        (
            type(layer).__name__,
            torch.equal(first, second),
            torch.equal(first, evaluated),
            evaluated.requires_grad,
            torch.equal(evaluated, features),
        )
    )
    # sphinx_gallery_end_ignore
    features = evaluated

# sphinx_gallery_start_ignore
# next cell: "Dropout draws a new random mask at each call in training mode and is the
# identity in eval mode. BatchNorm normalises with the statistics of the current batch in
# training mode and with its stored running averages in eval mode. Linear layers behave
# the same in both modes, and gradients stay on in eval mode" (columns: train twice
# equal, train == eval, eval output requires grad, eval output == input)
assert behaviour == [
    ("Linear", True, True, True, False),
    ("BatchNorm1d", True, False, True, False),
    ("Dropout", False, False, True, True),
    ("Linear", True, True, True, False),
], behaviour
# sphinx_gallery_end_ignore

# %%
# Dropout draws a new random mask at each call in training mode and is the
# identity in eval mode. BatchNorm normalises with the statistics of the
# current batch in training mode and with its stored running averages in eval
# mode. Linear layers behave the same in both modes, and gradients stay on in
# eval mode: that is why Grad-CAM uses ``model.eval()`` without
# ``torch.no_grad()``.
#
# Pitfall 3: stored outputs keep whole graphs alive
# -------------------------------------------------
#
# A forward hook that appends ``output`` (not ``output.detach()``) to a list
# also keeps the output's ``grad_fn``, and through it every tensor that
# autograd saved for the backward pass, including the input batch. To
# measure this without guessing, we take a *weak reference* to every tensor
# the forward pass sees. A weak reference does not keep a tensor alive; it only
# tells us whether something else still does. After each step we add up the
# bytes of the tensors still alive.

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(1024, 64), nn.ReLU(), nn.Linear(64, 10))


def bytes_alive_per_step(keep, steps=20):
    """Run ``steps`` forward passes storing ``keep(output)`` of the ReLU."""
    watched = []  # weak references to every input and output seen
    stored_outputs = []

    def watch(module, args, output):
        watched.extend(weakref.ref(t) for t in (*args, output))

    def store(module, args, output):
        stored_outputs.append(keep(output))

    handles = [layer.register_forward_hook(watch) for layer in model]
    handles.append(model[1].register_forward_hook(store))
    history = []
    try:
        for _ in range(steps):
            model(torch.randn(64, 1024))  # a new input batch of 256 KiB each step
            alive = [ref() for ref in watched] + stored_outputs
            storages = {
                t.untyped_storage().data_ptr(): t.untyped_storage().nbytes()
                for t in alive
                if t is not None
            }
            history.append(sum(storages.values()))
    finally:
        for handle in handles:
            handle.remove()
    return history


with_graph = bytes_alive_per_step(lambda output: output)
detached = bytes_alive_per_step(lambda output: output.detach())
for step in [0, 9, 19]:
    print(
        f"after step {step + 1:2}: stored output: {with_graph[step] / 1024:7.0f} KiB"
        f"   stored output.detach(): {detached[step] / 1024:5.0f} KiB"
    )
batch_bytes = 64 * 1024 * 4
extra_per_step = (with_graph[-1] - with_graph[0]) - (detached[-1] - detached[0])
print("extra growth per step / input batch size:", extra_per_step / 19 / batch_bytes)

# sphinx_gallery_start_ignore
# next cell: "With .detach() the memory grows only by the activations we chose to keep.
# Without it, every step also keeps its input batch"; "a new input batch of 256 KiB each
# step" (storage sizes: exact)
relu_output_bytes = 64 * 64 * 4  # 16 KiB
assert detached == [relu_output_bytes * (step + 1) for step in range(20)], detached
assert with_graph == [(relu_output_bytes + batch_bytes) * (step + 1) for step in range(20)]
assert batch_bytes == 256 * 1024
assert extra_per_step / 19 / batch_bytes == 1.0
# sphinx_gallery_end_ignore

# %%
# With ``.detach()`` the memory grows only by the activations we chose to
# keep. Without it, every step also keeps its input batch: the first Linear
# layer saved it to compute its weight gradient later. The figure shows the
# two lines.

fig, ax = plt.subplots(figsize=(5.2, 3.5), layout="constrained")
steps = range(1, len(with_graph) + 1)
ax.plot(steps, [b / 2**20 for b in with_graph], marker="o", label="append(output)")
ax.plot(steps, [b / 2**20 for b in detached], marker="s", label="append(output.detach())")
ax.set_xticks(range(0, len(with_graph) + 1, 5))
ax.set_xlabel("forward passes")
ax.set_ylabel("tensor memory kept alive (MiB)")
ax.set_title("Storing outputs without detach keeps the graph")
ax.legend()
plt.show()

# %%
# Pitfall 4: hooks and ``torch.compile``
# --------------------------------------
#
# ``torch.compile`` traces the model once and reuses the result while its
# guards hold. The default backend then generates and compiles code; this page
# uses ``backend="eager"``, which traces the same way but skips code
# generation. The backend changes the generated code, not which hooks the
# trace contains. Each demonstration starts with
# ``torch.compiler.reset()``, which empties the cache of compiled code, so that
# one demonstration cannot influence the next. First, a hook registered
# *before* compiling:

torch.compiler.reset()
calls = []
model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
handle = model[0].register_forward_hook(lambda _module, _args, _output: calls.append("hook"))
compiled = torch.compile(model, backend="eager")
compiled(torch.randn(2, 4))
print("hook registered before compiling fired:", calls)
# sphinx_gallery_start_ignore
assert calls == ["hook"], calls  # "a hook registered *before* compiling" fires
# sphinx_gallery_end_ignore
handle.remove()
compiled(torch.randn(2, 4))
print("after handle.remove(), calls are still:", calls)
# sphinx_gallery_start_ignore
assert calls == ["hook"], calls  # and a removed one no longer fires
# sphinx_gallery_end_ignore

# %%
# Now a module with no hooks at all is compiled and run; then a hook is added.
# The compiled model keeps using its hook-free trace, and the new hook is
# silently ignored (in torch 2.9 as in torch 2.14). The same module called
# directly (not compiled) runs it. ``torch.compiler.reset()`` throws away the
# traces, and the next call traces again and sees the hook. Whether a change
# is noticed depends on the checks ("guards") that ``torch.compile`` attaches
# to each trace, so do not rely on it: register hooks before compiling.

torch.compiler.reset()
calls = []
model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
compiled = torch.compile(model, backend="eager")
compiled(torch.randn(2, 4))
handle = model[0].register_forward_hook(lambda _module, _args, _output: calls.append("hook"))
compiled(torch.randn(2, 4))
print("compiled call after adding the hook:", calls)
# sphinx_gallery_start_ignore
assert calls == [], calls  # "the new hook is silently ignored"
# "(in torch 2.9 as in torch 2.14)": this page's checks passed on torch 2.9.1 and 2.14.1;
# with another torch, run the page and name its version in the prose (both languages)
assert ".".join(torch.__version__.split(".")[:2]) in {"2.9", "2.14"}, torch.__version__
# sphinx_gallery_end_ignore
model(torch.randn(2, 4))
print("plain call of the same model:       ", calls)
# sphinx_gallery_start_ignore
assert calls == ["hook"], calls  # "The same module called directly (not compiled) runs it"
# sphinx_gallery_end_ignore
torch.compiler.reset()
compiled(torch.randn(2, 4))
print("compiled call after reset():        ", calls)
handle.remove()

# sphinx_gallery_start_ignore
# "the next call traces again and sees the hook"
assert calls == ["hook", "hook"], calls
# sphinx_gallery_end_ignore

# %%
# Module backward hooks are another case: ``torch.compile`` cannot trace them
# unless "compiled autograd" is switched on. What it compiles instead is
# easiest to see with a backend of our own. A backend is a function that
# receives each traced graph and returns something to run; this one counts
# the graphs and runs them unchanged.

graphs = []
# sphinx_gallery_start_ignore
compile_results = {}
# sphinx_gallery_end_ignore


def counting_backend(graph_module, example_inputs):
    graphs.append(graph_module)
    return graph_module.forward  # run the traced graph as it is


for with_hook in [False, True]:
    torch.compiler.reset()
    graphs.clear()
    calls = []
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    if with_hook:
        handle = model[1].register_full_backward_hook(
            lambda _module, _grad_in, _grad_out: calls.append("backward")
        )
    compiled = torch.compile(model, backend=counting_backend)
    compiled(torch.randn(2, 4)).sum().backward()
    label = "with a full backward hook" if with_hook else "without hooks"
    print(f"{label:25}: graphs compiled: {len(graphs)}, hook calls: {calls}")
    # sphinx_gallery_start_ignore
    compile_results[with_hook] = (len(graphs), list(calls))
    # sphinx_gallery_end_ignore

# sphinx_gallery_start_ignore
# next cell: "Without hooks the model is one compiled graph. With the backward hook on its
# ReLU, no graph at all is compiled ..., while the hook still fires."
assert compile_results == {False: (1, []), True: (0, ["backward"])}, compile_results
# sphinx_gallery_end_ignore

# %%
# Without hooks the model is one compiled graph. With the backward hook on
# its ReLU, no graph at all is compiled: the whole model, not only the hooked
# layer, runs eagerly (uncompiled), while the hook still fires.
# ``fullgraph=True`` turns this silent fallback into an error that says why:

torch.compiler.reset()
try:
    torch.compile(model, backend="eager", fullgraph=True)(torch.randn(2, 4))
except torch._dynamo.exc.Unsupported as error:  # the compiler's "cannot trace this" error
    print(f"{type(error).__name__}: {str(error).splitlines()[0]}")
    # sphinx_gallery_start_ignore
    fullgraph_error = str(error).splitlines()[0]
    # sphinx_gallery_end_ignore
# sphinx_gallery_start_ignore
# "fullgraph=True turns this silent fallback into an error that says why"
assert fullgraph_error == "Module-level backwards hooks require compiled autograd.", fullgraph_error
# sphinx_gallery_end_ignore
handle.remove()
torch.compiler.reset()  # leave no compiled code behind for later pages

# %%
# Summary
# -------
#
# - A full backward hook followed by an in-place operation raises in the
#   forward pass; a forward hook plus ``output.register_hook`` works.
# - ``.detach()`` shares memory: a later in-place operation changes the stored
#   tensor; use ``.detach().clone()`` when you need the values as they were.
# - ``no_grad()`` and ``inference_mode()`` keep forward hooks but make the
#   backward pass impossible; ``eval()`` only changes layers such as Dropout
#   and BatchNorm and leaves gradients on.
# - Storing outputs that still carry their graph keeps the input batches
#   alive; the measurement above shows the growth per step.
# - Register hooks before ``torch.compile``: a hook added later to a
#   hook-free, already compiled module was silently ignored above, until
#   ``torch.compiler.reset()``.
# - A module backward hook fires under ``torch.compile``, but on the model
#   above nothing was compiled any more; count the graphs with a backend of
#   your own before trusting that a hooked model is compiled.
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
# 1. Make pitfall 1 work with the full backward hook by changing the model,
#    not the hook: write ``make_model()``, which builds the changed model.
#    Check: ``ht.exercises.check("14.1", make_model)``.
# 2. *In words:* in pitfall 3, store ``output`` but run the loop under
#    ``torch.no_grad()``. What does the measurement show, and why?
# 3. *In words:* repeat the hook-free experiment with a forward *pre*-hook
#    instead of a forward hook. When does it fire?

# %%
# .. rst-class:: solution
#
# **Solution 1.** Replace ``nn.ReLU(inplace=True)`` by ``nn.ReLU()``: the
# forward pass runs and the hook fires (``hook fired``). The out-of-place ReLU
# writes a new tensor and leaves the hooked module's output untouched.


def make_model():
    return nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2))


model = make_model()
with model[0].register_full_backward_hook(lambda m, gi, go: print("hook fired")):
    # an input that requires grad, so the hook gets a gradient w.r.t. it (else None)
    model(torch.randn(3, 4, requires_grad=True)).sum().backward()

# sphinx_gallery_start_ignore
# "the forward pass runs and the hook fires"
fired = []
with (
    torch.random.fork_rng(),
    model[0].register_full_backward_hook(lambda m, gi, go: fired.append(m)),
):
    model(torch.randn(3, 4, requires_grad=True)).sum().backward()
assert fired == [model[0]], fired
# sphinx_gallery_end_ignore

ht.exercises.check("14.1", make_model)

# sphinx_gallery_start_ignore
from page_checks import assert_check  # docs/_ext: the build's checks


# pitfall 1's model: the in-place ReLU modifies the hooked Linear's output
def make_model_in_place():
    return nn.Sequential(nn.Linear(4, 6), nn.ReLU(inplace=True), nn.Linear(6, 2))


assert_check("14.1", make_model, make_model_in_place, "still_in_place")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 2.** Both lines show the same 327680 bytes after 20 steps, 16 KiB
# per step: under ``no_grad`` no graph is built, so nothing keeps the input
# batches, and what stays alive is only the stored ReLU outputs of 16 KiB
# each.

model = nn.Sequential(nn.Linear(1024, 64), nn.ReLU(), nn.Linear(64, 10))
histories = {}
with torch.no_grad():
    for label, keep in [
        ("output", lambda output: output),
        ("output.detach()", lambda output: output.detach()),
    ]:
        histories[label] = history = bytes_alive_per_step(keep)
        print(
            f"stored {label}: {history[-1]} bytes after {len(history)} steps,"
            f" {history[-1] // len(history) // 1024} KiB per step"
        )

# sphinx_gallery_start_ignore
# "327680 bytes after 20 steps, 16 KiB per step": 20 ReLU outputs of 64 x 64 float32
# values (storage sizes: exact), the same with and without detach
for history in histories.values():
    assert history == [64 * 64 * 4 * (step + 1) for step in range(20)], history
assert 327680 == 20 * 64 * 64 * 4
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 3.** Like the forward hook: the compiled model ignores the new
# pre-hook (an empty list) until ``torch.compiler.reset()``; the next call
# traces again and the pre-hook fires (``['pre']``).

torch.compiler.reset()
calls = []
model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
compiled = torch.compile(model, backend="eager")
compiled(torch.randn(2, 4))
handle = model[0].register_forward_pre_hook(lambda m, args: calls.append("pre"))
compiled(torch.randn(2, 4))
print("after adding the pre-hook:", calls)
# sphinx_gallery_start_ignore
assert calls == [], calls  # "the compiled model ignores the new pre-hook (an empty list)"
# sphinx_gallery_end_ignore
torch.compiler.reset()
compiled(torch.randn(2, 4))
print("after reset():", calls)
handle.remove()
torch.compiler.reset()

# sphinx_gallery_start_ignore
# "the next call traces again and the pre-hook fires"
assert calls == ["pre"], calls
from page_checks import assert_exercises_checked, assert_no_hooks_left  # docs/_ext

assert_exercises_checked()
assert_no_hooks_left(globals())
# sphinx_gallery_end_ignore
