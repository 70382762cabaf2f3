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

# sphinx_gallery_start_ignore
# "on twelve test images"; the noise below lies "on the same grid as Grad-CAM"
assert len(images) == 12
assert grid == (8, 8)
# sphinx_gallery_end_ignore

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

fig, axes = plt.subplots(2, 2, figsize=(4.4, 4.8), layout="constrained")
axes[0, 0].imshow(images[0].permute(1, 2, 0))
axes[0, 0].set_title(f"image ({data.classes[predicted[0]]})")
for ax, (name, m) in zip(axes.flat[1:], maps.items(), strict=True):
    ax.imshow(m[0], cmap="viridis")
    ax.set_title(name)
for ax in axes.flat:
    ax.set_xticks([])
    ax.set_yticks([])
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

fig, axes = plt.subplots(2, 1, figsize=(5.2, 6), sharey=True, layout="constrained")
for ax, mode in zip(axes, ("deletion", "insertion"), strict=True):
    for name in maps:
        curve = curves[name, mode]
        ax.plot(curve.fractions, curve.scores.mean(dim=0), "o-", markersize=3, label=name)
    ax.set_xlabel(f"fraction of pixels {'blurred' if mode == 'deletion' else 'restored'}")
    ax.set_title(mode)
    ax.set_ylabel("probability")
    ax.legend()
plt.show()

print(f"{'map':10s} {'deletion AUC':>13s} {'insertion AUC':>14s}")
for name in maps:
    deletion = curves[name, "deletion"].auc.mean().item()
    insertion = curves[name, "insertion"].auc.mean().item()
    print(f"{name:10s} {deletion:13.3f} {insertion:14.3f}")

# sphinx_gallery_start_ignore
mean_auc = {key: curve.auc.mean().item() for key, curve in curves.items()}
# "On this model and these images it beats both on average": lower deletion, higher
# insertion than the random and the centre map
for baseline in ("random", "centre"):
    assert mean_auc["Grad-CAM", "deletion"] < mean_auc[baseline, "deletion"], mean_auc
    assert mean_auc["Grad-CAM", "insertion"] > mean_auc[baseline, "insertion"], mean_auc
# "a map that knows only that already does much better than noise"
assert mean_auc["centre", "deletion"] < mean_auc["random", "deletion"], mean_auc
assert mean_auc["centre", "insertion"] > mean_auc["random", "insertion"], mean_auc
# sphinx_gallery_end_ignore

# %%
# Lower deletion and higher insertion AUCs are better. The mean hides how
# often each map wins, so we also count, image by image, where Grad-CAM beats
# each baseline:

wins = {}
for baseline in ("random", "centre"):
    fewer = curves["Grad-CAM", "deletion"].auc < curves[baseline, "deletion"].auc
    more = curves["Grad-CAM", "insertion"].auc > curves[baseline, "insertion"].auc
    wins[baseline] = (fewer.sum().item(), more.sum().item())
    print(
        f"Grad-CAM beats the {baseline} map on {fewer.sum().item()} of {len(images)} images"
        f" (deletion) and {more.sum().item()} of {len(images)} (insertion)"
    )

# sphinx_gallery_start_ignore
# "and the random map on most images": at least 7 of 12, by deletion and by insertion
assert min(wins["random"]) >= 7, wins
# "while the centre map stays close and wins on about half of them": Grad-CAM beats it on
# 4 to 8 of the 12 images
assert all(4 <= won <= 8 for won in wins["centre"]), wins
# sphinx_gallery_end_ignore

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

# sphinx_gallery_start_ignore
# "weight 1, bias 0 and fresh running statistics (mean 0, variance 1)"
assert (bn3.weight == 1).all()
assert (bn3.bias == 0).all()
assert (bn3.running_mean == 0).all()
assert (bn3.running_var == 1).all()
# sphinx_gallery_end_ignore

few = images[:8]
print("images in the test:", len(few))
gradcam_steps = metrics.model_randomization(model, lambda copy: ht.GradCAM(copy, "relu3"), few)


def print_steps(steps):
    print(f"{'randomized down to':20s} {'Spearman':>9s} {'SSIM':>6s}")
    for step in steps:
        print(f"{step.layer:20s} {step.spearman.mean().item():9.2f} {step.ssim.mean().item():6.2f}")


print_steps(gradcam_steps)

