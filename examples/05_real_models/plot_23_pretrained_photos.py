# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
# and scikit-image, for the photos: pip install scikit-image
"""
A pretrained model on real photos
=================================

.. index::
   ! pretrained
   ! ResNet-50
   ! 预训练

Every page so far explained a small network trained on generated shapes.
Readers then open a pretrained torchvision model and a photo, and new
questions come up: how the photo must be prepared, which class names the
outputs stand for, which layer of a deep network to explain, and how to draw
the map on the photo rather than on the normalized input. This page takes
those steps with torchvision's ImageNet ResNet-50 and photos that ship inside
scikit-image. The library does not install scikit-image: run
``pip install scikit-image`` before this page.

.. rubric:: What you will learn
   :heading-level: 2

- how ``weights.transforms()`` prepares a photo, and how to undo its
  normalization for display;
- how to read the top-5 classes with ``weights.meta["categories"]``;
- how to explain two different classes in one photo with Grad-CAM;
- how the choice of layer (``layer4``, ``layer3``, ``layer2``) changes the map.

**Prerequisites**: :doc:`/auto_examples/04_grad_cam/plot_17_gradcam_library`
(the library's Grad-CAM and its ``target`` argument).

.. note::

   **The weights.** This is the one page that needs a download: the
   pretrained weights (about 100 MB). The page never downloads them itself.
   It looks for them in the torch hub cache; when they are there, it shows
   real predictions and maps. When they are not, it says so, shows its code
   and skips the cells that need them, so no output made with random
   weights is ever shown as if it were real. The hosted site fetches the
   weights before it builds, so its copy of this page shows the predictions.
"""

# %%
# Why ResNet-50
# -------------
#
# torchvision publishes ImageNet weights for ResNet-50, and it is a common
# first model in the examples of Grad-CAM libraries, so the maps here can be
# compared with theirs. We name the weights explicitly
# (``IMAGENET1K_V2``) rather than ``DEFAULT``, whose meaning may change in a
# later torchvision.
#
# ``torchvision.models.resnet50(weights=weights)`` would download the file
# when it is missing. We only look for it, in the place that call would save
# it to, and print whether it is there. If it is not, this command downloads
# it once (about 100 MB) to that place:
#
# .. code-block:: bash
#
#    python -c "import torchvision; torchvision.models.ResNet50_Weights.IMAGENET1K_V2.get_state_dict()"

from pathlib import Path

import matplotlib.pyplot as plt
import skimage.data
import torch
import torchvision

import hooks_tutorial as ht

weights = torchvision.models.ResNet50_Weights.IMAGENET1K_V2
weights_file = Path(torch.hub.get_dir()) / "checkpoints" / Path(weights.url).name
have_weights = weights_file.is_file()
print(f"{weights_file.name} in the torch hub cache: {have_weights}")

# sphinx_gallery_start_ignore
# "this command downloads it once (about 100 MB)": the file size torchvision records
assert 90 < weights.meta["_file_size"] < 110, weights.meta["_file_size"]
# sphinx_gallery_end_ignore

# %%
# Photos that ship with a package
# -------------------------------
#
# scikit-image's wheel contains a few public-domain photos, so reading them
# needs no download. ``skimage.data`` returns each one as a ``uint8`` array
# of shape ``[H, W, 3]``.

photos = {
    "cat": skimage.data.chelsea(),
    "coffee": skimage.data.coffee(),
    "astronaut": skimage.data.astronaut(),
}
fig, axes = plt.subplots(1, len(photos), figsize=(5.2, 2.2), layout="constrained")
for ax, (name, photo) in zip(axes, photos.items(), strict=True):
    print(f"{name}: {photo.dtype}, shape {photo.shape}")
    ax.imshow(photo)
    ax.set_title(f"{name}\n{photo.shape[0]} x {photo.shape[1]}")
    ax.axis("off")
plt.show()

# sphinx_gallery_start_ignore
# "returns each one as a uint8 array of shape [H, W, 3]"
assert all(photo.dtype == "uint8" for photo in photos.values())
assert all(photo.ndim == 3 and photo.shape[2] == 3 for photo in photos.values())
# sphinx_gallery_end_ignore

