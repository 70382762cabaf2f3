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

# %%
# Note that we pass ``handle_result`` itself, without parentheses. Writing
# ``handle_result()`` calls it at once, before ``calculate`` even starts, and
# fails, since it needs an argument:

try:
    calculate(3, 5, handle_result())
except TypeError as error:
    print("TypeError:", error)

# %%
# A function is an object like any other: it has a type and a name, it is
# callable, and it can be stored in a variable or a list.

print(type(handle_result))
print(handle_result.__name__)
print(callable(handle_result))

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
# 1. Write a callback ``double_and_print`` so that ``calculate(3, 5,
#    double_and_print)`` prints ``16``.
# 2. Give ``Button`` a method that removes a listener again, and use it.
# 3. Change ``calculate`` so that the callback is optional: without one, it
#    returns the result instead.
#
# .. dropdown:: Solutions
#
#    .. code-block:: python
#
#       # 1. the callback receives the sum and prints it doubled
#       def double_and_print(result):
#           print(result * 2)
#
#       calculate(3, 5, double_and_print)
#
#       # 2. remove_listener takes a callback off the list again
#       class RemovableButton(Button):
#           def remove_listener(self, callback):
#               self.listeners.remove(callback)
#
#       def log_click(label):
#           print(f"  log: {label!r} was clicked")
#
#       undo_button = RemovableButton("Undo")
#       undo_button.on_click(log_click)
#       undo_button.click()
#       undo_button.remove_listener(log_click)
#       undo_button.click()  # only the button's own line
#       print("listeners left:", len(undo_button.listeners))
#
#       # 3. without a callback, calculate returns the sum
#       def calculate(a, b, callback=None):
#           result = a + b
#           if callback is None:
#               return result
#           callback(result)
#           return None
#
#       print(calculate(3, 5))
#       calculate(3, 5, double_and_print)  # callers with a callback still work
#
#    **Answers**
#
#    1. ``calculate(3, 5, double_and_print)`` prints 16: ``calculate`` hands the
#       sum, 8, to the callback, which doubles it and prints it. ``calculate``
#       itself did not change.
#    2. The first click runs ``log_click``; after ``remove_listener(log_click)``
#       the second click prints only ``[Undo clicked]``, and 0 listeners are
#       left. A hook's ``handle.remove()`` does the same for a module.
#    3. ``calculate(3, 5)`` now returns 8, and a call with a callback still
#       hands the sum to it (16 again), so existing callers keep working.
