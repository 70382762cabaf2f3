# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
Callbacks: functions as arguments
=================================

.. index::
   ! callback
   ! callback function
   ! 回调函数

A *callback* is a function that you pass to another function, so that the
other function can call it when something happens. Every PyTorch hook is a
callback: you hand PyTorch a function, and PyTorch calls it during the forward
or backward pass. This page starts from the course notes' ``calculate``
example and shows, with code that runs, the three reasons callbacks are
useful.

.. rubric:: What you will learn
   :heading-level: 2

- how to pass a function as an argument and call it later;
- how callbacks decouple a general routine from what happens with its result;
- how callbacks drive event-driven code and deferred execution;
- why a PyTorch hook is a callback.

**Prerequisites**: Python functions. No PyTorch knowledge is needed yet.
"""

# %%
# The course notes' example
# -------------------------
#
# ``calculate`` does the arithmetic; what happens with the result is decided by
# the function passed in as ``callback``.


def handle_result(result):
    """Callback that handles the result of a calculation."""
    print(f"The result is: {result}")


def calculate(a, b, callback):
    """Add two numbers, then hand the sum to ``callback``."""
    result = a + b
    callback(result)


calculate(3, 5, handle_result)

# sphinx_gallery_start_ignore
import contextlib  # the checks below read what a callback prints
import io

with contextlib.redirect_stdout(io.StringIO()) as printed:
    calculate(3, 5, handle_result)
assert printed.getvalue() == "The result is: 8\n", printed.getvalue()
# sphinx_gallery_end_ignore

# %%
# Note that we pass ``handle_result`` itself, without parentheses. Writing
# ``handle_result()`` calls it at once, before ``calculate`` even starts, and
# fails, since it needs an argument:

try:
    calculate(3, 5, handle_result())
except TypeError as error:
    print("TypeError:", error)
    # sphinx_gallery_start_ignore
    too_early = error  # checked below
    # sphinx_gallery_end_ignore

# sphinx_gallery_start_ignore
# "calls it at once, before calculate even starts, and fails, since it needs an argument":
# the traceback never reaches calculate (a NameError here if nothing failed)
import traceback

assert "handle_result() missing 1 required positional argument" in str(too_early), too_early
assert "calculate" not in [f.name for f in traceback.extract_tb(too_early.__traceback__)]
# sphinx_gallery_end_ignore

# %%
# A function is an object like any other: it has a type and a name, it is
# callable, and it can be stored in a variable or a list.

print(type(handle_result))
print(handle_result.__name__)
print(callable(handle_result))

# sphinx_gallery_start_ignore
# "it has a type and a name, it is callable"
import types

assert type(handle_result) is types.FunctionType
assert handle_result.__name__ == "handle_result"
assert callable(handle_result)
# sphinx_gallery_end_ignore

# %%
# Value 1: decoupling
# -------------------
#
# ``calculate`` does not know, and does not need to know, what its caller
# wants done with the result. The same function serves three callers without
# a single change: a list collects the results, and a warning is printed only
# for a sum larger than 10.

results = []
calculate(3, 5, results.append)  # collect instead of printing
calculate(10, 20, results.append)
print(results)


def warn_if_large(result):
    if result > 10:
        print(f"Warning: {result} is larger than 10")


calculate(3, 5, warn_if_large)  # prints nothing: 8 is not larger than 10
calculate(7, 8, warn_if_large)

# sphinx_gallery_start_ignore
# "a list collects the results, and a warning is printed only for a sum larger than 10"
assert results == [8, 30], results
with contextlib.redirect_stdout(io.StringIO()) as printed:
    calculate(3, 5, warn_if_large)
    calculate(7, 8, warn_if_large)
assert printed.getvalue() == "Warning: 15 is larger than 10\n", printed.getvalue()
# sphinx_gallery_end_ignore

# %%
# Value 2: event-driven programming
# ---------------------------------
#
# A button does not know what clicking it should do. It keeps a list of
# callbacks ("listeners") and calls each of them, in the order they were
# registered, when the click event happens.
# This is the pattern behind graphical interfaces, network libraries, and
# PyTorch's hook dictionaries.


class Button:
    def __init__(self, label):
        self.label = label
        self.listeners = []

    def on_click(self, callback):
        """Register a callback; it will be called with the button's label."""
        self.listeners.append(callback)

    def click(self):
        print(f"[{self.label} clicked]")
        for callback in self.listeners:
            callback(self.label)


