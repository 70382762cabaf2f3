# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
Feature extraction without hooks
================================

.. index::
   ! create_feature_extractor
   ! torch.fx
   ! feature extraction
   ! 特征提取

Hooks are not the only way to get at a layer's output. torchvision's
``torchvision.models.feature_extraction`` traces a model with ``torch.fx``
into a graph of operations and builds a new module that returns the nodes you
name. No hook is registered, so none can be left behind. This page puts it
next to forward hooks on the same model: where both give the same tensors,
what the traced graph reaches that hooks cannot, and what hooks do that it
cannot.

.. rubric:: What you will learn
   :heading-level: 2

- how to list a model's graph nodes with ``get_graph_node_names`` and
  extract some of them with ``create_feature_extractor``;
- that on the same model the extracted tensors equal those a forward hook
  records;
- why operations that are not modules (``out += identity``,
  ``torch.flatten``) are nodes for FX but invisible to module hooks, and
  which in-place operations stay in place in the traced graph;
- which jobs need hooks: models with data-dependent control flow, changing
  outputs, and runs of the model that other code starts (a training loop);
- a rule of thumb for choosing.

**Prerequisites**: :doc:`/auto_examples/02_module_hooks/plot_05_forward_hooks`,
:doc:`/auto_examples/02_module_hooks/plot_06_forward_pre_hooks` and
:doc:`/auto_examples/04_grad_cam/plot_22_beyond_cnns` (in-place operations in
ResNet blocks).
"""

# %%
# The graph of a ResNet
# ---------------------
#
# We use torchvision's ``resnet18`` with random weights (``weights=None``:
# nothing is downloaded); this page compares tensors, and any weights do.
# ``get_graph_node_names`` traces the model twice, in training and in
# evaluation mode, and returns the node names of each graph.

import operator

import torch
import torch.nn.functional as F
import torchvision
from torch import nn
from torchvision.models.feature_extraction import (
    create_feature_extractor,
    get_graph_node_names,
)

import hooks_tutorial as ht

torch.manual_seed(0)
resnet = torchvision.models.resnet18(weights=None, num_classes=5).eval()
images = ht.make_shapes(4, split="test", seed=24).images  # [4, 3, 64, 64]

train_nodes, eval_nodes = get_graph_node_names(resnet)
print("nodes:", len(eval_nodes), "| same in both modes?", train_nodes == eval_nodes)
print("first block:", [name for name in eval_nodes if name.startswith("layer1.0.")])
print("last nodes: ", eval_nodes[-3:])

# sphinx_gallery_start_ignore
# "layer1.0.add is out += identity ..., layer1.0.relu_1 is the block's second call of
# its relu module ..., and flatten is torch.flatten in ResNet.forward"
first_block = [name for name in eval_nodes if name.startswith("layer1.0.")]
assert first_block.index("layer1.0.relu") < first_block.index("layer1.0.add")
assert first_block.index("layer1.0.add") < first_block.index("layer1.0.relu_1")
assert eval_nodes[-3:] == ["avgpool", "flatten", "fc"]
# sphinx_gallery_end_ignore

# %%
# Most node names are module names (``layer1.0.conv1``). Some are not:
# ``layer1.0.add`` is ``out += identity`` in ``BasicBlock.forward``,
# ``layer1.0.relu_1`` is the block's *second* call of its ``relu`` module
# (FX numbers repeated calls), and ``flatten`` is ``torch.flatten`` in
# ``ResNet.forward``. Here are all the nodes that are not the output of a
# module:

module_names = {name for name, _ in resnet.named_modules()}
not_modules = [name for name in eval_nodes if name not in module_names]
print(not_modules)

# sphinx_gallery_start_ignore
# "Some are not: layer1.0.add ..., layer1.0.relu_1 ..., and flatten": every block's add
# and second relu call, the input and flatten; no conv or bn among them
blocks = [f"layer{i}.{j}" for i in range(1, 5) for j in range(2)]
expected = ["x", *(f"{b}.{node}" for b in blocks for node in ("add", "relu_1")), "flatten"]
assert not_modules == expected, not_modules
# sphinx_gallery_end_ignore

# %%
# Same tensors, two ways
# ----------------------
#
# ``create_feature_extractor`` takes the nodes to return, as a list or as a
# dictionary that renames them. The result is a new module whose output is a
# dictionary of tensors; it shares the parameters of ``resnet``.

extractor = create_feature_extractor(resnet, return_nodes={"layer2": "middle", "layer4": "last"})
with torch.no_grad():
    features = extractor(images)
print({name: tuple(t.shape) for name, t in features.items()})
print("shares resnet's parameters?", extractor.get_submodule("conv1").weight is resnet.conv1.weight)

# sphinx_gallery_start_ignore
# "a dictionary that renames them"; "its output is a dictionary of tensors; it shares
# the parameters of resnet"
assert list(features) == ["middle", "last"]
assert all(isinstance(t, torch.Tensor) for t in features.values())
resnet_parameters = dict(resnet.named_parameters())
shared = [p is resnet_parameters[n] for n, p in extractor.named_parameters()]
assert shared
assert all(shared)
# sphinx_gallery_end_ignore

# %%
# The same layers recorded with forward hooks, through
# :func:`~hooks_tutorial.capture_activations`:

with ht.capture_activations(resnet, ["layer2", "layer4"]) as acts, torch.no_grad():
    resnet(images)
print("layer2 equal?", torch.equal(acts["layer2"], features["middle"]))
print("layer4 equal?", torch.equal(acts["layer4"], features["last"]))

# sphinx_gallery_start_ignore
# section title "Same tensors, two ways"
assert torch.equal(acts["layer2"], features["middle"])
assert torch.equal(acts["layer4"], features["last"])
# sphinx_gallery_end_ignore

# %%
# Values that are no module's output
# ----------------------------------
#
# A forward hook fires when a *module* returns. ``torch.flatten`` and the
# addition in ``out += identity`` are plain tensor operations, so no hook
# fires on them; FX has a node for each. A hook can reach such a value only
# sideways, when the next operation is a module: the flattened features are
# the input of ``fc``, which a forward pre-hook sees.

extractor = create_feature_extractor(resnet, return_nodes=["flatten", "layer1.0.add"])
seen = {}
handle = resnet.fc.register_forward_pre_hook(
    lambda module, args: seen.update(fc_input=args[0].detach().clone())
)
with torch.no_grad():
    fx_values = extractor(images)
    resnet(images)
handle.remove()
print("flatten node == input of fc?", torch.equal(fx_values["flatten"], seen["fc_input"]))

# sphinx_gallery_start_ignore
# "the flattened features are the input of fc, which a forward pre-hook sees"
assert torch.equal(fx_values["flatten"], seen["fc_input"])
# sphinx_gallery_end_ignore

# %%
# The sum that ``out += identity`` computes is the input of the block's
# second ``relu`` call. But that ReLU runs *in place*: the traced graph calls
# the same ``nn.ReLU(inplace=True)`` module as the model, so it overwrites
# the sum in both. The tensor FX returns for ``layer1.0.add`` is the very tensor that
# ``layer1.0.relu_1`` returns, so it holds no negative values, although the
# sum itself has some (as the next cell shows):

extractor = create_feature_extractor(resnet, return_nodes=["layer1.0.add", "layer1.0.relu_1"])
with torch.no_grad():
    values = extractor(images)
print("add is relu_1?", values["layer1.0.add"] is values["layer1.0.relu_1"])
print(f"smallest value of the add node: {values['layer1.0.add'].min().item():.3f}")

# sphinx_gallery_start_ignore
# "the very tensor that layer1.0.relu_1 returns, so it holds no negative values"
assert values["layer1.0.add"] is values["layer1.0.relu_1"]
assert values["layer1.0.add"].min() >= 0
# sphinx_gallery_end_ignore

# %%
# To see the real sum, turn the in-place ReLUs off (the extractor calls the
# same module objects, so the change applies to both), or clone the input of
# the second ``relu`` call in a forward pre-hook, which counts the calls:

relu_inputs = []
handle = resnet.layer1[0].relu.register_forward_pre_hook(
    lambda module, args: relu_inputs.append(args[0].detach().clone())
)
with torch.no_grad():
    resnet(images)
handle.remove()

for module in resnet.modules():
    if isinstance(module, nn.ReLU):
        module.inplace = False
with torch.no_grad():
    values = extractor(images)
print(f"smallest value of the sum: {values['layer1.0.add'].min().item():.3f}")
print(
    "sum from FX == input of the 2nd relu call?",
    torch.equal(values["layer1.0.add"], relu_inputs[1]),
)
for module in resnet.modules():
    if isinstance(module, nn.ReLU):
        module.inplace = True

# sphinx_gallery_start_ignore
# "although the sum itself has some"; the pre-hook "counts the calls": the 2nd is the sum
assert values["layer1.0.add"].min() < 0
assert len(relu_inputs) == 2
assert torch.equal(values["layer1.0.add"], relu_inputs[1])
# sphinx_gallery_end_ignore

# %%
# The addition itself is not in place in the traced graph. FX records
# ``out += identity`` as the out-of-place ``operator.add``, which makes a new
# tensor; in the model, ``+=`` writes the sum into the output of ``bn2``.
# So a value that an in-place *tensor operation* overwrites in the model keeps
# its value in the traced graph (exercise 1 shows it on ``bn2``); an in-place
# *module* overwrites in both.

whole = create_feature_extractor(resnet, return_nodes=["fc"])  # the whole graph
adds = [node for node in whole.graph.nodes if node.name.startswith("add")]
print(f"additions in the graph: {len(adds)}")
print("all traced as operator.add?", all(node.target is operator.add for node in adds))

# sphinx_gallery_start_ignore
# "FX records out += identity as the out-of-place operator.add": one per BasicBlock
basic_blocks = [m for m in resnet.modules() if isinstance(m, torchvision.models.resnet.BasicBlock)]
assert len(adds) == len(basic_blocks) == 8
assert all(node.target is operator.add for node in adds)
# sphinx_gallery_end_ignore

# %%
# What hooks can do that FX cannot
# --------------------------------
#
# **Models that do not trace.** FX runs ``forward`` once with placeholder
# values (proxies) and records what happens. A Python ``if`` on a tensor's
# value needs a real number, so tracing stops. A forward hook does not care:
# it runs during a real forward pass.


class GatedNet(nn.Module):
    """Applies a ReLU only when the mean activation is positive."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, kernel_size=3, padding=1)
        self.head = nn.Linear(8, 5)

    def forward(self, x):
        h = self.conv(x)
        if h.mean() > 0:  # a decision that depends on the data
            h = F.relu(h)
        return self.head(h.mean(dim=(2, 3)))


