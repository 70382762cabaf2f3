# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
Grad-CAM with ``hooks_tutorial``
================================

The previous page built Grad-CAM from a forward hook, a tensor hook and a
few tensor operations. :obj:`hooks_tutorial.GradCAM` does the same in one call,
removes its hooks before returning, and handles batches, target classes and
layer names. This page first checks that the two give the same numbers, then
uses the library to ask questions: which class, which object, which layer,
and what the map shows when the model is wrong.

**What you will learn**

- how to compute Grad-CAM maps for a batch in a few lines, and that they
  match the from-scratch version;
- how ``target=`` chooses the class to explain, and how this makes the map
  class-discriminative on images with two objects;
- why the same Grad-CAM separates two objects better for a model trained to
  name every shape in an image;
- how the choice of layer changes the map's resolution and meaning;
- what Grad-CAM shows for wrong or unsure predictions.

**Prerequisites**: :doc:`/auto_examples/04_grad_cam/plot_16_gradcam_from_scratch`.
"""

# %%
# The from-scratch version, compactly
# -----------------------------------
#
# The function of the previous page, for a batch: a forward hook saves the
# activations and hooks their gradient, the backward pass starts from the
# chosen logits, and the handle is removed in ``finally``.

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

import hooks_tutorial as ht
from hooks_tutorial.metrics import pointing_game

torch.manual_seed(0)
model = ht.pretrained("simple_cnn-shapes")
test = ht.make_shapes(1000, split="test", seed=0)
classes = test.classes


def grad_cam_from_scratch(model, layer, images, target=None):
    store = {}

    def hook(module, args, output):
        store["A"] = output.detach()
        output.register_hook(lambda grad: store.update(dA=grad.detach()))

    handle = layer.register_forward_hook(hook)
    try:
        logits = model(images)
        target = logits.argmax(dim=1) if target is None else torch.as_tensor(target)
        logits.gather(1, target.expand(len(images))[:, None]).sum().backward()
    finally:
        handle.remove()
    weights = store["dA"].mean(dim=(2, 3))
    cams = F.relu((weights[:, :, None, None] * store["A"]).sum(dim=1))
    cams = F.interpolate(cams[:, None], size=images.shape[-2:], mode="bilinear")[:, 0]
    low = cams.flatten(1).min(dim=1).values[:, None, None]
    high = cams.flatten(1).max(dim=1).values[:, None, None]
    return (cams - low) / (high - low).clamp(min=1e-12)


images = test.images[:8]
by_hand = grad_cam_from_scratch(model, model.relu3, images)

# %%
# The library version
# -------------------
#
# ``GradCAM(model, target_layer)`` takes the layer as a module or by name;
# calling it returns one map per image, upsampled to the input and scaled to
# [0, 1]. Used as a context manager, it also guarantees that no hook survives
# the ``with`` block.

with ht.GradCAM(model, "relu3") as cam:
    maps = cam(images)

print("maps:", tuple(maps.shape), f"values in [{maps.min():.1f}, {maps.max():.1f}]")
print(f"max abs difference to the from-scratch maps: {(maps - by_hand).abs().max():.2e}")
print("hooks left on the model:", ht.count_hooks(model).total)

# %%
# ``raw=True`` returns the map before upsampling and scaling, at the feature
# map's resolution, to inspect the values themselves.

with ht.GradCAM(model, "relu3") as cam:
    raw = cam(images, raw=True)
print("raw maps:", tuple(raw.shape))

# %%
# A batch at a glance
# -------------------
#
# By default each image's map explains its top-1 class. A small function
# lays out images (rows) and maps (columns), each map blended over its image
# with :obj:`hooks_tutorial.overlay`; the row labels give the true and the
# predicted class. (:obj:`hooks_tutorial.plot_cams` draws the same kind of grid
# as a standalone figure.)


def show_maps(images, maps_by_name, row_labels):
    """One row per image: the image, then its map for each entry of ``maps_by_name``."""
    n_rows, n_cols = len(images), len(maps_by_name) + 1
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(1.7 * n_cols, 1.7 * n_rows), squeeze=False)
    fig.patch.set_facecolor("white")
    for row, image in enumerate(images):
        axes[row, 0].imshow(image.permute(1, 2, 0).numpy())
        axes[row, 0].set_ylabel(row_labels[row], fontsize=9)
        for col, (name, maps) in enumerate(maps_by_name.items(), start=1):
            axes[row, col].imshow(ht.overlay(image, maps[row]))  # jet colour map, alpha 0.5
            axes[0, col].set_title(name, fontsize=9)
    axes[0, 0].set_title("image", fontsize=9)
    for ax in axes.flat:
        ax.set_xticks([])
        ax.set_yticks([])
    fig.tight_layout()
    plt.show()


with torch.no_grad():
    predicted = model(images).argmax(dim=1)
labels = [
    f"{classes[t]} -> {classes[p]}" for t, p in zip(test.labels[:4], predicted[:4], strict=True)
]
show_maps(images[:4], {"Grad-CAM": maps[:4]}, labels)

# %%
# Is each map's peak on the object? :obj:`hooks_tutorial.metrics.pointing_game`
# checks it against the masks, for the whole batch:

hits = pointing_game(maps, test.masks[:8])
print("peak on the object:", hits.tolist())

# %%
# Choosing the target class
# -------------------------
#
# ``target=`` selects the logit to explain: an int for every image, or one
# class index per image. Here one image is explained for each of the five
# classes. The map of a class the image does not contain answers the
# question "what here speaks for a star?".

image = test.images[:1]
with torch.no_grad():
    probabilities = model(image).softmax(dim=1)[0]
with ht.GradCAM(model, "relu3") as cam:
    per_class = torch.cat([cam(image, target=c) for c in range(len(classes))])
per_class_raw = torch.cat(
    [ht.GradCAM(model, "relu3")(image, target=c, raw=True) for c in range(len(classes))]
)
for c, name in enumerate(classes):
    print(f"{name:>8}: p = {probabilities[c]:.3f}, raw map maximum {per_class_raw[c].max():.3f}")

show_maps(
    image,
    {f"target {name}": per_class[c : c + 1] for c, name in enumerate(classes)},
    [f"true: {classes[int(test.labels[0])]}"],
)

# %%
# Every map is scaled to [0, 1] on its own, so the figure hides how strong
# each map is. The raw maxima printed above show that a class with a low
# probability can still have positive evidence somewhere: Grad-CAM shows
# where the evidence *for* a class lies, not whether that class wins.
#
# Two objects, two explanations
# -----------------------------
#
# The ``"two"`` variant puts two objects of different classes in each image,
# one in each half, and keeps both masks. Grad-CAM is *class-discriminative*:
# explaining the first object's class should light up the first object, and
# the second class the second object.

two = ht.make_shapes(64, variant="two", split="test", seed=0)
first, second = two.object_labels[:, 0], two.object_labels[:, 1]
with ht.GradCAM(model, "relu3") as cam:
    maps_first = cam(two.images, target=first)
    maps_second = cam(two.images, target=second)

hits_first = pointing_game(maps_first, two.object_masks[:, 0])
hits_second = pointing_game(maps_second, two.object_masks[:, 1])
print(f"peak on the first object when explaining its class:  {hits_first.float().mean():.2f}")
print(f"peak on the second object when explaining its class: {hits_second.float().mean():.2f}")
wrong = pointing_game(maps_first, two.object_masks[:, 1])
print(f"peak on the second object when explaining the first: {wrong.float().mean():.2f}")

# %%
# The figure shows four of these images with the map for each object's class.
# The model was trained on single objects only, so this is a test of what it
# learned, not of what it was taught.

rows = torch.arange(4)
show_maps(
    two.images[rows],
    {"first object's class": maps_first[rows], "second object's class": maps_second[rows]},
    [f"{classes[first[i]]} + {classes[second[i]]}" for i in rows],
)

# %%
# A model taught to name every shape
# ----------------------------------
#
# When a map points at the wrong object, is Grad-CAM at fault, or the model?
# The chapter's model answers one question per image, "which shape is
# this?". Its softmax makes the classes compete, and it never saw two
# objects at once. ``ht.pretrained("simple_cnn-multilabel")`` has the same
# layers, but it answers one yes/no question per class ("is there a
# circle?", "is there a square?", ...). It was trained with
# :class:`torch.nn.BCEWithLogitsLoss` on multi-hot targets
# (:meth:`hooks_tutorial.ShapesData.multi_hot`: a 1 for every shape in the
# image), on single-object images and on images with two objects:

config = ht.pretrained_config("simple_cnn-multilabel")
print(
    f"multi_label={config.multi_label}, training images with one object: {config.n_train}, "
    f"with two objects: {config.n_train_two}"
)
multilabel = ht.pretrained("simple_cnn-multilabel")

# %%
# The multi-label model's scores go through a sigmoid each, not through one
# softmax, so both shapes of an image can score close to 1 at the same time:

with torch.no_grad():
    softmax = model(two.images[:1]).softmax(dim=1)[0]
    sigmoid = multilabel(two.images[:1]).sigmoid()[0]
print(f"shapes in the image: {classes[first[0]]} and {classes[second[0]]}")
for c, name in enumerate(classes):
    print(
        f"{name:>8}: chapter's model (softmax) {softmax[c]:.3f}, "
        f"multi-label model (sigmoid) {sigmoid[c]:.3f}"
    )

# %%
# The pointing game for both models on 500 two-object images, each object's
# class in turn. Besides the strict count (the peak pixel on the object) we
# print the count of the original protocol (Zhang et al., ECCV 2016), which
# accepts a peak within 15 pixels of the object on images of about 224
# pixels: about 4 pixels on our 64-pixel images (``tolerance=4``). The 8x8
# map puts its peaks near cell centres, 8 pixels apart, so a peak next to a
# thin triangle tip can miss it by a pixel or two.

many = ht.make_shapes(500, variant="two", split="test", seed=100)
for name, net in [("chapter's model", model), ("multi-label model", multilabel)]:
    strict, near = [], []
    with ht.GradCAM(net, "relu3") as cam:
        for k in range(2):
            maps_k = cam(many.images, target=many.object_labels[:, k])
            strict.append(pointing_game(maps_k, many.object_masks[:, k]))
            near.append(pointing_game(maps_k, many.object_masks[:, k], tolerance=4))
    print(
        f"{name:>17}: strict {torch.cat(strict).float().mean():.3f}, "
        f"within 4 px {torch.cat(near).float().mean():.3f}"
    )

# %%
# The same four images, explained by each model:

with ht.GradCAM(multilabel, "relu3") as cam:
    multi_first = cam(two.images[rows], target=first[rows])
    multi_second = cam(two.images[rows], target=second[rows])
show_maps(
    two.images[rows],
    {
        "chapter's model, first": maps_first[rows],
        "chapter's model, second": maps_second[rows],
        "multi-label, first": multi_first,
        "multi-label, second": multi_second,
    },
    [f"{classes[first[i]]} + {classes[second[i]]}" for i in rows],
)

# %%
# The layers and the Grad-CAM code are the same; only the training changed.
# A map for one class can only be as class-discriminative as the model's
# score for that class. A classifier trained on one object per image has no
# reason to keep a second object's score informative; a model asked about
# every class separately, on images that hold two objects, has to.

# %%
# Choosing the layer
# ------------------
#
# Any layer with a feature map ``[B, C, H, W]`` can be explained. Earlier
# layers have a finer grid but see less of the image and know less about the
# class; the last conv block is the usual choice.

layers = ["relu1", "relu2", "relu3"]
by_layer = {}
for name in layers:
    with ht.GradCAM(model, name) as cam:
        print(f"{name}: raw map {tuple(cam(images, raw=True).shape[1:])}")
        by_layer[name] = cam(test.images)  # all test images, for the pointing game below

show_maps(images[:4], {name: maps[:4] for name, maps in by_layer.items()}, labels)

# %%
# Four images are an anecdote. The pointing game for each layer, on all the
# test images:

print(f"pointing game on {len(test)} test images")
for name in layers:
    score = pointing_game(by_layer[name], test.masks).float().mean()
    print(f"{name}: {score:.3f}")

# %%
# On this model the last block's maps find the object most often.

# %%
# Right and wrong predictions
# ---------------------------
#
# Over the whole test set, how many images does the model get wrong?

with torch.no_grad():
    logits = model(test.images)
probabilities = logits.softmax(dim=1)
confidence, predicted = probabilities.max(dim=1)
mistakes = torch.nonzero(predicted != test.labels).flatten()
print(f"misclassified: {len(mistakes)} of {len(test)} test images")

# %%
# For each misclassified image (up to four) we explain both the class the
# model chose and the true class. If there are fewer than four mistakes, the
# least confident correct predictions fill the remaining rows.

order = torch.argsort(confidence)  # least confident first
unsure_correct = [i for i in order.tolist() if predicted[i] == test.labels[i]]
chosen = (mistakes.tolist() + unsure_correct)[:4]
chosen_images = test.images[chosen]
with ht.GradCAM(model, "relu3") as cam:
    maps_predicted = cam(chosen_images, target=predicted[chosen])
    maps_true = cam(chosen_images, target=test.labels[chosen])

row_labels = []
for i in chosen:
    verdict = "wrong" if predicted[i] != test.labels[i] else "right"
    row_labels.append(
        f"{classes[test.labels[i]]} -> {classes[predicted[i]]}\n{verdict}, p={confidence[i]:.2f}"
    )
    print(
        f"image {i:4d}: true {classes[test.labels[i]]:>8}, "
        f"predicted {classes[predicted[i]]:>8} (p = {confidence[i]:.3f}), {verdict}"
    )
show_maps(
    chosen_images,
    {"predicted class": maps_predicted, "true class": maps_true},
    row_labels,
)

# %%
# How to read such a pair: if both maps cover the object, the model looked
# in the right place and misjudged the shape; if the predicted class's map
# lies elsewhere, something else in the image drove the decision.
#
# Summary
# -------
#
# - ``with ht.GradCAM(model, "relu3") as cam: maps = cam(images)`` gives the
#   same maps as the hooks written by hand, and leaves no hook on the model.
# - ``target=`` picks the logit to explain: one class for all images, or one
#   per image. On two-object images, the pointing game measures how often
#   each class's map points at its own object.
# - How well the map of each object's class finds that object depends on the
#   model: the multi-label model, trained to name every shape, does better
#   than the softmax classifier trained on one object per image.
# - The layer sets the map's resolution; the last conv block balances
#   resolution and class information.
# - For wrong predictions, compare the map of the predicted class with the
#   map of the true class.
#
# Exercises
# ---------
#
# 1. Pass a list of layers, ``ht.GradCAM(model, ["relu2", "relu3"])``, and
#    compare the averaged map with the single-layer ones.
# 2. Use a callable target, ``target=lambda out: out[:, 0] - out[:, 1]``, to
#    explain what speaks for "circle" rather than "square".
# 3. On the two-object images, count how often the second object's map has
#    its peak on the *first* object.
# 4. Is it the loss or the two-object images? Train a multi-label model on
#    single objects only (about 15 seconds) with
#    ``config=dataclasses.replace(config, n_train_two=0)`` and compare its
#    pointing game on ``many`` with the two models above.
#
# .. dropdown:: Solutions
#
#    .. code-block:: python
#
#       # 1.
#       with ht.GradCAM(model, ["relu2", "relu3"]) as cam:
#           both = cam(images[:4])
#       show_maps(images[:4], {"relu2": by_layer["relu2"][:4],
#                              "relu3": by_layer["relu3"][:4],
#                              "relu2 + relu3": both}, labels)
#
#       # 2.
#       with ht.GradCAM(model, "relu3") as cam:
#           contrast = cam(images[:4], target=lambda out: out[:, 0] - out[:, 1])
#       show_maps(images[:4], {"circle - square": contrast}, labels)
#
#       # 3.
#       swapped = pointing_game(maps_second, two.object_masks[:, 0])
#       print(swapped.float().mean())
#
#       # 4. (the config sets the weights: trained here, about 15 s)
#       import dataclasses
#       single_only = ht.pretrained(
#           "simple_cnn-multilabel", config=dataclasses.replace(config, n_train_two=0)
#       )
#       near = []
#       with ht.GradCAM(single_only, "relu3") as cam:
#           for k in range(2):
#               maps_k = cam(many.images, target=many.object_labels[:, k])
#               near.append(pointing_game(maps_k, many.object_masks[:, k], tolerance=4))
#       print(f"within 4 px: {torch.cat(near).float().mean():.3f}")
