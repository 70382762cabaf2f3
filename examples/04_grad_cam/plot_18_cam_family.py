# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
The CAM family side by side
===========================

.. index::
   ! Score-CAM
   ! HiResCAM
   ! Grad-CAM++
   ! XGrad-CAM
   ! Layer-CAM
   ! Eigen-CAM
   ! CAM family

Grad-CAM is one answer to "which channels matter, and where?". Its
successors change how the channels are weighted: per position instead of
per channel, with activation-weighted gradients, with forward passes instead
of gradients, or without any class at all. This page runs seven of them on
the same images and the same layer, gives each one's formula, checks on the
chapter's model what the formulas predict, and compares the maps with each
other and what each one costs. Which map is *better* is a question of
measurement, the subject of the next page,
:doc:`/auto_examples/04_grad_cam/plot_18b_measuring_cams`.

.. rubric:: What you will learn
   :heading-level: 2

- the formulas of Grad-CAM, Grad-CAM++, XGrad-CAM, Layer-CAM, HiResCAM,
  Score-CAM and Eigen-CAM, and what each changes;
- what global max pooling before the linear layer does to the
  gradient-based maps, and two sign conventions, checked on the model;
- how close the other maps come to Grad-CAM's, and what each method costs
  in forward passes;
- the two weightings of Score-CAM in use, and how much they disagree.

