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

import hooks_tutorial as ht

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

# sphinx_gallery_start_ignore
# "it sees the positional arguments, but no output yet, since forward has not run":
# the same call, recorded instead of printed
import contextlib
import io

seen_by_hooks = []
with (
    shout.register_forward_pre_hook(lambda _m, args: seen_by_hooks.append(("pre", args))),
    shout.register_forward_hook(lambda _m, _args, out: seen_by_hooks.append(("hook", out))),
    contextlib.redirect_stdout(io.StringIO()),  # forward's own print
):
    shout(torch.tensor([1.0, 2.0]))
assert [kind for kind, _ in seen_by_hooks] == ["pre", "hook"]
assert torch.equal(seen_by_hooks[0][1][0], torch.tensor([1.0, 2.0]))
assert torch.equal(seen_by_hooks[1][1], torch.tensor([2.0, 4.0]))
assert torch.equal(result, torch.tensor([2.0, 4.0]))
# sphinx_gallery_end_ignore

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

# sphinx_gallery_start_ignore
# "a pre-hook clamps the input of a linear layer to [0, 1], and a forward hook records
# what the layer really received"
assert torch.equal(seen[0], x)
assert torch.equal(seen[1], x.clamp(0.0, 1.0))
assert not torch.equal(out_plain, out_clamped)
# sphinx_gallery_end_ignore

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

# sphinx_gallery_start_ignore
# "standardises each sample to mean 0 and standard deviation 1": up to float32 rounding
assert abs(seen[0].mean().item()) < 1e-6, seen[0]
assert abs(seen[0].std().item() - 1) < 1e-6, seen[0]
# sphinx_gallery_end_ignore

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

# sphinx_gallery_start_ignore
# "zeroes channel 0 (an ablation), and the model's output changes"
assert not torch.equal(before_ablation, after_ablation)
# sphinx_gallery_end_ignore

# %%
# This makes ``lambda`` hooks risky: a ``lambda`` returns the value of its
# expression. ``lambda _m, _args, out: stored.append(out)`` returns ``None``
# and is harmless, but the ``lambda`` below returns the handle made by
# ``register_hook``, and that handle becomes the layer's "output".

with layer.register_forward_hook(lambda _m, _args, out: out.register_hook(lambda grad: grad)):
    strange = layer(x)
print(type(strange))

# sphinx_gallery_start_ignore
# "that handle becomes the layer's output"
assert isinstance(strange, torch.utils.hooks.RemovableHandle)
# sphinx_gallery_end_ignore

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
    capped = scale(torch.ones(3), factor=100.0)
print(capped)

# sphinx_gallery_start_ignore
# "a pre-hook caps the keyword argument factor" (at 2.0)
assert torch.equal(capped, torch.full((3,), 2.0))
# sphinx_gallery_end_ignore

# %%
# Returning only the arguments is an error that says what is expected.


def forgets_kwargs(module, args, kwargs):
    return args


# sphinx_gallery_start_ignore
error_message = None  # set by the except clause below
# sphinx_gallery_end_ignore
with scale.register_forward_pre_hook(forgets_kwargs, with_kwargs=True):
    try:
        scale(torch.ones(3), factor=100.0)
    except RuntimeError as error:
        print("RuntimeError:", error)
        # sphinx_gallery_start_ignore
        error_message = str(error)
        # sphinx_gallery_end_ignore

# sphinx_gallery_start_ignore
# "Returning only the arguments is an error that says what is expected"
assert error_message is not None, "no RuntimeError"
assert "must return None or a tuple of (new_args, new_kwargs)" in error_message
# sphinx_gallery_end_ignore

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
# sphinx_gallery_start_ignore
assert log == ["pre-hook", "ordinary hook", "always_call hook, output=tensor([2., 2.])"]
# sphinx_gallery_end_ignore

log.clear()
try:
    fragile(torch.tensor([1.0, float("nan")]))
except ValueError as error:
    print("caught:", error)
    # sphinx_gallery_start_ignore
    # "and then the exception continues to the caller"
    assert str(error) == "input contains NaN"  # noqa: PT017
    # sphinx_gallery_end_ignore
print("bad input: ", log)

# sphinx_gallery_start_ignore
# "When forward raises, ordinary forward hooks never run. A hook registered with
# always_call=True runs anyway, with output=None"
assert log == ["pre-hook", "always_call hook, output=None"]
# sphinx_gallery_end_ignore

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

# sphinx_gallery_start_ignore
# "Hooks on one module run in the order they were registered. prepend=True puts a new
# hook in front of the existing ones"
assert order == ["third, prepend=True", "first registered", "second registered"]
# sphinx_gallery_end_ignore
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
    add_then_double = identity(torch.tensor([1.0]))
with identity.register_forward_hook(add_one), identity.register_forward_hook(double, prepend=True):
    double_then_add = identity(torch.tensor([1.0]))
print("add_one, then double:", add_then_double)
print("double, then add_one:", double_then_add)