save_button = Button("Save")
save_button.on_click(lambda label: print(f"  saving because {label!r} was clicked"))
save_button.on_click(lambda label: print(f"  writing a log entry for {label!r}"))
save_button.click()

# sphinx_gallery_start_ignore
# "calls each of them, in the order they were registered"
with contextlib.redirect_stdout(io.StringIO()) as printed:
    save_button.click()
lines = printed.getvalue().splitlines()
assert lines[0] == "[Save clicked]", lines
assert lines[1].startswith("  saving"), lines
assert lines[2].startswith("  writing a log entry"), lines
# sphinx_gallery_end_ignore

# %%
# Value 3: deferred execution
# ---------------------------
#
# A callback can be stored now and run later, when the information it needs
# exists. Below, a tiny task runner records what should happen after each task
# finishes; nothing runs until ``run_all`` is called.

pending = []


def when_done(task_name, callback):
    pending.append((task_name, callback))
    print(f"registered a callback for {task_name!r}")


def run_all():
    for task_name, callback in pending:
        print(f"finished {task_name!r}")
        callback(task_name)


when_done("download", lambda name: print(f"  -> now unpacking the result of {name!r}"))
when_done("train", lambda name: print(f"  -> now evaluating the result of {name!r}"))
print("nothing has run yet; pending callbacks:", len(pending))
# sphinx_gallery_start_ignore
# "nothing runs until run_all is called": registering printed only the registrations
with contextlib.redirect_stdout(io.StringIO()) as printed:
    when_done("check", lambda name: print("ran too early"))
assert printed.getvalue() == "registered a callback for 'check'\n", printed.getvalue()
pending.pop()
assert [name for name, _ in pending] == ["download", "train"]
# sphinx_gallery_end_ignore
run_all()

# %%
# From callbacks to PyTorch hooks
# -------------------------------
#
# A PyTorch *hook* is a callback that PyTorch calls at a fixed moment of the
# computation. A *forward hook* is exactly the pattern above: you register a
# function on a module, and the module calls it after each forward pass with
# the module, its inputs and its output. The :doc:`forward hook page
# </auto_examples/02_module_hooks/plot_05_forward_hooks>` explains it in
# detail; here is the whole idea in a few lines.

import torch
from torch import nn

import hooks_tutorial as ht
from hooks_tutorial import count_hooks

torch.manual_seed(0)
layer = nn.Linear(3, 2)


def report_shape(module, args, output):
    print(f"{type(module).__name__} produced an output of shape {tuple(output.shape)}")


handle = layer.register_forward_hook(report_shape)  # register the callback
layer(torch.randn(4, 3))  # PyTorch calls report_shape during the call
handle.remove()  # and we unregister it when done
layer(torch.randn(4, 3))  # no output: the hook is gone
print("hooks left on the layer:", count_hooks(layer).total)

# sphinx_gallery_start_ignore
# "The first call printed a line, the second printed nothing ... here none is left."
assert count_hooks(layer).total == 0
with contextlib.redirect_stdout(io.StringIO()) as printed:
    handle = layer.register_forward_hook(report_shape)
    layer(torch.randn(4, 3))
    handle.remove()
    layer(torch.randn(4, 3))
assert printed.getvalue() == "Linear produced an output of shape (4, 2)\n", printed.getvalue()
assert count_hooks(layer).total == 0
# sphinx_gallery_end_ignore

# %%
# The first call printed a line, the second printed nothing.
# :obj:`hooks_tutorial.count_hooks` counts the hooks on a model and its
# layers; here none is left.

