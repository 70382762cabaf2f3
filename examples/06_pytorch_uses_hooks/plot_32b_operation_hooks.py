# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
Hooks at the level of operations: dispatch modes, registration hooks, node creation
===================================================================================

.. index::
   ! TorchDispatchMode
   ! register_module_parameter_registration_hook
   ! node_creation_hook

Module hooks fire when a *module* runs. Much of a model is not a module:
``torch.relu`` called inside ``forward``, a reshape, the whole backward pass.
Below the modules, PyTorch offers hooks on every *operation*: a dispatch mode
sees each ``aten`` operation that runs, forward or backward (``aten`` is
PyTorch's library of basic tensor operations, which functions such as
``torch.relu`` call). Two more global
hooks watch how models are built and how the autograd graph grows: the module
registration hooks, called for every parameter, buffer and submodule a module
registers, and ``torch.autograd.graph.node_creation_hook`` (new in torch
2.14), called for every node of the backward graph as it is created.

.. rubric:: What you will learn
   :heading-level: 2

- how a ``TorchDispatchMode`` sees every operation of the forward and the
  backward pass, including those that module hooks cannot see;
- how the global registration hooks see each parameter, buffer and submodule
  as a module registers it, and can replace a parameter;
- how ``node_creation_hook`` reports each autograd node as it is created, and
  what to do on a torch older than 2.14.

