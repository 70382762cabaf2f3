# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
Guided backpropagation and Guided Grad-CAM
==========================================

.. index::
   ! guided backpropagation
   ! Guided Grad-CAM
   ! 引导反向传播

A Grad-CAM map has the resolution of its layer: a few cells per side for
``relu3`` of ``SimpleCNN``, upsampled to the 64 x 64 image. The gradient of
the score with respect to the input pixels has full resolution, but it is
noisy. *Guided backpropagation* (Springenberg et al., ICLR Workshop 2015) changes
one rule of the backward pass, the one of each ReLU, and gives sharper
input maps; *Guided Grad-CAM* (Selvaraju et al., ICCV 2017) multiplies them
by the upsampled Grad-CAM map. Changing a module's gradient is exactly what
a backward hook is for, so this page builds both with hooks first, then
checks the library against them.

.. rubric:: What you will learn
   :heading-level: 2

- how to compute a plain input-gradient saliency map;
- the guided ReLU rule, and how a full backward hook on every ReLU
  implements it;
- why an in-place ReLU breaks that hook, and two ways around it;
- how :obj:`hooks_tutorial.GuidedBackprop` and :obj:`hooks_tutorial.GuidedGradCAM`
  compare with the hand-made versions, and that no hook is left behind.

**Prerequisites**: :doc:`/auto_examples/02_module_hooks/plot_07_backward_hooks`
(full backward hooks and ``grad_input``),
:doc:`/auto_examples/03_tensor_hooks/plot_10_tensor_hooks`, and the
Grad-CAM pages before this one.
"""

# %%
# A trained model and four test images
# ------------------------------------
#
# We reuse the ``SimpleCNN`` trained on the shapes data (its weights ship
# with the library) and four images of the test split.

import copy

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

import hooks_tutorial as ht
from hooks_tutorial.metrics import energy_pointing_game

torch.manual_seed(0)
model = ht.pretrained("simple_cnn-shapes")
data = ht.make_shapes(4, split="test", seed=21)
images, labels = data.images, data.labels

with torch.no_grad():
    predicted = model(images).argmax(dim=1)
print("true:     ", [data.classes[i] for i in labels])
print("predicted:", [data.classes[i] for i in predicted])

# sphinx_gallery_start_ignore
# "four images of the test split"; the figure's columns name the predicted classes, which
# are the true ones
assert images.shape == (4, 3, 64, 64)
assert (predicted == labels).all(), (predicted, labels)
# sphinx_gallery_end_ignore

# %%
# Plain gradients (a saliency map)
# --------------------------------
#
# The simplest input map is :math:`|\partial y^c / \partial x|`: how much the
# score of class :math:`c` changes when one pixel changes. It needs no hook,
# only an input that requires grad. We explain the predicted classes and
# use ``torch.autograd.grad``, which returns the gradient with respect to the
# input and leaves the parameters' ``.grad`` alone. Summing the scores is
# fine: each image's score depends on that image only.

x = images.clone().requires_grad_(True)
scores = model(x).gather(1, predicted[:, None]).squeeze(1)
(plain_gradient,) = torch.autograd.grad(scores.sum(), x)
print("input gradient:", tuple(plain_gradient.shape))

# sphinx_gallery_start_ignore
# the input gradient has "full resolution": one value per pixel and colour channel
assert plain_gradient.shape == images.shape
# sphinx_gallery_end_ignore

# %%
# The guided ReLU rule
# --------------------
#
# In the backward pass a ReLU with input :math:`a` passes the gradient
# :math:`g` from above only where :math:`a > 0`: its ``grad_input`` is
# :math:`[a > 0]\, g`. Guided backpropagation also drops the *negative*
# gradients from above, keeping :math:`[a > 0]\, \max(g, 0)`. Both masks
# commute, so the rule is one line in a full backward hook: clamp
# ``grad_input`` at zero and return it. The hook's return value replaces
# ``grad_input``.


def guided_relu_hook(module, grad_input, grad_output):
    return (grad_input[0].clamp(min=0),)


# %%
# Full backward hooks do not work on a ReLU that runs in place (the next
# section shows why), so we check the model's ReLUs first. ``SimpleCNN``
# uses ordinary ReLUs.

relus = [m for m in model.modules() if isinstance(m, nn.ReLU)]
print(len(relus), "ReLU modules, in place:", [relu.inplace for relu in relus])

# sphinx_gallery_start_ignore
# "SimpleCNN uses ordinary ReLUs."
assert len(relus) == 3
assert not any(relu.inplace for relu in relus)
# sphinx_gallery_end_ignore

# %%
# Now register the hook on every ReLU, run forward and backward once, and
# remove the hooks in a ``finally`` block so that an error cannot leave them
# on the model.

handles = [relu.register_full_backward_hook(guided_relu_hook) for relu in relus]
try:
    x = images.clone().requires_grad_(True)
    scores = model(x).gather(1, predicted[:, None]).squeeze(1)
    (guided,) = torch.autograd.grad(scores.sum(), x)  # the hooks fire here
finally:
    for handle in handles:
        handle.remove()
print("hooks left on the model:", ht.count_hooks(model).total)
print("guided gradients are >= 0 at the input?", bool((guided >= 0).all()))

# sphinx_gallery_start_ignore
# "The last line prints False"; the hooks were removed in finally
assert not (guided >= 0).all()
assert ht.count_hooks(model).total == 0
# sphinx_gallery_end_ignore

# %%
# The last line prints ``False``: only the gradients that leave each ReLU are
# clamped, and the convolution between the input and the first ReLU mixes
# signs again.
#
# Guided Grad-CAM
# ---------------
#
# Guided Grad-CAM multiplies the guided gradients by the Grad-CAM map,
# upsampled to the image size. The Grad-CAM map comes from the library here;
# :doc:`/auto_examples/04_grad_cam/plot_16_gradcam_from_scratch` builds it
# from hooks.

gradcam = ht.GradCAM(model, "relu3")
print("Grad-CAM grid at relu3:", tuple(gradcam(images, target=predicted, raw=True).shape[-2:]))
gradcam_maps = gradcam(images, target=predicted)  # [4, 64, 64] in [0, 1]
guided_gradcam = guided * gradcam_maps[:, None]
print("Grad-CAM maps:", tuple(gradcam_maps.shape), " Guided Grad-CAM:", tuple(guided_gradcam.shape))

# sphinx_gallery_start_ignore
# Grad-CAM is "coarse, one value per cell of its grid"; the product has the input's size
assert gradcam(images, target=predicted, raw=True).shape == (4, 8, 8)
assert gradcam_maps.shape == (4, 64, 64)
assert guided_gradcam.shape == (4, 3, 64, 64)
# sphinx_gallery_end_ignore

# %%
# To draw an input map we take the largest absolute value over the colour
# channels and scale each image's map to [0, 1].


def to_image(saliency):
    """[B, 3, H, W] gradients -> [B, H, W] in [0, 1], for display."""
    m = saliency.abs().amax(dim=1)
    return m / m.flatten(1).amax(dim=1).clamp(min=1e-12)[:, None, None]


columns = {
    "image": images.permute(0, 2, 3, 1),
    "gradient": to_image(plain_gradient),
    "guided backprop": to_image(guided),
    "Grad-CAM": gradcam_maps,
    "Guided Grad-CAM": to_image(guided_gradcam),
}
fig, axes = plt.subplots(5, 4, figsize=(5.2, 6.8), layout="constrained")
for row, (title, maps) in enumerate(columns.items()):
    for col in range(4):
        ax = axes[row, col]
        ax.imshow(maps[col].detach(), cmap=None if row == 0 else "magma")
        ax.set_xticks([])
        ax.set_yticks([])
    axes[row, 0].set_ylabel(title.replace("Guided ", "Guided\n"))
for col in range(4):
    axes[0, col].set_title(data.classes[predicted[col]])
plt.show()

# %%
# The object masks put the figure into numbers: the share of each input
# map's mass within 2 pixels of the object's outline, one value per image,
# next to that band's share of the image's area.

masks = data.masks[:, None].float()
grown = F.max_pool2d(masks, 5, stride=1, padding=2)  # the object, 2 px wider
shrunk = -F.max_pool2d(-masks, 5, stride=1, padding=2)  # the object, 2 px narrower
outline = (grown - shrunk)[:, 0].bool()
for name in ("gradient", "guided backprop"):
    shares = energy_pointing_game(columns[name].detach(), outline)
    print(f"{name:16s} mass near the outline: " + " ".join(f"{v:.3f}" for v in shares.tolist()))
areas = outline.float().mean(dim=(1, 2))
print(f"{'band area':16s} share of the image:   " + " ".join(f"{v:.3f}" for v in areas.tolist()))

# sphinx_gallery_start_ignore
near_outline = {
    name: energy_pointing_game(columns[name].detach(), outline)
    for name in ("gradient", "guided backprop")
}
# "on every image it puts a larger share of its mass near the outline than the plain
# gradient does, and both put more there than the band's share of the area"
assert (near_outline["guided backprop"] > near_outline["gradient"]).all(), near_outline
assert (near_outline["gradient"] > areas).all(), (near_outline, areas)
# sphinx_gallery_end_ignore

# %%
# The plain gradient is a noisy cloud over the object and its surroundings.
# Guided backpropagation follows the object's outline: on every image it puts
# a larger share of its mass near the outline than the plain gradient does,
# and both put more there than the band's share of the area. Grad-CAM is
# coarse, one value per cell of its grid, but it is computed for the
# explained class, and the product keeps the sharp outline only where
# Grad-CAM points. Whether the sharp guided maps actually depend on the
# model is another question: the sanity check in
# :doc:`/auto_examples/04_grad_cam/plot_19_trust` answers it.
#
# In-place ReLUs
# --------------
#
# Many models, torchvision's ResNets among them, use ``nn.ReLU(inplace=True)``.
# A full backward hook wraps the module's input in a view; the in-place ReLU
# then modifies that view, and autograd refuses during the *forward* pass. We
# make a copy of our model with in-place ReLUs to see it.

inplace_model = copy.deepcopy(model)
for module in inplace_model.modules():
    if isinstance(module, nn.ReLU):
        module.inplace = True

handles = [
    m.register_full_backward_hook(guided_relu_hook)
    for m in inplace_model.modules()
    if isinstance(m, nn.ReLU)
]
message = None
try:
    inplace_model(images)
except RuntimeError as error:
    message = str(error).splitlines()[0]
    print("RuntimeError:", message[:110], "...")
finally:
    for handle in handles:
        handle.remove()
print("hooks left on the copy:", ht.count_hooks(inplace_model).total)

# sphinx_gallery_start_ignore
# "autograd refuses during the *forward* pass": the forward call raised, about the view
# that the full backward hook made
assert message is not None
assert "BackwardHookFunction" in message
assert "view" in message
assert ht.count_hooks(inplace_model).total == 0
# sphinx_gallery_end_ignore

# %%
# Two ways out. The simple one: run the hooks on a copy of the model whose
# ReLUs have ``inplace = False`` (what ``model`` already is). The other one
# avoids module backward hooks altogether: a *forward* hook on each ReLU
# registers a *tensor* hook on the ReLU's output, which clamps the gradient
# arriving there; autograd's own ReLU backward then applies :math:`[a > 0]`.
# That works whether the ReLU runs in place or not, and it is how the library
# does it.
#
# The library versions
# --------------------
#
# :obj:`hooks_tutorial.GuidedBackprop` returns the guided input gradients
# ``[B, C, H, W]``; :obj:`hooks_tutorial.GuidedGradCAM` multiplies them by the
# Grad-CAM map of the given layer. Like the CAM classes, each call registers
# its hooks when it starts and removes them before it returns, so a plain call
# is all it takes. We compare both with the page's results, including the
# library on the in-place copy.

library_guided = ht.GuidedBackprop(model)(images, target=predicted)
library_guided_inplace = ht.GuidedBackprop(inplace_model)(images, target=predicted)
library_guided_gradcam = ht.GuidedGradCAM(model, "relu3")(images, target=predicted)

print("largest guided gradient:             ", f"{guided.abs().max().item():.3e}")
print(
    "max |difference|, GuidedBackprop:    ", f"{(library_guided - guided).abs().max().item():.1e}"
)
print(
    "max |difference|, in-place copy:     ",
    f"{(library_guided_inplace - guided).abs().max().item():.1e}",
)
print(
    "max |difference|, GuidedGradCAM:     ",
    f"{(library_guided_gradcam - guided_gradcam).abs().max().item():.1e}",
)

# sphinx_gallery_start_ignore
# "We compare both with the page's results, including the library on the in-place copy":
# the same up to float32 rounding (1e-6 of the largest value), in place or not
largest = guided.abs().max()
assert largest > 0
assert (library_guided - guided).abs().max() < 1e-6 * largest
assert (library_guided_inplace - guided).abs().max() < 1e-6 * largest
assert (library_guided_gradcam - guided_gradcam).abs().max() < 1e-6 * largest
# sphinx_gallery_end_ignore

# %%
# Every hook is gone, on both models:

print("hooks left on the model:", ht.count_hooks(model).total)
print("hooks left on the copy: ", ht.count_hooks(inplace_model).total)

# sphinx_gallery_start_ignore
# "Every hook is gone, on both models"
assert ht.count_hooks(model).total == ht.count_hooks(inplace_model).total == 0
# sphinx_gallery_end_ignore

# %%
# Summary
# -------
#
# - The plain input gradient is a full-resolution but noisy map of how the
#   score reacts to each pixel.
# - Guided backpropagation keeps only positive gradients at every ReLU: a full
#   backward hook that returns ``grad_input`` clamped at zero.
# - A full backward hook on a ``ReLU(inplace=True)`` raises during the forward
#   pass; use non-in-place ReLUs on a copy, or a forward hook that registers a
#   tensor hook on the output (the library's way).
# - Guided Grad-CAM is the guided gradient times the upsampled Grad-CAM map.
# - Register hooks in ``try``/``finally`` (or a ``with`` block) and count them
#   afterwards: none may stay on the model.
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
# 1. The *deconvnet* rule (Zeiler & Fergus, ECCV 2014) passes
#    :math:`\max(g, 0)` through a ReLU whatever its input was. Write its hook
#    ``deconv_hook(module, grad_input, grad_output)`` (use ``grad_output``),
#    draw the resulting map for the first image, and measure its mass near
#    the outline as above. Check: ``ht.exercises.check("21.1", deconv_hook)``.
# 2. Write ``top_vs_second(model, explain, images)``, which returns, for each
#    image, the rank correlation (:obj:`hooks_tutorial.metrics.spearman`)
#    between the maps ``explain(images, target)`` of its most likely and of
#    its *second* most likely class. Apply it to the guided gradients and to
#    Grad-CAM. Which method is more class-specific? Check:
#    ``ht.exercises.check("21.2", top_vs_second)``.
# 3. Write a context manager ``guided_relus(model)`` that registers the
#    guided hooks on entry and removes them on exit, even after an error.
#    Check: ``ht.exercises.check("21.3", guided_relus)``.

# %%
# .. rst-class:: solution
#
# **Solution 1.** The deconvnet map also follows the outline: on every image,
# its mass near the outline is less than guided backpropagation's and more
# than the plain gradient's. Dropping the forward mask :math:`[a > 0]` lets
# gradient through ReLUs that were off for this image, so the map depends a
# little less on the image itself.


def deconv_hook(module, grad_input, grad_output):
    return (grad_output[0].clamp(min=0),)


handles = [relu.register_full_backward_hook(deconv_hook) for relu in relus]
try:
    x = images.clone().requires_grad_(True)
    scores = model(x).gather(1, predicted[:, None]).squeeze(1)
    (deconv,) = torch.autograd.grad(scores.sum(), x)
finally:
    for handle in handles:
        handle.remove()
deconv_shares = energy_pointing_game(to_image(deconv), outline)
print("deconvnet mass near the outline:", " ".join(f"{v:.3f}" for v in deconv_shares.tolist()))
for name in ("gradient", "guided backprop"):
    shares = energy_pointing_game(columns[name].detach(), outline)
    print(f"{name:16s} mass near the outline: " + " ".join(f"{v:.3f}" for v in shares.tolist()))
plt.figure(figsize=(4, 3.6))
plt.imshow(to_image(deconv)[0], cmap="magma")
plt.title("deconvnet, first image")
plt.show()

# sphinx_gallery_start_ignore
# "on every image, its mass near the outline is less than guided backpropagation's and
# more than the plain gradient's"
assert (deconv_shares < near_outline["guided backprop"]).all(), deconv_shares
assert (deconv_shares > near_outline["gradient"]).all(), deconv_shares
# sphinx_gallery_end_ignore

ht.exercises.check("21.1", deconv_hook)

# sphinx_gallery_start_ignore
from page_checks import assert_check  # docs/_ext: the build's checks

# the page's guided rule: it clamps grad_input, which keeps the forward mask
assert_check("21.1", deconv_hook, guided_relu_hook, "guided")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 2.** The guided gradients hardly change with the class: their
# rank correlation between the top and the second class stays high on all
# four images. Grad-CAM's maps change much more. Grad-CAM is the
# class-specific one; guided backpropagation mostly shows the image's edges
# whatever the class, which is why Guided Grad-CAM multiplies it by a
# Grad-CAM map.

from hooks_tutorial.metrics import spearman


def top_vs_second(model, explain, images):
    with torch.no_grad():
        top_two = model(images).topk(2, dim=1).indices
    return spearman(explain(images, top_two[:, 0]), explain(images, top_two[:, 1]))


def guided_maps(x, target):
    return to_image(ht.GuidedBackprop(model)(x, target=target))


guided_rho = top_vs_second(model, guided_maps, images)
cam_rho = top_vs_second(model, gradcam, images)
print("guided backprop, top vs second class:", " ".join(f"{v:.2f}" for v in guided_rho.tolist()))
print("Grad-CAM, top vs second class:       ", " ".join(f"{v:.2f}" for v in cam_rho.tolist()))

# sphinx_gallery_start_ignore
# "stays high on all four images" (0.71 to 0.81 so far): above 0.6; "Grad-CAM's maps
# change much more" (0.31 at most so far): every one 0.3 below the lowest guided one
assert guided_rho.min() > 0.6, guided_rho
assert cam_rho.max() < guided_rho.min() - 0.3, (cam_rho, guided_rho)
# sphinx_gallery_end_ignore

ht.exercises.check("21.2", top_vs_second)

# sphinx_gallery_start_ignore


# the top class twice: every correlation is 1
def top_vs_top(model, explain, images):
    with torch.no_grad():
        top = model(images).argmax(dim=1)
    return spearman(explain(images, top), explain(images, top))


assert_check("21.2", top_vs_second, top_vs_top, "same_class")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 3.** Inside the block the model carries 3 hooks (one per ReLU)
# and the gradients equal the page's guided gradients (max difference
# 0.0e+00); after an error raised inside the block the ``finally`` clause has
# removed them all: 0 hooks.

import contextlib


@contextlib.contextmanager
def guided_relus(model):
    handles = [
        m.register_full_backward_hook(guided_relu_hook)
        for m in model.modules()
        if isinstance(m, nn.ReLU)
    ]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


x = images.clone().requires_grad_(True)
with guided_relus(model):
    inside = ht.count_hooks(model).total
    print("hooks inside the block:", inside)
    scores = model(x).gather(1, predicted[:, None]).squeeze(1)
    (by_context,) = torch.autograd.grad(scores.sum(), x)
print(f"max |difference| to the guided gradients: {(by_context - guided).abs().max():.1e}")
try:
    with guided_relus(model):
        raise KeyboardInterrupt  # stands for any error inside the block
except KeyboardInterrupt:
    pass
print("hooks after an error in the block:", ht.count_hooks(model).total)

# sphinx_gallery_start_ignore
# "3 hooks (one per ReLU)", "the gradients equal the page's guided gradients (max
# difference 0.0e+00)": the same hooks, the same computation; "0 hooks" after the error
assert inside == 3
assert torch.equal(by_context, guided)
assert ht.count_hooks(model).total == 0
# sphinx_gallery_end_ignore

ht.exercises.check("21.3", guided_relus)

# sphinx_gallery_start_ignore


# without try/finally: an error at the yield skips the removal
@contextlib.contextmanager
def guided_relus_no_finally(model):
    handles = [
        m.register_full_backward_hook(guided_relu_hook)
        for m in model.modules()
        if isinstance(m, nn.ReLU)
    ]
    yield
    for handle in handles:
        handle.remove()


assert_check("21.3", guided_relus, guided_relus_no_finally, "left_after_error")
from page_checks import assert_exercises_checked, assert_no_hooks_left  # docs/_ext

assert_exercises_checked()
assert_no_hooks_left(globals())
# sphinx_gallery_end_ignore
