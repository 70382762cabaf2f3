# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
Debugging with hooks: NaNs, dead ReLUs, exploding gradients
===========================================================

.. index::
   ! debugging
   ! global hook
   ! register_module_forward_hook
   ! NaN
   ! 全局钩子
   ! 调试

When training goes wrong, the loss only tells you *that* something broke.
Hooks tell you *where*: they see every module's output and every parameter's
gradient while the model runs, without changing the model's code. This page
uses them for three common failures: a NaN that appears somewhere inside the
network, ReLU units that never fire, and gradients that explode.

.. rubric:: What you will learn
   :heading-level: 2

- how forward hooks on every module find the first one that outputs NaN or
  Inf;
- how :obj:`hooks_tutorial.detect_anomalies` does the same and names the module;
- how ``torch.autograd.detect_anomaly`` finds a NaN that appears only in the
  backward pass;
- how to measure the fraction of zeros after each ReLU (dead units);
- how to monitor gradient norms per layer across training steps.

**Prerequisites**: :doc:`/auto_examples/03_tensor_hooks/plot_10_tensor_hooks`
and :doc:`/auto_examples/03_tensor_hooks/plot_11_parameter_hooks`.
"""

# %%
# A model that produces NaN
# -------------------------
#
# The third module below takes the logarithm of its input. Its input comes
# from a ``Tanh``, which is negative about half of the time, and the log of a
# negative number is NaN. The final output is NaN everywhere, but it does not
# say which module is to blame.

import warnings
from collections import OrderedDict

import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import nn

import hooks_tutorial as ht

torch.manual_seed(0)


class LogFeatures(nn.Module):
    def forward(self, x):
        return torch.log(x)


model = nn.Sequential(
    OrderedDict(fc1=nn.Linear(8, 16), act=nn.Tanh(), log=LogFeatures(), fc2=nn.Linear(16, 4))
)
inputs = torch.randn(5, 8)
output = model(inputs)
print("NaN values in the final output:", torch.isnan(output).sum().item(), "of", output.numel())

# sphinx_gallery_start_ignore
# "a Tanh, which is negative about half of the time" (0.3 to 0.7 of the 80 values:
# 34 of 80 in the builds so far); "The final output is NaN everywhere"
with torch.no_grad():
    negative = (model.act(model.fc1(inputs)) < 0).float().mean().item()
assert 0.3 < negative < 0.7, negative
assert torch.isnan(output).all()


def raised(function, exception):
    """The exception of type ``exception`` that ``function()`` raised, else None."""
    try:
        function()
    except exception as error:
        return error
    return None


# sphinx_gallery_end_ignore

# %%
# Finding the first module with non-finite output
# -----------------------------------------------
#
# A forward hook on every submodule checks ``torch.isfinite`` on the output.
# Modules finish in the order the data flows through them, so the first
# report names the module where the NaN appeared; every module after it only
# passes the NaN on.

reports = []


def check_output(name):
    def hook(module, args, output):
        bad = (~torch.isfinite(output)).sum().item()
        if bad:
            reports.append(f"{name} ({type(module).__name__}): {bad} non-finite values")

    return hook


handles = [m.register_forward_hook(check_output(n)) for n, m in model.named_modules() if n]
try:
    model(inputs)
finally:
    for handle in handles:
        handle.remove()

print("first module with non-finite output:", reports[0])
print("all reports, in order:")
for report in reports:
    print("  ", report)

# sphinx_gallery_start_ignore
# "the first report names the module where the NaN appeared; every module after it only
# passes the NaN on"
assert [report.split()[0] for report in reports] == ["log", "fc2"], reports
# next cell: "a lambda defined in the loop would see only the last name"
seen_names = []
lambda_handles = [
    m.register_forward_hook(lambda module, args, output: seen_names.append(name))
    for name, m in model.named_modules()
    if name
]
model(inputs)
for handle in lambda_handles:
    handle.remove()
assert seen_names == ["fc2"] * 4, seen_names
# sphinx_gallery_end_ignore

# %%
# The hook is built by ``check_output(name)`` so that each hook remembers its
# own module name: a ``lambda`` defined in the loop would see only the last
# ``name``. The ``try/finally`` removes the hooks even if the forward pass
# raises.
#
# The library's ``detect_anomalies``
# ----------------------------------
#
# ``hooks_tutorial.detect_anomalies(model)`` installs such checks on every
# module (forward outputs and inputs, and gradients in the backward pass) for
# the duration of a ``with`` block. It raises :obj:`hooks_tutorial.AnomalyError`
# at the first non-finite value, so the traceback points at the moment the
# values appeared.

try:
    with ht.detect_anomalies(model):
        model(inputs)
except ht.AnomalyError as error:
    print(f"AnomalyError: {error}")
    print("module:", error.module, "| phase:", error.phase, "| NaN count:", error.nan)
print("hooks left on the model:", ht.count_hooks(model).total)


# sphinx_gallery_start_ignore
# "It raises hooks_tutorial.AnomalyError at the first non-finite value" (the log's NaN in
# the forward pass); summary: "no hook is left afterwards"
def forward_under_detect_anomalies():
    with ht.detect_anomalies(model):
        model(inputs)


anomaly = raised(forward_under_detect_anomalies, ht.AnomalyError)
assert (anomaly.module, anomaly.phase) == ("log", "forward"), anomaly
assert anomaly.nan > 0, anomaly
assert ht.count_hooks(model).total == 0
# sphinx_gallery_end_ignore

# %%
# A NaN that appears only in the backward pass
# --------------------------------------------
#
# A common way to keep a function such as ``log`` or ``sqrt`` away from
# negative inputs is ``torch.where``: below, the square root is taken where
# the input is positive and 0 is used elsewhere. The forward pass is then
# finite, but the gradients are not. ``torch.where`` sends a zero gradient to
# the branch it did not pick, and the backward of ``sqrt`` divides that zero
# by ``2 * sqrt(x)``, which is NaN where ``x`` is negative.


class SqrtOfPositive(nn.Module):
    def forward(self, x):
        return torch.where(x > 0, torch.sqrt(x), torch.zeros_like(x))


where_model = nn.Sequential(
    OrderedDict(fc1=nn.Linear(8, 16), act=nn.Tanh(), sqrt=SqrtOfPositive(), fc2=nn.Linear(16, 4))
)
output = where_model(inputs)
print("forward output is finite:", torch.isfinite(output).all().item())
output.sum().backward()
nan_count = torch.isnan(where_model.fc1.weight.grad).sum().item()
print(f"NaN values in fc1.weight.grad: {nan_count} of {where_model.fc1.weight.numel()}")

# sphinx_gallery_start_ignore
# "The forward pass is then finite, but the gradients are not."
assert torch.isfinite(output).all()
assert nan_count > 0
# sphinx_gallery_end_ignore

# %%
# Forward checks see nothing here. PyTorch's own anomaly mode,
# ``torch.autograd.detect_anomaly()``, checks the result of every backward
# function and raises at the first NaN. It also records, during the forward
# pass, where each operation was called, and reports that place in a warning.
# The cell below keeps the warnings and prints the code line from that report.

where_model.zero_grad()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
        with torch.autograd.detect_anomaly():
            where_model(inputs).sum().backward()
    except RuntimeError as error:
        print(f"RuntimeError: {error}")
messages = [str(w.message) for w in caught]
print("warning:", messages[0])
forward_trace = next(m for m in messages if m.startswith("Error detected in"))
print(forward_trace.splitlines()[0])
code_lines = [line.strip() for line in forward_trace.splitlines() if line.startswith("    ")]
print("forward call that created it:", code_lines[-1])


# sphinx_gallery_start_ignore
# "checks the result of every backward function and raises at the first NaN. It also
# records ... where each operation was called, and reports that place in a warning";
# next cell: "Anomaly mode names the autograd function (SqrtBackward0) and the line of the
# forward pass that created it. As its warning says, it slows every operation down"
def backward_under_detect_anomaly():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.autograd.detect_anomaly():
            where_model(inputs).sum().backward()


where_model.zero_grad()
anomaly = raised(backward_under_detect_anomaly, RuntimeError)
assert "Function 'SqrtBackward0' returned nan values" in str(anomaly), anomaly
assert "will increase the runtime" in messages[0], messages[0]
assert forward_trace.startswith("Error detected in SqrtBackward0."), forward_trace
assert code_lines[-1] == "return torch.where(x > 0, torch.sqrt(x), torch.zeros_like(x))"
# sphinx_gallery_end_ignore

# %%
# Anomaly mode names the autograd function (``SqrtBackward0``) and the line of
# the forward pass that created it. As its warning says, it slows every
# operation down, so switch it on only while hunting a NaN.
# ``hooks_tutorial.detect_anomalies`` looks at modules instead and names the
# module whose backward produced the NaN:

try:
    with ht.detect_anomalies(where_model):
        where_model(inputs).sum().backward()
except ht.AnomalyError as error:
    print(f"AnomalyError: {error}")


# sphinx_gallery_start_ignore
# "names the module whose backward produced the NaN": sqrt, in the backward pass (the
# forward checks found nothing)
def backward_under_detect_anomalies():
    with ht.detect_anomalies(where_model):
        where_model(inputs).sum().backward()


anomaly = raised(backward_under_detect_anomalies, ht.AnomalyError)
assert anomaly.phase == "backward", anomaly
assert anomaly.nan > 0, anomaly
assert str(anomaly).endswith("'sqrt'"), anomaly
assert ht.count_hooks(where_model).total == 0
# sphinx_gallery_end_ignore

# %%
# Anomaly mode is built on the backward graph's own nodes:
# :doc:`/auto_examples/06_pytorch_uses_hooks/plot_32_autograd_graph_hooks`
# shows those nodes, their hooks, and the same hunt done with them.
#
# Dead ReLUs
# ----------
#
# A ReLU unit whose input is negative for every example outputs zero and
# passes no gradient back: it has stopped learning. A large negative bias,
# which a too-large update can produce, causes exactly this. Below, the bias
# of the third hidden layer is set to -2 on purpose; forward hooks on the
# ReLUs then measure, for a batch of 512 inputs, the fraction of outputs that
# are zero and the fraction of units that are zero for *every* input.

torch.manual_seed(0)
layers = []
for _ in range(4):
    layers += [nn.Linear(32, 32), nn.ReLU()]
mlp = nn.Sequential(*layers, nn.Linear(32, 1))
with torch.no_grad():
    mlp[4].bias.fill_(-2.0)  # the third Linear layer: push its units below zero

relu_stats = {}


def relu_statistics(name):
    def hook(module, args, output):
        zero = output == 0
        relu_stats[name] = {
            "zero fraction": zero.float().mean().item(),
            "dead units": zero.all(dim=0).float().mean().item(),  # zero for every input
        }

    return hook


relus = [(n, m) for n, m in mlp.named_modules() if isinstance(m, nn.ReLU)]
handles = [m.register_forward_hook(relu_statistics(f"ReLU {n}")) for n, m in relus]
with torch.no_grad():  # forward hooks fire under no_grad; no graph is needed here
    mlp(torch.randn(512, 32))
for handle in handles:
    handle.remove()

for name, stats in relu_stats.items():
    print(
        f"{name:8} zero outputs: {stats['zero fraction']:.2f}   dead units: {stats['dead units']:.2f}"
    )

# sphinx_gallery_start_ignore
# next cell: "In the first two ReLU layers about half of the outputs are zero and no unit
# is dead" (0.4 to 0.6: 0.50 and 0.52 in the builds so far, of 512 x 32 outputs)
for name in ["ReLU 1", "ReLU 3"]:
    assert 0.4 < relu_stats[name]["zero fraction"] < 0.6, relu_stats[name]
    assert relu_stats[name]["dead units"] == 0, relu_stats[name]
# "The layer with the negative bias is silent"
assert relu_stats["ReLU 5"] == {"zero fraction": 1.0, "dead units": 1.0}
# "each of its units outputs its bias alone, the same for every input: where that bias is
# negative the unit is dead too" (and only there: every zero output is a dead unit's)
negative_bias = (mlp[6].bias <= 0).float().mean().item()
assert relu_stats["ReLU 7"]["dead units"] == negative_bias, relu_stats["ReLU 7"]
assert relu_stats["ReLU 7"]["zero fraction"] == negative_bias, relu_stats["ReLU 7"]
# sphinx_gallery_end_ignore

# %%
# The bar chart shows the same numbers. In the first two ReLU layers about
# half of the outputs are zero and no unit is dead: that is what a healthy
# layer looks like. The layer with the negative bias is silent. The layer after it
# receives only zeros, so each of its units outputs its bias alone, the same
# for every input: where that bias is negative the unit is dead too.

names = list(relu_stats)
positions = np.arange(len(names))
fig, ax = plt.subplots(figsize=(5.2, 3.5), layout="constrained")
ax.bar(
    positions - 0.2,
    [s["zero fraction"] for s in relu_stats.values()],
    width=0.4,
    color="#3b528b",
    label="zero outputs",
)
ax.bar(
    positions + 0.2,
    [s["dead units"] for s in relu_stats.values()],
    width=0.4,
    color="#5ec962",
    label="dead units",
)
ax.set_xticks(positions, names)
ax.set_ylim(0, 1)
ax.set_ylabel("fraction")
ax.set_title("ReLU activity per layer (batch of 512)")
ax.legend()
plt.show()

# %%
# Monitoring gradient norms
# -------------------------
#
# The last failure shows up in the gradients. A post-accumulate hook on the
# weight of each Linear layer records the norm of its gradient at every
# training step. We train the same deep MLP twice on a fixed batch, once with
# a learning rate of 0.01 and once with a learning rate that is far too high.


def deep_mlp(depth=8, width=32):
    torch.manual_seed(0)
    layers = []
    for _ in range(depth):
        linear = nn.Linear(width, width)
        nn.init.kaiming_normal_(linear.weight, nonlinearity="relu")
        nn.init.zeros_(linear.bias)
        layers += [linear, nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, 1))


def train_and_record(lr, steps=8):
    net = deep_mlp()
    history = {}
    handles = []
    linears = [(n, m) for n, m in net.named_modules() if isinstance(m, nn.Linear)]
    for name, linear in linears:
        history[name] = []
        handles.append(
            linear.weight.register_post_accumulate_grad_hook(
                lambda param, name=name: history[name].append(param.grad.norm().item())
            )
        )
    torch.manual_seed(1)
    x, y = torch.randn(64, 32), torch.randn(64, 1)
    optimizer = torch.optim.SGD(net.parameters(), lr=lr)
    try:
        for _ in range(steps):
            optimizer.zero_grad()
            nn.functional.mse_loss(net(x), y).backward()
            optimizer.step()
    finally:
        for handle in handles:
            handle.remove()
    return history


runs = {lr: train_and_record(lr) for lr in [0.01, 0.15]}
for lr, history in runs.items():
    first_layer = next(iter(history))
    norms = " ".join(f"{v:.2g}" for v in history[first_layer])
    print(f"lr={lr}: gradient norm of layer {first_layer} per step: {norms}")
    all_norms = np.array(list(history.values()))  # one row per layer, one column per step
    finite = all_norms[np.isfinite(all_norms)]
    print(f"        largest finite norm over all layers and steps: {finite.max():.2g}")
    growth = (all_norms[:, 3] / all_norms[:, 0]).min()
    print(f"        smallest growth from step 1 to step 4 over all layers: {growth:.2g}")
    bad_steps = [step for step in range(8) if not np.isfinite(all_norms[:, step]).all()]
    print(
        f"        first step with a non-finite gradient norm: {bad_steps[0] + 1 if bad_steps else None}"
    )

# sphinx_gallery_start_ignore
# next cell: "with the small learning rate no layer's gradient norm exceeds 3 in any step"
# (2.8 at most in the builds so far); "with the large one the norm of every layer grows
# more than ten-thousandfold from step 1 to step 4 and overflows at step 5" (at least
# 2e+05-fold in the builds so far; the weights after step 4 overflow float32 in the
# forward pass of step 5 by many orders of magnitude)
small, large = (np.array(list(runs[lr].values())) for lr in [0.01, 0.15])
assert np.isfinite(small).all()
assert small.max() < 3, small.max()
assert (large[:, 3] / large[:, 0]).min() > 1e4, large[:, 3] / large[:, 0]
assert np.isfinite(large[:, :4]).all()
assert not np.isfinite(large[:, 4]).any(), large[:, 4]
# sphinx_gallery_end_ignore

# %%
# The ``lambda`` gets the layer name as a default argument (``name=name``), for the
# same reason as the ``check_output`` factory above. On a log axis the two runs
# look very different: with the small learning rate no layer's gradient norm
# exceeds 3 in any step; with the large one the norm of every layer grows
# more than ten-thousandfold from step 1 to step 4 and overflows at step 5
# (non-finite values are not drawn).

fig, axes = plt.subplots(2, 1, figsize=(5.2, 6.4), sharex=True, sharey=True, layout="constrained")
colors = plt.cm.viridis(np.linspace(0, 0.9, len(runs[0.01])))
for ax, (lr, history) in zip(axes, runs.items(), strict=True):
    for color, (name, values) in zip(colors, history.items(), strict=True):
        norms = np.array(values)
        norms[~np.isfinite(norms)] = np.nan
        ax.plot(
            range(1, len(norms) + 1),
            norms,
            marker="o",
            markersize=3,
            color=color,
            label=f"layer {name}",
        )
    ax.set_yscale("log")
    ax.set_xticks(range(1, 9))
    ax.set_ylabel("gradient norm of the weight")
    ax.set_title(f"learning rate {lr}")
axes[1].set_xlabel("training step")
axes[1].legend(ncol=2)
plt.show()

# %%
# Summary
# -------
#
# - Forward hooks on every module, checking ``torch.isfinite``, name the first
#   module whose output is NaN or Inf.
# - ``hooks_tutorial.detect_anomalies(model)`` does this (and checks
#   gradients too) inside a ``with`` block and raises ``AnomalyError`` with
#   the module's name; no hook is left afterwards.
# - A NaN that appears only in the backward pass (here from ``torch.where``)
#   is found by ``torch.autograd.detect_anomaly()``, which names the backward
#   function and the forward line that created it; use it for debugging only.
# - Forward hooks on ReLUs measure how many outputs are zero and how many
#   units are dead; they also work under ``torch.no_grad()``.
# - Post-accumulate hooks on weights record gradient norms per layer;
#   plotted on a log axis they show an exploding run at a glance.
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
# 1. Write a module ``SafeLog`` that replaces ``torch.log(x)`` by
#    ``torch.log(x.abs() + 1e-6)``, put it in place of ``model.log`` and run
#    the NaN search again. What do the hooks report? Check:
#    ``ht.exercises.check("13.1", SafeLog)``.
# 2. *In words:* a ``sqrt`` after a ReLU is finite in the forward pass. Build
#    the page's first model with a ReLU in place of its ``Tanh`` and
#    ``torch.sqrt`` in place of its ``log``, and use ``ht.detect_anomalies``
#    around its forward *and* backward pass: what does it report, and why?
#    Does ``torch.autograd.detect_anomaly()`` report it too?
# 3. Write ``dead_units(model, inputs)``, which returns, for each ReLU of
#    ``model``, the fraction of its units that are zero for every input.
#    Count the dead units of ``mlp`` again with it after setting the bias of
#    ``mlp[4]`` back to zero. Which layers still have dead units? Check:
#    ``ht.exercises.check("13.3", dead_units)``.

# %%
# .. rst-class:: solution
#
# **Solution 1.** No module reports anything (an empty list): with
# ``x.abs() + 1e-6`` the logarithm only sees positive numbers, so every output
# is finite.


class SafeLog(nn.Module):
    def forward(self, x):
        return torch.log(x.abs() + 1e-6)


model.log = SafeLog()
reports.clear()
handles = [m.register_forward_hook(check_output(n)) for n, m in model.named_modules() if n]
model(inputs)
for handle in handles:
    handle.remove()
print("reports:", reports)

# sphinx_gallery_start_ignore
# "No module reports anything (an empty list)"
assert reports == [], reports
# sphinx_gallery_end_ignore

ht.exercises.check("13.1", SafeLog)

# sphinx_gallery_start_ignore
from page_checks import assert_check  # docs/_ext: the build's checks


# the absolute value alone leaves log(0) = -inf
class LogOfAbs(nn.Module):
    def forward(self, x):
        return torch.log(x.abs())


assert_check("13.1", SafeLog, LogOfAbs, "inf_at_zero")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 2.** ``detect_anomalies`` stops in the backward pass: the
# gradient of the ReLU's output has one Inf value for each zero in that output
# (the Inf count of the first line is the count of zeros on the second), since
# the derivative of ``sqrt`` at 0 is infinite. It names ``sqrt`` as the module
# whose backward made them.
# ``torch.autograd.detect_anomaly()`` raises nothing: it looks for NaN only,
# and the ReLU's backward sets the gradient to zero exactly where the Inf
# values are, so the parameter gradients stay finite (``True``).


class SqrtFeatures(nn.Module):
    def forward(self, x):
        return torch.sqrt(x)


model = nn.Sequential(
    OrderedDict(fc1=nn.Linear(8, 16), act=nn.ReLU(), sqrt=SqrtFeatures(), fc2=nn.Linear(16, 4))
)
try:
    with ht.detect_anomalies(model):
        model(inputs).sum().backward()
except ht.AnomalyError as error:
    print(error)
with torch.no_grad():
    zeros = (model.act(model.fc1(inputs)) == 0).sum().item()
print("zero outputs of the ReLU:", zeros)
model.zero_grad()
try:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # anomaly mode warns that it is on
        with torch.autograd.detect_anomaly():
            model(inputs).sum().backward()
    anomaly_raised = False
except RuntimeError as error:
    anomaly_raised = str(error)
print("detect_anomaly raised:", anomaly_raised)
print("fc1 gradient finite:", torch.isfinite(model.fc1.weight.grad).all().item())

# sphinx_gallery_start_ignore
# "detect_anomaly() raises nothing ... the parameter gradients stay finite (True)"
assert anomaly_raised is False
assert torch.isfinite(model.fc1.weight.grad).all()


def backward_under_detect_anomalies():
    with ht.detect_anomalies(model):
        model(inputs).sum().backward()


# "stops in the backward pass: the gradient of the ReLU's output has one Inf value for
# each zero in that output ... It names sqrt" (and there are zeros: the claim is not empty)
anomaly = raised(backward_under_detect_anomalies, ht.AnomalyError)
assert anomaly.phase == "backward", anomaly
assert (anomaly.nan, anomaly.inf) == (0, zeros), anomaly
assert zeros > 0, zeros
assert str(anomaly).endswith("'sqrt'"), anomaly
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 3.** Only the last ReLU, ``ReLU 7``, still has dead units.
# PyTorch's default initialisation shrinks the input-driven part of the signal
# about threefold per layer (the standard deviations printed below), so at
# ``mlp[6]`` the biases outweigh the input, and a unit with a negative bias is
# zero for every input.


def dead_units(model, inputs):
    relu_stats.clear()
    relus = [(n, m) for n, m in model.named_modules() if isinstance(m, nn.ReLU)]
    handles = [m.register_forward_hook(relu_statistics(f"ReLU {n}")) for n, m in relus]
    try:
        with torch.no_grad():
            model(inputs)
    finally:
        for handle in handles:
            handle.remove()
    return {name: stats["dead units"] for name, stats in relu_stats.items()}


with torch.no_grad():
    mlp[4].bias.zero_()
dead_fractions = dead_units(mlp, torch.randn(512, 32))
print({name: round(fraction, 2) for name, fraction in dead_fractions.items()})
# how large is the part of each layer's output that depends on the input?
spreads = []
with torch.no_grad():
    signal = torch.randn(512, 32)
    for i, layer in enumerate(mlp[:-1]):
        if isinstance(layer, nn.Linear):
            varying = (signal @ layer.weight.T).std(dim=0).mean().item()
            bias = layer.bias.abs().mean().item()
            spreads.append((varying, bias))
            print(f"mlp[{i}]: input-driven std {varying:.3f}, mean |bias| {bias:.3f}")
        signal = layer(signal)

# sphinx_gallery_start_ignore
# "Only the last ReLU, ReLU 7, still has dead units"
dead = [name for name, fraction in dead_fractions.items() if fraction > 0]
assert dead == ["ReLU 7"], dead_fractions
import itertools

# "shrinks the input-driven part of the signal about threefold per layer": each step
# between 2 and 4.5 times smaller (2.9 to 3.1 in the builds so far)
stds = [std for std, _ in spreads]
assert len(stds) == 4
assert all(2 < a / b < 4.5 for a, b in itertools.pairwise(stds)), stds
# "at mlp[6] the biases outweigh the input": more than three times larger (3.7 so far)
assert spreads[3][1] > 3 * spreads[3][0], spreads[3]
# sphinx_gallery_end_ignore

ht.exercises.check("13.3", dead_units)

# sphinx_gallery_start_ignore


# the fraction of zero outputs is not the fraction of dead units
def zero_fractions(model, inputs):
    relu_stats.clear()
    relus = [(n, m) for n, m in model.named_modules() if isinstance(m, nn.ReLU)]
    handles = [m.register_forward_hook(relu_statistics(f"ReLU {n}")) for n, m in relus]
    try:
        with torch.no_grad():
            model(inputs)
    finally:
        for handle in handles:
            handle.remove()
    return {name: stats["zero fraction"] for name, stats in relu_stats.items()}


assert_check("13.3", dead_units, zero_fractions, "zero_fraction")
from page_checks import assert_exercises_checked, assert_no_hooks_left  # docs/_ext

assert_exercises_checked()
assert_no_hooks_left(globals())
# sphinx_gallery_end_ignore
