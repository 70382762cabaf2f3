# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
Can we trust a heatmap?
=======================

.. index::
   ! sanity check
   ! randomization test
   ! model randomization
   ! 合理性检验

A Grad-CAM map always looks like *something*: a smooth blob somewhere on
the image. That alone does not make it an explanation. This page asks two
questions that can be answered with numbers. Is the map *faithful*: do the
pixels it ranks highest matter most to the model's score? And does it pass
a *sanity check*: does the map change when the model's weights are
destroyed, as an explanation of the model must? The second check also shows
that a map can look convincing while explaining nothing about the model.

.. rubric:: What you will learn
   :heading-level: 2

- deletion and insertion curves, their areas (AUC), and why they need a
  baseline map for comparison;
- the cascading model-randomization test of Adebayo et al. (NeurIPS 2018),
  with rank correlation and SSIM as similarity measures;
- what Grad-CAM and guided backpropagation do under that test.

**Prerequisites**: :doc:`/auto_examples/04_grad_cam/plot_17_gradcam_library`
(the ``GradCAM`` class). Guided backpropagation is built step by step in
:doc:`/auto_examples/04_grad_cam/plot_21_guided_backprop`; here it is only
used.
"""

# %%
# The model, the images and three maps
# ------------------------------------
#
# We explain the chapter's trained ``SimpleCNN`` on twelve test images, each
# for its predicted class (the default target).

import copy

import matplotlib.pyplot as plt
import torch

import hooks_tutorial as ht
from hooks_tutorial import metrics

torch.manual_seed(0)
model = ht.pretrained("simple_cnn-shapes")
data = ht.make_shapes(12, split="test", seed=19)
images, labels = data.images, data.labels
with torch.no_grad():
    predicted = model(images).argmax(dim=1)
print(f"correctly classified: {(predicted == labels).sum().item()} of {len(labels)}")

gradcam = ht.GradCAM(model, "relu3")
gradcam_maps = gradcam(images)  # [12, 64, 64], upsampled, in [0, 1]
grid = tuple(gradcam(images, raw=True).shape[-2:])
print("Grad-CAM grid:", grid)

# %%
# A number about a map means little on its own, so we compare Grad-CAM with
# two maps that know nothing about the model: uniform noise on the same grid
# as Grad-CAM (the metrics upsample it like a Grad-CAM map), and a *centre*
# map, a Gaussian bump in the middle of the image that bets on objects being
# near the centre.

generator = torch.Generator().manual_seed(0)
random_maps = torch.rand(len(images), *grid, generator=generator)
offsets = torch.arange(64.0) - 31.5
centre_map = torch.exp(-(offsets[:, None] ** 2 + offsets[None, :] ** 2) / (2 * 16.0**2))
centre_maps = centre_map.expand(len(images), 64, 64)
maps = {"Grad-CAM": gradcam_maps, "random": random_maps, "centre": centre_maps}

fig, axes = plt.subplots(1, 4, figsize=(9, 2.6))
axes[0].imshow(images[0].permute(1, 2, 0))
axes[0].set_title(f"image ({data.classes[predicted[0]]})")
for ax, (name, m) in zip(axes[1:], maps.items(), strict=True):
    ax.imshow(m[0], cmap="viridis")
    ax.set_title(name)
for ax in axes:
    ax.set_xticks([])
    ax.set_yticks([])
fig.tight_layout()
plt.show()

# %%
# Deletion and insertion
# ----------------------
#
# *Deletion* (after Petsiuk et al., BMVC 2018) removes pixels from the most
# to the least salient according to the map, and records the softmax
# probability of the explained class at each step. Their RISE paper sets the
# removed pixels to black; here they are replaced by a blurred copy of the
# image (``baseline="blur"``), which keeps the image closer to what the
# model was trained on (the previous page compares the two). If
# the map is faithful, the probability falls early and the area under the
# curve (AUC) is small. *Insertion* starts from the blurred image and puts
# the sharp pixels back in the same order; a faithful map makes the
# probability rise early, so a large AUC is good. Each curve below is the
# mean over the twelve images.

curves = {}
for name, m in maps.items():
    for mode in ("deletion", "insertion"):
        curves[name, mode] = metrics.perturbation_curve(
            model, images, m, mode=mode, steps=10, baseline="blur"
        )

fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), sharey=True)
for ax, mode in zip(axes, ("deletion", "insertion"), strict=True):
    for name in maps:
        curve = curves[name, mode]
        ax.plot(curve.fractions, curve.scores.mean(dim=0), "o-", markersize=3, label=name)
    ax.set_xlabel(f"fraction of pixels {'blurred' if mode == 'deletion' else 'restored'}")
    ax.set_title(mode)
    ax.legend()
axes[0].set_ylabel("probability of the explained class")
fig.tight_layout()
plt.show()

print(f"{'map':10s} {'deletion AUC':>13s} {'insertion AUC':>14s}")
for name in maps:
    deletion = curves[name, "deletion"].auc.mean().item()
    insertion = curves[name, "insertion"].auc.mean().item()
    print(f"{name:10s} {deletion:13.3f} {insertion:14.3f}")

# %%
# Lower deletion and higher insertion AUCs are better. The mean hides how
# often each map wins, so we also count, image by image, where Grad-CAM beats
# each baseline:

for baseline in ("random", "centre"):
    fewer = curves["Grad-CAM", "deletion"].auc < curves[baseline, "deletion"].auc
    more = curves["Grad-CAM", "insertion"].auc > curves[baseline, "insertion"].auc
    print(
        f"Grad-CAM beats the {baseline} map on {fewer.sum().item()} of {len(images)} images"
        f" (deletion) and {more.sum().item()} of {len(images)} (insertion)"
    )

# %%
# Read the two baselines as two questions. Beating the random map says that
# the map's ranking of pixels carries information about the model's score at
# all. Beating the centre map is harder: on these images the object is often
# near the middle, so a map that knows only that already does much better
# than noise. Grad-CAM has to find *this* object to do better still. On this
# model and these images it beats both on average, and the random map on
# most images, while the centre map stays close and wins on about half of
# them. Such numbers depend on the protocol (the baseline image, the number
# of steps, the images), so compare methods only side by side, under one
# protocol; the exercises try another baseline.
#
# The sanity check: randomize the model
# -------------------------------------
#
# Adebayo et al. ("Sanity Checks for Saliency Maps", NeurIPS 2018) proposed a
# test that needs no ground truth. Re-initialize the model's layers one after
# the other, from the output towards the input (*cascading*), recompute the
# maps after each step and compare them with the original ones. An
# explanation of the model must change when the model is destroyed; a map
# that stays the same describes the image, not the model. The test is
# necessary, not sufficient: a map that changes with the weights may still
# explain the decision badly.
#
# :obj:`hooks_tutorial.metrics.model_randomization` does this on a copy of the
# model. Its ``explainer`` argument receives the copy and returns the method
# to call; similarity is measured per image by Spearman's rank correlation
# and by SSIM (structural similarity), both 1 for identical maps. We use the
# first eight images; the tables show the mean over them.
#
# Each layer is re-initialized with its own ``reset_parameters()``. For
# ``fc`` and the convolutions that is a fresh random draw. For a BatchNorm
# layer it is a *reset*, not a draw: weight 1, bias 0 and fresh running
# statistics (mean 0, variance 1), so "randomizing" ``bn3`` turns it into
# (almost) the identity. On a copy of ``bn3``:

bn3 = copy.deepcopy(model.bn3)
bn3.reset_parameters()
print("bn3 after reset_parameters():")
print("  weight all 1:", bool((bn3.weight == 1).all()))
print("  bias all 0:", bool((bn3.bias == 0).all()))
print("  running mean all 0:", bool((bn3.running_mean == 0).all()))
print("  running variance all 1:", bool((bn3.running_var == 1).all()))

few = images[:8]
print("images in the test:", len(few))
gradcam_steps = metrics.model_randomization(model, lambda copy: ht.GradCAM(copy, "relu3"), few)


def print_steps(steps):
    print(f"{'randomized down to':20s} {'Spearman':>9s} {'SSIM':>6s}")
    for step in steps:
        print(f"{step.layer:20s} {step.spearman.mean().item():9.2f} {step.ssim.mean().item():6.2f}")


print_steps(gradcam_steps)

# %%
# The maps themselves, for two images, after each step (left to right: the
# original model, then one more layer randomized per column):


def plot_steps(steps, title):
    fig, axes = plt.subplots(2, len(steps), figsize=(1.3 * len(steps), 3.2))
    for col, step in enumerate(steps):
        for row in range(2):
            axes[row, col].imshow(step.maps[row], cmap="viridis", vmin=0, vmax=1)
            axes[row, col].set_xticks([])
            axes[row, col].set_yticks([])
        axes[0, col].set_title(step.layer, fontsize=9)
    fig.suptitle(title)
    fig.tight_layout()
    plt.show()


plot_steps(gradcam_steps, "Grad-CAM, cascading randomization")

# %%
# Grad-CAM passes the test: its maps change with the model, and they stay
# far from the original as more layers are randomized. On this model the
# first step is passed by construction: Grad-CAM equals CAM divided by
# :math:`Z` (see :doc:`/auto_examples/04_grad_cam/plot_18_cam_family`),
# and CAM's channel weights *are* the rows of ``fc``'s weight, so a random
# ``fc`` must change the maps (in the
# table, the similarity falls right after the first step). Passing says that
# the map depends on the weights, not that it explains the decision well;
# that is what deletion and insertion above measure.
#
# Guided backpropagation under the same test
# ------------------------------------------
#
# Guided backpropagation (built with hooks in
# :doc:`/auto_examples/04_grad_cam/plot_21_guided_backprop`) gives sharp,
# edge-like input maps. As a map we take the absolute value of its input
# gradient, largest over the colour channels, scaled to [0, 1] per image like
# the Grad-CAM maps (SSIM assumes that range).


def guided_explainer(model_copy):
    guided = ht.GuidedBackprop(model_copy)

    def explain(x, target):
        saliency = guided(x, target).abs().amax(dim=1)  # [B, H, W]
        return saliency / saliency.flatten(1).amax(dim=1)[:, None, None]

    return explain


guided_steps = metrics.model_randomization(model, guided_explainer, few)
print_steps(guided_steps)
plot_steps(guided_steps, "guided backpropagation, cascading randomization")

# %%
# Both methods side by side:

fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), sharey=True)
layers = [step.layer for step in gradcam_steps]
for ax, measure in zip(axes, ("spearman", "ssim"), strict=True):
    for steps, name in ((gradcam_steps, "Grad-CAM"), (guided_steps, "guided backprop")):
        similarity = [getattr(step, measure).mean().item() for step in steps]
        ax.plot(range(len(steps)), similarity, "o-", label=name)
    ax.set_xticks(range(len(layers)), layers, rotation=45)
    ax.set_xlabel("randomized down to")
    ax.set_title("Spearman rank correlation" if measure == "spearman" else "SSIM")
    ax.legend()
axes[0].set_ylabel("similarity to the original maps")
fig.tight_layout()
plt.show()

# %%
# Guided backpropagation behaves very differently. Randomizing ``fc`` and
# resetting ``bn3``, the top of the network where the classes are told apart,
# leaves its maps much like the original ones (the figure still shows the object's
# outline). Its similarity then declines only gradually as the convolutions
# are randomized, and is lowest once the first block is random too.
# Adebayo et al. reported the same for deep networks: guided
# backpropagation and Guided Grad-CAM fail their test, being insensitive to
# the weights of the top layers (not of all layers: the authors' later
# correction notes that the maps distort once the lowest layers are random,
# as here), while Grad-CAM and the plain gradient pass it (exercise 3 tries
# the plain gradient). The sharp maps are shaped mostly by the image and the
# first layers, like an edge detector, not by what the model learned to
# decide. A map that looks convincing can explain little about the model;
# only a test like this one tells.
#
# Summary
# -------
#
# - A heatmap is only evidence once it is measured. Deletion and insertion
#   ask whether the pixels ranked first by the map matter most to the score;
#   report them next to baseline maps (random, centre) under one protocol.
# - The cascading randomization test asks whether the map depends on the
#   model at all: re-initialize layers from the top, recompute, compare with
#   Spearman's rank correlation and SSIM.
# - Grad-CAM changes as soon as the top layer is random: it passes this
#   necessary (not sufficient) check; on this model, where it equals CAM / Z,
#   it passes by construction. Guided backpropagation stays much the same
#   through the top layers: its sharpness comes from the image, not from the
#   decision.
#
# Exercises
# ---------
#
# 1. Run deletion with black instead of blurred pixels
#    (``baseline="zeros"``) and compare the AUCs of the three maps. What
#    does the model see when the object, or a disk in the middle of the
#    image, is painted black?
# 2. Use the object masks as a fourth map (``data.masks.float()``). Is the
#    object itself the best explanation by deletion and insertion? What
#    does the model see when only the object's pixels are blurred?
# 3. Run the randomization test on the *plain* input gradient
#    (``torch.autograd.grad`` of the score with respect to the input) in two
#    forms: its absolute value, largest over the colour channels, as for
#    guided backpropagation above; and the signed gradient, summed over the
#    channels and scaled to [0, 1] with 0.5 for zero. Compare the
#    similarities after ``fc`` with those of Grad-CAM and guided
#    backpropagation. Does the plain gradient pass the test?
#
# .. dropdown:: Solutions
#
#    .. code-block:: python
#
#       # 1. black instead of blurred pixels
#       for name, m in maps.items():
#           auc = metrics.deletion_auc(model, images, m, steps=10, baseline="zeros")
#           print(f"{name:10s} deletion AUC, black pixels: {auc.mean().item():.3f}")
#       disk = centre_maps > centre_map.quantile(0.8)  # the central 20 % of the pixels
#       for name, hole in (("object", data.masks), ("central disk", disk)):
#           with torch.no_grad():
#               called = model(images * ~hole[:, None]).argmax(dim=1)
#           print(f"{name} in black: still the explained class on {(called == predicted).sum()}"
#                 f" of 12 images, called a circle on {(called == 0).sum()}")
#
#       # 2. the object masks as a fourth map
#       four_maps = {**maps, "mask": data.masks.float()}
#       for name, m in four_maps.items():
#           deletion = metrics.deletion_auc(model, images, m, steps=10, baseline="blur")
#           insertion = metrics.insertion_auc(model, images, m, steps=10, baseline="blur")
#           print(f"{name:10s} deletion AUC {deletion.mean().item():.3f},"
#                 f" insertion AUC {insertion.mean().item():.3f}")
#       from torchvision.transforms.functional import gaussian_blur
#
#       with torch.no_grad():
#           blur = gaussian_blur(images, 11, 5.0)  # the blur of baseline="blur"
#           called = model(torch.where(data.masks[:, None], blur, images)).argmax(dim=1)
#       print(f"object blurred: still the explained class on {(called == predicted).sum()} of 12 images")
#       object_first = data.masks.float() + 0.5 * gradcam_maps  # the object, then Grad-CAM's order
#       auc = metrics.deletion_auc(model, images, object_first, steps=10, baseline="blur")
#       print(f"the object first, then Grad-CAM's order: deletion AUC {auc.mean().item():.3f}")
#
#       # 3. the plain gradient under randomization, as absolute values and signed
#       def gradient_explainer(signed):
#           def make(model_copy):
#               def explain(x, target):
#                   x = x.clone().requires_grad_(True)
#                   score = model_copy(x).gather(1, target[:, None]).sum()
#                   (grad,) = torch.autograd.grad(score, x)
#                   saliency = grad.sum(dim=1) if signed else grad.abs().amax(dim=1)
#                   saliency = saliency / saliency.flatten(1).abs().amax(dim=1)[:, None, None]
#                   return (saliency + 1) / 2 if signed else saliency
#
#               return explain
#
#           return make
#
#       absolute_steps = metrics.model_randomization(model, gradient_explainer(False), few)
#       signed_steps = metrics.model_randomization(model, gradient_explainer(True), few)
#       print_steps(absolute_steps)
#       print_steps(signed_steps)
#       for name, steps in (
#           ("Grad-CAM", gradcam_steps),
#           ("guided backprop", guided_steps),
#           ("gradient, absolute", absolute_steps),
#           ("gradient, signed", signed_steps),
#       ):
#           after_fc = steps[1]
#           print(f"{name:18s} after fc: Spearman {after_fc.spearman.mean().item():.2f},"
#                 f" SSIM {after_fc.ssim.mean().item():.2f}")
#
#    **Answers**
#
#    1. With black pixels the ranking turns around: the centre map gets the
#       lowest deletion AUC (0.132), then the random map (0.263), and
#       Grad-CAM the highest (0.369). Black pixels draw shapes of their own.
#       A black disk in the middle looks like a circle: with the central
#       fifth of the pixels black, the model calls 9 of the 12 images a
#       circle, so the explained class's probability falls fast, whatever the
#       map knew. The object painted black keeps its outline, and the model
#       still sees the explained class on 10 of 12 images, so deleting
#       Grad-CAM's pixels first lowers the score slowly. Deletion with black
#       pixels measures the model's reaction to black shapes as much as the
#       map; this is why the page uses the blurred baseline.
#    2. Not by deletion. The mask gets the highest insertion AUC of the four
#       maps (0.894), but a worse deletion AUC (0.568) than Grad-CAM (0.468),
#       and even than the centre map (0.507). Blurring exactly the object's
#       pixels does not remove the object: the blurred image still holds a
#       smeared copy of it in the same place, and the model still sees the
#       explained class on 9 of 12 images. After the object, the mask ranks
#       all other pixels equal, so its deletion goes on in the order of
#       positions, row by row, instead of around the object, where the blur
#       has smeared it. Deleting the object first and then following
#       Grad-CAM's order gives 0.471, close to Grad-CAM's own AUC.
#    3. It passes the test, but the absolute value hides it. By the rank
#       correlation of absolute values the plain gradient looks like guided
#       backpropagation: 0.74 after ``fc``, against 0.73. Its SSIM, though,
#       falls to 0.37 while guided backpropagation keeps 0.67, and the signed
#       gradient's rank correlation falls to -0.03 at once, like Grad-CAM's
#       (0.27). A random ``fc`` adds up the same per-channel gradients with
#       new weights of either sign: the sign of each pixel's gradient
#       changes, its size much less. This is what Adebayo et al. found:
#       plain gradients and Grad-CAM pass their test; guided backpropagation
#       and Guided Grad-CAM fail it. They report the rank correlation both
#       with and without absolute values.
