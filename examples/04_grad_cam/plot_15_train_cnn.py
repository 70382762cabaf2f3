# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
Train a CNN's last layer on frozen pretrained blocks
====================================================

.. index::
   ! CAM
   ! class activation map
   ! 类激活图
   ! train a CNN

To check an explanation, you need a model worth explaining and images where
you know the right answer. This chapter uses generated images of five shapes:
every image comes with the exact pixel mask of its object, so "does the
heatmap point at the object?" becomes a number. This page shows the data
and the model, then trains only the model's last layer, ``fc``, on top of
the frozen conv blocks of the chapter's pretrained model, in a training run
driven by callbacks. Last, it measures the pretrained model that the rest of
the chapter explains.

.. rubric:: What you will learn
   :heading-level: 2

- what the generated shapes data holds: images, labels, masks and boxes;
- the layers of ``SimpleCNN`` and the shapes of its feature maps, and what
  the global *max* pooling at its end changes (it makes the maps of
  HiResCAM and Layer-CAM sparse, as later pages show);
- how to freeze a model's layers and train only the last one;
- how :obj:`hooks_tutorial.fit` trains with callbacks that print progress and
  record a history, and how a callback stops training early;
- how to measure test accuracy and compute a confusion matrix.

**Prerequisites**: :doc:`/auto_examples/01_python_foundations/plot_01_callbacks`
and a first PyTorch training loop (model, loss, optimiser).

