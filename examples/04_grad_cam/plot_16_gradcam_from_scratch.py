# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
Grad-CAM from scratch with hooks
================================

.. index::
   ! Grad-CAM
   ! heatmap
   ! 热力图
   ! Grad-CAM from scratch

The course notes say that Grad-CAM "measures each feature map's importance
with gradients". This page turns that sentence into about twenty lines of
PyTorch: a forward hook records the last conv block's feature maps, a tensor
hook records their gradients, and a weighted sum turns both into a heatmap.
Every step prints its tensor shapes, and the last figure shows the result
over the image.

.. rubric:: What you will learn
   :heading-level: 2

- how a forward hook and a tensor hook together capture the activations and
  the gradients of one layer in one forward and backward pass;
- the Grad-CAM formula, step by step: pooled gradients as channel weights,
  weighted sum, ReLU, bilinear upsampling, overlay;
- why Grad-CAM differentiates the pre-softmax score (the logit) and not the
  softmax probability;
- how to leave no hook behind.

**Prerequisites**: :doc:`/auto_examples/02_module_hooks/plot_05_forward_hooks`,
:doc:`/auto_examples/03_tensor_hooks/plot_10_tensor_hooks` and
:doc:`/auto_examples/04_grad_cam/plot_15_train_cnn` (the model and the data).
"""

# %%
# The model and one image
# -----------------------
#
# We explain the small CNN trained on the previous page, loaded with
# :obj:`hooks_tutorial.pretrained` (its weights ship with the library), and a
# test image it has never seen.

import copy

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

import hooks_tutorial as ht

torch.manual_seed(0)
model = ht.pretrained("simple_cnn-shapes")  # in eval mode
test = ht.make_shapes(16, split="test", seed=1)
classes = test.classes

image = test.images[:1]  # a batch of one image: [1, 3, 64, 64]
with torch.no_grad():
    probabilities = model(image).softmax(dim=1)[0]
predicted = int(probabilities.argmax())
print("input shape:", tuple(image.shape))
print(f"true class: {classes[int(test.labels[0])]}")
print(f"predicted:  {classes[predicted]} (probability {probabilities[predicted]:.3f})")

# sphinx_gallery_start_ignore
# the image the page explains is classified correctly, and confidently (0.999 in the builds
# so far): the "Why the pre-softmax score?" section relies on p_c close to 1
assert predicted == int(test.labels[0])
assert probabilities[predicted] > 0.99, probabilities
# sphinx_gallery_end_ignore

# %%
# The last conv block of ``SimpleCNN`` ends with ``relu3``; its output is the
# feature map :math:`A` that Grad-CAM explains. Printing the model shows the
# layer names.

print(model)

# %%
# Step 0: hooks for the activations and their gradients
# -----------------------------------------------------
#
# The forward hook runs right after ``relu3`` and receives its output. It keeps
# a detached copy (the activations) and registers a *tensor hook* on the
# output itself; autograd calls that tensor hook with
# :math:`\partial y^c / \partial A` during the backward pass.

captured = {}


def save_gradient(grad):
    captured["gradients"] = grad.detach()


def save_activations_and_hook_gradient(module, args, output):
    captured["activations"] = output.detach()
    output.register_hook(save_gradient)  # fires during backward


handle = model.relu3.register_forward_hook(save_activations_and_hook_gradient)
print("hooks on relu3:", ht.count_hooks(model.relu3).total)

# sphinx_gallery_start_ignore
# "The forward hook runs right after relu3": one forward hook, nothing else
assert ht.count_hooks(model)["relu3"].forward == ht.count_hooks(model).total == 1
# sphinx_gallery_end_ignore

# %%
# One forward pass fills ``captured["activations"]``. We then pick the class to
# explain, the predicted one, and call ``backward()`` on its *pre-softmax
# score* :math:`y^c` (the logit); the tensor hook stores the gradient.

logits = model(image)  # the forward hook fires here
target_class = int(logits.argmax(dim=1))
score = logits[0, target_class]  # y^c, before softmax
model.zero_grad()
score.backward()  # the tensor hook fires here

activations = captured["activations"]
gradients = captured["gradients"]
print("logits:     ", tuple(logits.shape))
print("activations:", tuple(activations.shape), "= [batch, channels K, height, width]")
print("gradients:  ", tuple(gradients.shape), "(one value per activation)")

# sphinx_gallery_start_ignore
# "One forward pass fills captured["activations"] ... the tensor hook stores the gradient"
assert activations.shape == gradients.shape == (1, 64, 8, 8)
# sphinx_gallery_end_ignore

# %%
# The formula
# -----------
#
# With :math:`A^k` the :math:`k`-th channel of the feature map (an
# :math:`h \times w` grid of :math:`Z = hw` positions) and :math:`y^c` the
# score of class :math:`c`, Grad-CAM (Selvaraju et al., ICCV 2017) weighs
# each channel by its average gradient, then adds up the weighted channels
# and keeps the positive part:
#
# .. math::
#
#    \alpha_k^c = \frac{1}{Z} \sum_{i,j} \frac{\partial y^c}{\partial A^k_{ij}},
#    \qquad
#    L^c_{\text{Grad-CAM}} = \operatorname{ReLU}\Big(\sum_k \alpha_k^c A^k\Big).
#
# Step 1: channel weights by global average pooling of the gradients
# -------------------------------------------------------------------

weights = gradients.mean(dim=(2, 3))  # alpha_k^c: [1, K]
print("weights:", tuple(weights.shape))
print("positive weights:", int((weights > 0).sum()), "of", weights.shape[1])
print("largest weights: ", weights[0].topk(3).values)

# %%
# The chapter's model ends with global *max* pooling and one linear layer:
# the score sees only the largest activation of each channel, so the gradient
# of channel :math:`k` is the linear weight :math:`w^c_k` at that one position
# and zero everywhere else. Averaging over the :math:`Z` positions then gives
# :math:`\alpha^c_k = w^c_k / Z`: here Grad-CAM is the class activation map
# (CAM, Zhou et al., CVPR 2016) divided by :math:`Z`.

nonzero = (gradients != 0).sum(dim=(2, 3))
print("positions with a nonzero gradient, per channel: at most", int(nonzero.max()))
Z = gradients.shape[2] * gradients.shape[3]
print("Z =", Z)
print("weights == fc weights / Z:", torch.allclose(weights[0], model.fc.weight[target_class] / Z))

# sphinx_gallery_start_ignore
# "the gradient of channel k is the linear weight w^c_k at that one position and zero
# everywhere else. Averaging over the Z positions then gives alpha = w / Z"
assert int(nonzero.max()) == 1
assert torch.equal(gradients.sum(dim=(2, 3))[0], model.fc.weight[target_class].detach())
assert Z == 64
assert torch.allclose(weights[0], model.fc.weight[target_class] / Z)
# sphinx_gallery_end_ignore

# %%
# Step 2: weighted sum of the feature maps
# ----------------------------------------

weighted_sum = (weights[:, :, None, None] * activations).sum(dim=1)  # [1, h, w]
print("weighted sum:", tuple(weighted_sum.shape))
print(f"range: {weighted_sum.min().item():.3f} to {weighted_sum.max().item():.3f}")

# %%
# Step 3: ReLU keeps the evidence *for* the class
# -----------------------------------------------
#
# Negative values are positions that lower the score; Grad-CAM drops them.

cam = F.relu(weighted_sum)  # L^c at feature resolution
print("raw CAM:", tuple(cam.shape))
print("positions set to zero by the ReLU:", int((weighted_sum <= 0).sum()), "of", cam.numel())

# sphinx_gallery_start_ignore
# "Negative values are positions that lower the score; Grad-CAM drops them": this map has
# both signs, and the ReLU zeroes some positions but not all
assert weighted_sum.min() < 0 < weighted_sum.max()
assert 0 < int((cam == 0).sum()) < cam.numel()
# sphinx_gallery_end_ignore

# %%
# Step 4: upsample to the image and scale to [0, 1]
# -------------------------------------------------
#
# The map has the feature map's resolution. Bilinear interpolation brings it to
# the input size, and min-max scaling stretches it to [0, 1] for display. The
# scaling keeps *where* the map is high but discards *how high*: every scaled
# map has its maximum at 1, so a weak map and a strong one look alike, and
# colours cannot be compared across images or classes. Keep the raw map to
# compare magnitudes (the next page does).

upsampled = F.interpolate(cam[:, None], size=image.shape[-2:], mode="bilinear", align_corners=False)
print("upsampled:", tuple(upsampled.shape))
heatmap = upsampled[0, 0]
heatmap = (heatmap - heatmap.min()) / (heatmap.max() - heatmap.min())
print(f"heatmap: {tuple(heatmap.shape)}, from {heatmap.min():.1f} to {heatmap.max():.1f}")

# sphinx_gallery_start_ignore
# "min-max scaling stretches it to [0, 1] ... every scaled map has its maximum at 1, so a
# weak map and a strong one look alike": a map ten times weaker scales to the same heatmap
assert heatmap.shape == (64, 64)
assert heatmap.min() == 0
assert heatmap.max() == 1
weak = upsampled[0, 0] / 10
assert torch.allclose((weak - weak.min()) / (weak.max() - weak.min()), heatmap, atol=1e-6)
# sphinx_gallery_end_ignore

# %%
# Step 5: overlay
# ---------------
#
# The four panels: the input (with the object's outline from the data set's
# mask), the raw map, the upsampled map and the overlay.

picture = image[0].permute(1, 2, 0).numpy()  # [H, W, 3] for imshow
mask = test.masks[0].numpy()

fig, axes = plt.subplots(2, 2, figsize=(5.2, 5.4), layout="constrained")
fig.patch.set_facecolor("white")
axes[0, 0].imshow(picture)
axes[0, 0].contour(mask, levels=[0.5], colors="white", linewidths=1)
axes[0, 0].set_title(f"input: {classes[int(test.labels[0])]}")
axes[0, 1].imshow(cam[0].numpy(), cmap="viridis")
axes[0, 1].set_title(f"raw CAM {tuple(cam.shape[1:])}")
axes[1, 0].imshow(heatmap.numpy(), cmap="viridis")
axes[1, 0].set_title(f"upsampled {tuple(heatmap.shape)}")
axes[1, 1].imshow(picture)
axes[1, 1].imshow(heatmap.numpy(), cmap="jet", alpha=0.5)
axes[1, 1].contour(mask, levels=[0.5], colors="white", linewidths=1)
axes[1, 1].set_title(f"overlay: {classes[target_class]}")
for ax in axes.flat:
    ax.set_xticks([])
    ax.set_yticks([])
plt.show()

# %%
# Is the map's maximum on the object? The data set knows the object's pixels,
# so this is a check, not an impression:

peak = int(heatmap.argmax())
row, col = divmod(peak, heatmap.shape[1])
print(f"peak at row {row}, column {col}; on the object: {bool(test.masks[0, row, col])}")

# sphinx_gallery_start_ignore
# the figure's overlay: the peak lies on the object
assert test.masks[0, row, col]
# sphinx_gallery_end_ignore

# %%
# Removing the hook
# -----------------
#
# The captured tensors are all Grad-CAM needs, so the hook's work is done.
# The forward hook stays on ``relu3`` until its handle is removed; every
# later forward pass would run it again. The tensor hook belongs to the
# output tensor of that one forward pass and is freed with it.
#
# A hook is part of the module's state, so a copy of the module carries it
# too: ``copy.deepcopy`` copies the module's hook dictionaries, and the
# handle removes the hook from the original only. We copy the model before
# removing the hook to see it:

hooked_copy = copy.deepcopy(model)  # made while the hook is registered
handle.remove()
print("hooks on relu3:", ht.count_hooks(model.relu3).total)
print("hooks anywhere in the model:", ht.count_hooks(model).total)
print("hooks on the copy's relu3:", ht.count_hooks(hooked_copy.relu3).total)

# sphinx_gallery_start_ignore
# "copy.deepcopy copies the module's hook dictionaries, and the handle removes the hook
# from the original only"
assert ht.count_hooks(model).total == 0
assert ht.count_hooks(hooked_copy)["relu3"].forward == ht.count_hooks(hooked_copy).total == 1
# sphinx_gallery_end_ignore

# %%
# The copy's hook would run at every forward pass of the copy and overwrite
# ``captured``, and no handle of ours can remove it. Copy a model before
# registering hooks or after removing them; we drop this copy.

del hooked_copy

# %%
# Why the pre-softmax score?
# --------------------------
#
# Differentiating the probability :math:`p_c = \operatorname{softmax}(y)_c`
# instead of the logit :math:`y^c` gives
#
# .. math::
#
#    \frac{\partial p_c}{\partial A} = p_c \Big(\frac{\partial y^c}{\partial A}
#    - \sum_j p_j \frac{\partial y^j}{\partial A}\Big),
#
# which mixes in the other classes and goes to zero when :math:`p_c \to 1`.
# To see it, we recompute the model's head on the captured activations and
# multiply the logits by a growing factor (a sharper softmax, same ranking).

features = activations.clone().requires_grad_(True)  # A, as a leaf


def head(feature_map, net=model):
    return net.fc(net.flatten(net.gap(feature_map)))


scales = (0.03, 0.1, 0.3, 1.0, 3.0)
p_c, largest_logit_grad, largest_probability_grad = [], [], []
for scale in scales:
    scaled_logits = scale * head(features)
    logit_grad = torch.autograd.grad(scaled_logits[0, target_class], features, retain_graph=True)[0]
    probability = scaled_logits.softmax(dim=1)[0, target_class]
    probability_grad = torch.autograd.grad(probability, features)[0]
    p_c.append(probability.item())
    largest_logit_grad.append(logit_grad.abs().max().item())
    largest_probability_grad.append(probability_grad.abs().max().item())
    print(
        f"scale {scale:4.2f}: p_c = {p_c[-1]:.6f}   "
        f"max|dy/dA| = {largest_logit_grad[-1]:.4f}   "
        f"max|dp/dA| = {largest_probability_grad[-1]:.2e}"
    )

# sphinx_gallery_start_ignore
# "Scale 1 is the model as trained": its p_c is the probability printed at the top
assert abs(p_c[scales.index(1.0)] - probabilities[target_class].item()) < 1e-5
# "The logit's gradient grows with the scale, as the logit does": in proportion (100 times
# from 0.03 to 3), up to float rounding
assert largest_logit_grad == sorted(largest_logit_grad)
ratio = largest_logit_grad[-1] / largest_logit_grad[0]
assert abs(ratio - scales[-1] / scales[0]) < 1e-3 * ratio, ratio
# "the probability's gradient shrinks towards zero as p_c approaches 1": it peaks, then
# falls below 1e-6 at the largest scale (1.4e-09 in the builds so far)
assert p_c == sorted(p_c)
assert p_c[-1] > 0.999
dp = largest_probability_grad
assert dp[-1] < dp[-2] < max(dp)
assert dp[-1] < 1e-6
# sphinx_gallery_end_ignore

# %%
# Scale 1 is the model as trained. The logit's gradient grows with the scale,
# as the logit does; the probability's gradient shrinks towards zero as
# :math:`p_c` approaches 1. A map built from the probability would fade
# exactly when the model is most sure, and its weights would mix in the
# other classes.
#
# The formula above is exactly what autograd computes. We check it in double
# precision: with :math:`p_c` this close to 1, the subtraction in the formula
# would lose most of float32's digits. The hook is gone, so the copy has
# none:

model64 = copy.deepcopy(model).double()
print("hooks on the float64 copy:", ht.count_hooks(model64).total)
features64 = activations.double().requires_grad_(True)
logits64 = head(features64, net=model64)
probs64 = logits64.softmax(dim=1)[0]
grad_y = [
    torch.autograd.grad(logits64[0, j], features64, retain_graph=True)[0]
    for j in range(len(classes))
]
by_formula = probs64[target_class] * (
    grad_y[target_class] - sum(probs64[j] * grad_y[j] for j in range(len(classes)))
)
by_autograd = torch.autograd.grad(probs64[target_class], features64)[0]
print("1 - p_c =", (1 - probs64[target_class]).item())
print("formula matches autograd:", torch.allclose(by_formula, by_autograd, rtol=1e-6, atol=1e-15))

# sphinx_gallery_start_ignore
# "The hook is gone, so the copy has none"; "The formula above is exactly what autograd
# computes", "with p_c this close to 1" (1 - p_c = 0.0012 in the builds so far)
assert ht.count_hooks(model64).total == 0
assert torch.allclose(by_formula, by_autograd, rtol=1e-6, atol=1e-15)
assert (1 - probs64[target_class]).item() < 0.01
# sphinx_gallery_end_ignore

# %%
# Everything in one function
# --------------------------
#
# The same steps for a batch, with the hook removed in ``finally`` so that an
# error cannot leave it behind. The next page compares this function with the
# library's ``GradCAM``.


def grad_cam(model, layer, images, target=None):
    """Grad-CAM maps [B, H, W] in [0, 1] for ``images`` [B, C, H, W]."""
    store = {}

    def hook(module, args, output):
        store["A"] = output.detach()
        output.register_hook(lambda grad: store.update(dA=grad.detach()))

    handle = layer.register_forward_hook(hook)
    try:
        logits = model(images)
        if target is None:
            target = logits.argmax(dim=1)
        target = torch.as_tensor(target).expand(len(images))
        model.zero_grad()
        logits.gather(1, target[:, None]).sum().backward()
    finally:
        handle.remove()
    weights = store["dA"].mean(dim=(2, 3))
    cams = F.relu((weights[:, :, None, None] * store["A"]).sum(dim=1))
    cams = F.interpolate(cams[:, None], size=images.shape[-2:], mode="bilinear")[:, 0]
    low = cams.flatten(1).min(dim=1).values[:, None, None]
    high = cams.flatten(1).max(dim=1).values[:, None, None]
    return (cams - low) / (high - low).clamp(min=1e-12)


maps = grad_cam(model, model.relu3, test.images[:8])
print("maps:", tuple(maps.shape))
print("same as the step-by-step heatmap:", torch.allclose(maps[0], heatmap, atol=1e-6))
print("hooks on relu3:", ht.count_hooks(model.relu3).total)

# sphinx_gallery_start_ignore
# "The same steps for a batch, with the hook removed in finally"
assert maps.shape == (8, 64, 64)
assert torch.allclose(maps[0], heatmap, atol=1e-6)
assert ht.count_hooks(model).total == 0
# sphinx_gallery_end_ignore

# %%
# Summary
# -------
#
# - A forward hook on the target layer captures the activations :math:`A`;
#   a tensor hook registered on that same output captures
#   :math:`\partial y^c / \partial A` during ``backward()``.
# - Grad-CAM averages the gradients over positions to weigh each channel,
#   adds the weighted channels, keeps the positive part, and upsamples the
#   map to the image.
# - Use the pre-softmax score: the probability's gradient vanishes when the
#   model is confident and mixes in the other classes.
# - Remove the forward hook's handle (in ``finally``) when done.
#   ``copy.deepcopy`` copies a module's hooks too: copy a model before
#   registering hooks or after removing them.
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
# 1. Write ``second_class_cam(model, layer, image)``, which returns the
#    Grad-CAM map of the *second most likely* class of the image instead of
#    the predicted one, and apply it to the first image. Does the peak move?
#    Check: ``ht.exercises.check("16.1", second_class_cam)``.
# 2. Write ``probability_cam(model, layer, image, target)``, which returns the
#    raw map (after the ReLU, before upsampling) computed with the probability
#    :math:`p_c` instead of the logit, and compare its largest value with the
#    logit's raw map. Check: ``ht.exercises.check("16.2", probability_cam)``.
# 3. Write ``layer_gradient(model, layer, image, target)``, which returns the
#    gradient of the target's logit with respect to ``layer``'s output, kept
#    by hooks that it removes again. Apply it to ``model.relu2`` instead of
#    ``model.relu3``: how many positions per channel get a nonzero gradient
#    now, and why? Check: ``ht.exercises.check("16.3", layer_gradient)``.

# %%
# .. rst-class:: solution
#
# **Solution 1.** The peak hardly moves: for the predicted star and for the
# cross, the second most likely class, the peaks are a few pixels apart at
# most, and both lie on the object. Both maps add up the same 64 feature
# maps; another class changes the weights (another row of ``fc``), not where
# the feature maps are large.


def second_class_cam(model, layer, image):
    second = int(model(image).topk(2).indices[0, 1])  # the second largest logit
    return grad_cam(model, layer, image, target=second)


# the predicted class, then the second largest logit
second = int(model(image).topk(2).indices[0, 1])
peaks = {}
for c, peak_map in (
    (target_class, grad_cam(model, model.relu3, image, target=target_class)[0]),
    (second, second_class_cam(model, model.relu3, image)[0]),
):
    peaks[classes[c]] = divmod(int(peak_map.argmax()), peak_map.shape[1])
    r, k = peaks[classes[c]]
    print(
        f"{classes[c]:>8}: peak at row {r}, column {k}, on the object: {bool(test.masks[0, r, k])}"
    )
print("feature maps added up:", activations.shape[1])

# sphinx_gallery_start_ignore
# "for the predicted star and for the cross, the second most likely class, the peaks are a
# few pixels apart at most, and both lie on the object" (rows 20 and 19, column 35 in the
# builds so far; a cell of the 8x8 map is 8 pixels wide)
assert list(peaks) == ["star", "cross"], peaks
(r1, k1), (r2, k2) = peaks.values()
assert abs(r1 - r2) <= 3, peaks
assert abs(k1 - k2) <= 3, peaks
assert all(test.masks[0, r, k] for r, k in peaks.values())
# sphinx_gallery_end_ignore

ht.exercises.check("16.1", second_class_cam)

# sphinx_gallery_start_ignore
from page_checks import assert_check  # docs/_ext: the build's checks


# the map of the predicted class: grad_cam's default target
def predicted_class_cam(model, layer, image):
    return grad_cam(model, layer, image)


assert_check("16.1", second_class_cam, predicted_class_cam, "predicted_class")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 2.** The raw map from the probability is more than 1000 times
# smaller than the one from the logit: the model is sure of this image, and
# the probability's gradient vanishes as :math:`p_c` approaches 1 (the
# formula above), while its weights mix in the other classes' gradients.


def probability_cam(model, layer, image, target):
    store = {}

    def keep(module, args, output):
        store["A"] = output.detach()
        output.register_hook(lambda grad: store.update(dA=grad))

    handle = layer.register_forward_hook(keep)
    try:
        model(image).softmax(dim=1)[0, target].backward()  # p_c instead of y^c
    finally:
        handle.remove()
    w = store["dA"].mean(dim=(2, 3))
    return F.relu((w[:, :, None, None] * store["A"]).sum(dim=1))


largest = {
    "logit": cam.max().item(),  # the raw map of steps 1 to 3, from the logit
    "probability": probability_cam(model, model.relu3, image, target_class).max().item(),
}
for name, value in largest.items():
    print(f"{name:>11}: largest value of the raw map {value:.3e}")
ratio = largest["logit"] / largest["probability"]
print(f"ratio: {ratio:.0f}")
print("more than 1000 times smaller:", ratio > 1000)

# sphinx_gallery_start_ignore
# "more than 1000 times smaller" (3120 in the builds so far: a factor of 3 to spare)
assert ratio > 1000, ratio
# sphinx_gallery_end_ignore

ht.exercises.check("16.2", probability_cam)

# sphinx_gallery_start_ignore


# the map from the logit, the one of steps 1 to 3
def logit_cam(model, layer, image, target):
    store = {}

    def keep(module, args, output):
        store["A"] = output.detach()
        output.register_hook(lambda grad: store.update(dA=grad))

    handle = layer.register_forward_hook(keep)
    try:
        model(image)[0, target].backward()
    finally:
        handle.remove()
    w = store["dA"].mean(dim=(2, 3))
    return F.relu((w[:, :, None, None] * store["A"]).sum(dim=1))


assert_check("16.2", probability_cam, logit_cam, "used_logit")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 3.** In every channel of ``relu2``, 60 of the 256 positions get
# a nonzero gradient, never more than 1 in a 2 x 2 window. The spreading is
# done by ``conv3``: each channel of ``relu3`` has its gradient at one
# position, and the 3 x 3 kernels of ``conv3`` pass it to the 3 x 3
# neighbourhood of that position in all 32 channels of ``pool2``'s output,
# which covers 60 of its 64 positions. ``pool2`` spreads nothing: a 2 x 2 max
# pool sends each position's gradient to the one input that was largest in
# its window, so ``relu2`` receives it at 60 positions too, one per window.


def layer_gradient(model, layer, image, target):
    kept = {}

    def hook(module, args, output):
        output.register_hook(lambda grad: kept.update(grad=grad))

    handle = layer.register_forward_hook(hook)
    try:
        model(image)[0, target].backward()
    finally:
        handle.remove()
    return kept["grad"]


# the gradients of relu2's and pool2's outputs for the same score
grads = {
    name: layer_gradient(model, getattr(model, name), image, target_class)
    for name in ("pool2", "relu2")
}
for name in ("pool2", "relu2"):
    nonzero = (grads[name] != 0).sum(dim=(2, 3))[0]
    print(
        f"{name}: {tuple(grads[name].shape[1:])}, nonzero positions per channel:"
        f" {int(nonzero.min())} to {int(nonzero.max())} of {grads[name][0, 0].numel()}"
    )
print("conv3 kernel:", model.conv3.kernel_size, " pool2 window:", model.pool2.kernel_size)
per_window = F.avg_pool2d((grads["relu2"] != 0).float(), 2) * 4  # count per 2 x 2 window
print("most nonzero positions in one 2 x 2 window of relu2:", int(per_window.max()))

# sphinx_gallery_start_ignore
# "In every channel of relu2, 60 of the 256 positions", "all 32 channels of pool2's output,
# which covers 60 of its 64 positions": counts, the same on every machine (each relu3
# channel's gradient sits at its maximum)
for name, size in (("pool2", (32, 8, 8)), ("relu2", (32, 16, 16))):
    counts = (grads[name] != 0).sum(dim=(2, 3))[0]
    assert tuple(grads[name].shape[1:]) == size, name
    assert counts.eq(60).all(), (name, counts)
# "never more than 1 in a 2 x 2 window": the max pool routes, it does not spread
assert int(per_window.max()) == 1
assert model.conv3.kernel_size == (3, 3)
assert model.pool2.kernel_size == 2
# sphinx_gallery_end_ignore

ht.exercises.check("16.3", layer_gradient)

# sphinx_gallery_start_ignore


# the forward hook's output instead of the gradient the tensor hook receives
def layer_activation(model, layer, image, target):
    kept = {}
    handle = layer.register_forward_hook(lambda m, args, out: kept.update(out=out.detach()))
    try:
        model(image)[0, target].backward()
    finally:
        handle.remove()
    return kept["out"]


assert_check("16.3", layer_gradient, layer_activation, "returned_activation")
from page_checks import assert_exercises_checked, assert_no_hooks_left  # docs/_ext

assert_exercises_checked()
assert_no_hooks_left(globals())
# sphinx_gallery_end_ignore
