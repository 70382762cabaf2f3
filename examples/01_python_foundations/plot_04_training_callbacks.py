# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
Callbacks in a training loop
============================

.. index::
   ! training callback
   ! early stopping
   ! 训练回调

A training loop is where callbacks pay off. Printing progress, recording
curves, stopping early and changing the learning rate are all things that
happen *at* a moment of the loop (after a batch, after an epoch) but are not
*part* of training. With callbacks, each lives in its own small piece of code,
and the loop stays the same. This page first writes a short loop with a
callback list by hand, then uses the ``fit`` function of ``hooks_tutorial``
and its ready-made callbacks, and ends with a callback of our own.

.. rubric:: What you will learn
   :heading-level: 2

- how a training loop calls a list of callbacks after each epoch;
- why callback *objects*, with one method per event, replace a list of
  functions;
- how to print progress, plot the history and stop early with
  ``hooks_tutorial``'s ``ProgressPrinter``, ``History`` and ``EarlyStopping``;
- how to write your own callback: any object with the right method names.

**Prerequisites**: :doc:`/auto_examples/01_python_foundations/plot_01_callbacks`,
:doc:`/auto_examples/01_python_foundations/plot_02_callbacks_vs_decorators`,
and a first PyTorch training loop (model, loss, optimiser).
"""

# %%
# Data and model
# --------------
#
# ``hooks_tutorial`` generates its images in memory. Learning the shapes
# themselves takes a larger model and longer training than this page should
# spend, so we use the ``"shortcut"`` variant: each image also holds a small
# square (the *cue*) whose colour gives the class away. With
# ``cue_agreement=1.0`` the cue tells the truth in the validation images too.

import math

import matplotlib.pyplot as plt
import torch
from torch import nn

import hooks_tutorial as ht

train_data = ht.make_shapes(256, variant="shortcut", image_size=32, seed=0)
val_data = ht.make_shapes(
    128, variant="shortcut", split="test", cue_agreement=1.0, image_size=32, seed=0
)
print("train images:", tuple(train_data.images.shape))
print("validation images:", tuple(val_data.images.shape))
print("classes:", train_data.classes)

fig, axes = plt.subplots(2, 3, figsize=(5.2, 4), layout="constrained")
for ax, image, label in zip(axes.flat, train_data.images, train_data.labels, strict=False):
    ax.imshow(image.permute(1, 2, 0).numpy())
    ax.set_title(train_data.classes[label])
    ax.axis("off")
fig.suptitle("Training images\n(the cue is the small square in a corner)")
plt.show()

# %%
# The model is one convolution, a global max pool and a linear layer: enough
# to spot a coloured square anywhere in the image. ``make_model`` seeds the
# weights, so every run below starts from the same network.


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 16, kernel_size=3),
        nn.ReLU(),
        nn.AdaptiveMaxPool2d(1),
        nn.Flatten(),
        nn.Linear(16, 5),
    )


# %%
# A loop with a callback list, by hand
# ------------------------------------
#
# The loop below knows nothing about printing or recording. After each epoch
# it calls every function in ``callbacks`` with the epoch number and the mean
# loss; what happens then is up to the callbacks.

from torch.utils.data import DataLoader, TensorDataset


def train(model, loader, epochs, callbacks):
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-2)
    for epoch in range(1, epochs + 1):
        total = 0.0
        for images, labels in loader:
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(labels)
        for callback in callbacks:
            callback(epoch, total / len(loader.dataset))


# %%
# Two callbacks: one prints, the other (a ``lambda``) appends the epoch and
# its loss to a list. Adding a third would not change ``train`` at all.


def print_loss(epoch, loss):
    print(f"epoch {epoch}: loss {loss:.4f}")


losses = []
loader = DataLoader(
    TensorDataset(train_data.images, train_data.labels),
    batch_size=64,
    shuffle=True,
    generator=torch.Generator().manual_seed(0),
)
record_loss = lambda epoch, loss: losses.append((epoch, round(loss, 4)))
train(make_model(), loader, epochs=3, callbacks=[print_loss, record_loss])
print("recorded:", losses)

# sphinx_gallery_start_ignore
# "appends the epoch and its loss to a list": one entry per epoch, in order
assert [epoch for epoch, _ in losses] == [1, 2, 3], losses
# sphinx_gallery_end_ignore

# %%
# From a list of functions to callback objects
# --------------------------------------------
#
# One list for one event soon stops being enough. Real callbacks need several
# moments (before training, after each batch, after each epoch, at the end)
# and often keep state between them (the best loss so far, say). So
# :obj:`hooks_tutorial.fit` takes *objects* and calls the methods they have:
#
# - ``on_train_begin(model, params)``: once, before the first batch;
# - ``on_batch_end(batch, logs)``: after each optimiser step;
# - ``on_epoch_end(epoch, logs)``: after each epoch and its validation;
# - ``on_train_end(logs)``: once, at the end.
#
# An object may have any subset of these methods; ``fit`` skips the ones that
# are missing. ``ht.Callback`` is a base class whose methods do nothing, handy
# but not required.

print([name for name in dir(ht.Callback) if name.startswith("on_")])

# sphinx_gallery_start_ignore
# the four events above
events = ["on_batch_end", "on_epoch_end", "on_train_begin", "on_train_end"]
assert [name for name in dir(ht.Callback) if name.startswith("on_")] == events
# sphinx_gallery_end_ignore

# %%
# Progress and history
# --------------------
#
# ``ProgressPrinter`` prints one line per epoch. With ``times=False`` it
# leaves out the measured times, so on one machine every number is the same on
# each run: the data, the weights and the shuffling are all seeded. (Another
# CPU or PyTorch version may print slightly different losses.)
# The first three training losses are those of the hand-written loop above:
# same data, same starting weights, same optimiser and same shuffling order.

model = make_model()
history = ht.fit(
    model,
    (train_data.images, train_data.labels),
    val_data=(val_data.images, val_data.labels),
    epochs=6,
    lr=3e-2,
    batch_size=64,
    callbacks=[ht.ProgressPrinter(times=False)],
)

# sphinx_gallery_start_ignore
# "The first three training losses are those of the hand-written loop above" (as printed,
# to 4 decimals); the solutions compare with this run too
assert [round(loss, 4) for loss in history["loss"][:3]] == [loss for _, loss in losses]
progress_history = history
# sphinx_gallery_end_ignore

# %%
# ``fit`` always returns a ``History``: a callback that appended each epoch's
# logs to one list per key.

print(history)
print("val_accuracy:", [round(value, 3) for value in history["val_accuracy"]])

# sphinx_gallery_start_ignore
# "fit always returns a History": one value per epoch and key
assert isinstance(history, ht.History)
assert history.epochs == [1, 2, 3, 4, 5, 6]
assert len(history["val_accuracy"]) == 6
# sphinx_gallery_end_ignore

# %%
# That is all a loss and accuracy plot needs.

fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(5.2, 3), layout="constrained")
ax_loss.plot(history.epochs, history["loss"], marker="o", label="train")
ax_loss.plot(history.epochs, history["val_loss"], marker="o", label="validation")
ax_loss.set(xlabel="epoch", ylabel="cross-entropy loss", title="Loss")
ax_loss.legend()
ax_acc.plot(history.epochs, history["accuracy"], marker="o", label="train")
ax_acc.plot(history.epochs, history["val_accuracy"], marker="o", label="validation")
ax_acc.set(xlabel="epoch", ylabel="accuracy", title="Accuracy", ylim=(0, 1.05))
ax_acc.legend()
plt.show()

# %%
# Early stopping
# --------------
#
# ``EarlyStopping`` watches one log value after every epoch and stops training
# when it has not improved for ``patience`` epochs. With ``min_delta``, an
# epoch counts as an improvement only if its value is at least ``min_delta``
# better than the best value counted so far. By default it also restores, at
# the end, the weights of the *best epoch*: the last epoch that counted as an
# improvement.

model = make_model()
stopper = ht.EarlyStopping(monitor="val_loss", patience=2, min_delta=0.01)
history = ht.fit(
    model,
    (train_data.images, train_data.labels),
    val_data=(val_data.images, val_data.labels),
    epochs=30,
    lr=3e-2,
    batch_size=64,
    callbacks=[stopper],
)
print("epochs run:", len(history), "of 30")
print("best epoch:", stopper.best_epoch, "stopped at epoch:", stopper.stopped_epoch)
print("val_loss per epoch:", [round(value, 4) for value in history["val_loss"]])

# sphinx_gallery_start_ignore
# it stopped early, after the epoch that ran last
assert len(history) == stopper.stopped_epoch < 30
# sphinx_gallery_end_ignore

# %%
# The validation loss kept falling after the best epoch, but never to
# ``min_delta`` or more below the best value, so no later epoch counted as an
# improvement, and training stopped ``patience`` epochs after the best one.
# So the best epoch is *not* the epoch with the lowest validation loss: a
# later epoch had a lower one.

val_losses = history["val_loss"]
lowest = min(val_losses)
print("best epoch (last improvement by min_delta):", stopper.best_epoch)
print(f"val_loss counted as best (stopper.best): {stopper.best:.4f}")
print(f"lowest val_loss of any epoch: {lowest:.4f} at epoch {val_losses.index(lowest) + 1}")

# sphinx_gallery_start_ignore
# "The validation loss kept falling after the best epoch, but never to min_delta (0.01) or
# more below the best value ... training stopped patience (2) epochs after the best one.
# ... a later epoch had a lower one."
best = stopper.best_epoch
assert stopper.best == val_losses[best - 1]
later = val_losses[best:]
assert later, val_losses
assert all(a > b for a, b in zip(val_losses[best - 1 :], later, strict=False)), val_losses
assert all(stopper.best - 0.01 < value for value in later), (stopper.best, later)
assert stopper.stopped_epoch - best == 2
assert lowest < stopper.best
assert val_losses.index(lowest) + 1 > best
# sphinx_gallery_end_ignore

# %%
# To check which weights came back, compute the validation loss of the final
# model by hand: it is the best epoch's, not the lowest one. If you want the
# weights of the lowest loss, use ``min_delta=0``; ``min_delta`` trades that
# for stopping sooner on a loss that barely moves.

with torch.no_grad():
    final_val_loss = nn.functional.cross_entropy(model(val_data.images), val_data.labels)
print(f"val_loss of the final model: {final_val_loss.item():.4f}")
print("same as the best epoch:", math.isclose(final_val_loss.item(), stopper.best, rel_tol=1e-5))
print("same as the lowest:", math.isclose(final_val_loss.item(), lowest, rel_tol=1e-5))

# sphinx_gallery_start_ignore
# "it is the best epoch's, not the lowest one" (rel_tol 1e-5: fit's mean over batches and
# this one-batch loss add the same numbers in another order)
assert math.isclose(final_val_loss.item(), stopper.best, rel_tol=1e-5)
assert not math.isclose(final_val_loss.item(), lowest, rel_tol=1e-5)
# sphinx_gallery_end_ignore

# %%
# Your own callback
# -----------------
#
# A callback is any object with some of the event methods; no base class is
# needed. This one steps a learning-rate scheduler after every epoch and
# records, per epoch, the learning rate used and the training loss. The
# scheduler needs the optimiser, so we create one and pass it to ``fit``.
# ``StepLR(step_size=2, gamma=0.5)`` halves the learning rate every two
# epochs.


class SchedulerStep:
    def __init__(self, scheduler):
        self.scheduler = scheduler
        self.rows = []

    def on_epoch_end(self, epoch, logs):
        lr = self.scheduler.get_last_lr()[0]
        self.rows.append((epoch, lr, round(logs["loss"], 4)))
        self.scheduler.step()


model = make_model()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-2)
schedule = SchedulerStep(torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5))
history = ht.fit(
    model,
    (train_data.images, train_data.labels),
    epochs=6,
    optimizer=optimizer,
    batch_size=64,
    callbacks=[schedule],
)
for epoch, lr, loss in schedule.rows:
    print(f"epoch {epoch}: lr {lr:g}  loss {loss}")

# sphinx_gallery_start_ignore
# "StepLR(step_size=2, gamma=0.5) halves the learning rate every two epochs"
rates = [lr for _, lr, _ in schedule.rows]
assert all(
    math.isclose(a, b)
    for a, b in zip(rates, [0.03, 0.03, 0.015, 0.015, 0.0075, 0.0075], strict=True)
)
# "on one machine every number is the same on each run": the same seeded start and
# learning rate for two epochs gives the hand-written loop's first two losses again
assert [loss for _, _, loss in schedule.rows[:2]] == [loss for _, loss in losses[:2]]
# sphinx_gallery_end_ignore

# %%
# Summary
# -------
#
# - A training loop that calls a list of callbacks can print or record
#   anything without a change to the loop itself.
# - Callback objects, with one method per event, handle several moments and
#   keep state; ``fit`` calls whichever methods an object has (duck typing).
# - ``ProgressPrinter`` prints, ``History`` records (and ``fit`` returns it),
#   ``EarlyStopping`` stops and restores the best weights.
# - Your own callback is a small class with, for example, an
#   ``on_epoch_end(epoch, logs)`` method.
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
# 1. Write a callback ``BestEpoch`` that remembers the epoch with the highest
#    ``val_accuracy`` and prints it in ``on_train_end``. Check:
#    ``ht.exercises.check("04.1", BestEpoch)``.
# 2. Write a callback ``BatchCounter`` with an ``on_batch_end(batch, logs)``
#    method that counts the batches and the training samples
#    (``logs["size"]``) seen in total, in its attributes ``batches`` and
#    ``samples``. Check: ``ht.exercises.check("04.2", BatchCounter)``.
# 3. Write ``lowest_epoch(val_losses)``, which returns the epoch (counted from
#    1) with the lowest validation loss, using ``min`` and a ``key=`` lambda;
#    apply it to ``val_losses``, the validation losses of the early-stopping
#    run. Check: ``ht.exercises.check("04.3", lowest_epoch)``.

# %%
# .. rst-class:: solution
#
# **Solution 1.** ``BestEpoch`` keeps the best value and its epoch between
# events (a plain function would need a global variable for that), and prints
# them at the end: the higher of the two validation accuracies of this
# two-epoch run, and the epoch it came in. It is the same seeded run as the
# first two epochs of the ``ProgressPrinter`` run above, so it finds the
# better of their ``val_accuracy`` values.


class BestEpoch:
    def __init__(self):
        self.best, self.epoch = -1.0, 0

    def on_epoch_end(self, epoch, logs):
        if logs["val_accuracy"] > self.best:
            self.best, self.epoch = logs["val_accuracy"], epoch

    def on_train_end(self, logs):
        print(f"best val_accuracy {self.best:.3f} at epoch {self.epoch}")


best_epoch = BestEpoch()
two_epochs = ht.fit(
    make_model(),
    (train_data.images, train_data.labels),
    val_data=(val_data.images, val_data.labels),
    epochs=2,
    lr=3e-2,
    callbacks=[best_epoch],
)

# sphinx_gallery_start_ignore
# "the higher of the two validation accuracies ... and the epoch it came in"
accuracies = two_epochs["val_accuracy"]
assert best_epoch.best == max(accuracies), (best_epoch.best, accuracies)
assert accuracies[best_epoch.epoch - 1] == max(accuracies)
# "the same seeded run as the first two epochs of the ProgressPrinter run above"
assert accuracies == progress_history["val_accuracy"][:2], (accuracies, progress_history)
# sphinx_gallery_end_ignore

ht.exercises.check("04.1", BestEpoch)

# sphinx_gallery_start_ignore
from page_checks import assert_check  # docs/_ext: the build's checks


# a callback that overwrites the best value at every epoch keeps the last one
class LastEpoch(BestEpoch):
    def on_epoch_end(self, epoch, logs):
        self.best, self.epoch = logs["val_accuracy"], epoch


assert_check("04.1", BestEpoch, LastEpoch, "last_epoch")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 2.** The counter ends at 8 batches and 512 samples: each of the
# 2 epochs goes through the 256 training images once, in batches of 64
# (``fit``'s default batch size).


class BatchCounter:
    def __init__(self):
        self.batches, self.samples = 0, 0

    def on_batch_end(self, batch, logs):
        self.batches += 1
        self.samples += logs["size"]


counter = BatchCounter()
two_epochs = ht.fit(
    make_model(), (train_data.images, train_data.labels), epochs=2, lr=3e-2, callbacks=[counter]
)
print(f"batches: {counter.batches}, samples: {counter.samples}")
print(
    f"{len(two_epochs)} epochs of {len(train_data.images)} images,"
    f" {counter.samples // counter.batches} per batch"
)

# sphinx_gallery_start_ignore
assert (counter.batches, counter.samples) == (8, 512)
assert (len(two_epochs), len(train_data.images)) == (2, 256)
# sphinx_gallery_end_ignore

ht.exercises.check("04.2", BatchCounter)

# sphinx_gallery_start_ignore


# a counter that adds the batch size instead of logs["size"] misses a smaller last batch
class FixedSizeCounter(BatchCounter):
    def on_batch_end(self, batch, logs):
        self.batches += 1
        self.samples += 64


assert_check("04.2", BatchCounter, FixedSizeCounter, "assumed_size")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 3.** ``min`` compares the pairs ``(epoch, loss)`` by their second
# item, the loss. The lowest validation loss comes in the last epoch of the
# early-stopping run, not in the best epoch that ``EarlyStopping`` restored:
# the later epochs improved on the best value by less than ``min_delta``.


def lowest_epoch(val_losses):
    epoch, _ = min(enumerate(val_losses, start=1), key=lambda pair: pair[1])
    return epoch


epoch = lowest_epoch(val_losses)
loss = val_losses[epoch - 1]
print(f"lowest val_loss {loss:.4f} at epoch {epoch}")
print("epochs run:", len(val_losses))
print("best epoch restored by EarlyStopping:", stopper.best_epoch)

# sphinx_gallery_start_ignore
# "comes in the last epoch ... not in the best epoch"; "improved on the best value by less
# than min_delta" (0.01)
assert (epoch, loss) == (len(val_losses), min(val_losses))
assert epoch != stopper.best_epoch
assert stopper.best - loss < 0.01, (stopper.best, loss)
# sphinx_gallery_end_ignore

ht.exercises.check("04.3", lowest_epoch)

# sphinx_gallery_start_ignore


# positions in a list count from 0, epochs from 1
def lowest_position(val_losses):
    return min(range(len(val_losses)), key=lambda i: val_losses[i])


assert_check("04.3", lowest_epoch, lowest_position, "zero_based")
from page_checks import assert_exercises_checked, assert_no_hooks_left  # docs/_ext

assert_exercises_checked()
assert_no_hooks_left(globals())
# sphinx_gallery_end_ignore