gated = GatedNet().eval()
try:
    create_feature_extractor(gated, return_nodes=["conv"])
except torch.fx.proxy.TraceError as error:
    print("TraceError:", error)

with ht.capture_activations(gated, "conv") as acts, torch.no_grad():
    gated(images)
print("hooks: conv output", tuple(acts["conv"].shape))

# sphinx_gallery_start_ignore
# "so tracing stops. A forward hook does not care": tracing GatedNet raises (the cell
# above prints the error), the hook records conv's output
trace_error = ""
try:
    create_feature_extractor(gated, return_nodes=["conv"])
except torch.fx.proxy.TraceError as error:
    trace_error = str(error)
assert "control flow" in trace_error, trace_error
assert acts["conv"].shape == (4, 8, 64, 64)
# sphinx_gallery_end_ignore

# %%
# **Changing what the model computes.** A forward hook that returns a value
# replaces the module's output for the rest of the forward pass, for
# example to switch off half of ``layer4``'s channels and see how the scores
# move. The extractor only reads; changing the computation with FX means
# editing the graph, a different tool.


def drop_half_of_the_channels(module, args, output):
    output = output.clone()
    output[:, 256:] = 0
    return output


with torch.no_grad():
    scores = resnet(images)
    handle = resnet.layer4.register_forward_hook(drop_half_of_the_channels)
    try:
        ablated = resnet(images)
    finally:
        handle.remove()