# sphinx_gallery_start_ignore
# "We use the first eight images"
assert len(few) == 8
layers = [step.layer for step in gradcam_steps]
assert layers == ["(original)", "fc", "bn3", "conv3", "bn2", "conv2", "bn1", "conv1"], layers
# "both 1 for identical maps": the original model's maps against themselves
assert gradcam_steps[0].spearman.mean() > 0.999
assert gradcam_steps[0].ssim.mean() > 0.999
# "the similarity falls right after the first step" and "they stay far from the original
# as more layers are randomized": both measures below 0.5 after every step (0.27 and
# lower after fc in the builds so far)
for step in gradcam_steps[1:]:
    assert step.spearman.mean() < 0.5, step.layer
    assert step.ssim.mean() < 0.5, step.layer
# sphinx_gallery_end_ignore

# %%
# The maps themselves, for two images, after each step (top to bottom: the
# original model, then one more layer randomized per row):


def plot_steps(steps, title):
    fig, axes = plt.subplots(
        len(steps), 2, figsize=(3.4, 1.35 * len(steps) + 0.5), layout="constrained"
    )
    for row, step in enumerate(steps):
        for col in range(2):
            axes[row, col].imshow(step.maps[col], cmap="viridis", vmin=0, vmax=1)
            axes[row, col].set_xticks([])
            axes[row, col].set_yticks([])
        axes[row, 0].set_ylabel(step.layer)
    fig.suptitle(title)
    plt.show()


plot_steps(gradcam_steps, "Grad-CAM,\ncascading randomization")

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
plot_steps(guided_steps, "guided backpropagation,\ncascading randomization")

# sphinx_gallery_start_ignore
guided_spearman = {step.layer: step.spearman.mean().item() for step in guided_steps}
guided_ssim = {step.layer: step.ssim.mean().item() for step in guided_steps}
gradcam_spearman = {step.layer: step.spearman.mean().item() for step in gradcam_steps}
# "Randomizing fc and resetting bn3 ... leaves its maps much like the original ones":
# a rank correlation above 0.6 and more than twice Grad-CAM's
for layer in ("fc", "bn3"):
    assert guided_spearman[layer] > 0.6, guided_spearman
    assert guided_spearman[layer] > 2 * gradcam_spearman[layer], (layer, gradcam_spearman)
# "Its similarity then declines only gradually ..., and is lowest once the first block is
# random too": both measures lowest at conv1, the rank correlation 0.3 below its value
# after fc
assert guided_spearman["conv1"] == min(guided_spearman.values()), guided_spearman
assert guided_ssim["conv1"] == min(guided_ssim.values()), guided_ssim
assert guided_spearman["conv1"] < guided_spearman["fc"] - 0.3, guided_spearman
# sphinx_gallery_end_ignore

# %%
# Both methods side by side:

fig, axes = plt.subplots(2, 1, figsize=(5.2, 6.4), sharex=True, sharey=True, layout="constrained")
layers = [step.layer for step in gradcam_steps]
for ax, measure in zip(axes, ("spearman", "ssim"), strict=True):
    for steps, name in ((gradcam_steps, "Grad-CAM"), (guided_steps, "guided backprop")):
        similarity = [getattr(step, measure).mean().item() for step in steps]
        ax.plot(range(len(steps)), similarity, "o-", label=name)
    ax.set_xticks(range(len(layers)), layers, rotation=45)
    ax.set_title("Spearman rank correlation" if measure == "spearman" else "SSIM")
    ax.set_ylabel("similarity to the original")
    ax.legend()
axes[1].set_xlabel("randomized down to")
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
# Exercises that ask for code come with a check that runs offline, in the
# downloaded notebook or script: write your answer, then run the
# ``ht.exercises.check(...)`` call that ends the exercise. The check says what
# is wrong, or what is right, in the language of the download, and leaves no
# hook behind; each solution ends with the same call.
#
# 1. Write ``black_deletion(model, images, saliency)``, which returns the mean
#    deletion AUC (10 steps, as above) with black instead of blurred pixels
#    (``baseline="zeros"``), and compare the AUCs of the three maps. What
#    does the model see when the object, or a disk in the middle of the
#    image, is painted black? Check:
#    ``ht.exercises.check("19.1", black_deletion)``.
# 2. Use the object masks as a fourth map (``data.masks.float()``). Is the
#    object itself the best explanation by deletion and insertion? Write
#    ``blur_object(images, masks)``, which blurs only the object's pixels,
#    with the blur of ``baseline="blur"`` (``gaussian_blur(images, 11,
#    5.0)``): what does the model see then? Check:
#    ``ht.exercises.check("19.2", blur_object)``.
# 3. Write ``gradient_map(model, x, target, signed)``, which returns a map of
#    the *plain* input gradient (``torch.autograd.grad`` of the score with
#    respect to the input) in two forms: with ``signed=False``, its absolute
#    value, largest over the colour channels, as for guided backpropagation
#    above; with ``signed=True``, the signed gradient, summed over the
#    channels and scaled to [0, 1] with 0.5 for zero. Run the randomization
#    test on both forms and compare the similarities after ``fc`` with those
#    of Grad-CAM and guided backpropagation. Does the plain gradient pass the
#    test? Check: ``ht.exercises.check("19.3", gradient_map)``.