# %%
# What the weights expect: ``weights.transforms()``
# -------------------------------------------------
#
# The weights come with the preprocessing they were trained with. It resizes
# the short side, crops the centre, scales to [0, 1] and normalizes each
# channel with the ImageNet mean and standard deviation. It needs no weights
# file, so this cell always runs.

preprocess = weights.transforms()
print(preprocess)


def to_input(photo, transforms=preprocess):
    """A ``[H, W, 3]`` uint8 photo -> a normalized ``[3, 224, 224]`` input."""
    return transforms(torch.from_numpy(photo).permute(2, 0, 1))


batch = torch.stack([to_input(photo) for photo in photos.values()])
print("batch:", tuple(batch.shape), f"values from {batch.min():.2f} to {batch.max():.2f}")

# sphinx_gallery_start_ignore
# "It resizes the short side, crops the centre, scales to [0, 1] and normalizes each channel
# with the ImageNet mean and standard deviation"; to_input: "a normalized [3, 224, 224] input"
assert preprocess.resize_size == [232]
assert preprocess.crop_size == [224]
assert preprocess.mean == [0.485, 0.456, 0.406]
assert preprocess.std == [0.229, 0.224, 0.225]
assert batch.shape == (3, 3, 224, 224)
# the next sentence: "The normalized input is not a picture any more" (values outside [0, 1])
assert batch.min() < 0
assert batch.max() > 1
# sphinx_gallery_end_ignore

# %%
# The normalized input is not a picture any more. To draw on it, undo the
# normalization: multiply by the standard deviation and add the mean, channel
# by channel.

mean = torch.tensor(preprocess.mean).view(3, 1, 1)
std = torch.tensor(preprocess.std).view(3, 1, 1)


def to_picture(x):
    """A normalized ``[3, H, W]`` input -> an ``[H, W, 3]`` picture in [0, 1]."""
    return (x * std + mean).clamp(0, 1).permute(1, 2, 0).numpy()


fig, axes = plt.subplots(1, 2, figsize=(5.2, 3), layout="constrained")
axes[0].imshow(batch[0].permute(1, 2, 0).clamp(0, 1).numpy())
axes[0].set_title("normalized input,\nshown as is")
axes[1].imshow(to_picture(batch[0]))
axes[1].set_title("normalization\nundone")
for ax in axes:
    ax.axis("off")
plt.show()

# %%
# Top-5 classes and two maps for one photo
# ----------------------------------------
#
# The model's 1000 outputs are scores for the ImageNet classes, whose names
# are in ``weights.meta["categories"]``. The function below prints the five
# most probable classes of a photo, then explains the first two with
# Grad-CAM on ``layer4``, the last block: one map per class, computed in one
# call by passing one target per copy of the photo. It takes the
# preprocessing as an argument, so that other weights can use it too
# (exercise 2).

categories = weights.meta["categories"]


def predict_and_explain(model, photo, transforms=preprocess):
    """Print the top-5 classes of ``photo``; return them and Grad-CAM maps of the first two."""
    x = to_input(photo, transforms)[None]
    with torch.no_grad():
        probabilities = model(x).softmax(dim=1)[0]
    top = probabilities.topk(5)
    for p, k in zip(top.values.tolist(), top.indices.tolist(), strict=True):
        print(f"  top-5: {categories[k]:<24} {p:.3f}")
    cam = ht.GradCAM(model, "layer4")
    maps = cam(x.expand(2, -1, -1, -1), target=top.indices[:2])
    return top.indices.tolist(), maps


# %%
# Loading the weights does not download anything either: we read the file we
# found. This is the same model that ``resnet50(weights=weights)`` returns.
# With the weights, this cell prints the five most probable classes of each
# photo, then the number of hooks left on the model (0). Without them, it
# prints nothing.