print(f"largest change of a score: {(scores - ablated).abs().max().item():.3f}")

# sphinx_gallery_start_ignore
# "replaces the module's output ... and see how the scores move"
assert (scores - ablated).abs().max() > 0
# sphinx_gallery_end_ignore

# %%
# **Gradients.** The extracted tensors are part of the autograd graph: ask
# for the scores too and differentiate, and you get exactly the gradient that
# :func:`~hooks_tutorial.capture_gradients` records with a tensor hook.

extractor = create_feature_extractor(resnet, return_nodes={"layer4": "last", "fc": "scores"})
out = extractor(images)
(gradient_fx,) = torch.autograd.grad(out["scores"][:, 0].sum(), out["last"])
with ht.capture_gradients(resnet, "layer4") as grads:
    resnet(images)[:, 0].sum().backward()
print("same gradient?", torch.equal(gradient_fx, grads["layer4"]))
resnet.zero_grad()

# sphinx_gallery_start_ignore
# "you get exactly the gradient that capture_gradients records"
assert torch.equal(gradient_fx, grads["layer4"])
# sphinx_gallery_end_ignore

# %%
# The extracted tensors are ordinary autograd tensors, so a tensor hook
# (:doc:`/auto_examples/03_tensor_hooks/plot_10_tensor_hooks`) can even change
# the gradient that flows through them. Doubling the gradient at ``layer4``
# doubles the gradient of every parameter before it:

