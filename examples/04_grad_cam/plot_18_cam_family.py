# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
The CAM family side by side
===========================

Grad-CAM is one answer to "which channels matter, and where?". Its
successors change how the channels are weighted: per position instead of
per channel, with activation-weighted gradients, with forward passes instead
of gradients, or without any class at all. This page runs seven of them on
the same images and the same layer, gives each one's formula, and measures
them on a fixed test subset: do their peaks fall on the object, and do they
rank the pixels the model really uses?

**What you will learn**

- the formulas of Grad-CAM, Grad-CAM++, XGrad-CAM, Layer-CAM, HiResCAM,
  Score-CAM and Eigen-CAM, and what each changes;
- what global max pooling before the linear layer does to the
  gradient-based maps;
- how to compare methods with the pointing game, deletion and insertion
  curves, and timing, on data with known object masks.

**Prerequisites**: :doc:`/auto_examples/04_grad_cam/plot_16_gradcam_from_scratch`
and :doc:`/auto_examples/04_grad_cam/plot_17_gradcam_library`.
"""

# %%
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
#   upsampled, min-max scaled channel :math:`M_k` masks the input, and the
#   weight is the class probability of the masked input (one forward pass
#   per channel).
#
#   .. math:: w_k = \operatorname{softmax}\big(f(X \odot M_k)\big)_c
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
# All of them take the same arguments in ``hooks_tutorial``:

import statistics
import time

import matplotlib.pyplot as plt
import torch

import hooks_tutorial as ht
from hooks_tutorial.metrics import (
    average_drop,
    deletion_auc,
    increase_in_confidence,
    insertion_auc,
    pearson,
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
for name, method in methods.items():
    print(f"{name:>10}: {method!r}")

# %%
# Seven maps for the same images
# ------------------------------
#
# A fixed subset of the test set: the first 48 images. Every method explains
# the predicted class (Eigen-CAM has no class). Each method is then timed on
# the first 4 images only, to keep the page fast: one call to warm up, then
# three timed calls; the table below reports the median.

test = ht.make_shapes(48, split="test", seed=0)
images = test.images
maps = {name: method(images) for name, method in methods.items()}
few = images[:4]
seconds = {}
for name, method in methods.items():
    method(few)  # warm-up call
    times = []
    for _ in range(3):
        start = time.perf_counter()
        method(few)
        times.append(time.perf_counter() - start)
    seconds[name] = statistics.median(times)
print("images:", tuple(images.shape))
print("maps per method:", tuple(maps["Grad-CAM"].shape))
print("timed on:", tuple(few.shape))
print("hooks left on the model:", ht.count_hooks(model).total)

# %%
# The first four images with the seven maps, each blended over its image
# with :obj:`hooks_tutorial.overlay` (the same grid function as on the previous
# page); the row labels give the predicted class.


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
rows = torch.arange(4)
show_maps(
    images[rows],
    {name: m[rows] for name, m in maps.items()},
    [test.classes[int(predicted[i])] for i in rows],
)

# %%
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

# %%
# And the methods that keep the gradient per position, HiResCAM and
# Layer-CAM, only see each channel's maximum, so their raw maps (before
# upsampling) are nonzero at fewer positions than Grad-CAM's:

for name in ("Grad-CAM", "XGrad-CAM", "Grad-CAM++", "HiResCAM", "Layer-CAM"):
    raw = methods[name](images, raw=True)
    positions = (raw > 0).float().sum(dim=(1, 2)).mean()
    print(f"{name:>10}: {positions:5.1f} of {Z} positions above zero, on average")

# %%
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

# %%
# On a network with global *average* pooling instead, the gradient is the
# same at every position of a channel, and Grad-CAM, XGrad-CAM and HiResCAM
# give the same map (exercise 1). How close the other methods come to
# Grad-CAM here, as the mean correlation of their maps over the images:

for name in ("Grad-CAM++", "XGrad-CAM", "Layer-CAM", "HiResCAM", "Score-CAM", "Eigen-CAM"):
    correlation = pearson(maps[name], maps["Grad-CAM"]).mean()
    print(f"{name:>10}: mean correlation with Grad-CAM {correlation:.3f}")

# %%
# Measuring the maps
# ------------------
#
# Five measures, computed on the same images for each method:
#
# - **pointing game** (Zhang et al., ECCV 2016): the share of maps whose
#   maximum lies on the object's mask (higher is better);
# - **deletion AUC** (Petsiuk et al., BMVC 2018): replace pixels with a
#   baseline, most salient first, and take the area under the curve of the
#   class probability (lower is better: the right pixels make it drop fast);
# - **insertion AUC** (same paper): start from the baseline and put the
#   original pixels back, most salient first (higher is better).
#
# - **average drop** and **increase in confidence** (Chattopadhay et al.,
#   the Grad-CAM++ paper): keep only what the map highlights (the image
#   multiplied by its map) and compare the class probability with the
#   original one. Average drop is the mean relative fall, in percent (lower
#   is better); increase in confidence is the percentage of images whose
#   probability rises (higher is better).
#
# Deletion and insertion use a blurred copy of the image as the baseline and
# 16 steps here, to keep the page fast. The time column is the median wall
# time of the method's call on the 4 timed images, divided by 4. It changes from
# run to run and from machine to machine, so the page draws no conclusion
# from it.

steps = 16
table = []
for name, m in maps.items():
    table.append(
        (
            name,
            pointing_game(m, test.masks).float().mean().item(),
            deletion_auc(model, images, m, steps=steps, baseline="blur").mean().item(),
            insertion_auc(model, images, m, steps=steps, baseline="blur").mean().item(),
            average_drop(model, images, m),
            increase_in_confidence(model, images, m),
            1000 * seconds[name] / len(few),
        )
    )

print(f"{len(images)} test images; deletion and insertion: blur baseline, {steps} steps\n")
header = ("pointing", "deletion", "insertion", "avg drop", "increase", "ms/image")
print(f"{'method':<11}" + "".join(f"{h:>12}" for h in header))
better = ("(higher)", "(lower)", "(higher)", "(lower, %)", "(higher, %)", "(median)")
print(f"{'':<11}" + "".join(f"{b:>12}" for b in better))
for name, *values, ms in table:
    print(f"{name:<11}" + "".join(f"{v:12.3f}" for v in values[:3]), end="")
    print("".join(f"{v:12.1f}" for v in values[3:]) + f"{ms:12.2f}")

# %%
# A reference point helps to read the numbers: the same measures for a map
# of random noise, which knows nothing about the image. The last three
# lines list the methods that do better than it.

generator = torch.Generator().manual_seed(0)
noise = torch.rand(images.shape[0], 64, 64, generator=generator)
random_deletion = deletion_auc(model, images, noise, steps=steps, baseline="blur").mean().item()
random_insertion = insertion_auc(model, images, noise, steps=steps, baseline="blur").mean().item()
random_drop = average_drop(model, images, noise)
random_increase = increase_in_confidence(model, images, noise)
print(
    f"random map: pointing {pointing_game(noise, test.masks).float().mean():.3f}, "
    f"deletion {random_deletion:.3f}, insertion {random_insertion:.3f}, "
    f"avg drop {random_drop:.1f}, increase {random_increase:.1f}"
)
print("deletion below the random map's: ", [row[0] for row in table if row[2] < random_deletion])
print("insertion above the random map's:", [row[0] for row in table if row[3] > random_insertion])
print("avg drop below the random map's: ", [row[0] for row in table if row[4] < random_drop])

# %%
# The baseline matters
# --------------------
#
# The RISE paper deletes pixels by setting them to black (``baseline="zeros"``,
# the default of ``deletion_auc``). Black pixels scattered at random over
# the image take it far from anything the model was trained on, so the
# probability can drop for that reason alone. The same comparison with black
# pixels, for Grad-CAM and for the random map:

for name, saliency in (("Grad-CAM", maps["Grad-CAM"]), ("random map", noise)):
    black = deletion_auc(model, images, saliency, steps=steps, baseline="zeros").mean()
    print(f"{name:>10}: deletion AUC with black pixels {black:.3f}")

# %%
# With black pixels the random map's deletion AUC is *lower* than
# Grad-CAM's: scattered black pixels destroy the image faster than deleting
# the object first does. A deletion score alone cannot tell a good map from
# a destructive baseline.
#
# How to read the table: the numbers come from a few dozen images and one
# small model, so they rank the methods *for this model and this data*, not
# in general. The pointing game only asks whether the peak is on the
# object; deletion and insertion ask whether the map orders the pixels the
# way the model uses them, and their answer depends on the baseline: always
# compare with a random map. Score-CAM needs no gradients but one forward
# pass per channel (64 masked copies of each image here) instead of one
# forward and one backward pass. Eigen-CAM ignores the class,
# so it cannot separate two objects of different classes (try it on the
# two-object images of the previous page).

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
# the channels compete for the weight. Both versions on the same 48 images:

channel_softmax = ht.ScoreCAM(model, "relu3", batch_size=64, weights="channel_softmax")
softmax_maps = channel_softmax(images)
for name, saliency in (("probability", maps["Score-CAM"]), ("channel_softmax", softmax_maps)):
    print(f"{name:>15}: pointing {pointing_game(saliency, test.masks).float().mean():.3f}")
agreement = pearson(maps["Score-CAM"], softmax_maps)
print(f"Pearson between the two maps: mean {agreement.mean():.2f}, lowest {agreement.min():.2f}")

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
#   combined: averaged per channel (Grad-CAM, XGrad-CAM, Grad-CAM++) or kept
#   per position (Layer-CAM, HiResCAM).
# - Score-CAM replaces gradients by forward passes on masked inputs;
#   Eigen-CAM uses no class at all.
# - With global pooling and one linear layer, Grad-CAM equals CAM divided by
#   :math:`Z`. After max pooling, the per-position methods see the gradient
#   at one position per channel; after average pooling, Grad-CAM, XGrad-CAM
#   and HiResCAM coincide.
# - Ground-truth masks and perturbation curves turn "this map looks right"
#   into numbers that can be compared.
#
# Exercises
# ---------
#
# 1. Build ``ht.SimpleCNN(pool="avg", seed=0)`` (untrained weights are
#    enough) and check that Grad-CAM, XGrad-CAM and HiResCAM give the same
#    raw signed maps (``relu=False``, ``raw=True``) on it.
# 2. Use ``ht.ScoreCAM(model, "relu3", top_k=16)`` and compare its time and
#    its maps with the full Score-CAM.
# 3. Add :obj:`hooks_tutorial.metrics.energy_pointing_game` (the share of the
#    map's mass on the object) as a column of the table.
#
# .. dropdown:: Solutions
#
#    .. code-block:: python
#
#       # 1. average pooling: the gradient is the same at every position
#       average_model = ht.SimpleCNN(pool="avg", seed=0).eval()
#       signed = {
#           name: cls(average_model, "relu3", relu=False)(images, target=0, raw=True)
#           for name, cls in [("Grad-CAM", ht.GradCAM), ("XGrad-CAM", ht.XGradCAM),
#                             ("HiResCAM", ht.HiResCAM)]
#       }
#       for name in ("XGrad-CAM", "HiResCAM"):
#           print(name, (signed[name] - signed["Grad-CAM"]).abs().max().item())
#
#       # 2.
#       start = time.perf_counter()
#       fast = ht.ScoreCAM(model, "relu3", top_k=16, batch_size=64)(images)
#       print("seconds:", time.perf_counter() - start)
#       print("max difference:", (fast - maps["Score-CAM"]).abs().max().item())
#
#       # 3.
#       from hooks_tutorial.metrics import energy_pointing_game
#       for name, m in maps.items():
#           print(name, energy_pointing_game(m, test.masks).mean().item())
