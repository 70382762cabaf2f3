# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
Measuring CAM maps
==================

.. index::
   ! pointing game
   ! deletion
   ! insertion
   ! faithfulness
   ! 指向游戏

The previous page drew seven maps for the same images, and they differ.
Which one is right? "It looks right" is no answer, but on the shapes data
part of the answer is known: every image comes with its object's mask. This
page turns the question into numbers with five measures from the papers,
reads each one against a map that knows nothing (random noise), and shows
how much one choice inside a measure, what replaces the deleted pixels, can
change the verdict.

.. rubric:: What you will learn
   :heading-level: 2

- the pointing game, and what it cannot see;
- deletion and insertion (Petsiuk et al., BMVC 2018): what they do to an
  image, and the area under their curves;
- average drop and increase in confidence (Chattopadhay et al., WACV 2018);
- why every measure needs a reference map, and how the deletion baseline
  changes the verdict.

**Prerequisites**: :doc:`/auto_examples/04_grad_cam/plot_18_cam_family`
(the seven methods).
"""

# %%
# The seven maps again
# --------------------
#
# The same model, methods and 48 test images as on the previous page; every
# method explains the predicted class (Eigen-CAM has no class).

import matplotlib.pyplot as plt
import torch
from torchvision.transforms.functional import gaussian_blur

import hooks_tutorial as ht
from hooks_tutorial.metrics import (
    average_drop,
    deletion_auc,
    increase_in_confidence,
    insertion_auc,
    perturbation_curve,
    pointing_game,
)

torch.manual_seed(0)
model = ht.pretrained("simple_cnn-shapes")
methods = {
    "Grad-CAM": ht.GradCAM(model, "relu3"),
    "Grad-CAM++": ht.GradCAMPlusPlus(model, "relu3"),
    "XGrad-CAM": ht.XGradCAM(model, "relu3"),
    "Layer-CAM": ht.LayerCAM(model, "relu3"),
    "HiResCAM": ht.HiResCAM(model, "relu3"),
    "Score-CAM": ht.ScoreCAM(model, "relu3", batch_size=64),
    "Eigen-CAM": ht.EigenCAM(model, "relu3"),
}
test = ht.make_shapes(48, split="test", seed=0)
images = test.images
maps = {name: method(images) for name, method in methods.items()}
with torch.no_grad():
    predicted = model(images).argmax(dim=1)
print("images:", tuple(images.shape))
print("maps per method:", tuple(maps["Grad-CAM"].shape))
print("hooks left on the model:", ht.count_hooks(model).total)

# %%
# The reference is a map of random noise, one value per pixel: it knows
# nothing about the image or the model, so a measure that cannot tell a
# method from it says nothing about that method.

generator = torch.Generator().manual_seed(0)
noise = torch.rand(images.shape[0], 64, 64, generator=generator)
candidates = {**maps, "random map": noise}

# %%
# The pointing game
# -----------------
#
# The pointing game (Zhang et al., ECCV 2016), already used on page 17, asks
# whether each map's maximum lies on the object's mask; the score is the
# share of images where it does (higher is better). Zhang et al. also count
# a peak within 15 pixels of the object as a hit; here the peak must lie on
# the mask itself (``tolerance=0``, the default of ``pointing_game``).

pointing = {
    name: pointing_game(saliency, test.masks).float().mean().item()
    for name, saliency in candidates.items()
}
for name, value in pointing.items():
    print(f"{name:>10}: pointing {value:.3f}")
print(f"object area, share of the image: {test.masks.float().mean():.3f}")

# %%
# The random map's peak lands on the object about as often as the object's
# share of the image, as luck would have it. Every method does far better.
# The best score, though, goes to Eigen-CAM, which ignores the class: on an
# image with a single object, pointing at *the* object is all the game asks.
# It cannot tell a map that explains the class from one that finds whatever
# stands out (exercise 1 tries images with two objects).
#
# Deletion and insertion
# ----------------------
#
# *Deletion* (Petsiuk et al., BMVC 2018) ranks the pixels by the map and
# replaces them, most salient first, with a *baseline*, recording the
# probability of the explained class after each step. If the map's top
# pixels are the ones the model needs, the probability falls early and the
# area under the curve (AUC) is small: lower is better. *Insertion* starts
# from the baseline and puts the original pixels back in the same order: a
# good map makes the probability rise early, so higher is better. Here the
# baseline is a blurred copy of the image, a Gaussian blur with a standard
# deviation of 5 pixels (``baseline="blur"`` in the library). What deletion
# does to one image, written by hand, for Grad-CAM's map and for the random
# map:

image, target = images[:1], predicted[:1]
blurred = gaussian_blur(image, [11, 11], [5.0, 5.0])
fractions = [0.0, 0.125, 0.25, 0.5, 1.0]
by_hand = {}
fig, axes = plt.subplots(2, len(fractions), figsize=(1.9 * len(fractions), 4.4))
for row, name in enumerate(("Grad-CAM", "random map")):
    order = candidates[name][0].flatten().argsort(descending=True, stable=True)
    by_hand[name] = []
    for col, fraction in enumerate(fractions):
        deleted = torch.zeros(64 * 64, dtype=torch.bool)
        deleted[order[: round(fraction * 64 * 64)]] = True
        x = torch.where(deleted.view(1, 1, 64, 64), blurred, image)
        with torch.no_grad():
            probability = model(x).softmax(dim=1)[0, target].item()
        by_hand[name].append(probability)
        axes[row, col].imshow(x[0].permute(1, 2, 0))
        axes[row, col].set_title(f"{fraction:.1%} deleted\np = {probability:.2f}", fontsize=9)
        axes[row, col].set_xticks([])
        axes[row, col].set_yticks([])
    axes[row, 0].set_ylabel(name)
fig.tight_layout()
plt.show()

# %%
# :obj:`hooks_tutorial.metrics.perturbation_curve` does the same for every
# step and every image. With 8 steps, its steps 0, 1, 2, 4 and 8 are the
# fractions above, and its probabilities are the ones in the titles:

for name in ("Grad-CAM", "random map"):
    curve = perturbation_curve(model, image, candidates[name][:1], steps=8, baseline="blur")
    library = curve.scores[0, [0, 1, 2, 4, 8]]
    difference = (library - torch.tensor(by_hand[name])).abs().max()
    print(f"{name:>10}: max |by hand - perturbation_curve| = {difference:.1e}")

# %%
# When every pixel is deleted the image *is* the baseline, and the
# probability does not have to reach zero: a blurred shape can still look
# like its class. The blurred images are where every deletion curve ends and
# every insertion curve starts:

with torch.no_grad():
    all_blurred = gaussian_blur(images, [11, 11], [5.0, 5.0])
    on_blur = model(all_blurred).softmax(dim=1).gather(1, predicted[:, None])[:, 0]
print(f"probability of the explained class on the blurred images: mean {on_blur.mean():.3f}")

# %%
# The two curves of that first image, with 16 steps, and their areas:

fig, axes = plt.subplots(1, 2, figsize=(8, 3.2), sharey=True)
for ax, mode in zip(axes, ("deletion", "insertion"), strict=True):
    for name in ("Grad-CAM", "random map"):
        curve = perturbation_curve(
            model, image, candidates[name][:1], mode=mode, steps=16, baseline="blur"
        )
        label = f"{name}, AUC {curve.auc[0]:.3f}"
        ax.plot(curve.fractions, curve.scores[0], "o-", markersize=3, label=label)
    ax.set_xlabel(f"fraction of pixels {'deleted' if mode == 'deletion' else 'inserted'}")
    ax.set_title(mode)
    ax.legend(fontsize=8)
axes[0].set_ylabel("probability of the explained class")
fig.tight_layout()
plt.show()

# %%
# One image's curves go up and down: a half-deleted or half-restored image is
# unlike anything the model was trained on, too. Averaged over many images
# the areas are steadier. :obj:`~hooks_tutorial.metrics.deletion_auc` and
# :obj:`~hooks_tutorial.metrics.insertion_auc` return them for every image;
# the table at the end of the page gives their means over the 48 images, for
# every map.

steps = 16
deletion, insertion = {}, {}
for name, saliency in candidates.items():
    deletion[name] = deletion_auc(model, images, saliency, steps=steps, baseline="blur").mean()
    insertion[name] = insertion_auc(model, images, saliency, steps=steps, baseline="blur").mean()

# %%
# Average drop and increase in confidence
# ---------------------------------------
#
# The Grad-CAM++ paper (Chattopadhay et al.) measures the maps the other way
# round: keep only what the map highlights, the image multiplied by its map
# (values in [0, 1]), and compare the class probability :math:`O` on that
# input with the probability :math:`Y` on the image. *Average drop* is the
# mean of :math:`\max(0, Y - O) / Y`, in percent (lower is better);
# *increase in confidence* is the percentage of images whose probability
# rises, :math:`O > Y` (higher is better). The inputs for the first image:

kept = {name: images[:1] * candidates[name][:1, None] for name in ("Grad-CAM", "Score-CAM")}
kept["random map"] = images[:1] * noise[:1, None]
fig, axes = plt.subplots(1, 4, figsize=(7.6, 2.3))
panels = {"image": images[:1], **kept}
for ax, (name, x) in zip(axes, panels.items(), strict=True):
    with torch.no_grad():
        probability = model(x).softmax(dim=1)[0, target].item()
    ax.imshow(x[0].permute(1, 2, 0))
    ax.set_title(f"{name}\np = {probability:.2f}", fontsize=9)
    ax.set_xticks([])
    ax.set_yticks([])
fig.tight_layout()
plt.show()

# %%
# :obj:`~hooks_tutorial.metrics.average_drop` and
# :obj:`~hooks_tutorial.metrics.increase_in_confidence` compute both measures
# over the 48 images; they are in the table below.

drop = {name: average_drop(model, images, s) for name, s in candidates.items()}
increase = {name: increase_in_confidence(model, images, s) for name, s in candidates.items()}

# %%
# The table
# ---------
#
# The five measures side by side, with the random map on the last line and,
# below the table, the methods that do better than it on deletion, insertion
# and average drop:

print(f"{len(images)} test images; deletion and insertion: blur baseline, {steps} steps\n")
header = ("pointing", "deletion", "insertion", "avg drop", "increase")
print(f"{'map':<11}" + "".join(f"{h:>12}" for h in header))
better = ("(higher)", "(lower)", "(higher)", "(lower, %)", "(higher, %)")
print(f"{'':<11}" + "".join(f"{b:>12}" for b in better))
for name in candidates:
    values = (pointing[name], deletion[name], insertion[name])
    print(f"{name:<11}" + "".join(f"{v:12.3f}" for v in values), end="")
    print(f"{drop[name]:12.1f}{increase[name]:12.1f}")
print()
random_deletion, random_insertion = deletion["random map"], insertion["random map"]
print("deletion below the random map's: ", [n for n in maps if deletion[n] < random_deletion])
print("insertion above the random map's:", [n for n in maps if insertion[n] > random_insertion])
print("avg drop below the random map's: ", [n for n in maps if drop[n] < drop["random map"]])

# %%
# The baseline matters
# --------------------
#
# The RISE paper deletes pixels by setting them to black (``baseline="zeros"``,
# the default of ``deletion_auc``). Black pixels scattered at random over
# the image take it far from anything the model was trained on, so the
# probability can drop for that reason alone. The same comparison with black
# pixels, for Grad-CAM and for the random map:

for name in ("Grad-CAM", "random map"):
    black = deletion_auc(model, images, candidates[name], steps=steps, baseline="zeros").mean()
    print(f"{name:>10}: deletion AUC with black pixels {black:.3f}")

# %%
# With black pixels the random map's deletion AUC is *lower* than
# Grad-CAM's: scattered black pixels destroy the image faster than deleting
# the object first does. A deletion score alone cannot tell a good map from
# a destructive baseline.
#
# How to read the table
# ---------------------
#
# The numbers come from a few dozen images and one small model, so they rank
# the methods *for this model and this data*, not in general. Each measure
# asks its own question. The pointing game only asks whether the peak is on
# the object, and a map that ignores the class can win it. Deletion and
# insertion ask whether the map orders the pixels the way the model uses
# them, and their answer depends on the baseline: always compare with a
# random map. Average drop favours Score-CAM by design: its channel weights
# are the probabilities of the image multiplied by its own upsampled
# channels, inputs of the same kind as the ones average drop scores, and it
# has by far the lowest average drop in the table. Increase in confidence
# separates little: on 48 images one image is 2.1 %, no map raises the
# probability on more than a few (at most Score-CAM's 6.2 %), and the random
# map ties with Grad-CAM at 2.1 %, above the 0.0 of Layer-CAM, HiResCAM and
# Eigen-CAM.
#
# Summary
# -------
#
# - The pointing game checks the peak against the object's mask; on images
#   with one object, a class-agnostic map can top it.
# - Deletion and insertion replace or restore pixels in the map's order and
#   take the area under the probability curve; the baseline decides what
#   "deleted" means, and the curves end or start at the baseline's
#   probability, not at zero.
# - Average drop and increase in confidence score the image multiplied by
#   its map.
# - A measure means something only next to a reference: every method beats
#   the random map here with the blur baseline, but with black pixels the
#   random map wins deletion.
#
# Exercises
# ---------
#
# 1. On the two-object images of page 17 (``ht.make_shapes(64, variant="two",
#    split="test", seed=0)``), explain each object's class with Grad-CAM and
#    with Eigen-CAM, and play the pointing game on each object's mask. What
#    can Eigen-CAM not do?
# 2. Add :obj:`hooks_tutorial.metrics.energy_pointing_game` (the share of the
#    map's mass on the object) as a column of the table, with the random map.
# 3. The table uses 16 steps. Compute Grad-CAM's deletion and insertion AUCs
#    with 64 steps: how much do they change?
#
# .. dropdown:: Solutions
#
#    .. code-block:: python
#
#       # 1. two objects: one map per object's class
#       two = ht.make_shapes(64, variant="two", split="test", seed=0)
#       for name, method in (("Grad-CAM", methods["Grad-CAM"]), ("Eigen-CAM", methods["Eigen-CAM"])):
#           first = method(two.images, target=two.object_labels[:, 0])
#           second = method(two.images, target=two.object_labels[:, 1])
#           hits_first = pointing_game(first, two.object_masks[:, 0]).float().mean()
#           hits_second = pointing_game(second, two.object_masks[:, 1]).float().mean()
#           print(f"{name}: first object {hits_first:.2f}, second object {hits_second:.2f}, "
#                 f"max |first map - second map| {(first - second).abs().max():.2f}")
#
#       # 2. the share of each map's mass on the object
#       from hooks_tutorial.metrics import energy_pointing_game
#
#       for name, saliency in candidates.items():
#           print(f"{name:>10}: energy on the object {energy_pointing_game(saliency, test.masks).mean():.3f}")
#       print(f"object area, share of the image: {test.masks.float().mean():.3f}")
#
#       # 3. 64 steps instead of 16
#       for mode, auc, coarse in (("deletion", deletion_auc, deletion["Grad-CAM"]),
#                                 ("insertion", insertion_auc, insertion["Grad-CAM"])):
#           fine = auc(model, images, maps["Grad-CAM"], steps=64, baseline="blur").mean()
#           print(f"Grad-CAM {mode}: 16 steps {coarse:.3f}, 64 steps {fine:.3f}")
#
#    **Answers**
#
#    1. Grad-CAM's map for each object's class peaks on that object in 0.81
#       and 0.83 of the images. Eigen-CAM gives the same map whatever the
#       target (max difference 0.00), so its single peak can sit on one
#       object only: 0.48 and 0.47. A class-agnostic map finds what stands
#       out; it cannot say which object is which class.
#    2. Layer-CAM and HiResCAM put the largest share of their mass on the
#       object (0.693 each), Score-CAM the smallest (0.296); every method is
#       far above the random map's 0.111, which is about the object's share
#       of the image (0.110). The measure favours sparse maps: Layer-CAM and
#       HiResCAM are above zero at few positions (page 18), so their mass
#       has fewer places to go.
#    3. Hardly at all: deletion goes from 0.578 to 0.577 and insertion from
#       0.889 to 0.888. Sixteen steps are enough for these 64 x 64 images,
#       and four times fewer images go through the model.