if have_weights:
    model = torchvision.models.resnet50()
    model.load_state_dict(torch.load(weights_file, weights_only=True))
    model.eval()
    for name, photo in photos.items():
        print(f"{name}:")
        classes, maps = predict_and_explain(model, photo)
    print("hooks left:", ht.count_hooks(model).total)

# sphinx_gallery_start_ignore
# "With the weights, this cell prints the five most probable classes of each photo, then
# the number of hooks left on the model (0). Without them, it prints nothing" (and makes no
# model: no output of random weights can reach the page)
if have_weights:
    assert len(classes) == 5
    assert maps.shape == (2, 224, 224)
    assert ht.count_hooks(model).total == 0
else:
    assert "model" not in globals()
# sphinx_gallery_end_ignore

# %%
# The loop ended with the astronaut, whose photo holds more than one object.
# With the weights, the cell below draws two maps that explain its two most
# probable classes, on the picture with the normalization undone
# (``ht.overlay``): where they differ, the model found each class in a
# different part of the photo. Without the weights, it draws nothing.

if have_weights:
    picture = to_picture(to_input(photos["astronaut"]))
    fig, axes = plt.subplots(1, 3, figsize=(5.4, 2.4), layout="constrained")
    axes[0].imshow(picture)
    axes[0].set_title("astronaut")
    for ax, k, class_map in zip(axes[1:], classes[:2], maps, strict=True):
        ax.imshow(ht.overlay(picture, class_map))
        ax.set_title(f"Grad-CAM:\n{categories[k]}")
    for ax in axes:
        ax.axis("off")
    plt.show()

# %%
# Choosing the layer
# ------------------
#
# A Grad-CAM map has the size of the layer's feature maps, upsampled to the
# image. The sizes depend on the architecture only, not on the weights, so a
# model on the ``meta`` device (shapes without numbers) and three forward
# hooks tell them, weights or not:

with torch.device("meta"):
    skeleton = torchvision.models.resnet50()
sizes = {}
handles = [
    getattr(skeleton, name).register_forward_hook(
        lambda module, args, output, name=name: sizes.update({name: tuple(output.shape[1:])})
    )
    for name in ("layer2", "layer3", "layer4")
]
skeleton(torch.empty(1, 3, 224, 224, device="meta"))
for handle in handles:
    handle.remove()
for name, (channels, height, width) in sizes.items():
    print(f"{name}: {channels} channels, {height} x {width}")

# sphinx_gallery_start_ignore
# the next cell: "layer4's maps are coarse (7 x 7) ... (layer3: 14 x 14, layer2: 28 x 28)"
assert sizes == {"layer2": (512, 28, 28), "layer3": (1024, 14, 14), "layer4": (2048, 7, 7)}
# sphinx_gallery_end_ignore

# %%
# ``layer4``'s maps are coarse (7 x 7) but its features are about whole
# objects. Earlier blocks keep more detail (``layer3``: 14 x 14, ``layer2``:
# 28 x 28) but their features are about parts and textures, and their
# gradients are further from the class score. With the weights, the cell
# below draws the cat's top class explained at each of the three blocks;
# without them, it draws nothing.

if have_weights:
    x = to_input(photos["cat"])[None]
    with torch.no_grad():
        cat_class = int(model(x).argmax())
    picture = to_picture(x[0])
    fig, axes = plt.subplots(1, 3, figsize=(5.4, 2.4), layout="constrained")
    for ax, layer in zip(axes, ["layer4", "layer3", "layer2"], strict=True):
        layer_map = ht.GradCAM(model, layer)(x, target=cat_class)[0]
        ax.imshow(ht.overlay(picture, layer_map))
        ax.set_title(f"{layer}:\n{categories[cat_class]}")
        ax.axis("off")
    plt.show()