# %%
# .. rst-class:: solution
#
# **Solution 1.** With black pixels the ranking turns around: the centre map
# gets the lowest deletion AUC, then the random map, and Grad-CAM the highest.
# Black pixels draw shapes of their own. A black disk in the middle looks like
# a circle: with the central fifth of the pixels black, the model calls most
# of the 12 images a circle, so the explained class's probability falls fast,
# whatever the map knew. The object painted black keeps its outline, and the
# model still sees the explained class on most images, so deleting Grad-CAM's
# pixels first lowers the score slowly. Deletion with black pixels measures
# the model's reaction to black shapes as much as the map; this is why the
# page uses the blurred baseline.


def black_deletion(model, images, saliency):
    return metrics.deletion_auc(model, images, saliency, steps=10, baseline="zeros").mean().item()


black_auc = {}
for name, m in maps.items():
    black_auc[name] = black_deletion(model, images, m)
    print(f"{name:10s} deletion AUC, black pixels: {black_auc[name]:.3f}")
disk = centre_maps > centre_map.quantile(0.8)  # the central 20 % of the pixels
in_black = {}
for name, hole in (("object", data.masks), ("central disk", disk)):
    with torch.no_grad():
        called = model(images * ~hole[:, None]).argmax(dim=1)
    in_black[name] = ((called == predicted).sum().item(), (called == 0).sum().item())
    print(
        f"{name} in black: still the explained class on {(called == predicted).sum()}"
        f" of 12 images, called a circle on {(called == 0).sum()}"
    )

# sphinx_gallery_start_ignore
# "the centre map gets the lowest deletion AUC, then the random map, and Grad-CAM the
# highest" (0.132, 0.263, 0.369 in the builds so far)
assert black_auc["centre"] < black_auc["random"] < black_auc["Grad-CAM"], black_auc
# "the model calls most of the 12 images a circle" (9 so far); "still sees the explained
# class on most images" (10 so far)
assert in_black["central disk"][1] > 6, in_black
assert in_black["object"][0] > 6, in_black
# sphinx_gallery_end_ignore

ht.exercises.check("19.1", black_deletion)

# sphinx_gallery_start_ignore
from page_checks import assert_check  # docs/_ext: the build's checks


# blurred pixels, the page's baseline, instead of black ones
def blurred_deletion(model, images, saliency):
    return metrics.deletion_auc(model, images, saliency, steps=10, baseline="blur").mean().item()


assert_check("19.1", black_deletion, blurred_deletion, "blurred")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 2.** Not by deletion. The mask gets the highest insertion AUC of
# the four maps, but a worse deletion AUC than Grad-CAM, and even than the
# centre map. Blurring exactly the object's pixels does not remove the object:
# the blurred image still holds a smeared copy of it in the same place, and
# the model still sees the explained class on most of the 12 images. After the
# object, the mask ranks all other pixels equal, so its deletion goes on in
# the order of positions, row by row, instead of around the object, where the
# blur has smeared it. Deleting the object first and then following Grad-CAM's
# order gives a deletion AUC close to Grad-CAM's own.

from torchvision.transforms.functional import gaussian_blur

four_maps = {**maps, "mask": data.masks.float()}
four_aucs = {}
for name, m in four_maps.items():
    deletion = metrics.deletion_auc(model, images, m, steps=10, baseline="blur")
    insertion = metrics.insertion_auc(model, images, m, steps=10, baseline="blur")
    four_aucs[name] = (deletion.mean().item(), insertion.mean().item())
    print(
        f"{name:10s} deletion AUC {deletion.mean().item():.3f},"
        f" insertion AUC {insertion.mean().item():.3f}"
    )


def blur_object(images, masks):
    blurred = gaussian_blur(images, 11, 5.0)  # the blur of baseline="blur"
    return torch.where(masks[:, None], blurred, images)


with torch.no_grad():
    called = model(blur_object(images, data.masks)).argmax(dim=1)
print(f"object blurred: still the explained class on {(called == predicted).sum()} of 12 images")
object_first = data.masks.float() + 0.5 * gradcam_maps  # the object, then Grad-CAM's order
auc = metrics.deletion_auc(model, images, object_first, steps=10, baseline="blur")
print(f"the object first, then Grad-CAM's order: deletion AUC {auc.mean().item():.3f}")

