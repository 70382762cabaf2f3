# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
Forward pre-hooks: changing data in flight
==========================================

.. index::
   ! register_forward_pre_hook
   ! forward pre-hook
   ! 前向预钩子
   ! with_kwargs

A forward hook can do more than look. A *forward pre-hook* runs just before a
module's ``forward`` and may hand it different arguments; a forward hook may
hand back a different output. This is how you normalise or clamp what enters a
layer, switch off a channel to see what it was doing, or patch a model you
cannot edit. This page shows what each hook may return, and the three options
``with_kwargs``, ``always_call`` and ``prepend``.

.. rubric:: What you will learn
   :heading-level: 2

- how ``register_forward_pre_hook`` runs before ``forward``, and how
  returning new arguments changes what ``forward`` receives;
- how a forward hook that returns a value replaces the module's output (and
  how a ``lambda`` can do it by accident);
- how ``with_kwargs=True`` changes the pre-hook's signature and what it must
  return;
- how ``always_call=True`` makes a forward hook run even when ``forward``
  raises an exception;
- how ``prepend=True`` changes the order in which hooks run.

**Prerequisites**: :doc:`/auto_examples/02_module_hooks/plot_05_forward_hooks`.
"""

# %%
# Before and after ``forward``
# ----------------------------
#
# A pre-hook is called as ``hook(module, args)``: it sees the positional
# arguments, but no output yet, since ``forward`` has not run. Each function
# below prints one line, so the output shows the order.

import torch
from torch import nn

torch.manual_seed(0)


class Shout(nn.Module):
    def forward(self, x):
        print("  forward runs")
        return x * 2


shout = Shout()


def before(module, args):
    print("  pre-hook sees args =", args)


def after(module, args, output):
    print("  forward hook sees output =", output)


pre_handle = shout.register_forward_pre_hook(before)
post_handle = shout.register_forward_hook(after)
print("calling shout(x):")
result = shout(torch.tensor([1.0, 2.0]))
pre_handle.remove()
post_handle.remove()

# %%
# Returning new arguments
# -----------------------
#
# If a pre-hook returns something other than ``None``, it replaces the
# arguments. Return a tuple (one element per positional argument); a single
# tensor is wrapped into a one-element tuple for you. Here a pre-hook clamps
# the input of a linear layer to ``[0, 1]``, and a forward hook records what
# the layer really received.

layer = nn.Linear(4, 2)
x = torch.tensor([[-2.0, 0.5, 3.0, 0.25]])
seen = []


def clamp_to_unit(module, args):
    (x,) = args
    return (x.clamp(0.0, 1.0),)


def record_input(module, args, output):
    seen.append(args[0])


record_handle = layer.register_forward_hook(record_input)

out_plain = layer(x)
clamp_handle = layer.register_forward_pre_hook(clamp_to_unit)
out_clamped = layer(x)
clamp_handle.remove()
record_handle.remove()

print("input given:         ", x)
print("layer saw, no hook:  ", seen[0])
print("layer saw, with hook:", seen[1])
print("outputs differ:", not torch.equal(out_plain, out_clamped))

# %%
# The same pattern normalises data inside the model: the pre-hook below
# standardises each sample to mean 0 and standard deviation 1 before the
# layer sees it. Returning ``None`` (as ``record_input`` does) leaves
# everything unchanged.


def standardise(module, args):
    x = args[0]
    return (x - x.mean(dim=1, keepdim=True)) / x.std(dim=1, keepdim=True)


seen.clear()
record_handle = layer.register_forward_hook(record_input)
with layer.register_forward_pre_hook(standardise):
    layer(torch.tensor([[10.0, 20.0, 30.0, 40.0]]))
record_handle.remove()
print(f"mean: {seen[0].mean().item():.4f}  std: {seen[0].std().item():.4f}")

# %%
# Returning a new output
# ----------------------
#
# A forward hook that returns a value replaces the module's output: the next
# layer, and the caller, get the returned value instead. Below, a hook on a
# convolutional layer zeroes channel 0 (an *ablation*), and the model's output
# changes.

model = nn.Sequential(
    nn.Conv2d(1, 3, kernel_size=3),
    nn.ReLU(),
    nn.Flatten(),
    nn.Linear(3 * 4 * 4, 2),
)
image = torch.randn(1, 1, 6, 6)


def zero_channel_0(module, args, output):
    output = output.clone()  # do not edit the original in place
    output[:, 0] = 0.0
    return output


before_ablation = model(image)
with model[0].register_forward_hook(zero_channel_0):
    after_ablation = model(image)
print("logits before:", before_ablation)
print("logits after: ", after_ablation)

# %%
# This makes ``lambda`` hooks risky: a ``lambda`` returns the value of its
# expression. ``lambda _m, _args, out: stored.append(out)`` returns ``None``
# and is harmless, but the ``lambda`` below returns the handle made by
# ``register_hook``, and that handle becomes the layer's "output".

with layer.register_forward_hook(lambda _m, _args, out: out.register_hook(lambda grad: grad)):
    strange = layer(x)
print(type(strange))

# %%
# Keyword arguments: ``with_kwargs=True``
# ---------------------------------------
#
# With ``with_kwargs=True`` the pre-hook is called as
# ``hook(module, args, kwargs)`` and, if it returns anything, must return the
# pair ``(args, kwargs)``. Here a pre-hook caps the keyword argument
# ``factor``.


class Scale(nn.Module):
    def forward(self, x, factor=1.0):
        return x * factor


scale = Scale()


def cap_factor(module, args, kwargs):
    kwargs = dict(kwargs)
    kwargs["factor"] = min(kwargs.get("factor", 1.0), 2.0)
    return args, kwargs


with scale.register_forward_pre_hook(cap_factor, with_kwargs=True):
    print(scale(torch.ones(3), factor=100.0))

# %%
# Returning only the arguments is an error that says what is expected.


def forgets_kwargs(module, args, kwargs):
    return args


with scale.register_forward_pre_hook(forgets_kwargs, with_kwargs=True):
    try:
        scale(torch.ones(3), factor=100.0)
    except RuntimeError as error:
        print("RuntimeError:", error)

# %%
# Forward hooks take ``with_kwargs=True`` too; their signature becomes
# ``hook(module, args, kwargs, output)`` (see
# :doc:`/auto_examples/02_module_hooks/plot_05_forward_hooks`).
#
# ``always_call=True``: hooks that run even on errors
# ---------------------------------------------------
#
# When ``forward`` raises, ordinary forward hooks never run. A hook registered
# with ``always_call=True`` runs anyway, with ``output=None``, and then the
# exception continues to the caller. This suits clean-up work, such as
# stopping a timer or a trace that a pre-hook started.


class Fragile(nn.Module):
    def forward(self, x):
        if x.isnan().any():
            msg = "input contains NaN"
            raise ValueError(msg)
        return x + 1


fragile = Fragile()
log = []
handles = [
    fragile.register_forward_pre_hook(lambda _m, _args: log.append("pre-hook")),
    fragile.register_forward_hook(lambda _m, _args, _out: log.append("ordinary hook")),
    fragile.register_forward_hook(
        lambda _m, _args, out: log.append(f"always_call hook, output={out}"),
        always_call=True,
    ),
]

fragile(torch.ones(2))
print("good input:", log)

log.clear()
try:
    fragile(torch.tensor([1.0, float("nan")]))
except ValueError as error:
    print("caught:", error)
print("bad input: ", log)

for handle in handles:
    handle.remove()

# %%
# ``prepend=True``: the order of hooks
# ------------------------------------
#
# Hooks on one module run in the order they were registered. ``prepend=True``
# puts a new hook in front of the existing ones, which matters as soon as hooks
# change the data: each hook receives what the previous one returned.

identity = nn.Identity()
order = []
handles = [
    identity.register_forward_hook(lambda _m, _args, _out: order.append("first registered")),
    identity.register_forward_hook(lambda _m, _args, _out: order.append("second registered")),
    identity.register_forward_hook(
        lambda _m, _args, _out: order.append("third, prepend=True"), prepend=True
    ),
]
identity(torch.ones(1))
print(order)
for handle in handles:
    handle.remove()

# %%
# Two output-changing hooks show why the order matters: "add 1" then "double"
# differs from "double" then "add 1".


def add_one(module, args, out):
    return out + 1


def double(module, args, out):
    return out * 2


with identity.register_forward_hook(add_one), identity.register_forward_hook(double):
    print("add_one, then double:", identity(torch.tensor([1.0])))
with identity.register_forward_hook(add_one), identity.register_forward_hook(double, prepend=True):
    print("double, then add_one:", identity(torch.tensor([1.0])))

# %%
# Summary
# -------
#
# - ``register_forward_pre_hook(hook)`` calls ``hook(module, args)`` before
#   ``forward``; a return value other than ``None`` replaces the arguments (a
#   single value is wrapped into a tuple).
# - A forward hook that returns a value replaces the output; a ``lambda``
#   returns its expression, so it can do this by accident.
# - With ``with_kwargs=True`` a pre-hook gets ``(module, args, kwargs)`` and
#   must return ``None`` or ``(args, kwargs)``.
# - ``always_call=True`` runs a forward hook even when ``forward`` raises
#   (with ``output=None``).
# - Hooks run in registration order; ``prepend=True`` puts a hook first.
#
# Exercises
# ---------
#
# 1. Write a pre-hook that adds Gaussian noise with standard deviation 0.1 to
#    the input of ``layer``, but only while ``layer.training`` is ``True``.
# 2. Write a forward hook that clamps the output of ``model[0]`` to at most
#    1.0, and check with ``model[0]``'s output captured by a second hook
#    (registered after the first) that no value exceeds 1.0.
# 3. Use a pre-hook and an ``always_call=True`` forward hook to count how many
#    calls of ``fragile`` started and how many finished without an error.
#
# .. dropdown:: Solutions
#
#    .. code-block:: python
#
#       # 1. the pre-hook checks the module's training flag at every call
#       def add_noise(module, args):
#           if module.training:
#               return (args[0] + 0.1 * torch.randn_like(args[0]),)
#           return None
#
#       with layer.register_forward_pre_hook(add_noise):
#           layer.train()
#           noisy = layer(x)
#           layer.eval()
#           clean = layer(x)
#       layer.train()  # back to the default mode
#       print("training mode, output changed:", not torch.equal(noisy, out_plain))
#       print("eval mode, output unchanged:  ", torch.equal(clean, out_plain))
#
#       # 2. the second hook receives what the first one returned
#       captured = []
#       with (
#           model[0].register_forward_hook(lambda m, a, out: out.clamp(max=1.0)),
#           model[0].register_forward_hook(lambda m, a, out: captured.append(out)),
#       ):
#           model(image)
#       print(f"largest value without the hook: {model[0](image).max().item():.2f}")
#       print(f"largest value the second hook saw: {captured[0].max().item():.2f}")
#
#       # 3. the always_call hook gets output=None when forward raised
#       counts = {"started": 0, "finished": 0}
#
#       def on_start(module, args):
#           counts["started"] += 1
#
#       def on_end(module, args, output):
#           if output is not None:
#               counts["finished"] += 1
#
#       with (
#           fragile.register_forward_pre_hook(on_start),
#           fragile.register_forward_hook(on_end, always_call=True),
#       ):
#           fragile(torch.ones(2))
#           try:
#               fragile(torch.tensor([float("nan")]))
#           except ValueError:
#               pass
#       print(counts)
#
#    **Answers**
#
#    1. In training mode the noise changes the output (``True``); in
#       evaluation mode the hook returns ``None`` and the output is exactly the
#       plain ``layer(x)`` (``True``). ``module.training`` is the same flag
#       that Dropout reads.
#    2. Without the hook the layer's largest value is 1.56; the second hook
#       saw at most 1.00, because hooks run in registration order and each one
#       receives the output the previous one returned.
#    3. It prints ``{'started': 2, 'finished': 1}``: both calls started, and
#       only the first finished, since the ``always_call`` hook gets
#       ``output=None`` when ``forward`` raises.