# %%
# Summary
# -------
#
# - Use the preprocessing that comes with the weights, ``weights.transforms()``,
#   and undo its normalization (times the standard deviation, plus the mean)
#   before drawing a map on the photo.
# - ``weights.meta["categories"]`` names the outputs; ``topk`` gives the top-5.
# - One Grad-CAM call explains several classes: one copy of the image per
#   class, one target per copy.
# - ``layer4`` is the usual choice for a ResNet: coarse maps of object-level
#   features; earlier blocks give finer maps of lower-level features.
# - Look for weights before loading them, and keep outputs made with random
#   weights off a page that claims to show a pretrained model.
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
# 1. Explain the cat's fifth class next to its first, in one call: write
#    ``first_and_fifth(model, x)``, which returns the Grad-CAM maps on
#    ``layer4`` of the first and the fifth most probable class of ``x``. Does
#    the map move? Check: ``ht.exercises.check("23.1", first_and_fifth)``.
# 2. Try ``torchvision.models.ResNet18_Weights.IMAGENET1K_V1``: what changes
#    besides the model? Run ``predict_and_explain`` with it on the cat.
#    Check: ``ht.exercises.check("23.2", preprocess18)``, with
#    ``preprocess18`` the preprocessing you pass to it.
# 3. Pass both ``"layer3"`` and ``"layer4"`` to one ``ht.GradCAM`` and compare
#    the combined map with the two single maps: write
#    ``combine_maps(map3, map4)``, which computes the combined map from the
#    two single ones. Check: ``ht.exercises.check("23.3", combine_maps)``.
#
# Solutions 1 and 3 need the ResNet-50 weights, and solution 2 partly needs
# ResNet-18's (about 45 MB, fetched the same way). Without them, each says so
# and skips that part, as the page does. The checks need no weights: they use
# a small model of their own.

# %%
# .. rst-class:: solution
#
# **Solution 1.** Both maps weight the same ``layer4`` activations, only with
# other channel weights (each class has its own gradient), so the fifth
# class's map moves only if the model finds that class elsewhere in the
# photo. The code prints where each map peaks, in pixels of the input;
# without the weights it prints a note instead.


def first_and_fifth(model, x):
    with torch.no_grad():
        top = model(x).topk(5).indices[0]
    return ht.GradCAM(model, "layer4")(x.expand(2, -1, -1, -1), target=top[[0, 4]])


skipped = f"skipped: {weights_file.name} is not in the torch hub cache (see the top of the page)"
if have_weights:
    x = to_input(photos["cat"])[None]
    with torch.no_grad():
        top = model(x).topk(5).indices[0]
    pair = first_and_fifth(model, x)
    peaks = []
    for k, pair_map in zip(top[[0, 4]].tolist(), pair, strict=True):
        row, column = divmod(int(pair_map.argmax()), pair_map.shape[-1])
        peaks.append((row, column))
        print(f"{categories[k]}: peak at row {row}, column {column}")
else:
    print(skipped)

# sphinx_gallery_start_ignore
# "prints where each map peaks, in pixels of the input" (224 x 224), for the first and
# the fifth class; without the weights, nothing is computed
if have_weights:
    assert pair.shape == (2, 224, 224)
    assert len(peaks) == 2
    assert all(0 <= r < 224 and 0 <= c < 224 for r, c in peaks)
else:
    assert "pair" not in globals()
# sphinx_gallery_end_ignore

ht.exercises.check("23.1", first_and_fifth)

# sphinx_gallery_start_ignore
from page_checks import assert_check  # docs/_ext: the build's checks


# classes 0 and 4 of the list, not of the ranking
def first_and_fifth_by_number(model, x):
    return ht.GradCAM(model, "layer4")(x.expand(2, -1, -1, -1), target=[0, 4])


assert_check("23.1", first_and_fifth, first_and_fifth_by_number, "class_numbers")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 2.** The preprocessing: ResNet-18's weights resize the short side
# to 256 before the 224 x 224 crop (ResNet-50's V2 weights: 232), with the
# same mean and standard deviation. The 1000 class names are the same list
# (``True``), so ``categories`` still names the outputs. With its weights
# file (about 45 MB) in the torch hub cache, pass ``weights18.transforms()``
# and the page's function gives ResNet-18's top-5 and maps, and leaves no
# hook; without it, the code prints a note instead.