**Prerequisites**: :doc:`/auto_examples/02_module_hooks/plot_05_forward_hooks`
and :doc:`/auto_examples/06_pytorch_uses_hooks/plot_32_autograd_graph_hooks`.
"""

# %%
# What module hooks see
# ---------------------
#
# A small network with two ``nn.Linear`` layers and a ReLU called as a
# function in ``forward``. A forward hook on every module records which
# modules ran.

from collections import Counter

import torch
from torch import nn
from torch.nn.modules.module import (
    register_module_buffer_registration_hook,
    register_module_module_registration_hook,
    register_module_parameter_registration_hook,
)
from torch.utils._python_dispatch import TorchDispatchMode

import hooks_tutorial as ht  # ht.exercises.check, for the exercises at the end

print("torch", torch.__version__)
torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


net = Net()
x = torch.randn(5, 4)
modules_seen = []
handles = [
    module.register_forward_hook(
        lambda module, args, output, name=name: modules_seen.append(name or "net")
    )
    for name, module in net.named_modules()
]
net(x).sum().backward()
for handle in handles:
    handle.remove()
print("modules that ran:", modules_seen)

# sphinx_gallery_start_ignore
# "A forward hook on every module records which modules ran": fc1, fc2 and the net, no relu
assert sorted(modules_seen) == ["fc1", "fc2", "net"], modules_seen
assert not any(isinstance(module, nn.ReLU) for module in net.modules())
# sphinx_gallery_end_ignore

# %%
# The ReLU is not there: it is not a module, so no module hook fires for it.
# Nor is the backward pass, apart from the modules' own backward hooks.
#
# A hook on every operation: ``TorchDispatchMode``
# ------------------------------------------------
#
# A ``TorchDispatchMode`` subclass defines ``__torch_dispatch__(func, types,
# args, kwargs)``; inside ``with`` the mode, PyTorch calls it for every
# ``aten`` operation instead of running the operation, and the method runs
# it with ``func(*args, **kwargs)``; while the method runs, the mode is off,
# so that call does not come back to it. The mode sits below the modules and
# below autograd: the operations arrive already translated from
# ``nn.Linear`` and ``torch.relu`` into ``aten`` operations, and the
# backward pass, which autograd computes with ``aten`` operations too,
# arrives as well. (PyTorch's documentation imports the class from
# ``torch.utils._python_dispatch``; the leading underscore marks that module
# as private, so its details may change between releases.)


class OpCounter(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is not torch.ops.aten.detach.default:  # autograd's bookkeeping
            self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


net.zero_grad()  # .grad back to None: backward stores the gradients, adds to none
with OpCounter() as forward_ops:
    loss = net(x).sum()
with OpCounter() as backward_ops:
    loss.backward()
print("forward: ", forward_ops.ops)
print("backward:", dict(Counter(backward_ops.ops)))

# sphinx_gallery_start_ignore
# "The ReLU that no module hook saw is here"; "each nn.Linear arrives as a transpose
# (aten.t) and a matrix product with the bias added (aten.addmm)"; "the backward pass
# ... threshold_backward for the ReLU, mm for the products"
assert forward_ops.ops.count("aten.relu.default") == 1, forward_ops.ops
assert forward_ops.ops.count("aten.t.default") == 2
assert forward_ops.ops.count("aten.addmm.default") == 2
assert "aten.threshold_backward.default" in backward_ops.ops, backward_ops.ops
assert "aten.mm.default" in backward_ops.ops


# "while the method runs, the mode is off, so that call does not come back to it": an
# operation called inside __torch_dispatch__ is not seen again
class CallsInside(OpCounter):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = super().__torch_dispatch__(func, types, args, kwargs)
        torch.add(out, 1)
        return out


with CallsInside() as calls_inside:
    doubled = torch.ones(2) * 2
assert calls_inside.ops == ["aten.ones.default", "aten.mul.Tensor"], calls_inside.ops
# "Outside the with block the mode is gone": no mode left on the dispatch stack
from torch.utils._python_dispatch import _len_torch_dispatch_stack

assert _len_torch_dispatch_stack() == 0
# "so it cannot stay behind when the code inside raises"
try:
    with OpCounter():
        raise RuntimeError
except RuntimeError:
    pass
assert _len_torch_dispatch_stack() == 0
# "torch.utils.flop_counter.FlopCounterMode counts floating-point operations this way":
# inside it, a dispatch mode is on the stack
from torch.utils.flop_counter import FlopCounterMode

with FlopCounterMode(display=False) as flop_counter:
    assert _len_torch_dispatch_stack() == 1
    net(x)
assert flop_counter.get_total_flops() > 0
# sphinx_gallery_end_ignore

# %%
# The ReLU that no module hook saw is here, as ``aten.relu``. Each
# ``nn.Linear`` arrives as a transpose (``aten.t``) and a matrix product with
# the bias added (``aten.addmm``). The backward pass, which module hooks see
# only as gradients at module borders, shows its own operations:
# ``threshold_backward`` for the ReLU, ``mm`` for the products. We left out
# ``aten.detach``, the bookkeeping calls autograd makes (their number changes
# between torch versions).
#
# Outside the ``with`` block the mode is gone: a mode is entered and left
# with ``with``, so it cannot stay behind when the code inside raises.
# PyTorch builds tools on it: ``torch.utils.flop_counter.FlopCounterMode``
# counts floating-point operations this way.
#
# Hooks on how a model is built: registration hooks
# -------------------------------------------------
#
# ``register_module_parameter_registration_hook(hook)`` registers a global
# hook, called as ``hook(module, name, param)`` each time any module
# registers a parameter, including through ``self.weight = nn.Parameter(...)``
# in ``__init__``. Its friends do the same for buffers
# (``hook(module, name, buffer)``) and submodules
# (``hook(module, name, submodule)``). Each returns a handle.

registered = []
handles = [
    register_module_parameter_registration_hook(
        lambda module, name, param: registered.append(
            f"parameter {type(module).__name__}.{name} {tuple(param.shape)}"
        )
    ),
    register_module_buffer_registration_hook(
        lambda module, name, buffer: registered.append(
            f"buffer    {type(module).__name__}.{name} {tuple(buffer.shape)}"
        )
    ),
    register_module_module_registration_hook(
        lambda module, name, submodule: registered.append(
            f"module    {type(module).__name__}.{name} = {type(submodule).__name__}"
        )
    ),
]
model = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
for handle in handles:
    handle.remove()
print(*registered, sep="\n")

# sphinx_gallery_start_ignore
# "each parameter and buffer is registered inside its own module's __init__, before
# Sequential registers the finished modules"
kinds = [entry.split()[0] for entry in registered]
assert kinds == ["parameter"] * 4 + ["buffer"] * 3 + ["module"] * 2, registered
assert "BatchNorm1d.running_mean" in registered[4]
# the handles are removed: no global registration hook is left
from torch.nn.modules import module as module_globals

assert not module_globals._global_parameter_registration_hooks
assert not module_globals._global_buffer_registration_hooks
assert not module_globals._global_module_registration_hooks
# sphinx_gallery_end_ignore

# %%
# The order tells how a model is built: each parameter and buffer is
# registered inside its own module's ``__init__``, before ``Sequential``
# registers the finished modules. The hooks are global, so the handles are
# removed right after; a registration hook left behind would see every model
# the program builds afterwards.
#
# A parameter registration hook may return a new parameter, which the module
# keeps instead. It runs when ``nn.Linear`` assigns its weight, *before*
# ``reset_parameters`` fills it with random values, so the values it sees
# are not the final ones. Here a hook freezes every new parameter: it
# returns a parameter on the same data that does not require a gradient:


def freeze(module, name, param):
    return nn.Parameter(param, requires_grad=False)


seen_at_registration = []
handle = register_module_parameter_registration_hook(freeze)
check_values = register_module_parameter_registration_hook(
    lambda module, name, param: seen_at_registration.append(param.detach().clone())
)
layer = nn.Linear(3, 2)
handle.remove()
check_values.remove()
print({name: p.requires_grad for name, p in layer.named_parameters()})
print(
    "weight at registration equals the final weight:",
    torch.equal(seen_at_registration[0], layer.weight.detach()),
)

# sphinx_gallery_start_ignore
# "the module keeps it instead": nn.Parameter registers parameters that require grad, the
# layer holds freeze's frozen ones; "the values it sees are not the final ones": the copy
# taken at registration differs from the weight after reset_parameters
assert not any(p.requires_grad for p in layer.parameters())
assert all(isinstance(p, nn.Parameter) and p.is_leaf for p in layer.parameters())
assert not torch.equal(seen_at_registration[0], layer.weight.detach())
assert not module_globals._global_parameter_registration_hooks
# sphinx_gallery_end_ignore

# %%
# Hooks on the graph as it grows: ``node_creation_hook``
# ------------------------------------------------------
#
# Page 32 walked the backward graph from ``loss.grad_fn`` *after* the forward
# pass. Since torch 2.14, ``torch.autograd.graph.node_creation_hook(hook)``
# is a context manager that calls ``hook(node)`` for every autograd node
# *created* inside it, fully wired. Here it records each node's type and puts
# a prehook on it that records when the node runs in the backward pass. The
# branch ``out.exp()`` does not reach the loss. Older torch releases,
# including 2.9, the oldest this tutorial supports, have no such hook: there
# the cell says so and skips this part; walking the graph from
# ``loss.grad_fn`` (page 32) is what they offer.

has_node_creation_hook = hasattr(torch.autograd.graph, "node_creation_hook")
if has_node_creation_hook:
    created, ran = [], []

    def on_node(node):
        name = type(node).__name__
        created.append(name)
        node.register_prehook(lambda grad_outputs: ran.append(name))

    fresh = Net()
    with torch.autograd.graph.node_creation_hook(on_node):
        out = fresh(x)
        unused = out.exp()  # a branch that does not reach the loss
        loss = out.sum()
    loss.backward()
    print("created:", created)
    print("ran:    ", ran)
    print("created but never ran:", sorted((Counter(created) - Counter(ran)).elements()))
else:
    print(
        f"torch.autograd.graph.node_creation_hook needs torch 2.14 or newer; this is "
        f"torch {torch.__version__}, so this part is skipped."
    )

# sphinx_gallery_start_ignore
if has_node_creation_hook:
    # "one AccumulateGrad node per parameter": the four leaves of fresh
    assert created.count("AccumulateGrad") == 4, created
    # "the backward pass runs them from the loss back"
    assert ran[0] == "SumBackward0", ran
    assert created[-1] == "SumBackward0", created
    # "ExpBackward0 was created but never ran": the only difference
    assert sorted((Counter(created) - Counter(ran)).elements()) == ["ExpBackward0"]
    assert not Counter(ran) - Counter(created)
    # "a walk from loss.grad_fn never reaches it"
    reached, stack = set(), [loss.grad_fn]
    while stack:
        node = stack.pop()
        if node is not None and node not in reached:
            reached.add(node)
            stack.extend(child for child, _ in node.next_functions)
    assert "ExpBackward0" not in {type(node).__name__ for node in reached}
else:
    assert tuple(int(part) for part in torch.__version__.split(".")[:2]) < (2, 14)
# sphinx_gallery_end_ignore

# %%
# With torch 2.14 or newer, the first list shows one ``AccumulateGrad`` node
# per parameter, created the first time the parameter enters the graph, and
# one node per differentiable operation, in the order of the forward pass;
# the backward pass runs them from the loss back. ``ExpBackward0`` was
# created but never ran: a walk from ``loss.grad_fn`` never reaches it, the
# creation hook saw it anyway. Typical uses are to record where each node
# was created, in ``node.metadata``, or to hook every node of a graph
# without walking it.
#
# Summary
# -------
#
# - A ``TorchDispatchMode`` is a hook on every ``aten`` operation inside its
#   ``with`` block, forward and backward: it sees what module hooks cannot,
#   such as ``torch.relu`` in ``forward`` and the backward's operations.
# - ``register_module_parameter_registration_hook`` and its buffer and
#   module friends are global hooks on how models are built; a parameter
#   hook may return a replacement. Remove their handles.
# - ``torch.autograd.graph.node_creation_hook`` (torch 2.14 and newer) calls
#   a hook for every autograd node as it is created; on older torch, walk
#   the graph from ``grad_fn`` instead.
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
# 1. Write ``count_relus(model, x)``, which returns how many times the
#    operation ``aten.relu`` runs in ``model(x)``, with a
#    ``TorchDispatchMode``. It must count ``nn.ReLU`` modules and calls of
#    ``torch.relu`` in ``forward`` alike. Check:
#    ``ht.exercises.check("32b.1", count_relus)``.
# 2. Write a parameter registration hook ``to_double(module, name, param)``
#    that makes every parameter registered while it is active a float64
#    ``nn.Parameter``. Check: ``ht.exercises.check("32b.2", to_double)``.
# 3. *In words:* the code of ``Net`` never transposes anything, yet the
#    dispatch mode saw ``aten.t`` twice in the forward pass. Where does it
#    come from?

# %%
# .. rst-class:: solution
#
# **Solution 1.** The mode counts the calls whose ``func`` is
# ``torch.ops.aten.relu.default``; the ``nn.ReLU`` module and ``torch.relu``
# both end in that operation, so both are counted. The ``with`` block
# leaves the mode even if the model raises.


class ReluCounter(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten.relu.default:
            self.count += 1
        return func(*args, **(kwargs or {}))


def count_relus(model, x):
    with ReluCounter() as counter:
        model(x)
    return counter.count


print("aten.relu calls in net(x):", count_relus(net, x))

# sphinx_gallery_start_ignore
# "the nn.ReLU module and torch.relu both end in that operation"
assert count_relus(net, x) == 1
assert count_relus(nn.Sequential(nn.Linear(4, 4), nn.ReLU()), x) == 1
# sphinx_gallery_end_ignore

ht.exercises.check("32b.1", count_relus)

# sphinx_gallery_start_ignore
from page_checks import assert_check  # docs/_ext: the build's checks


def count_relu_modules(model, x):  # forward hooks on nn.ReLU modules: blind to torch.relu
    calls = []
    relu_handles = [
        module.register_forward_hook(lambda *args: calls.append(1))
        for module in model.modules()
        if isinstance(module, nn.ReLU)
    ]
    model(x)
    for relu_handle in relu_handles:
        relu_handle.remove()
    return len(calls)


assert_check("32b.1", count_relus, count_relu_modules, "module_hooks_only")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 2.** The hook returns ``nn.Parameter(param.to(torch.float64))``,
# which the module keeps instead of the float32 parameter. Returning
# ``param.double()`` alone would store a plain tensor computed from the
# parameter, not a leaf, which an optimizer refuses.


def to_double(module, name, param):
    return nn.Parameter(param.to(torch.float64))


handle = register_module_parameter_registration_hook(to_double)
double_model = nn.Sequential(nn.Linear(3, 2), nn.LayerNorm(2))
handle.remove()
print({name: p.dtype for name, p in double_model.named_parameters()})

# sphinx_gallery_start_ignore
# "which the module keeps instead of the float32 parameter"
assert all(p.dtype == torch.float64 for p in double_model.parameters())
# "would store a plain tensor computed from the parameter, not a leaf, which an optimizer
# refuses"
plain = register_module_parameter_registration_hook(lambda module, name, param: param.double())
not_a_leaf = nn.Linear(3, 2)
plain.remove()
assert type(not_a_leaf.weight) is torch.Tensor
assert not not_a_leaf.weight.is_leaf
try:
    torch.optim.SGD(not_a_leaf.parameters(), lr=0.1)
    refused = False
except ValueError:
    refused = True
assert refused
# sphinx_gallery_end_ignore

ht.exercises.check("32b.2", to_double)

# sphinx_gallery_start_ignore
assert_check("32b.2", to_double, lambda module, name, param: param.double(), "not_a_parameter")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 3.** From ``nn.Linear`` itself: it calls
# ``torch.nn.functional.linear``, which on these inputs (matrices) is made of two
# ``aten`` operations, ``t`` (the weight transposed) and ``addmm`` (input
# times that, plus the bias). A dispatch mode sees operations after such a
# translation, so it shows how PyTorch computes a layer, not how the model's
# code is written.

weight, bias = net.fc1.weight.detach(), net.fc1.bias.detach()
with OpCounter() as linear_ops:
    nn.functional.linear(x, weight, bias)
print("F.linear:", linear_ops.ops)

# sphinx_gallery_start_ignore
# "made of two aten operations, t and addmm"
assert linear_ops.ops == ["aten.t.default", "aten.addmm.default"], linear_ops.ops
from page_checks import assert_exercises_checked, assert_no_hooks_left  # docs/_ext

assert not module_globals._global_parameter_registration_hooks
assert _len_torch_dispatch_stack() == 0
assert_exercises_checked()
assert_no_hooks_left(globals())
# sphinx_gallery_end_ignore