**Prerequisites**: :doc:`/auto_examples/04_grad_cam/plot_16_gradcam_from_scratch`
and :doc:`/auto_examples/04_grad_cam/plot_17_gradcam_library`.
"""

# %%
# Seven maps for the same images
# ------------------------------
#
# First what the methods give, then how they compute it. Seven methods of the
# family explain the same layer of the chapter's model, ``relu3``; all of
# them take the same arguments in ``hooks_tutorial``:

import statistics
import time

import matplotlib.pyplot as plt
import torch

import hooks_tutorial as ht
from hooks_tutorial.metrics import pearson, pointing_game

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
for name, method in methods.items():
    print(f"{name:>10}: {method!r}")

# sphinx_gallery_start_ignore
# "This page runs seven of them on the same images and the same layer"
assert len(methods) == 7
assert all("target_layer='relu3'" in repr(method) for method in methods.values())
# sphinx_gallery_end_ignore

# %%
# A fixed subset of the test set: the first 48 images. Every method explains
# the predicted class (Eigen-CAM has no class).

test = ht.make_shapes(48, split="test", seed=0)
images = test.images
maps = {name: method(images) for name, method in methods.items()}
print("images:", tuple(images.shape))
print("maps per method:", tuple(maps["Grad-CAM"].shape))
print("hooks left on the model:", ht.count_hooks(model).total)

# sphinx_gallery_start_ignore
# "A fixed subset of the test set: the first 48 images"; one map per image and method
assert images.shape == (48, 3, 64, 64)
assert all(m.shape == (48, 64, 64) for m in maps.values())
assert ht.count_hooks(model).total == 0
# sphinx_gallery_end_ignore

# %%
# The first four images with the seven maps, drawn with
# :obj:`hooks_tutorial.plot_cams` as on the previous page; the row labels
# give the predicted class.

with torch.no_grad():
    predicted = model(images).argmax(dim=1)
rows = torch.arange(4)
ht.plot_cams(
    images[rows],
    {name: m[rows] for name, m in maps.items()},
    labels=[test.classes[int(predicted[i])] for i in rows],
    panel_size=1.2,
    max_columns=4,
)
plt.show()

# sphinx_gallery_start_ignore
# "Layer-CAM and HiResCAM are the tightest, Grad-CAM++ and Score-CAM the widest": the
# share of pixels lit, over the 48 images, at two thresholds (above 0 and above 0.2, each
# map scaled to [0, 1]); the order holds at both (at 0.2 so far: 0.07 and
# 0.08, then 0.12 to 0.17, then 0.28 and 0.39)
for threshold in (0.0, 0.2):
    lit = {name: (m > threshold).float().mean().item() for name, m in maps.items()}
    tight, wide = ("Layer-CAM", "HiResCAM"), ("Grad-CAM++", "Score-CAM")
    middle = [lit[name] for name in lit if name not in tight + wide]
    assert max(lit[name] for name in tight) < min(middle), (threshold, lit)
    assert min(lit[name] for name in wide) > max(middle), (threshold, lit)
# sphinx_gallery_end_ignore

# %%
# The maps differ in how far they spread: Layer-CAM and HiResCAM are the
# tightest, Grad-CAM++ and Score-CAM the widest. The formulas below, and
# what max pooling does to the gradients, say why.
#
# The methods
# -----------
#
# Notation: :math:`A^k` is channel :math:`k` of the target layer's feature
# map, :math:`g^k = \partial y^c / \partial A^k` its gradient for the
# pre-softmax score :math:`y^c`, :math:`Z` the number of positions, and
# :math:`\odot` the element-wise product. In ``hooks_tutorial`` each map ends
# with a ReLU (``relu=True``, the default), so that every method shows
# positive evidence only; two papers define it differently, see HiResCAM and
# Eigen-CAM below.
#
# - **Grad-CAM** (Selvaraju et al., ICCV 2017): channel weights are the
#   average gradient.
#
#   .. math:: L = \operatorname{ReLU}\Big(\sum_k \alpha_k A^k\Big), \quad
#      \alpha_k = \frac{1}{Z} \sum_{i,j} g^k_{ij}
#
# - **Grad-CAM++** (Chattopadhay et al., WACV 2018): only positive
#   gradients count, each with its own coefficient.
#
#   .. math:: w_k = \sum_{i,j} a^k_{ij} \operatorname{ReLU}(g^k_{ij}), \quad
#      a^k_{ij} = \frac{(g^k_{ij})^2}{2 (g^k_{ij})^2 + \sum_{a,b} A^k_{ab} (g^k_{ij})^3}
#
#   The paper derives the coefficients from the second and third
#   derivatives of :math:`\exp(y^c)`; for a piecewise linear network (ReLUs)
#   these are powers of :math:`g`, which gives the formula above. (Its
#   weights also carry a factor :math:`\exp(y^c)`, the same for every
#   channel, which the scaling to [0, 1] removes.)
#
# - **XGrad-CAM** (Fu et al., BMVC 2020): gradients averaged with the
#   activations as weights.
#
#   .. math:: \alpha_k = \sum_{i,j} \frac{A^k_{ij}}{\sum_{a,b} A^k_{ab}} g^k_{ij}
#
# - **Layer-CAM** (Jiang et al., IEEE TIP 2021): positive gradients as
#   weights per position.
#
#   .. math:: L = \operatorname{ReLU}\Big(\sum_k \operatorname{ReLU}(g^k) \odot A^k\Big)
#
# - **HiResCAM** (Draelos and Carin, arXiv:2011.08891): gradient times
#   activation per position, without averaging.
#
#   .. math:: L = \operatorname{ReLU}\Big(\sum_k g^k \odot A^k\Big)
#
#   The paper's map is the signed sum, without the ReLU: its negative
#   positions lower the score. The library keeps the ReLU by default, like
#   the other methods, so that all seven maps show the same thing (evidence
#   *for* the class); ``relu=False`` gives the paper's signed map.
#
# - **Score-CAM** (Wang et al., CVPR Workshops 2020): no gradients; each
#   channel, upsampled to the input and min-max scaled to [0, 1], becomes a
#   mask :math:`M_k`, and the weight is the class probability of the masked
#   input (one forward pass per channel).
#
#   .. math:: w_k = \operatorname{softmax}\big(f(X \odot M_k)\big)_c, \quad
#      L = \operatorname{ReLU}\Big(\sum_k w_k A^k\Big)
#
#   The paper defines the weight as the increase over the score of a
#   baseline input; the authors' code, and the library, use the probability
#   of the masked input itself. A second weighting is in use too; it is
#   compared at the end of this page.
#
# - **Eigen-CAM** (Muhammad and Yeasin, IJCNN 2020): the first principal
#   component of the centred activations :math:`\bar X` (positions x
#   channels); it ignores the class.
#
#   .. math:: L = \operatorname{ReLU}(\bar X v_1)
#
#   A principal component has no sign: :math:`-v_1` is as good as
#   :math:`v_1`, and which one the SVD returns is an accident of the
#   numerics. The library picks the sign that makes :math:`\bar X v_1`
#   correlate positively with the mean over channels of :math:`A` (where the
#   layer is active overall), then applies the ReLU; ``relu=False`` keeps
#   both sides.
#
# What max pooling does to the gradients
# --------------------------------------
#
# The chapter's model ends with global *max* pooling and one linear layer, so
# each channel's gradient is nonzero at one position only: its maximum (see
# the previous pages). Grad-CAM averages that gradient to :math:`w^c_k / Z`,
# so it equals the original CAM (Zhou et al., CVPR 2016;
# :obj:`hooks_tutorial.CAM`) divided by :math:`Z`. That part is not due to
# max pooling: after global average pooling the gradient is :math:`w^c_k / Z`
# at every position, and the average is the same.

grad_cam_raw = methods["Grad-CAM"](images, raw=True)
cam_raw = ht.CAM(model, "relu3", "fc")(images, raw=True)
Z = grad_cam_raw.shape[1] * grad_cam_raw.shape[2]
print("Z =", Z)
print(f"max |CAM / Z - Grad-CAM| = {(cam_raw / Z - grad_cam_raw).abs().max():.1e}")

# sphinx_gallery_start_ignore
# "so it equals the original CAM ... divided by Z": up to float rounding (0.0e+00 in the
# builds so far, on raw maps whose values reach about 0.1)
assert Z == 64
assert (cam_raw / Z - grad_cam_raw).abs().max() < 1e-6
# sphinx_gallery_end_ignore

# %%
# And the methods that keep the gradient per position, HiResCAM and
# Layer-CAM, only see each channel's maximum, so their raw maps (before
# upsampling) are nonzero at fewer positions than Grad-CAM's:

above_zero, raw_maps = {}, {}
for name in ("Grad-CAM", "XGrad-CAM", "Grad-CAM++", "HiResCAM", "Layer-CAM"):
    raw_maps[name] = methods[name](images, raw=True)
    above_zero[name] = (raw_maps[name] > 0).float().sum(dim=(1, 2)).mean()
    print(f"{name:>10}: {above_zero[name]:5.1f} of {Z} positions above zero, on average")
at_zero = int((raw_maps["Grad-CAM++"] == 0).sum())
print(f"Grad-CAM++ at zero: {at_zero} of {raw_maps['Grad-CAM++'].numel()} positions in all")

# sphinx_gallery_start_ignore
# "HiResCAM and Layer-CAM ... are nonzero at fewer positions than Grad-CAM's" (13.0 and
# 16.0 against 34.9 in the builds so far)
assert above_zero["HiResCAM"] < above_zero["Grad-CAM"]
assert above_zero["Layer-CAM"] < above_zero["Grad-CAM"]
# "Grad-CAM++ is above zero almost everywhere": its weights "are never negative", so its
# signed map (relu=False) has no negative value; "nearly every position": above 99% of them
# (3070 of 3072 in the builds so far: two positions of one image, where no channel with a
# positive weight is active, are zero; the printed 64.0 is rounded)
assert ht.GradCAMPlusPlus(model, "relu3", relu=False)(images, raw=True).min() >= 0
assert above_zero["Grad-CAM++"] > 0.99 * Z
assert at_zero < 0.01 * raw_maps["Grad-CAM++"].numel()
# sphinx_gallery_end_ignore

# %%
# Grad-CAM++ is above zero almost everywhere: with one nonzero gradient per
# channel its weights :math:`w_k = \operatorname{ReLU}(g) / (2 + g \sum A^k)`
# are never negative, so the weighted sum of the (non-negative) activations
# is positive wherever a channel with a positive weight is active, and that
# is nearly every position (the last line counts the exceptions; the average
# above is rounded).
#
# Two sign conventions can be checked too. HiResCAM's signed map
# (``relu=False``) adds up, over the positions, to the layer's first-order
# contribution to the score; with max pooling and one linear layer that is
# exactly the logit minus ``fc``'s bias. And the signed Eigen-CAM projection
# is oriented to correlate positively with the channel mean, on every image:

signed = ht.HiResCAM(model, "relu3", relu=False)(images, raw=True)
with torch.no_grad():
    logits = model(images)
    channel_mean = model.forward_features(images).mean(dim=1)
contribution = logits.gather(1, predicted[:, None])[:, 0] - model.fc.bias[predicted]
print(
    "signed HiResCAM, sum over positions == logit - bias:",
    torch.allclose(signed.sum(dim=(1, 2)), contribution, atol=1e-4),
)
print(f"signed HiResCAM, share of negative positions: {(signed < 0).float().mean():.3f}")
eigen_signed = ht.EigenCAM(model, "relu3", relu=False)(images, raw=True)
agree = int((pearson(eigen_signed, channel_mean) > 0).sum())
print(f"Eigen-CAM correlates positively with the channel mean on {agree} of {len(images)} images")

# sphinx_gallery_start_ignore
# "HiResCAM's signed map ... adds up ... exactly the logit minus fc's bias": exact in real
# numbers, so equal up to float32 rounding (atol 1e-4, the page's own test); "its negative
# positions lower the score": the signed map has some
assert torch.allclose(signed.sum(dim=(1, 2)), contribution, atol=1e-4)
assert (signed < 0).any()
# "oriented to correlate positively with the channel mean, on every image"
assert agree == len(images) == 48
# sphinx_gallery_end_ignore

# %%
# How close the maps are
# ----------------------
#
# On a network with global *average* pooling instead, the gradient is the
# same at every position of a channel, and Grad-CAM, XGrad-CAM and HiResCAM
# give the same map (exercise 1). How close the other methods come to
# Grad-CAM here, as the mean correlation of their maps over the images:

for name in ("Grad-CAM++", "XGrad-CAM", "Layer-CAM", "HiResCAM", "Score-CAM", "Eigen-CAM"):
    correlation = pearson(maps[name], maps["Grad-CAM"]).mean()
    print(f"{name:>10}: mean correlation with Grad-CAM {correlation:.3f}")

# sphinx_gallery_start_ignore
# "How close the other methods come to Grad-CAM here": every mean correlation is positive
# (0.742 to 0.983 in the builds so far)
assert all(pearson(m, maps["Grad-CAM"]).mean() > 0 for m in maps.values())
# sphinx_gallery_end_ignore

# %%
# What each method costs
# ----------------------
#
# A forward pre-hook on the model counts the images that go through it during
# one call on 4 images. The gradient methods run one forward pass (and one
# backward pass); Score-CAM runs one more forward pass per channel and image,
# 64 masked copies of each image for ``relu3``'s 64 channels; Eigen-CAM runs
# one forward pass and no backward pass.

few = images[:4]
seen = []
images_through = {}
counter = model.register_forward_pre_hook(lambda module, args: seen.append(len(args[0])))
try:
    for name, method in methods.items():
        seen.clear()
        method(few)
        images_through[name] = sum(seen)
        print(f"{name:>10}: {images_through[name]:4d} images through the model")
finally:
    counter.remove()
print("hooks left on the model:", ht.count_hooks(model).total)

# sphinx_gallery_start_ignore
# "The gradient methods run one forward pass ...; Score-CAM runs one more forward pass per
# channel and image, 64 masked copies of each image for relu3's 64 channels; Eigen-CAM runs
# one forward pass"
channels = model.forward_features(few).shape[1]
assert channels == 64
for name, count in images_through.items():
    expected = len(few) * (1 + channels) if name == "Score-CAM" else len(few)
    assert count == expected, (name, count)
assert ht.count_hooks(model).total == 0
# sphinx_gallery_end_ignore

# %%
# Each method is then timed on the same 4 images: one call to warm up, then
# three timed calls; the table reports the median, divided by 4. Wall time
# changes from run to run and from machine to machine, so the page draws no
# conclusion from it; the counts above are the part that does not change.

seconds = {}
for name, method in methods.items():
    method(few)  # warm-up call
    times = []
    for _ in range(3):
        start = time.perf_counter()
        method(few)
        times.append(time.perf_counter() - start)
    seconds[name] = statistics.median(times)
print("timed on:", tuple(few.shape))
for name, value in seconds.items():
    print(f"{name:>10}: {1000 * value / len(few):6.2f} ms per image (median)")

# sphinx_gallery_start_ignore
# "Each method is then timed on the same 4 images ... the table reports the median, divided
# by 4"; "the counts above are the part that does not change": counting again gives the
# same numbers (the gradient methods only: Score-CAM's count is its formula, checked above)
assert few.shape == (4, 3, 64, 64)
assert set(seconds) == set(methods)
assert all(value > 0 for value in seconds.values())
recount = []
counter = model.register_forward_pre_hook(lambda module, args: recount.append(len(args[0])))
try:
    for name, method in methods.items():
        if name != "Score-CAM":
            recount.clear()
            method(few)
            assert sum(recount) == images_through[name], name
finally:
    counter.remove()
# sphinx_gallery_end_ignore

# %%
# Two Score-CAMs
# --------------
#
# Score-CAM exists in two versions that use the same masks and the same
# forward passes and differ only in how the scores become channel weights.
# The authors' code, ``weights="probability"`` (the default), weights each
# channel by the class probability of its masked input: a softmax over the
# *classes*. pytorch-grad-cam and torchcam, ``weights="channel_softmax"``,
# take a softmax over the *channels* of the masked inputs' class logits, so
# the channels compete for the weight. Both versions on the same 48 images,
# with the pointing game of the previous page (is each map's peak on the
# object?):

channel_softmax = ht.ScoreCAM(model, "relu3", batch_size=64, weights="channel_softmax")
softmax_maps = channel_softmax(images)
for name, saliency in (("probability", maps["Score-CAM"]), ("channel_softmax", softmax_maps)):
    print(f"{name:>15}: pointing {pointing_game(saliency, test.masks).float().mean():.3f}")
agreement = pearson(maps["Score-CAM"], softmax_maps)
print(f"Pearson between the two maps: mean {agreement.mean():.2f}, lowest {agreement.min():.2f}")

# sphinx_gallery_start_ignore
# "On these images the probability weights point at the object more often" (0.875 against
# 0.792 in the builds so far: 42 and 38 of 48 images)
probability_hits = pointing_game(maps["Score-CAM"], test.masks).sum()
channel_softmax_hits = pointing_game(softmax_maps, test.masks).sum()
assert probability_hits > channel_softmax_hits
# "the two maps agree on average but not on every image" (mean 0.93, lowest 0.56)
assert agreement.mean() > 0.8
assert agreement.min() < 0.8
# sphinx_gallery_end_ignore

# %%
# On these images the probability weights point at the object more often,
# and the two maps agree on average but not on every image. Which version
# points better depends on the model and the data, so compare both on yours
# before you choose.
#
# Summary
# -------
#
# - The gradient methods differ in how :math:`A^k` and :math:`g^k` are
#   combined: reduced to one weight per channel (Grad-CAM, XGrad-CAM,
#   Grad-CAM++) or kept per position (Layer-CAM, HiResCAM).
# - Score-CAM replaces gradients by forward passes on masked inputs, one per
#   channel; Eigen-CAM uses no class at all.
# - With global pooling and one linear layer, Grad-CAM equals CAM divided by
#   :math:`Z`. After max pooling, the per-position methods see the gradient
#   at one position per channel; after average pooling, Grad-CAM, XGrad-CAM
#   and HiResCAM coincide.
# - The two Score-CAM weightings, over classes and over channels, give
#   different maps: say which one you use.
# - Which map is better is measured on the next page,
#   :doc:`/auto_examples/04_grad_cam/plot_18b_measuring_cams`.
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
# 1. Write ``signed_maps(model, images)``, which returns the raw signed maps
#    (``relu=False``, ``raw=True``) of class 0 on ``relu3`` of Grad-CAM,
#    XGrad-CAM and HiResCAM, in a dictionary keyed by the methods' names
#    (``"Grad-CAM"``, ``"XGrad-CAM"``, ``"HiResCAM"``). Build
#    ``ht.SimpleCNN(pool="avg", seed=0)`` (untrained weights are enough) and
#    check that the three maps are the same on it. Check:
#    ``ht.exercises.check("18.1", signed_maps)``.
# 2. Write ``count_images(model, method, images)``, which returns how many
#    images go through ``model`` while ``method(images)`` runs, counted by a
#    hook that it removes again. Use ``ht.ScoreCAM(model, "relu3", top_k=16)``:
#    how many images go through the model now, and how close are its maps to
#    the full Score-CAM's? Check: ``ht.exercises.check("18.2", count_images)``.
# 3. Write ``grad_cam_plus_plus(model, layer, x, target)``, which computes
#    Grad-CAM++ from the formula above, with the activations and gradients of
#    ``layer`` recorded by :obj:`hooks_tutorial.capture_activations` and
#    :obj:`hooks_tutorial.capture_gradients`, and compare it with
#    ``ht.GradCAMPlusPlus`` (``raw=True``) on ``relu3``. How many positions
#    per channel have a nonzero gradient? Check:
#    ``ht.exercises.check("18.3", grad_cam_plus_plus)``.

# %%
# .. rst-class:: solution
#
# **Solution 1.** The three signed maps agree to float rounding: XGrad-CAM
# and HiResCAM differ from Grad-CAM by less than 1e-5 of the maps' largest
# value. After global average pooling the gradient of channel :math:`k` is
# :math:`w^c_k / Z` at every position, so the average of Grad-CAM, the
# activation-weighted average of XGrad-CAM and the per-position product of
# HiResCAM all give the weight :math:`w^c_k / Z`.


def signed_maps(model, images):
    return {
        name: cls(model, "relu3", relu=False)(images, target=0, raw=True)
        for name, cls in [
            ("Grad-CAM", ht.GradCAM),
            ("XGrad-CAM", ht.XGradCAM),
            ("HiResCAM", ht.HiResCAM),
        ]
    }


# average pooling: the gradient is the same at every position
average_model = ht.SimpleCNN(pool="avg", seed=0).eval()
signed = signed_maps(average_model, images)
scale = signed["Grad-CAM"].abs().max()
print(f"largest |Grad-CAM| value: {scale:.1e}")
relative = {}
for name in ("XGrad-CAM", "HiResCAM"):
    difference = (signed[name] - signed["Grad-CAM"]).abs().max()
    relative[name] = difference / scale
    print(
        f"{name}: largest difference {difference:.1e}, {relative[name]:.1e} of the largest"
        f" value, below 1e-5: {bool(relative[name] < 1e-5)}"
    )

# sphinx_gallery_start_ignore
# "agree to float rounding ... less than 1e-5 of the maps' largest value": 2.4e-07 and
# 1.9e-07 relative in the builds so far (1.5e-10 and 1.2e-10 on maps reaching 6.3e-04;
# other CPUs print other last digits); float32 rounds at 1.2e-07 per operation
assert scale > 0  # the maps are not all zero, so "the same" says something
assert all(value < 1e-5 for value in relative.values()), relative
# sphinx_gallery_end_ignore

ht.exercises.check("18.1", signed_maps)

# sphinx_gallery_start_ignore
from page_checks import assert_check  # docs/_ext: the build's checks


# the methods' default relu=True: the maps lose their negative values
def signed_maps_relu(model, images):
    return {
        name: cls(model, "relu3")(images, target=0, raw=True)
        for name, cls in [
            ("Grad-CAM", ht.GradCAM),
            ("XGrad-CAM", ht.XGradCAM),
            ("HiResCAM", ht.HiResCAM),
        ]
    }


assert_check("18.1", signed_maps, signed_maps_relu, "relu_applied")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 2.** 68 images go through the model for the four images: one
# forward pass on them, then 16 masked copies of each instead of one per
# channel, a quarter of Score-CAM's work. The maps stay close but not equal
# (their mean Pearson correlation with the full Score-CAM's maps is printed
# below), and here they point a little worse.


def count_images(model, method, images):
    sizes = []
    counter = model.register_forward_pre_hook(lambda module, args: sizes.append(len(args[0])))
    try:
        method(images)
    finally:
        counter.remove()
    return sum(sizes)


# top_k: score only the 16 channels with the largest mean activation
fast = ht.ScoreCAM(model, "relu3", top_k=16, batch_size=64)
fast_count = count_images(model, fast, few)
print("images through the model, top_k=16:", fast_count)
fast_maps = fast(images)
fast_agreement = pearson(fast_maps, maps["Score-CAM"]).mean()
print(f"Pearson with the full Score-CAM: mean {fast_agreement:.3f}")
fast_pointing = pointing_game(fast_maps, test.masks).float().mean()
full_pointing = pointing_game(maps["Score-CAM"], test.masks).float().mean()
print(f"pointing: top_k=16 {fast_pointing:.3f}, full {full_pointing:.3f}")

# sphinx_gallery_start_ignore
# "one forward pass on them, then 16 masked copies of each"
assert fast_count == len(few) * (1 + 16) == 68
# "The maps stay close but not equal" (mean Pearson 0.818 in the builds so far); "here they
# point a little worse" (0.812 against 0.875: 39 and 42 of 48 images)
assert 0.5 < fast_agreement < 0.99
assert fast_pointing < full_pointing
# sphinx_gallery_end_ignore

ht.exercises.check("18.2", count_images)

# sphinx_gallery_start_ignore


# the number of forward calls: Score-CAM sends its masked copies in batches
def count_calls(model, method, images):
    sizes = []
    counter = model.register_forward_pre_hook(lambda module, args: sizes.append(len(args[0])))
    try:
        method(images)
    finally:
        counter.remove()
    return len(sizes)


assert_check("18.2", count_images, count_calls, "counted_calls")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 3.** With max pooling, each channel's gradient is nonzero at 1
# position at most, so every sum over positions in the formula has a single
# term. The formula, with zero over zero set to zero where the gradient
# vanishes, matches the library to float rounding: the largest difference is
# less than 1e-5 of the map's largest value.


# Grad-CAM++ from the paper's formula
def grad_cam_plus_plus(model, layer, x, target):
    with (
        ht.capture_activations(model, layer) as acts,
        ht.capture_gradients(model, layer) as grads,
    ):
        model(x).gather(1, target[:, None]).sum().backward()
    model.zero_grad(set_to_none=True)
    A, g = acts[layer], grads[layer]
    sums = A.sum(dim=(2, 3), keepdim=True)
    a = torch.nan_to_num(g**2 / (2 * g**2 + sums * g**3))  # 0 / 0 -> 0 where g = 0
    w = (a * g.clamp(min=0)).sum(dim=(2, 3))
    return torch.relu((w[:, :, None, None] * A).sum(dim=1))


x = images[:8]
with ht.capture_gradients(model, "relu3") as grads:
    model(x).gather(1, predicted[:8, None]).sum().backward()
model.zero_grad(set_to_none=True)
g = grads["relu3"]
print("nonzero gradients per channel, at most:", int((g != 0).sum(dim=(2, 3)).max()))
by_formula = grad_cam_plus_plus(model, "relu3", x, predicted[:8])
library = ht.GradCAMPlusPlus(model, "relu3")(x, target=predicted[:8], raw=True)
difference = (by_formula - library).abs().max()
print(f"largest map value: {library.max():.1e}")
print(
    f"max |formula - library|: {difference:.1e}, {difference / library.max():.1e} of the"
    f" largest value, below 1e-5: {bool(difference / library.max() < 1e-5)}"
)

# sphinx_gallery_start_ignore
# "nonzero at 1 position at most"
assert int((g != 0).sum(dim=(2, 3)).max()) == 1
# "matches the library to float rounding: ... less than 1e-5 of the map's largest value"
# (1.2e-07 and 2.4e-07 on two CPUs, on maps reaching 3.8: below 1e-7 relative)
assert difference < 1e-5 * library.max(), (difference, library.max())
# sphinx_gallery_end_ignore

ht.exercises.check("18.3", grad_cam_plus_plus)

# sphinx_gallery_start_ignore


# the formula without nan_to_num: zero over zero where the gradient vanishes
def grad_cam_plus_plus_nan(model, layer, x, target):
    with (
        ht.capture_activations(model, layer) as acts,
        ht.capture_gradients(model, layer) as grads,
    ):
        model(x).gather(1, target[:, None]).sum().backward()
    model.zero_grad(set_to_none=True)
    A, g = acts[layer], grads[layer]
    a = g**2 / (2 * g**2 + A.sum(dim=(2, 3), keepdim=True) * g**3)
    w = (a * g.clamp(min=0)).sum(dim=(2, 3))
    return torch.relu((w[:, :, None, None] * A).sum(dim=1))


assert_check("18.3", grad_cam_plus_plus, grad_cam_plus_plus_nan, "nan")
from page_checks import assert_exercises_checked, assert_no_hooks_left  # docs/_ext

assert_exercises_checked()
assert_no_hooks_left(globals())
# sphinx_gallery_end_ignore