weights18 = torchvision.models.ResNet18_Weights.IMAGENET1K_V1
preprocess18 = weights18.transforms()
print("ResNet-50:", preprocess)
print("ResNet-18:", preprocess18)
names18 = weights18.meta["categories"]
print(f"class names: {len(names18)}, the same as ResNet-50's? {names18 == categories}")
file18 = Path(torch.hub.get_dir()) / "checkpoints" / Path(weights18.url).name
print(f"{file18.name}: about {weights18.meta['_file_size']:.0f} MB")
if file18.is_file():
    resnet18 = torchvision.models.resnet18()
    resnet18.load_state_dict(torch.load(file18, weights_only=True))
    resnet18.eval()
    classes18, maps18 = predict_and_explain(resnet18, photos["cat"], preprocess18)
    print("hooks left:", ht.count_hooks(resnet18).total)
else:
    print(f"skipped: {file18.name} is not in the torch hub cache")

# sphinx_gallery_start_ignore
# "resize the short side to 256 before the 224 x 224 crop (ResNet-50's V2 weights: 232),
# with the same mean and standard deviation. The 1000 class names are the same list";
# "(about 45 MB)"; with the weights: "ResNet-18's top-5 and maps, and leaves no hook"
assert (preprocess18.resize_size, preprocess.resize_size) == ([256], [232])
assert preprocess18.crop_size == preprocess.crop_size == [224]
assert (preprocess18.mean, preprocess18.std) == (preprocess.mean, preprocess.std)
assert len(names18) == 1000
assert names18 == categories
assert 40 < weights18.meta["_file_size"] < 50
if file18.is_file():
    assert len(classes18) == 5
    assert maps18.shape == (2, 224, 224)
    assert ht.count_hooks(resnet18).total == 0
else:
    assert "resnet18" not in globals()
# sphinx_gallery_end_ignore

ht.exercises.check("23.2", preprocess18)

# sphinx_gallery_start_ignore
# ResNet-50's preprocessing, kept for ResNet-18
assert_check("23.2", preprocess18, preprocess, "resnet50_preprocessing")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 3.** The combined map is the rescaled mean of the two single
# maps (``True``): the library upsamples each layer's map to the image,
# rescales each, averages them and rescales the mean. It keeps ``layer4``'s
# coarse blobs and adds ``layer3``'s finer detail. Without the weights, the
# code prints a note instead.


def combine_maps(map3, map4):
    mean_map = (map3 + map4) / 2
    return (mean_map - mean_map.min()) / (mean_map.max() - mean_map.min())


if have_weights:
    x = to_input(photos["cat"])[None]
    single = [ht.GradCAM(model, layer)(x, target=cat_class)[0] for layer in ("layer3", "layer4")]
    both = ht.GradCAM(model, ["layer3", "layer4"])(x, target=cat_class)[0]
    mean_map = combine_maps(single[0], single[1])
    print("combined == rescaled mean of the two?", torch.allclose(both, mean_map, atol=1e-6))
    fig, axes = plt.subplots(1, 3, figsize=(5.4, 2.4), layout="constrained")
    for ax, title, shown in zip(axes, ("layer3", "layer4", "both"), (*single, both), strict=True):
        ax.imshow(ht.overlay(to_picture(x[0]), shown))
        ax.set_title(title)
        ax.axis("off")
    plt.show()
else:
    print(skipped)

# sphinx_gallery_start_ignore
# "The combined map is the rescaled mean of the two single maps (True)": float32 maps in
# [0, 1]; without the weights, nothing is computed
if have_weights:
    assert torch.allclose(both, mean_map, atol=1e-6)
else:
    assert "both" not in globals()
# sphinx_gallery_end_ignore

ht.exercises.check("23.3", combine_maps)

# sphinx_gallery_start_ignore
# the mean of the two maps, not rescaled to [0, 1] again
assert_check("23.3", combine_maps, lambda map3, map4: (map3 + map4) / 2, "not_rescaled")
from page_checks import assert_exercises_checked, assert_no_hooks_left  # docs/_ext

assert_exercises_checked()
assert_no_hooks_left(globals())
# sphinx_gallery_end_ignore