This page says what it uses of ``fit`` and its callbacks;
:doc:`/auto_examples/01_python_foundations/plot_04_training_callbacks` builds
them step by step, for a closer look.
"""

# %%
# The data: shapes with known masks
# ---------------------------------
#
# :obj:`hooks_tutorial.make_shapes` draws the images in memory, from a seed, so
# every build sees the same pictures. Each image holds one object (circle,
# square, triangle, star or cross) on a textured background with small
# distractors.

import math

import matplotlib.pyplot as plt
import torch

import hooks_tutorial as ht

torch.manual_seed(0)

train = ht.make_shapes(1000, split="train", seed=0)
val = ht.make_shapes(250, split="test", seed=0)
print("classes:", train.classes)
print("images:", tuple(train.images.shape), train.images.dtype)
print("labels:", tuple(train.labels.shape), train.labels.dtype)
print("masks: ", tuple(train.masks.shape), train.masks.dtype)
print("boxes: ", tuple(train.boxes.shape), "as (x0, y0, x1, y1)")
print("images per class:", torch.bincount(train.labels).tolist())

# sphinx_gallery_start_ignore
# "Each image holds one object (circle, square, triangle, star or cross)"
assert train.classes == ("circle", "square", "triangle", "star", "cross")
# sphinx_gallery_end_ignore

# %%
# The first row shows images, the second the same images with the object's
# mask outlined and its box drawn: this is the ground truth that later pages
# compare heatmaps with.

fig, axes = plt.subplots(2, 3, figsize=(5.2, 3.8), layout="constrained")
fig.patch.set_facecolor("white")
for i in range(3):
    picture = train.images[i].permute(1, 2, 0).numpy()  # [H, W, 3]
    name = train.classes[int(train.labels[i])]
    axes[0, i].imshow(picture)
    axes[0, i].set_title(name)
    axes[1, i].imshow(picture)
    axes[1, i].contour(train.masks[i].numpy(), levels=[0.5], colors="white", linewidths=1.5)
    x0, y0, x1, y1 = train.boxes[i].tolist()
    box = plt.Rectangle(
        (x0 - 0.5, y0 - 0.5), x1 - x0, y1 - y0, fill=False, color="yellow", linewidth=1.5
    )
    axes[1, i].add_patch(box)
    axes[1, i].set_title("mask and box")
for ax in axes.flat:
    ax.set_xticks([])
    ax.set_yticks([])
plt.show()

# %%
# The mask holds exactly the object's pixels. Their share of the image varies
# with the object's size:

fraction = train.masks.float().mean(dim=(1, 2))
print(f"object pixels per image: {fraction.min():.1%} to {fraction.max():.1%}")

# sphinx_gallery_start_ignore
# "Their share of the image varies with the object's size"
assert 0 < fraction.min() < fraction.max() < 1
# sphinx_gallery_end_ignore

# %%
# The model: ``SimpleCNN``
# ------------------------
#
# Three conv blocks, a global pooling layer and one linear layer. The
# chapter's model is registered under the name ``"simple_cnn-shapes"``, and
# :obj:`hooks_tutorial.pretrained_config` returns its recipe: the architecture
# options, the data and the training settings.

config = ht.pretrained_config("simple_cnn-shapes")
print(config)

# %%
# We build an untrained network with the same options. The recipe uses
# global *max* pooling (``pool="max"``): for the chapter's models the layer
# named ``gap`` is an ``AdaptiveMaxPool2d``, not the global *average*
# pooling its name suggests (the name is ``SimpleCNN``'s default,
# ``pool="avg"``). Each channel passes on its largest activation. This
# shapes every map of this chapter: the score depends on each channel at one
# position only, so HiResCAM and Layer-CAM, which keep the gradient per
# position, are nonzero at few positions (page 18 checks this). Grad-CAM,
# which averages the gradient over the positions, equals CAM divided by the
# number of positions here, as it would after global average pooling. The
# last block's output
# (``features`` below) is the feature map that Grad-CAM will explain, and the
# layers have names a reader can type, such as ``model.relu3``.
#
# .. note::
#
#    **GAP, the name and the layer.** In the CAM paper and in the Grad-CAM
#    articles that follow it, Chinese ones included, GAP always means global
#    *average* pooling. Here ``gap`` is only the attribute's name: read
#    ``model.gap`` as "the global pooling layer", which in this chapter keeps
#    each channel's *maximum*. The code below prints its type.

model = ht.SimpleCNN(channels=config.channels, pool=config.pool, seed=config.seed)
print(model)
print("gap layer:", type(model.gap).__name__)
print("parameters:", sum(p.numel() for p in model.parameters()))
with torch.no_grad():
    print("features:", tuple(model.forward_features(train.images[:2]).shape))
    print("scores:  ", tuple(model(train.images[:2]).shape), "(logits, before softmax)")

# sphinx_gallery_start_ignore
# "The recipe uses global max pooling (pool="max"): ... the layer named gap is an
# AdaptiveMaxPool2d"; the note: "model.gap ... in this chapter keeps each channel's
# maximum"; "The last block's output (features below) is the feature map"
assert config.pool == "max"
assert isinstance(model.gap, torch.nn.AdaptiveMaxPool2d)
assert model.forward_features(train.images[:2]).shape == (2, 64, 8, 8)
# sphinx_gallery_end_ignore

# %%
# Training with callbacks
# -----------------------
#
# Trained from scratch, this network needs many batches before it tells the
# shapes apart: the recipe runs ``config.epochs`` epochs on ``config.n_train``
# images, and a run of a few dozen batches stays at chance level (0.2 for
# five classes). That is too long for a page that builds in seconds, so this
# page trains only the last layer, ``fc``. It starts from the conv blocks of
# the chapter's model, ``hooks_tutorial.pretrained("simple_cnn-shapes")``
# (trained with the full recipe and the same ``fit``; its weights ship with
# the library), draws new random weights for ``fc`` and
# freezes every other parameter. Exercise 2 shows what the same callbacks
# report for a run from scratch.

pretrained_model = ht.pretrained("simple_cnn-shapes")
model.load_state_dict(pretrained_model.state_dict())
model.fc.reset_parameters()  # a new, random last layer
model.requires_grad_(False)  # freeze everything ...
model.fc.requires_grad_(True)  # ... except fc
trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
print(f"trainable parameters: {trainable} of {sum(p.numel() for p in model.parameters())}")

# sphinx_gallery_start_ignore
# "trains only the last layer, fc ... and freezes every other parameter"
assert trainable == model.fc.weight.numel() + model.fc.bias.numel()
# sphinx_gallery_end_ignore

# %%
# :obj:`hooks_tutorial.fit` is an ordinary training loop (cross-entropy loss)
# that calls its callbacks at fixed moments. ``ProgressPrinter`` prints a
# line after each epoch; ``History`` records every epoch's logs. ``val_data``
# adds the loss and accuracy on held-out images to each epoch's logs. As in
# the recipe, the optimiser is Adam with a one-cycle learning-rate schedule:
# the learning rate rises, then anneals, and the scheduler updates it after
# every batch. The optimiser only gets ``fc``'s parameters.

epochs = 3
optimizer = torch.optim.Adam(model.fc.parameters(), lr=config.lr)
steps = math.ceil(len(train) / config.batch_size) * epochs
scheduler = torch.optim.lr_scheduler.OneCycleLR(
    optimizer, max_lr=config.lr, total_steps=steps, pct_start=0.3
)
history = ht.History()
result = ht.fit(
    model,
    (train.images, train.labels),
    epochs=epochs,
    val_data=(val.images, val.labels),
    batch_size=config.batch_size,
    optimizer=optimizer,
    scheduler=scheduler,
    callbacks=[ht.ProgressPrinter(times=False), history],
    seed=config.seed,
)
print(history)
print("fit returned our History:", result is history)

# sphinx_gallery_start_ignore
# the curves below show a run that learns: loss going down, far above chance
assert history["loss"][-1] < history["loss"][0]
assert history["val_accuracy"][-1] > 0.6
# sphinx_gallery_end_ignore

# %%
# ``requires_grad_(False)`` freezes parameters, not buffers. ``fit`` puts the
# model in training mode, so the BatchNorm layers of the frozen conv blocks
# still normalise each batch with its own statistics, and they update their
# running averages on this page's images:

moved = (model.bn1.running_mean - pretrained_model.bn1.running_mean).abs().max()
print(f"largest change of bn1's running mean: {moved:.4f}")

# sphinx_gallery_start_ignore
# "they update their running averages on this page's images"
assert moved > 0
# sphinx_gallery_end_ignore

# %%
# The history holds one value per epoch for each log key, ready to plot:

fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(5.2, 3.2), layout="constrained")
fig.suptitle("Training and validation loss and accuracy")
fig.patch.set_facecolor("white")
ax_loss.plot(history.epochs, history["loss"], "o-", label="train")
ax_loss.plot(history.epochs, history["val_loss"], "s--", label="validation")
ax_loss.set_xlabel("epoch")
ax_loss.set_ylabel("cross-entropy loss")
ax_loss.set_xticks(history.epochs)
ax_loss.legend()
ax_acc.plot(history.epochs, history["accuracy"], "o-", label="train")
ax_acc.plot(history.epochs, history["val_accuracy"], "s--", label="validation")
ax_acc.set_xlabel("epoch")
ax_acc.set_ylabel("accuracy")
ax_acc.set_xticks(history.epochs)
ax_acc.set_ylim(0, 1)
ax_acc.legend()
plt.show()

# %%
# The model the chapter explains
# ------------------------------
#
# This page trained one layer for a few epochs; the recipe trains all layers
# on more images for more epochs:

print(f"this page: {len(train)} images x {len(history)} epochs, only fc")
print(f"recipe:    {config.n_train} images x {config.epochs} epochs, all layers")

# sphinx_gallery_start_ignore
# "the recipe trains all layers on more images for more epochs"
assert config.n_train > len(train)
assert config.epochs > len(history)
# sphinx_gallery_end_ignore

# %%
# The following pages all use the pretrained model (the Grad-CAM library
# page also compares it with a multi-label variant,
# ``"simple_cnn-multilabel"``). ``pretrained`` returns it in eval mode:

page_run = model.eval()
model = pretrained_model
print(type(model).__name__, "in training mode:", model.training)

# sphinx_gallery_start_ignore
# "pretrained returns it in eval mode"
assert not model.training
# sphinx_gallery_end_ignore

# %%
# Test accuracy and confusion matrix
# ----------------------------------
#
# A larger test set (images that neither model was trained on, from the
# same generator) measures both models: this page's run and the pretrained
# one.

test = ht.make_shapes(config.n_test, split="test", seed=config.seed)
with torch.no_grad():
    page_run_predictions = page_run(test.images).argmax(dim=1)
    predictions = model(test.images).argmax(dim=1)
page_run_accuracy = (page_run_predictions == test.labels).float().mean().item()
accuracy = (predictions == test.labels).float().mean().item()
print(f"test accuracy of this page's run: {page_run_accuracy:.3f} on {len(test)} images")
print(f"test accuracy of the pretrained model: {accuracy:.3f} on {len(test)} images")

# sphinx_gallery_start_ignore
# "Both are far above chance (0.2)" (the pretrained model: 0.977 in the builds so far)
assert page_run_accuracy > 0.6
assert accuracy > 0.95
# sphinx_gallery_end_ignore

# %%
# Both are far above chance (0.2): the pretrained conv blocks already hold
# what it takes to tell the shapes apart, and a new last layer learns to
# read them within a few epochs. Row :math:`i`, column :math:`j` of the
# confusion matrix counts the images of class :math:`i` that the pretrained
# model called :math:`j`; the diagonal holds the correct answers.


num_classes = len(test.classes)
confusion = torch.bincount(
    test.labels * num_classes + predictions, minlength=num_classes**2
).reshape(num_classes, num_classes)
print(confusion)
print("mistakes:", int(confusion.sum() - confusion.trace()))

# %%

fig, ax = plt.subplots(figsize=(4.8, 4.2))
fig.patch.set_facecolor("white")
image = ax.imshow(confusion.numpy(), cmap="viridis")
for i in range(num_classes):
    for j in range(num_classes):
        count = int(confusion[i, j])
        colour = "black" if count > confusion.max() / 2 else "white"
        ax.text(j, i, count, ha="center", va="center", color=colour)
ax.set_xticks(range(num_classes), test.classes, rotation=45)
ax.set_yticks(range(num_classes), test.classes)
ax.set_xlabel("predicted class")
ax.set_ylabel("true class")
ax.set_title("confusion matrix (test set)")
fig.colorbar(image, ax=ax, label="images")
fig.tight_layout()
plt.show()

# %%
# Summary
# -------
#
# - ``make_shapes`` generates images with labels, masks and boxes from a
#   seed; the masks make heatmaps checkable.
# - ``SimpleCNN`` has three named conv blocks, a global pooling layer and one
#   linear layer; ``relu3`` gives the feature map that Grad-CAM explains.
#   In the chapter's models the layer ``gap`` is a global *max* pool.
# - ``fit`` runs the loop and calls the callbacks: ``ProgressPrinter`` prints,
#   ``History`` records.
# - ``pretrained`` loads the chapter's model, trained with the recipe that
#   ``pretrained_config`` shows (its weights ship with the library); the
#   confusion matrix shows which classes it confuses.
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
# 1. Write a callback ``PrintEvery5`` that prints the loss of every 5th batch
#    (use ``on_batch_end``) and pass it to ``fit``. Check:
#    ``ht.exercises.check("15.1", PrintEvery5)``.
# 2. Write ``early_stopped_fit(net, train, val)``, which trains ``net`` for up
#    to 20 epochs with
#    ``ht.EarlyStopping(monitor="val_accuracy", patience=2)`` among the
#    callbacks and returns the stopper and the history
#    (``return stopper, run``). Use it twice: a new ``fc`` on the frozen
#    blocks, as on this page, and a whole new ``SimpleCNN`` from scratch.
#    When does each run stop, and at what validation accuracy? Check:
#    ``ht.exercises.check("15.2", early_stopped_fit)``.
# 3. Write ``per_class_accuracy(confusion)``, which computes the accuracy of
#    each class from the confusion matrix. Check:
#    ``ht.exercises.check("15.3", per_class_accuracy)``.

# %%
# .. rst-class:: solution
#
# **Solution 1.** A callback is a class with the methods it needs, here
# ``on_batch_end``. It prints every 5th of the epoch's 16 batches. From
# scratch, the losses settle near 1.609, the cross-entropy of a uniform
# guess over 5 classes: after one epoch the network does no better than
# guessing.


class PrintEvery5(ht.Callback):
    def __init__(self):
        self.losses = []  # kept too, to compare with a uniform guess

    def on_batch_end(self, batch, logs):
        if batch % 5 == 0:
            print(f"epoch {logs['epoch']} batch {batch}: loss {logs['loss']:.3f}")
            self.losses.append(logs["loss"])


small = ht.SimpleCNN(channels=config.channels, pool=config.pool, seed=config.seed)
printer = PrintEvery5()
ht.fit(small, (train.images, train.labels), epochs=1, callbacks=[printer])
print("batches per epoch:", math.ceil(len(train) / 64))
print(f"loss of a uniform guess over 5 classes: {math.log(5):.3f}")

# sphinx_gallery_start_ignore
# "the losses settle near 1.609": every printed loss within 0.25 of log(5) and the last
# within 0.1 (one epoch from scratch; other CPUs change the third decimal, not this)
assert all(abs(loss - math.log(5)) < 0.25 for loss in printer.losses), printer.losses
assert abs(printer.losses[-1] - math.log(5)) < 0.1, printer.losses
# sphinx_gallery_end_ignore

ht.exercises.check("15.1", PrintEvery5)

# sphinx_gallery_start_ignore
from page_checks import assert_check  # docs/_ext: the build's checks


# batches counted from 0: fit counts them from 1, so this prints batches 4, 9 and 14
class PrintEvery5FromZero(ht.Callback):
    def on_batch_end(self, batch, logs):
        if (batch + 1) % 5 == 0:
            print(f"batch {batch}: loss {logs['loss']:.3f}")


assert_check("15.1", PrintEvery5, PrintEvery5FromZero, "wrong_batches")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 2.** Each run stops once the validation accuracy has not improved
# for two epochs (``patience=2``), and keeps the weights of its best epoch; the
# lines below show when. The new ``fc`` on the frozen blocks improves for many
# epochs and ends far above chance (0.2 for 5 classes). The run from scratch
# stops with a far lower validation accuracy, while its training accuracy has
# begun to rise above chance. Early stopping judges nothing but the number it
# watches: it cannot tell a slow start from a dead end. The conv blocks of the
# pretrained model were learned from the recipe's larger data set over more
# epochs; this page reuses them and trains only ``fc``.

head_only = ht.SimpleCNN(channels=config.channels, pool=config.pool, seed=config.seed)
head_only.load_state_dict(pretrained_model.state_dict())
head_only.fc.reset_parameters()
head_only.requires_grad_(False)
head_only.fc.requires_grad_(True)
scratch = ht.SimpleCNN(channels=config.channels, pool=config.pool, seed=config.seed)


def early_stopped_fit(net, train, val):
    stopper = ht.EarlyStopping(monitor="val_accuracy", patience=2)
    run = ht.fit(
        net,
        (train.images, train.labels),
        epochs=20,
        val_data=(val.images, val.labels),
        callbacks=[stopper],
    )
    return stopper, run


stoppers = {}
for name, net in (("new fc, frozen blocks", head_only), ("from scratch", scratch)):
    stopper, run = early_stopped_fit(net, train, val)
    stoppers[name] = (stopper, run)
    print(
        f"{name}: stopped at epoch {stopper.stopped_epoch}, best epoch "
        f"{stopper.best_epoch}, validation accuracy {stopper.best:.3f}, "
        f"training accuracy {run['accuracy'][-1]:.3f}"
    )
print("chance level for 5 classes:", 1 / 5)

# sphinx_gallery_start_ignore
head_stop, head_run = stoppers["new fc, frozen blocks"]
scratch_stop, scratch_run = stoppers["from scratch"]
# "Each run stops once the validation accuracy has not improved for two epochs ... and
# keeps the weights of its best epoch" (a run that improves to the end stops at the
# 20-epoch limit, with stopped_epoch 0)
for stop in (head_stop, scratch_stop):
    assert stop.stopped_epoch in (0, stop.best_epoch + 2), (stop.stopped_epoch, stop.best_epoch)
# "improves for many epochs and ends far above chance": best after epoch 5, above 0.8
# (0.940 in the builds so far; 250 validation images)
assert head_stop.best_epoch > 5
assert head_stop.best > 0.8
# "stops with a far lower validation accuracy": at least 0.2 lower. From scratch, the run
# is a race between a slow start and the patience: the builds so far stopped it at epochs
# 4 to 6 at 0.25 to 0.26, but with OMP_NUM_THREADS=1 one run started learning and went on
# longer; "its training accuracy has begun to rise above chance": above 0.25 (0.381 and
# 0.504 seen; on 1000 training images chance stays within about 0.03 of 0.2)
assert scratch_stop.best < head_stop.best - 0.2, (scratch_stop.best, head_stop.best)
assert scratch_run["accuracy"][-1] > 0.25
# sphinx_gallery_end_ignore

ht.exercises.check("15.2", early_stopped_fit)

# sphinx_gallery_start_ignore


# the default monitor, val_loss, instead of the validation accuracy
def early_stopped_fit_on_loss(net, train, val):
    stopper = ht.EarlyStopping(patience=2)
    run = ht.fit(
        net,
        (train.images, train.labels),
        epochs=20,
        val_data=(val.images, val.labels),
        callbacks=[stopper],
    )
    return stopper, run


assert_check("15.2", early_stopped_fit, early_stopped_fit_on_loss, "wrong_monitor")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 3.** Each class's accuracy is its diagonal entry divided by its
# row's sum. All five are high; the last line names the most frequent mistake.


def per_class_accuracy(confusion):
    return confusion.diag() / confusion.sum(dim=1)  # row i: the images of class i


per_class = per_class_accuracy(confusion)
for name, value in zip(test.classes, per_class.tolist(), strict=True):
    print(f"{name:>8}: {value:.3f}")
mistakes_only = confusion - torch.diag(confusion.diag())
i, j = divmod(int(mistakes_only.argmax()), num_classes)
print(
    f"most frequent mistake: {test.classes[i]} called {test.classes[j]},"
    f" {int(mistakes_only[i, j])} times"
)

# sphinx_gallery_start_ignore
# "All five are high": the pretrained model is above 0.9 on every class
assert per_class.min() > 0.9, per_class
# sphinx_gallery_end_ignore

ht.exercises.check("15.3", per_class_accuracy)

# sphinx_gallery_start_ignore


# divided by the columns' sums: the images called each class (the precision)
def per_class_by_column(confusion):
    return confusion.diag() / confusion.sum(dim=0)


assert_check("15.3", per_class_accuracy, per_class_by_column, "by_column")
from page_checks import assert_exercises_checked, assert_no_hooks_left  # docs/_ext

assert_exercises_checked()
assert_no_hooks_left(globals())
# sphinx_gallery_end_ignore