out = extractor(images)
out["scores"][:, 0].sum().backward()
plain = resnet.conv1.weight.grad.clone()
resnet.zero_grad()
out = extractor(images)
out["last"].register_hook(lambda grad: 2 * grad)  # on this run's tensor only
out["scores"][:, 0].sum().backward()
print("conv1.weight.grad doubled?", torch.allclose(resnet.conv1.weight.grad, 2 * plain))

# sphinx_gallery_start_ignore
# "Doubling the gradient at layer4 doubles the gradient of every parameter before it"
assert torch.allclose(resnet.conv1.weight.grad, 2 * plain)
# sphinx_gallery_end_ignore

resnet.zero_grad()

# %%
# What FX cannot do is act on the runs of the original model. The extractor
# is a separate module: code that calls ``resnet(x)`` and ``loss.backward()``
# itself, such as a training loop you do not control, never runs it, so it
# neither sees nor changes anything in those runs. A hook on ``resnet`` does
# both.
#
# A rule of thumb
# ---------------
#
# - **Use the feature extractor** to *read* outputs of a model that traces:
#   a backbone for another task, features for a plot or a probe. It names
#   every operation (not only modules), and no hook can be left behind.
# - **Use hooks** on the model you already run: when the model does not
#   trace, when you change its outputs, or when you observe or change the
#   runs that other code starts (a training loop).
# - **Either way**, mind in-place operations. An in-place module
#   (``ReLU(inplace=True)``) overwrites its input in the model and in the
#   traced graph; an in-place tensor operation (``out += identity``) becomes
#   an out-of-place one in the traced graph, so there the value before it is
#   kept, while in the model it is overwritten.
#
# No hook is left on the models of this page:

print("hooks left:", ht.count_hooks(resnet).total, ht.count_hooks(gated).total)

# sphinx_gallery_start_ignore
# "No hook is left on the models of this page"
assert ht.count_hooks(resnet).total == ht.count_hooks(gated).total == 0
# sphinx_gallery_end_ignore

# %%
# Summary
# -------
#
# - ``get_graph_node_names`` lists the traced operations, modules and
#   functions alike; ``create_feature_extractor`` returns a new module that
#   outputs the nodes you name.
# - On the same model, extracted tensors equal those recorded by forward
#   hooks, gradients included.
# - FX reaches values that no module returns (``layer1.0.add``,
#   ``flatten``); hooks reach them only as the input of the next module. An
#   in-place ReLU overwrites the ``add`` node, in FX as in the model; FX
#   traces ``+=`` as an out-of-place addition.
# - The extractor's outputs are autograd tensors: tensor hooks on them read
#   and change gradients. Hooks work on untraceable models, can change
#   outputs, and act on the model you already run.
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
# 1. *In words:* extract ``layer4.1.bn2`` with ``create_feature_extractor``
#    and with ``ht.capture_activations`` (with and without ``clone=True``).
#    Which results agree, and why?
# 2. List the graph nodes of ``ht.SimpleCNN()``. Are there any nodes that are
#    not module outputs? Write ``non_module_nodes(model)``, which returns
#    them. Check: ``ht.exercises.check("24.2", non_module_nodes)``.
# 3. Rewrite ``GatedNet.forward`` without the Python ``if`` (hint:
#    ``torch.where``) so that ``create_feature_extractor`` can trace it, in a
#    subclass ``TraceableGatedNet(GatedNet)``. Check:
#    ``ht.exercises.check("24.3", TraceableGatedNet)``.

