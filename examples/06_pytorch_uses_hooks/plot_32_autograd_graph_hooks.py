# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
Autograd graph hooks: hooks on the backward graph itself
========================================================

.. index::
   ! register_multi_grad_hook
   ! grad_fn
   ! autograd graph hooks
   ! autograd Node

Tensor hooks and module hooks are two doors into the backward pass. Behind
them is the graph that autograd records during the forward pass: one *node*
per operation, reachable from ``tensor.grad_fn``. Nodes take hooks too.
``register_multi_grad_hook`` tells you when all the gradients of a group of
tensors are ready (``torch.utils.module_tracker.ModuleTracker`` puts one on
a module's inputs to learn when the backward pass has left that module), and
anomaly mode checks every node to find where a NaN was born.

.. rubric:: What you will learn
   :heading-level: 2

- how to walk the graph from ``grad_fn`` and hook a node with
  ``register_prehook`` and ``register_hook``;
- how ``torch.autograd.graph.register_multi_grad_hook`` fires once for a
  group of tensors, in mode ``"all"`` and in mode ``"any"``;
- how ``torch.autograd.detect_anomaly`` names the operation whose backward
  produced a NaN, and how to do the same with node hooks.

**Prerequisites**: :doc:`/auto_examples/03_tensor_hooks/plot_10_tensor_hooks`
and :doc:`/auto_examples/03_tensor_hooks/plot_13_debugging`.
"""

# %%
# The graph behind ``grad_fn``
# ----------------------------
#
# Every tensor computed from a tensor that requires a gradient has a
# ``grad_fn``: the node that will compute the gradients of that operation's
# inputs. ``next_functions`` links each node to the nodes of its inputs, so
# the whole graph can be walked from the loss.

import warnings

import torch
from torch import nn
from torch.autograd.graph import register_multi_grad_hook

import hooks_tutorial as ht  # ht.exercises.check, for the exercises at the end

print("torch", torch.__version__)
x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = x * 3
loss = y.sin().sum()


def walk(node, depth=0):
    print("  " * depth + type(node).__name__)
    for child, _ in node.next_functions:
        if child is not None:
            walk(child, depth + 1)


walk(loss.grad_fn)

# sphinx_gallery_start_ignore
# "The graph reads from the loss back to x: AccumulateGrad is the node that adds the
# gradient into the leaf's .grad"
chain, node = [], loss.grad_fn
while node is not None:
    chain.append(type(node).__name__)
    node = node.next_functions[0][0] if node.next_functions else None
assert chain == ["SumBackward0", "SinBackward0", "MulBackward0", "AccumulateGrad"], chain
assert loss.grad_fn.next_functions[0][0].next_functions[0][0] is y.grad_fn
assert y.grad_fn.next_functions[0][0].variable is x
# sphinx_gallery_end_ignore

# %%
# The graph reads from the loss back to ``x``: ``AccumulateGrad`` is the node
# that adds the gradient into the leaf's ``.grad``.
#
# Hooks on a node
# ---------------
#
# ``node.register_prehook(hook)`` runs before the node, with the gradients
# flowing into it (``grad_outputs``, the gradient of the node's output).
# ``node.register_hook(hook)`` runs after it, with what it computed
# (``grad_inputs``) as well. Either may return new gradients. Here on the
# node of ``y = x * 3``:

mul_node = y.grad_fn
print("node of y = x * 3:", type(mul_node).__name__)


def before_mul(grad_outputs):
    print("  prehook: grad_outputs =", grad_outputs)


def after_mul(grad_inputs, grad_outputs):
    print("  hook:    grad_inputs  =", grad_inputs)


pre_handle = mul_node.register_prehook(before_mul)
post_handle = mul_node.register_hook(after_mul)
loss.backward()
print("x.grad:", x.grad)
print("x.grad equals 3 * cos(y):", torch.allclose(x.grad, 3 * torch.cos(y.detach())))
pre_handle.remove()
post_handle.remove()

# sphinx_gallery_start_ignore
# "register_prehook(hook) runs before the node, with the gradients flowing into it";
# "register_hook(hook) runs after it, with what it computed (grad_inputs) as well";
# "grad_inputs has one entry per input ...: the gradient for x, and None for the constant
# 3"; "The prehook received cos(y), the gradient of the loss with respect to y"
assert torch.allclose(x.grad, 3 * torch.cos(y.detach()))
order = []
x_probe = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
y_probe = x_probe * 3
probe_handles = [
    y_probe.grad_fn.register_prehook(lambda grad_outputs: order.append(("pre", grad_outputs))),
    y_probe.grad_fn.register_hook(
        lambda grad_inputs, grad_outputs: order.append(("post", grad_inputs))
    ),
]
y_probe.sin().sum().backward()
for probe_handle in probe_handles:
    probe_handle.remove()
assert [kind for kind, _ in order] == ["pre", "post"]
assert torch.allclose(order[0][1][0], torch.cos(y_probe.detach()))
assert len(order[1][1]) == 2
assert order[1][1][1] is None
assert torch.equal(order[1][1][0], x_probe.grad)
# sphinx_gallery_end_ignore

# %%
# ``grad_inputs`` has one entry per input of the multiplication: the
# gradient for ``x``, and ``None`` for the constant 3, which needs none.
# The prehook received ``cos(y)``, the gradient of the loss with respect to
# ``y``: the same gradient that a tensor hook on ``y`` would see.
#
# One hook for a group of tensors
# -------------------------------
#
# A layer has several parameters, and their gradients arrive one by one.
# ``register_multi_grad_hook(tensors, hook, mode="all")`` calls ``hook`` once,
# with all their gradients, when the last one is ready; ``mode="any"`` calls
# it once, with the first gradient that arrives. Tensor hooks on the same
# parameters fire once each.

layer = nn.Linear(3, 2)
events = []
handles = [
    register_multi_grad_hook(
        (layer.weight, layer.bias),
        lambda grads: events.append(f"all: {[tuple(g.shape) for g in grads]}"),
        mode="all",
    ),
    register_multi_grad_hook(
        (layer.weight, layer.bias),
        lambda grad: events.append(f"any: {tuple(grad.shape)}"),
        mode="any",
    ),
    layer.weight.register_hook(lambda grad: events.append("tensor hook: weight")),
    layer.bias.register_hook(lambda grad: events.append("tensor hook: bias")),
]
events_per_step = []
for step in range(2):
    events.clear()
    layer(torch.randn(4, 3)).sum().backward()
    print(f"step {step}:", events)
    events_per_step.append(list(events))
for handle in handles:
    handle.remove()

# sphinx_gallery_start_ignore
# "In each backward pass the "all" hook fired once, with both gradients (weight and
# bias), and the "any" hook fired once, with the first one to arrive (the bias)";
# "Note where "all" sits in the list: before the weight's tensor hook."
expected = ["any: (2,)", "tensor hook: bias", "all: [(2, 3), (2,)]", "tensor hook: weight"]
assert events_per_step == [expected, expected], events_per_step
# "register_multi_grad_hook is made of one ordinary tensor hook per tensor ... the group
# hook sees each gradient ... before hooks registered after it change it and before it is
# added into .grad"
probe = nn.Linear(3, 2)
weight_hooks_before = len(probe.weight._backward_hooks or {})
group_saw = []
group = register_multi_grad_hook(
    (probe.weight, probe.bias), lambda grads: group_saw.append(grads[0].clone()), mode="all"
)
assert len(probe.weight._backward_hooks) == weight_hooks_before + 1
doubling = probe.weight.register_hook(lambda grad: 2 * grad)
probe(torch.ones(4, 3)).sum().backward()
group.remove()
doubling.remove()
assert torch.equal(group_saw[0], torch.full((2, 3), 4.0))
assert torch.equal(probe.weight.grad, torch.full((2, 3), 8.0))
# "ModuleTracker puts one on a module's inputs to learn when the backward pass has left
# that module": spy on the function it calls
from torch.utils import module_tracker

tracked = []
original_register = module_tracker.register_multi_grad_hook


def spy(tensors, fn):
    tracked.append(tuple(id(t) for t in tensors))
    return original_register(tensors, fn)


module_tracker.register_multi_grad_hook = spy
try:
    tracker_input = torch.randn(4, 3, requires_grad=True)
    with module_tracker.ModuleTracker():
        probe(tracker_input).sum().backward()
finally:
    module_tracker.register_multi_grad_hook = original_register
assert (id(tracker_input),) in tracked  # one hook on the layer's input
# sphinx_gallery_end_ignore

# %%
# In each backward pass the ``"all"`` hook fired once, with both gradients
# (weight and bias), and the ``"any"`` hook fired once, with the first one
# to arrive (the bias). That is the signal a parallel trainer wants: "this
# layer's gradients are complete, start sending them".
#
# Note where ``"all"`` sits in the list: before the weight's tensor hook.
# ``register_multi_grad_hook`` is made of one ordinary tensor hook per
# tensor, and tensor hooks run in the order they were registered. So the
# group hook sees each gradient as it is at that moment, before hooks
# registered after it change it and before it is added into ``.grad``.
#
# Finding where a NaN was born
# ----------------------------
#
# ``sqrt`` has an infinite slope at 0, so its backward turns a zero gradient
# into ``0 * inf = nan``. The loss below is finite, yet a gradient is NaN, and
# nothing says where it came from.

a = torch.tensor([0.0, 4.0], requires_grad=True)
loss = (a.sqrt() * torch.tensor([0.0, 1.0])).sum()
print("loss:", loss.item())
loss.backward()
print("a.grad:", a.grad)

# sphinx_gallery_start_ignore
# "The loss below is finite, yet a gradient is NaN"
assert torch.isfinite(loss)
assert torch.isnan(a.grad[0])
# sphinx_gallery_end_ignore

# %%
# Inside ``torch.autograd.detect_anomaly()``, autograd checks the output of
# every node and raises as soon as one returns NaN. It names the node and, in
# a warning, shows the line of the forward pass that created it (recorded
# during the forward, which is why anomaly mode is slow and only for
# debugging).

a.grad = None
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
        with torch.autograd.detect_anomaly():
            loss = (a.sqrt() * torch.tensor([0.0, 1.0])).sum()
            loss.backward()
    except RuntimeError as error:
        message = str(error)
        print("RuntimeError:", message)
for warning in caught:
    print("warning:", str(warning.message).splitlines()[0])
forward_lines = [line.strip() for w in caught for line in str(w.message).splitlines()]
print("forward line:", next((line for line in forward_lines if "a.sqrt()" in line), "not shown"))

# sphinx_gallery_start_ignore
# "autograd ... raises as soon as one returns NaN. It names the node and, in a warning,
# shows the line of the forward pass that created it"
assert message == "Function 'SqrtBackward0' returned nan values in its 0th output.", message
assert any(str(w.message).startswith("Error detected in SqrtBackward0.") for w in caught)
assert any("a.sqrt()" in line for line in forward_lines)
# sphinx_gallery_end_ignore

# %%
# The same hunt with node hooks
# -----------------------------
#
# Node hooks let us do a similar check ourselves, without recording the
# forward traces: walk the graph and put a hook on each node that reports
# any NaN in what the node computed. The first report is the birth place;
# in a longer graph, the nodes after it would only pass the NaN on.


def nan_reporter(name, reports):
    def hook(grad_inputs, grad_outputs):
        if any(g is not None and torch.isnan(g).any() for g in grad_inputs):
            reports.append(name)

    return hook


def hook_all_nodes(root, reports):
    handles, seen, stack = [], set(), [root]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        handles.append(node.register_hook(nan_reporter(type(node).__name__, reports)))
        stack.extend(child for child, _ in node.next_functions)
    return handles


a.grad = None
loss = (a.sqrt() * torch.tensor([0.0, 1.0])).sum()
reports = []
node_handles = hook_all_nodes(loss.grad_fn, reports)
loss.backward()
print("nodes that produced NaN, in order:", reports)
for handle in node_handles:
    handle.remove()

# sphinx_gallery_start_ignore
# "The first report is the birth place"
assert reports == ["SqrtBackward0"], reports
# "in a longer graph, the nodes after it would only pass the NaN on"
a_probe = torch.tensor([0.0, 4.0], requires_grad=True)
longer_reports = []
longer_loss = ((a_probe * 2).sqrt() * torch.tensor([0.0, 1.0])).sum()
longer_handles = hook_all_nodes(longer_loss.grad_fn, longer_reports)
longer_loss.backward()
for handle in longer_handles:
    handle.remove()
assert longer_reports == ["SqrtBackward0", "MulBackward0"], longer_reports
# sphinx_gallery_end_ignore

# %%
# Summary
# -------
#
# - ``tensor.grad_fn`` is a node of the backward graph; ``next_functions``
#   leads to the nodes of its inputs, down to ``AccumulateGrad`` for leaves.
# - ``node.register_prehook(hook(grad_outputs))`` runs before a node,
#   ``node.register_hook(hook(grad_inputs, grad_outputs))`` after it; both may
#   return new gradients.
# - ``register_multi_grad_hook`` fires once per backward pass for a group of
#   tensors: with all gradients (``"all"``) or with the first (``"any"``).
# - ``detect_anomaly`` raises at the first node that returns NaN and shows
#   the forward line that created it; node hooks on every node do a cheaper
#   version of the same hunt.
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
# 1. Compute a new ``y = x * 3`` and ``loss``, register a prehook
#    ``double_grads(grad_outputs)`` that returns
#    ``tuple(2 * g for g in grad_outputs)`` on the node of ``y``, and run the
#    backward pass. How does ``x.grad`` change? Check:
#    ``ht.exercises.check("32.1", double_grads)``.
# 2. *In words:* register a ``mode="all"`` multi-grad hook on the weight and
#    bias of ``layer``, then compute a loss that uses only ``layer.weight``.
#    Does the hook fire, what does it receive for the bias, and why?
# 3. *In words:* run the NaN example under
#    ``torch.autograd.detect_anomaly(check_nan=False)``. Is an error raised,
#    and why?

# %%
# .. rst-class:: solution
#
# **Solution 1.** It doubles: ``x.grad`` is now 2 times ``3 * cos(y)``. The
# prehook replaces the gradient that flows into the node of ``y = x * 3``, and
# every gradient computed from it, here the gradient of ``x``, doubles with it.


def double_grads(grad_outputs):
    return tuple(2 * g for g in grad_outputs)


x.grad = None
y = x * 3
loss = y.sin().sum()
doubling = y.grad_fn.register_prehook(double_grads)
loss.backward()
doubling.remove()
ratio = x.grad / (3 * torch.cos(y.detach()))
print("x.grad / (3 * cos(y)):", ratio.tolist())

# sphinx_gallery_start_ignore
# "It doubles": doubling is exact in floating point, so the ratio is exactly 2
assert ratio.tolist() == [2.0, 2.0, 2.0], ratio
# sphinx_gallery_end_ignore

ht.exercises.check("32.1", double_grads)

# sphinx_gallery_start_ignore
from page_checks import assert_check  # docs/_ext: the build's checks

# a list is not a tuple: PyTorch raises a TypeError, the check says why
assert_check(
    "32.1", double_grads, lambda grad_outputs: [2 * g for g in grad_outputs], "not_a_tuple"
)
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 2.** Yes, once (1 call), with one entry per tensor: the weight's
# gradient of shape ``(2, 3)``, and ``None`` for the bias, which gets no
# gradient in this backward pass. In mode ``"all"`` the hook waits only for
# the gradients this backward pass will compute.

received = []
handle = register_multi_grad_hook((layer.weight, layer.bias), received.append, mode="all")
(layer.weight**2).sum().backward()
handle.remove()
print("calls:", len(received))
print("received:", [None if g is None else tuple(g.shape) for g in received[0]])

# sphinx_gallery_start_ignore
# "once (1 call) ... the weight's gradient of shape (2, 3), and None for the bias"
assert len(received) == 1
assert received[0][0].shape == (2, 3)
assert received[0][1] is None
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 3.** No: ``check_nan=False`` keeps the forward traces but no
# longer checks the nodes' outputs, so the backward pass ends without an error
# and the first entry of ``a.grad`` is silently NaN again: ``[nan, 0.25]``.

a.grad = None
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # "Anomaly Detection has been enabled..."
    with torch.autograd.detect_anomaly(check_nan=False):
        (a.sqrt() * torch.tensor([0.0, 1.0])).sum().backward()
print("no error; a.grad:", a.grad.tolist())

# sphinx_gallery_start_ignore
# "the backward pass ends without an error and the first entry of a.grad is silently NaN
# again: [nan, 0.25]" (d sqrt(a) / da at 4 is 1 / 4, exact)
assert torch.isnan(a.grad[0])
assert a.grad[1].item() == 0.25
from page_checks import assert_exercises_checked, assert_no_hooks_left  # docs/_ext

assert_exercises_checked()
assert_no_hooks_left(globals())
# sphinx_gallery_end_ignore