# %%
# Summary
# -------
#
# - A callback is a function passed as an argument and called later by the
#   function that received it.
# - Callbacks separate *when* something happens from *what* should happen.
# - Listeners, task runners and PyTorch hooks all keep callbacks and call them
#   when an event occurs; a hook's handle lets you remove it again.
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
# 1. Write a callback ``double_and_print`` so that ``calculate(3, 5,
#    double_and_print)`` prints ``16``. Check:
#    ``ht.exercises.check("01.1", double_and_print)``.
# 2. Write ``RemovableButton``, a ``Button`` with a method
#    ``remove_listener(callback)`` that removes a listener again, and use it.
#    Check: ``ht.exercises.check("01.2", RemovableButton)``.
# 3. Change ``calculate`` so that the callback is optional: without one, it
#    returns the result instead. Check: ``ht.exercises.check("01.3", calculate)``.

# %%
# .. rst-class:: solution
#
# **Solution 1.** ``calculate(3, 5, double_and_print)`` prints 16:
# ``calculate`` hands the sum, 8, to the callback, which doubles it and prints
# it. ``calculate`` itself did not change.


def double_and_print(result):
    print(result * 2)


calculate(3, 5, handle_result)  # the sum itself, as before
calculate(3, 5, double_and_print)

# sphinx_gallery_start_ignore
# "prints 16": the callback prints twice the sum it receives
with contextlib.redirect_stdout(io.StringIO()) as printed:
    calculate(3, 5, double_and_print)
assert printed.getvalue() == "16\n", printed.getvalue()
# sphinx_gallery_end_ignore

ht.exercises.check("01.1", double_and_print)

# sphinx_gallery_start_ignore
from page_checks import assert_check  # docs/_ext: the build's checks


# a callback that returns the doubled sum instead of printing it: calculate ignores it
def double_and_return(result):
    return result * 2


assert_check("01.1", double_and_print, double_and_return, "returned_not_printed")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 2.** ``remove_listener`` takes a callback off the list again. The
# first click runs ``log_click``; after ``remove_listener(log_click)`` the
# second click prints only ``[Undo clicked]``, and 0 listeners are left. A
# hook's ``handle.remove()`` does the same for a module.


class RemovableButton(Button):
    def remove_listener(self, callback):
        self.listeners.remove(callback)


def log_click(label):
    print(f"  log: {label!r} was clicked")


undo_button = RemovableButton("Undo")
undo_button.on_click(log_click)
undo_button.click()
undo_button.remove_listener(log_click)
undo_button.click()  # only the button's own line
print("listeners left:", len(undo_button.listeners))

# sphinx_gallery_start_ignore
# "the second click prints only [Undo clicked], and 0 listeners are left"
with contextlib.redirect_stdout(io.StringIO()) as printed:
    undo_button.click()
assert printed.getvalue() == "[Undo clicked]\n", printed.getvalue()
assert undo_button.listeners == []
# sphinx_gallery_end_ignore

ht.exercises.check("01.2", RemovableButton)

# sphinx_gallery_start_ignore


# a remove_listener that empties the list removes the other listeners too
class ClearingButton(Button):
    def remove_listener(self, callback):
        self.listeners.clear()


assert_check("01.2", RemovableButton, ClearingButton, "removed_others")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 3.** Without a callback, ``calculate(3, 5)`` now returns 8, and a
# call with a callback still hands the sum to it (16 again), so existing
# callers keep working.


def calculate(a, b, callback=None):
    result = a + b
    if callback is None:
        return result
    callback(result)
    return None


print(calculate(3, 5))
calculate(3, 5, double_and_print)  # callers with a callback still work

# sphinx_gallery_start_ignore
# "calculate(3, 5) now returns 8, and a call with a callback still hands the sum to it"
assert calculate(3, 5) == 8
with contextlib.redirect_stdout(io.StringIO()) as printed:
    assert calculate(3, 5, double_and_print) is None
assert printed.getvalue() == "16\n", printed.getvalue()
# sphinx_gallery_end_ignore

ht.exercises.check("01.3", calculate)

# sphinx_gallery_start_ignore


# a default of None without testing for it: calculate(3, 5) calls None
def calculate_calls_none(a, b, callback=None):
    callback(a + b)


assert_check("01.3", calculate, calculate_calls_none, "called_none")
from page_checks import assert_exercises_checked, assert_no_hooks_left  # docs/_ext

assert_exercises_checked()
assert_no_hooks_left(globals())
# sphinx_gallery_end_ignore
