# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
``lambda``: small anonymous functions
=====================================

.. index::
   ! lambda
   ! 匿名函数
   ! functools.partial

Hook code is full of ``lambda``: a one-line function written right where it is
passed, without a ``def`` and without a name. It is convenient, and it has
three traps that bite exactly in hook code: loop variables captured too late,
return values that silently replace a module's output, and models that can no
longer be saved with ``torch.save``. This page shows the syntax, the good uses,
and each trap with its fix.

.. rubric:: What you will learn
   :heading-level: 2

- the ``lambda`` syntax, and when a ``def`` is the better choice;
- how to use ``lambda`` as a ``key=`` function and as a short hook;
- why hooks registered in a loop all report the last name, and two fixes;
- why a ``lambda`` forward hook can change a model's output;
- why a model holding a ``lambda`` hook cannot be pickled.

**Prerequisites**: :doc:`/auto_examples/01_python_foundations/plot_01_callbacks`
and :doc:`/auto_examples/01_python_foundations/plot_02_callbacks_vs_decorators`.
"""

# %%
# Syntax
# ------
#
# ``lambda parameters: expression`` creates a function whose body is a single
# expression; its value is returned without a ``return`` statement. The course
# notes' example:

square = lambda x: x**2
print(square(5))

# sphinx_gallery_start_ignore
assert square(5) == 25
# sphinx_gallery_end_ignore

# %%
# The parameter list may have several parameters, defaults, or none at all.

add = lambda a, b=10: a + b
answer = lambda: 42
print(add(1, 2), add(1), answer())

# sphinx_gallery_start_ignore
# "several parameters, defaults, or none at all"
assert (add(1, 2), add(1), answer()) == (3, 11, 42)
# sphinx_gallery_end_ignore

# %%
# Binding a ``lambda`` to a name, as above, works, but PEP 8 (Python's style
# guide) recommends a ``def`` for named functions: it is just as short, and the
# function knows its own name, which then shows up in tracebacks and reprs.


def square_def(x):
    return x**2


print(square.__name__, square_def.__name__)
print(square(5) == square_def(5))

# sphinx_gallery_start_ignore
# "the function knows its own name, which then shows up in tracebacks and reprs"
assert (square.__name__, square_def.__name__) == ("<lambda>", "square_def")
assert "square_def" in repr(square_def)
assert "<lambda>" in repr(square)
# sphinx_gallery_end_ignore

# %%
# The body must be one expression: statements such as ``return``, assignments
# or ``for`` loops are a syntax error. Here we compile such a line as a string
# to show the error without stopping the page.

try:
    compile("f = lambda x: return x", "<example>", "exec")
except SyntaxError as error:
    print(type(error).__name__, "-", error.msg)
    # sphinx_gallery_start_ignore
    statement_error = error  # checked below
    # sphinx_gallery_end_ignore

# sphinx_gallery_start_ignore
# "statements such as return ... are a syntax error" (a NameError here if it compiled)
assert isinstance(statement_error, SyntaxError)
# sphinx_gallery_end_ignore

# %%
# ``lambda`` as a ``key=`` function
# ---------------------------------
#
# The natural home of ``lambda`` is an argument that is used once, such as the
# ``key`` callback of ``sorted``, ``max`` and ``min``.

scores = {"circle": 0.91, "square": 0.75, "star": 0.98}
print(sorted(scores, key=lambda name: scores[name], reverse=True))
print(max(scores.items(), key=lambda item: item[1]))

# sphinx_gallery_start_ignore
assert sorted(scores, key=lambda name: scores[name], reverse=True) == ["star", "circle", "square"]
assert max(scores.items(), key=lambda item: item[1]) == ("star", 0.98)
# sphinx_gallery_end_ignore

# %%
# The same works on a model: sort its layers by their number of parameters.

import torch
from torch import nn

import hooks_tutorial as ht  # ht.exercises.check, for the exercises at the end

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
by_size = sorted(
    model.named_children(),
    key=lambda item: sum(p.numel() for p in item[1].parameters()),
    reverse=True,
)
print([name for name, layer in by_size])

# sphinx_gallery_start_ignore
# "sort its layers by their number of parameters": Linear(4, 8) 40, Linear(8, 2) 18, ReLU 0
assert [name for name, layer in by_size] == ["0", "2", "1"]
# sphinx_gallery_end_ignore

# %%
# ``lambda`` as a short hook
# --------------------------
#
# A forward hook is called as ``hook(module, args, output)``, so a ``lambda``
# with three parameters fits. ``print`` returns ``None``, so this hook only
# reports: a forward hook that returns ``None`` leaves the output unchanged.
# From here on, parameters that a hook ignores start with ``_``, the Python
# convention for "unused".

x = torch.randn(2, 4)
expected = model(x)

layer = model[0]
handle = layer.register_forward_hook(
    lambda m, args, out: print(f"{type(m).__name__}: {tuple(args[0].shape)} -> {tuple(out.shape)}")
)
# sphinx_gallery_start_ignore
import contextlib  # the checks below read what the hooks print
import io

with contextlib.redirect_stdout(io.StringIO()) as printed:
    model(x)
assert printed.getvalue() == "Linear: (2, 4) -> (2, 8)\n", printed.getvalue()
# sphinx_gallery_end_ignore
result = model(x)
handle.remove()
print("output unchanged:", torch.equal(result, expected))

# sphinx_gallery_start_ignore
# "a forward hook that returns None leaves the output unchanged"
assert torch.equal(result, expected)
# sphinx_gallery_end_ignore

# %%
# Pitfall 1: late binding in loops
# --------------------------------
#
# A common idea: register one hook per layer, each printing the layer's name.
# Every ``lambda`` below refers to the *variable* ``name``, not to its value at
# registration time. The hooks run after the loop has finished, when ``name``
# holds the last value, so all three report the same name.

handles = []
for name, layer in model.named_children():
    hook = lambda m, _args, _out: print(f"layer {name}: {type(m).__name__}")
    handles.append(layer.register_forward_hook(hook))

result = model(x)
# sphinx_gallery_start_ignore
# "all three report the same name": the last one
with contextlib.redirect_stdout(io.StringIO()) as printed:
    model(x)
assert printed.getvalue().splitlines() == ["layer 2: Linear", "layer 2: ReLU", "layer 2: Linear"], (
    printed.getvalue()
)
# sphinx_gallery_end_ignore
for handle in handles:
    handle.remove()

# %%
# A ``def`` inside the loop is no different: its body also looks ``name`` up
# when it runs, not when it is defined, so the result is the same.

handles = []
for name, layer in model.named_children():

    def report(m, _args, _out):
        print(f"layer {name}: {type(m).__name__}")

    handles.append(layer.register_forward_hook(report))

result = model(x)
# sphinx_gallery_start_ignore
# "A def inside the loop is no different"
with contextlib.redirect_stdout(io.StringIO()) as printed:
    model(x)
assert printed.getvalue().splitlines() == ["layer 2: Linear", "layer 2: ReLU", "layer 2: Linear"], (
    printed.getvalue()
)
# sphinx_gallery_end_ignore
for handle in handles:
    handle.remove()

# %%
# Fix 1: a default argument. Defaults are evaluated when the function is
# created, so ``name=name`` freezes the current value. PyTorch passes only
# ``module, args, output``, so the default is never overwritten.

handles = []
for name, layer in model.named_children():
    hook = lambda m, _args, _out, name=name: print(f"layer {name}: {type(m).__name__}")
    handles.append(layer.register_forward_hook(hook))

result = model(x)
# sphinx_gallery_start_ignore
# "name=name freezes the current value"
with contextlib.redirect_stdout(io.StringIO()) as printed:
    model(x)
assert printed.getvalue().splitlines() == ["layer 0: Linear", "layer 1: ReLU", "layer 2: Linear"], (
    printed.getvalue()
)
# sphinx_gallery_end_ignore
for handle in handles:
    handle.remove()

# %%
# Fix 2: ``functools.partial`` binds the name as the first argument of an
# ordinary function, which is often easier to read.

import functools


def report_layer(layer_name, m, _args, _out):
    print(f"layer {layer_name}: {type(m).__name__}")


handles = [
    layer.register_forward_hook(functools.partial(report_layer, name))
    for name, layer in model.named_children()
]
result = model(x)
# sphinx_gallery_start_ignore
# "functools.partial binds the name"
with contextlib.redirect_stdout(io.StringIO()) as printed:
    model(x)
assert printed.getvalue().splitlines() == ["layer 0: Linear", "layer 1: ReLU", "layer 2: Linear"], (
    printed.getvalue()
)
# sphinx_gallery_end_ignore
for handle in handles:
    handle.remove()

# %%
# Pitfall 2: a ``lambda`` hook that returns something
# ---------------------------------------------------
#
# A ``lambda`` always returns the value of its expression, and a forward hook
# that returns anything other than ``None`` *replaces the module's output*.
# Here is a plausible hook: keep the first batch's activation of the first
# layer with ``dict.setdefault``. But ``setdefault`` returns the stored value,
# so every later call feeds the *first* batch's activation to the rest of the
# model.

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
batch_1, batch_2 = torch.randn(2, 4), torch.randn(2, 4)
correct_2 = model(batch_2)  # no hook yet

first_activation = {}
handle = model[0].register_forward_hook(
    lambda _m, _args, out: first_activation.setdefault("fc1", out.detach())
)
output_1 = model(batch_1)
output_2 = model(batch_2)
handle.remove()

print("output for batch 2:\n", output_2)
print("correct output for batch 2:\n", correct_2)
print("batch 2 got batch 1's output:", torch.equal(output_2, output_1))

# sphinx_gallery_start_ignore
# "every later call feeds the first batch's activation to the rest of the model"
assert torch.equal(output_2, output_1)
assert not torch.allclose(output_2, correct_2)
# sphinx_gallery_end_ignore

# %%
# The detached value also cut the gradient path: after a backward pass, the
# first layer's weights received no gradient.

output_1.sum().backward()
print("first layer weight.grad:", model[0].weight.grad)

# sphinx_gallery_start_ignore
# "the first layer's weights received no gradient" (the last layer's did)
assert model[0].weight.grad is None
assert model[2].weight.grad is not None
# sphinx_gallery_end_ignore

# %%
# The same trap appears in Grad-CAM code: ``out.register_hook(...)`` returns a
# ``RemovableHandle``, so a ``lambda`` that calls it hands the handle to the
# next layer instead of a tensor.

handle = model[0].register_forward_hook(lambda _m, _args, out: out.register_hook(print))
try:
    model(batch_1)
except TypeError as error:
    print(type(error).__name__, "-", error)
    # sphinx_gallery_start_ignore
    handle_error = error  # checked below
    # sphinx_gallery_end_ignore
finally:
    handle.remove()

# sphinx_gallery_start_ignore
# "hands the handle to the next layer instead of a tensor" (a NameError here if no error)
assert "RemovableHandle" in str(handle_error), handle_error
# sphinx_gallery_end_ignore

# %%
# The fix is a ``def`` whose body stores the value and returns nothing.

first_activation = {}


def keep_first(_m, _args, out):
    first_activation.setdefault("fc1", out.detach())


handle = model[0].register_forward_hook(keep_first)
output_2 = model(batch_2)
handle.remove()
print("output unchanged:", torch.equal(output_2, correct_2))

# sphinx_gallery_start_ignore
# "a def whose body stores the value and returns nothing"
assert torch.equal(output_2, correct_2)
assert torch.equal(first_activation["fc1"], model[0](batch_2).detach())
# sphinx_gallery_end_ignore

# %%
# Pitfall 3: a model holding a ``lambda`` hook cannot be pickled
# --------------------------------------------------------------
#
# ``torch.save(model)`` pickles the whole module, and with it the hook
# dictionaries. Pickle stores a function by its importable name, and a
# ``lambda`` has none. We save into an in-memory buffer (``io.BytesIO``), so
# nothing is written to disk.

import io
import pickle
import re

handle = model[0].register_forward_hook(lambda _m, _args, _out: None)
try:
    torch.save(model, io.BytesIO())
except pickle.PicklingError as error:
    message = re.sub(r" at 0x[0-9a-f]+", "", str(error))  # drop the memory address
    print(type(error).__name__, "-", message)

# sphinx_gallery_start_ignore
# "Pickle stores a function by its importable name, and a lambda has none"
assert "<lambda>" in message, message
# sphinx_gallery_end_ignore

# %%
# Saving the ``state_dict`` (the tensors only) works with any hook attached,
# and is the recommended way to save a model anyway. Removing the hook also
# makes ``torch.save(model)`` work again.

buffer = io.BytesIO()
torch.save(model.state_dict(), buffer)
print("state_dict saved:", buffer.tell() > 0)

handle.remove()
buffer = io.BytesIO()
torch.save(model, buffer)
print("model saved after removing the hook:", buffer.tell() > 0)

# sphinx_gallery_start_ignore
# "Removing the hook also makes torch.save(model) work again" (and the state_dict saved)
assert buffer.tell() > 0
# sphinx_gallery_end_ignore

# %%
# Summary
# -------
#
# - ``lambda parameters: expression`` is a one-expression function; prefer a
#   ``def`` when you want to give the function a name.
# - ``lambda`` fits arguments used once: ``key=`` functions and short hooks
#   whose expression returns ``None``.
# - Hooks made in a loop see the loop variable's *last* value; bind it with a
#   default argument (``name=name``) or ``functools.partial``.
# - A forward hook's return value replaces the output; a ``lambda`` always
#   returns its expression, so write a hook that should only observe as a
#   ``def`` that returns nothing.
# - Lambda hooks cannot be pickled: save the ``state_dict``, or remove the
#   hooks before ``torch.save(model)``.
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
# 1. Sort ``["resnet18", "vgg11", "alexnet"]`` by the number at the end of each
#    name (``alexnet`` has none: count it as 0), using a ``key=`` lambda.
#    Check the lambda itself: ``ht.exercises.check("03.1", lambda name: ...)``.
# 2. Write ``record_shapes(model, shapes)``: it registers a forward hook on
#    every child of ``model`` that stores the output's shape in the dict
#    ``shapes`` under the child's name, with a default argument, and returns
#    the handles. Make sure the hooks do not change the output. Check:
#    ``ht.exercises.check("03.2", record_shapes)``.
# 3. Write a forward hook as a ``lambda`` that intentionally doubles the
#    output of ``model[0]``, and check the new output against a hand-computed
#    one. Check the lambda itself:
#    ``ht.exercises.check("03.3", lambda module, args, output: ...)``.

# %%
# .. rst-class:: solution
#
# **Solution 1.** The sorted names are ``['alexnet', 'vgg11', 'resnet18']``:
# the key turns each name into the number at its end (``0`` for ``alexnet``,
# which has none), and ``sorted`` compares those numbers, not the names.

names = ["resnet18", "vgg11", "alexnet"]
# r"\d*$" matches the digits at the end, or nothing (then 0)
by_number = sorted(names, key=lambda n: int(re.search(r"\d*$", n)[0] or 0))
print(by_number)

# sphinx_gallery_start_ignore
assert by_number == ["alexnet", "vgg11", "resnet18"], by_number
# sphinx_gallery_end_ignore

ht.exercises.check("03.1", lambda n: int(re.search(r"\d*$", n)[0] or 0))

# sphinx_gallery_start_ignore
from page_checks import assert_check  # docs/_ext: the build's checks

# a key that keeps the digits as text: "101" sorts before "50"
assert_check(
    "03.1",
    lambda n: int(re.search(r"\d*$", n)[0] or 0),
    lambda n: re.search(r"\d*$", n)[0],
    "compared_text",
)
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 2.** The shapes are ``{'0': (2, 3), '1': (2, 3), '2': (2, 2)}``
# and the output is unchanged (``True``): ``dict.update`` returns ``None``, so
# each ``lambda`` returns ``None`` too, and ``name=name`` gives each hook its
# own layer name.


def record_shapes(model, shapes):
    return [
        layer.register_forward_hook(
            lambda _m, _args, out, name=name: shapes.update({name: tuple(out.shape)})
        )
        for name, layer in model.named_children()
    ]


shapes = {}
handles = record_shapes(model, shapes)
y = model(batch_1)
for handle in handles:
    handle.remove()
print(shapes, torch.equal(y, model(batch_1)))

# sphinx_gallery_start_ignore
assert shapes == {"0": (2, 3), "1": (2, 3), "2": (2, 2)}, shapes
assert torch.equal(y, model(batch_1))
# sphinx_gallery_end_ignore

ht.exercises.check("03.2", record_shapes)

# sphinx_gallery_start_ignore


# without the default argument every lambda reads name after the loop: "2"
def record_shapes_late(model, shapes):
    return [
        layer.register_forward_hook(lambda _m, _args, out: shapes.update({name: tuple(out.shape)}))
        for name, layer in model.named_children()
    ]


assert_check("03.2", record_shapes, record_shapes_late, "late_binding")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 3.** The hooked model's output matches the hand-computed
# ``model[2](model[1](2 * model[0](batch_1)))`` (``True``): the value a forward
# hook returns replaces the layer's output, here on purpose.

handle = model[0].register_forward_hook(lambda _m, _args, out: out * 2)
doubled = model(batch_1)
handle.remove()
by_hand = model[2](model[1](2 * model[0](batch_1)))
print(torch.allclose(doubled, by_hand))

# sphinx_gallery_start_ignore
# "matches the hand-computed ..." and differs from the output without the hook;
# allclose's default tolerance (rtol 1e-5, atol 1e-8): both sides run the same float32
# operations on the same input, so they can differ by rounding at most
assert torch.allclose(doubled, by_hand)
assert not torch.allclose(doubled, model(batch_1))
# sphinx_gallery_end_ignore

ht.exercises.check("03.3", lambda _m, _args, out: out * 2)

# sphinx_gallery_start_ignore
# a hook that returns a detached tensor: the values are right, the gradient stops there
assert_check(
    "03.3",
    lambda _m, _args, out: out * 2,
    lambda _m, _args, out: out.detach() * 2,
    "detached",
)
from page_checks import assert_exercises_checked, assert_no_hooks_left  # docs/_ext

assert_exercises_checked()
assert_no_hooks_left(globals())
# sphinx_gallery_end_ignore