# %%
# .. rst-class:: solution
#
# **Solution 1.** FX's tensor and the cloned one agree (``True``), the one
# recorded without ``clone`` does not (``False``). Without ``clone`` the hook
# keeps ``bn2``'s output tensor itself; the model then writes
# ``out += identity`` into it and the in-place ReLU clips it, so it has no
# negative values left, while FX's tensor has some. FX traced ``+=`` as an
# out-of-place addition, so its ``bn2`` output keeps its values.

extractor = create_feature_extractor(resnet, return_nodes=["layer4.1.bn2"])
with torch.no_grad():
    fx_bn2 = extractor(images)["layer4.1.bn2"]
print(f"FX: smallest value {fx_bn2.min():.3f}")
recorded = {}  # clone -> the recorded tensor
for clone in (False, True):
    with ht.capture_activations(resnet, "layer4.1.bn2", clone=clone) as acts, torch.no_grad():
        resnet(images)
    recorded[clone] = acts["layer4.1.bn2"]
    print(
        f"hook, clone={clone}: smallest value {recorded[clone].min():.3f}, "
        f"equal to FX's? {torch.equal(fx_bn2, recorded[clone])}"
    )

# sphinx_gallery_start_ignore
# "FX's tensor and the cloned one agree, the one recorded without clone does not";
# "no negative values left, while FX's tensor has some"
assert torch.equal(fx_bn2, recorded[True])
assert not torch.equal(fx_bn2, recorded[False])
assert recorded[False].min() == 0
assert fx_bn2.min() < 0
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 2.** Only the input ``x``: ``SimpleCNN.forward`` calls nothing but
# modules (even its flattening is an ``nn.Flatten``), so every other node is a
# module's output.


def non_module_nodes(model):
    names = {name for name, _ in model.named_modules()}
    return [n for n in get_graph_node_names(model)[1] if n not in names]


simple = ht.SimpleCNN()
other_nodes = non_module_nodes(simple)
print(other_nodes)

# sphinx_gallery_start_ignore
# "Only the input x"
assert other_nodes == ["x"], other_nodes
# sphinx_gallery_end_ignore

ht.exercises.check("24.2", non_module_nodes)

# sphinx_gallery_start_ignore
from page_checks import assert_check  # docs/_ext: the build's checks

# every node, module outputs included
assert_check("24.2", non_module_nodes, lambda model: get_graph_node_names(model)[1], "all_nodes")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 3.** It traces, and the extractor returns ``conv``'s output,
# ``torch.Size([4, 8, 64, 64])``. ``torch.where`` takes its condition as a
# tensor and picks between two values that are both computed, so the graph
# has no Python branch; the price is that the ReLU always runs.


class TraceableGatedNet(GatedNet):
    def forward(self, x):
        h = self.conv(x)
        h = torch.where(h.mean() > 0, F.relu(h), h)
        return self.head(h.mean(dim=(2, 3)))


traceable = TraceableGatedNet().eval()
traced_conv = create_feature_extractor(traceable, ["conv"])(images)["conv"]
print(traced_conv.shape)

# sphinx_gallery_start_ignore
# "It traces, and the extractor returns conv's output, torch.Size([4, 8, 64, 64])"
assert traced_conv.shape == (4, 8, 64, 64)
# sphinx_gallery_end_ignore

ht.exercises.check("24.3", TraceableGatedNet)

# sphinx_gallery_start_ignore
# GatedNet itself has the Python if: FX cannot trace it
assert_check("24.3", TraceableGatedNet, GatedNet, "not_traceable")
from page_checks import assert_exercises_checked, assert_no_hooks_left  # docs/_ext

assert_exercises_checked()
assert_no_hooks_left(globals())
# sphinx_gallery_end_ignore