# sphinx_gallery_start_ignore
# "The mask gets the highest insertion AUC of the four maps" (0.894 so far)
assert max(four_aucs, key=lambda name: four_aucs[name][1]) == "mask", four_aucs
# "but a worse deletion AUC than Grad-CAM, and even than the centre map" (0.568 against
# 0.468 and 0.507 so far)
assert four_aucs["mask"][0] > four_aucs["centre"][0] > four_aucs["Grad-CAM"][0], four_aucs
# "the model still sees the explained class on most of the 12 images" (9 so far)
assert (called == predicted).sum() > 6
# "gives a deletion AUC close to Grad-CAM's own": within 0.02 (0.471 against 0.468 so far),
# far below the mask's
assert abs(auc.mean().item() - four_aucs["Grad-CAM"][0]) < 0.02, auc.mean()
assert auc.mean().item() < four_aucs["mask"][0] - 0.05, auc.mean()
# sphinx_gallery_end_ignore

ht.exercises.check("19.2", blur_object)

# sphinx_gallery_start_ignore


# the mask the wrong way round: the background blurred, the object kept
def blur_background(images, masks):
    return torch.where(masks[:, None], images, gaussian_blur(images, 11, 5.0))


assert_check("19.2", blur_object, blur_background, "inverted")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 3.** It passes the test, but the absolute value hides it. By the
# rank correlation of absolute values the plain gradient looks like guided
# backpropagation after ``fc``. Its SSIM, though, falls far below guided
# backpropagation's, and the signed gradient's rank correlation falls to about
# zero at once, below even Grad-CAM's. A random ``fc`` adds up the same
# per-channel gradients with new weights of either sign: the sign of each
# pixel's gradient changes, its size much less. This is what Adebayo et al.
# found: plain gradients and Grad-CAM pass their test; guided backpropagation
# and Guided Grad-CAM fail it. They report the rank correlation both with and
# without absolute values.


def gradient_map(model, x, target, signed):
    x = x.clone().requires_grad_(True)
    score = model(x).gather(1, target[:, None]).sum()
    (grad,) = torch.autograd.grad(score, x)
    saliency = grad.sum(dim=1) if signed else grad.abs().amax(dim=1)
    saliency = saliency / saliency.flatten(1).abs().amax(dim=1)[:, None, None]
    return (saliency + 1) / 2 if signed else saliency


def gradient_explainer(signed):
    def make(model_copy):
        return lambda x, target: gradient_map(model_copy, x, target, signed)

    return make


absolute_steps = metrics.model_randomization(model, gradient_explainer(False), few)
signed_steps = metrics.model_randomization(model, gradient_explainer(True), few)
print_steps(absolute_steps)
print_steps(signed_steps)
after_fc = {}
for name, steps in (
    ("Grad-CAM", gradcam_steps),
    ("guided backprop", guided_steps),
    ("gradient, absolute", absolute_steps),
    ("gradient, signed", signed_steps),
):
    after_fc[name] = (steps[1].spearman.mean().item(), steps[1].ssim.mean().item())
    print(
        f"{name:18s} after fc: Spearman {steps[1].spearman.mean().item():.2f},"
        f" SSIM {steps[1].ssim.mean().item():.2f}"
    )

# sphinx_gallery_start_ignore
assert signed_steps[1].layer == "fc"
# "By the rank correlation of absolute values the plain gradient looks like guided
# backpropagation after fc": within 0.05 (0.74 against 0.73 so far)
assert abs(after_fc["gradient, absolute"][0] - after_fc["guided backprop"][0]) < 0.05, after_fc
# "Its SSIM, though, falls far below guided backpropagation's": by more than 0.2 (0.37
# against 0.67 so far)
assert after_fc["gradient, absolute"][1] < after_fc["guided backprop"][1] - 0.2, after_fc
# "the signed gradient's rank correlation falls to about zero at once, below even
# Grad-CAM's": within 0.1 of zero (-0.03 so far; Grad-CAM 0.27)
assert abs(after_fc["gradient, signed"][0]) < 0.1, after_fc
assert after_fc["gradient, signed"][0] < after_fc["Grad-CAM"][0], after_fc
# sphinx_gallery_end_ignore

ht.exercises.check("19.3", gradient_map)

# sphinx_gallery_start_ignore


# signed=True answered with the absolute value: the sign is lost
def gradient_map_unsigned(model, x, target, signed):
    return gradient_map(model, x, target, signed=False)


assert_check("19.3", gradient_map, gradient_map_unsigned, "absolute")
from page_checks import assert_exercises_checked, assert_no_hooks_left  # docs/_ext

assert_exercises_checked()
assert_no_hooks_left(globals())
# sphinx_gallery_end_ignore