# sphinx_gallery_start_ignore
# ""add 1" then "double" differs from "double" then "add 1"": (1 + 1) * 2 and 1 * 2 + 1
assert add_then_double.item() == 4.0
assert double_then_add.item() == 3.0
# sphinx_gallery_end_ignore

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
# Exercises that ask for code come with a check that runs offline, in the
# downloaded notebook or script: write your answer, then run the
# ``ht.exercises.check(...)`` call that ends the exercise. The check says what
# is wrong, or what is right, in the language of the download, and leaves no
# hook behind; each solution ends with the same call.
#
# 1. Write a pre-hook ``add_noise(module, args)`` that adds Gaussian noise with
#    standard deviation 0.1 to the input of ``layer``, but only while
#    ``layer.training`` is ``True``. Check:
#    ``ht.exercises.check("06.1", add_noise)``.
# 2. Write a forward hook ``clamp_output(module, args, output)`` that clamps
#    the output of ``model[0]`` to at most 1.0, and check with ``model[0]``'s
#    output captured by a second hook (registered after the first) that no
#    value exceeds 1.0. Check: ``ht.exercises.check("06.2", clamp_output)``.
# 3. Write ``count_calls(module, inputs)``: with a pre-hook and an
#    ``always_call=True`` forward hook, it counts how many calls of ``module``
#    on the ``inputs`` started and how many finished without an error (it
#    catches the errors), and returns ``{"started": ..., "finished": ...}``.
#    Try it on ``fragile``. Check: ``ht.exercises.check("06.3", count_calls)``.

# %%
# .. rst-class:: solution
#
# **Solution 1.** The pre-hook checks the module's training flag at every
# call. In training mode the noise changes the output (``True``); in
# evaluation mode the hook returns ``None`` and the output is exactly the
# plain ``layer(x)`` (``True``). ``module.training`` is the same flag that
# Dropout reads.


def add_noise(module, args):
    if module.training:
        return (args[0] + 0.1 * torch.randn_like(args[0]),)
    return None


with layer.register_forward_pre_hook(add_noise):
    layer.train()
    noisy = layer(x)
    layer.eval()
    clean = layer(x)
layer.train()  # back to the default mode
print("training mode, output changed:", not torch.equal(noisy, out_plain))
print("eval mode, output unchanged:  ", torch.equal(clean, out_plain))

# sphinx_gallery_start_ignore
# "In training mode the noise changes the output; in evaluation mode ... the output is
# exactly the plain layer(x)"
assert not torch.equal(noisy, out_plain)
assert torch.equal(clean, out_plain)
# sphinx_gallery_end_ignore

ht.exercises.check("06.1", add_noise)

# sphinx_gallery_start_ignore
from page_checks import assert_check  # docs/_ext: the build's checks


# a pre-hook that forgets the training flag adds noise in evaluation mode too
def add_noise_always(module, args):
    return (args[0] + 0.1 * torch.randn_like(args[0]),)


assert_check("06.1", add_noise, add_noise_always, "noise_in_eval")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 2.** Without the hook the layer's largest value is above 1.00
# (the first line); the second hook saw at most 1.00, because hooks run in
# registration order and each one receives the output the previous one
# returned.


def clamp_output(module, args, output):
    return output.clamp(max=1.0)


captured = []
with (
    model[0].register_forward_hook(clamp_output),
    model[0].register_forward_hook(lambda m, args, out: captured.append(out)),
):
    model(image)
largest = model[0](image).max().item()
print(f"largest value without the hook: {largest:.2f}")
print(f"largest value the second hook saw: {captured[0].max().item():.2f}")

# sphinx_gallery_start_ignore
# "above 1.00": so the clamp had work to do (random weights and image, 1.56 in the builds
# so far); "at most 1.00": exactly 1 where it clamped
assert largest > 1.005, largest
assert captured[0].max().item() == 1.0
# sphinx_gallery_end_ignore

ht.exercises.check("06.2", clamp_output)

# sphinx_gallery_start_ignore


# clamp() makes a new tensor: a hook that does not return it changes nothing
def clamp_without_return(module, args, output):
    output.clamp(max=1.0)


assert_check("06.2", clamp_output, clamp_without_return, "returned_none")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 3.** It prints ``{'started': 2, 'finished': 1}``: both calls
# started, and only the first finished, since the ``always_call`` hook gets
# ``output=None`` when ``forward`` raises.


def count_calls(module, inputs):
    counts = {"started": 0, "finished": 0}

    def on_start(module, args):
        counts["started"] += 1

    def on_end(module, args, output):
        if output is not None:
            counts["finished"] += 1

    with (
        module.register_forward_pre_hook(on_start),
        module.register_forward_hook(on_end, always_call=True),
    ):
        for x in inputs:
            try:
                module(x)
            except ValueError as error:
                print("caught:", error)
    return counts


counts = count_calls(fragile, [torch.ones(2), torch.tensor([float("nan")])])
print(counts)

# sphinx_gallery_start_ignore
assert counts == {"started": 2, "finished": 1}
# sphinx_gallery_end_ignore

ht.exercises.check("06.3", count_calls)

# sphinx_gallery_start_ignore


# an always_call hook that counts every call counts the failed one as finished
def count_calls_and_errors(module, inputs):
    counts = {"started": 0, "finished": 0}

    def on_start(module, args):
        counts["started"] += 1

    def on_end(module, args, output):
        counts["finished"] += 1

    with (
        module.register_forward_pre_hook(on_start),
        module.register_forward_hook(on_end, always_call=True),
    ):
        for x in inputs:
            with contextlib.suppress(ValueError):
                module(x)
    return counts


assert_check("06.3", count_calls, count_calls_and_errors, "counted_errors")
from page_checks import assert_exercises_checked, assert_no_hooks_left  # docs/_ext

assert_exercises_checked()
assert_no_hooks_left(globals())
# sphinx_gallery_end_ignore
