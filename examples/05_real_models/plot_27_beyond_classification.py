# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
Grad-CAM beyond classification
==============================

Grad-CAM explains one number per image: so far, a class score. Many models
do not output class scores. A segmentation model outputs a score per class
*and per pixel*; an embedding model outputs a vector, and the question is why
two images are close. Grad-CAM works for both once we say which single
number to explain. This page builds that number for each case, with the
library's target helpers, and checks where the maps point.

**What you will learn**

- what "explain the pixels predicted as class *c*" means for a segmentation
  model, as one score per image;
- how to explain why two images are similar, with the cosine similarity of
  their embeddings as the target;
- how :class:`~hooks_tutorial.SegmentationTarget` and
  :class:`~hooks_tutorial.SimilarityTarget` turn each into one line;
- how often the maps point at the right object (pointing game).

**Prerequisites**: :doc:`/auto_examples/04_grad_cam/plot_17_gradcam_library`
(the library's Grad-CAM and its ``target`` argument).
"""

# %%
# A segmentation model in seconds
# -------------------------------
#
# Training a segmentation network from scratch takes minutes. We take a
# shortcut that keeps the page fast: the shapes classifier of the earlier
# pages already has features that know the shapes (we take the multi-label
# one, trained on images with one and with two objects), so we reuse them and
# train only a new head, a 1 x 1 convolution that turns the features at each
# position into 6 scores (background and the 5 shapes). The head reads the
# features of ``relu2`` (16 x 16) together with those of ``relu3`` (8 x 8,
# upsampled), and its scores are upsampled to the 64 x 64 image.

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

import hooks_tutorial as ht

classifier = ht.pretrained("simple_cnn-multilabel").eval()
CLASSES = ("background", *ht.data.CLASSES)


class Segmenter(nn.Module):
    def __init__(self, encoder):
        super().__init__()
        self.encoder = encoder
        self.head = nn.Conv2d(32 + 64, len(CLASSES), kernel_size=1)

    def features(self, x):
        e = self.encoder
        x = e.pool1(e.relu1(e.bn1(e.conv1(x))))
        middle = e.relu2(e.bn2(e.conv2(x)))  # [B, 32, 16, 16]
        deep = e.relu3(e.bn3(e.conv3(e.pool2(middle))))  # [B, 64, 8, 8]
        deep = F.interpolate(deep, size=middle.shape[-2:], mode="bilinear")
        return torch.cat([middle, deep], dim=1)

    def forward(self, x):
        scores = self.head(self.features(x))
        return F.interpolate(scores, size=x.shape[-2:], mode="bilinear")


def pixel_labels(data):
    """0 for the background, 1 + class for each object's pixels."""
    labels = torch.zeros(data.masks.shape, dtype=torch.long)
    for k in range(data.object_masks.shape[1]):
        object_class = data.object_labels[:, k, None, None] + 1
        labels = torch.where(data.object_masks[:, k], object_class, labels)
    return labels


# %%
# The training data mix images with one object and with two. Because the
# head is a 1 x 1 convolution, it can be trained on the feature vectors of
# single positions, computed once; each position's label is the class that
# covers most of its 4 x 4 pixel cell.

torch.manual_seed(0)
segmenter = Segmenter(classifier).eval()
train = [ht.make_shapes(300, seed=27), ht.make_shapes(300, variant="two", seed=27)]
images = torch.cat([d.images for d in train])
labels = torch.cat([pixel_labels(d) for d in train])
with torch.no_grad():
    features = segmenter.features(images)  # [600, 96, 16, 16]
    one_hot = F.one_hot(labels, len(CLASSES)).permute(0, 3, 1, 2).float()
    cell_labels = F.avg_pool2d(one_hot, kernel_size=4).argmax(dim=1)  # [600, 16, 16]
rows = features.permute(0, 2, 3, 1).reshape(-1, features.shape[1])
row_labels = cell_labels.reshape(-1)

optimizer = torch.optim.Adam(segmenter.head.parameters(), lr=0.05)
weight = segmenter.head.weight
for _ in range(200):
    batch = torch.randint(0, len(rows), (4096,))
    scores = F.linear(rows[batch], weight.flatten(1), segmenter.head.bias)
    loss = F.cross_entropy(scores, row_labels[batch])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

test = ht.make_shapes(200, variant="two", split="test", seed=27)
test_labels = pixel_labels(test)
with torch.no_grad():
    predicted = segmenter(test.images).argmax(dim=1)
accuracy = (predicted == test_labels).float().mean().item()
print(f"pixel accuracy on {len(test_labels)} test images: {accuracy:.3f}")
for c, name in enumerate(CLASSES):
    inter = ((predicted == c) & (test_labels == c)).sum().item()
    union = ((predicted == c) | (test_labels == c)).sum().item()
    print(f"  IoU {name:<10} {inter / union:.2f}")

# %%
# The pixels predicted as class *c*
# ---------------------------------
#
# Grad-CAM needs one score per image. For a segmentation model the usual
# choice is: take the pixels that the model predicts as class *c* (where
# *c*'s score is the highest), and add up class *c*'s scores over them. The
# map then explains "why these pixels are *c*". By hand, for one test image:

image = test.images[:1]
with torch.no_grad():
    scores = segmenter(image)  # [1, 6, 64, 64]
c = int(test.object_labels[0, 0]) + 1
region = scores.argmax(dim=1) == c
by_hand = scores[0, c][region[0]].sum().item()
print(f"explained class: {CLASSES[c]}, predicted pixels: {int(region.sum())}")
print(f"sum of its scores over them, by hand:      {by_hand:.2f}")

# %%
# :class:`~hooks_tutorial.SegmentationTarget` computes the same number from
# the model's output; passed as ``target``, it makes Grad-CAM explain it.

target = ht.SegmentationTarget(c)
print(f"the same with ht.SegmentationTarget({c}): {target(scores).item():.2f}")

# %%
# Both objects of one image
# -------------------------
#
# A test image holds two shapes. We explain each one's class at the
# encoder's last feature map, ``relu3``, and draw the maps next to the
# predicted segmentation.

cam = ht.GradCAM(segmenter, "encoder.relu3")
first, second = (int(k) + 1 for k in test.object_labels[0])
maps = {k: cam(image, target=ht.SegmentationTarget(k))[0] for k in (first, second)}

fig, axes = plt.subplots(1, 4, figsize=(11, 3))
axes[0].imshow(image[0].permute(1, 2, 0).numpy())
axes[0].set_title("test image")
axes[1].imshow(predicted[0].numpy(), cmap="tab10", vmin=0, vmax=9, interpolation="nearest")
axes[1].set_title("predicted segmentation")
for ax, k in zip(axes[2:], (first, second), strict=True):
    ax.imshow(ht.overlay(image[0], maps[k]))
    ax.set_title(f"Grad-CAM for '{CLASSES[k]}' pixels")
for ax in axes:
    ax.axis("off")
fig.tight_layout()
plt.show()

# %%
# One image proves little. Over the 200 test images, for each of the two
# objects, we check where the map's peak falls: on the explained object, on
# the other one, or elsewhere (the pointing game).


def pointing(cam, data, make_target):
    """Share of objects where the map's peak is on that object, and on the other one."""
    on_own, on_other = 0, 0
    for c in range(len(ht.data.CLASSES)):
        for k in range(2):  # the images whose k-th object has class c
            chosen = data.object_labels[:, k] == c
            maps = cam(data.images[chosen], target=make_target(c, chosen))
            own, other = data.object_masks[chosen, k], data.object_masks[chosen, 1 - k]
            on_own += ht.metrics.pointing_game(maps, own).sum().item()
            on_other += ht.metrics.pointing_game(maps, other).sum().item()
    n = 2 * len(data.images)
    return on_own / n, on_other / n


on_own, on_other = pointing(cam, test, lambda c, chosen: ht.SegmentationTarget(c + 1))
print(
    f"segmentation: peak on the explained object {on_own:.2f}, on the other object {on_other:.2f}"
)

# %%
# For each object, the map's peak falls on that object far more often than on
# the other one: the maps separate the two classes.
#
# Why are two images similar?
# ---------------------------
#
# An embedding model maps an image to a vector; images whose vectors point
# the same way count as similar. Here the embedding is the classifier's
# pooled feature vector (the input of its last layer), 64 numbers per image.


class Embedder(nn.Module):
    def __init__(self, encoder):
        super().__init__()
        self.encoder = encoder

    def forward(self, x):
        e = self.encoder
        return e.flatten(e.gap(e.forward_features(x)))  # [B, 64]


embedder = Embedder(classifier).eval()

# %%
# The question "why is this image similar to that one?" becomes one number
# per image: the cosine similarity between its embedding :math:`e` and the
# reference's embedding :math:`r`,
# :math:`\cos(e, r) = e \cdot r / (\|e\| \, \|r\|)`, which is what
# :class:`~hooks_tutorial.SimilarityTarget` returns. We take one image with a
# single shape of each class as references, and ask why a two-shape image is
# similar to the reference of one of its shapes.

singles = ht.make_shapes(40, split="test", seed=270)
reference_images = torch.stack([singles.images[singles.labels == c][0] for c in range(5)])
with torch.no_grad():
    references = embedder(reference_images)  # [5, 64]

query = test.images[:1]
shape = int(test.object_labels[0, 0])
with torch.no_grad():
    similarities = F.cosine_similarity(embedder(query), references)
print("query holds:", [ht.data.CLASSES[int(k)] for k in test.object_labels[0]])
print("cosine similarity to each reference:", similarities.numpy().round(2))
similarity_cam = ht.GradCAM(embedder, "encoder.relu3")
# %%
# The query is most similar to the references of its own two shapes. We
# explain its similarity to the reference of its first shape.

why = similarity_cam(query, target=ht.SimilarityTarget(references[shape]))[0]

fig, axes = plt.subplots(1, 3, figsize=(8.5, 3))
axes[0].imshow(reference_images[shape].permute(1, 2, 0).numpy())
axes[0].set_title(f"reference: a {ht.data.CLASSES[shape]}")
axes[1].imshow(query[0].permute(1, 2, 0).numpy())
axes[1].set_title("query image")
axes[2].imshow(ht.overlay(query[0], why))
axes[2].set_title("Grad-CAM of the similarity")
for ax in axes:
    ax.axis("off")
fig.tight_layout()
plt.show()

# %%
# Not every map is this clean. Over the test images, with the reference of
# each object's class in turn:

on_own, on_other = pointing(
    similarity_cam, test, lambda c, chosen: ht.SimilarityTarget(references[c])
)
print(f"similarity: peak on the matching object {on_own:.2f}, on the other object {on_other:.2f}")
print("hooks left:", ht.count_hooks(segmenter).total, ht.count_hooks(embedder).total)

# %%
# The similarity maps point at the object that the reference shows more often
# than at the other one: the model finds the two images similar because of
# that shape.
#
# Summary
# -------
#
# - Grad-CAM explains one score per image; for models that are not
#   classifiers, choose that score: a target is a function from the model's
#   output to one number per image.
# - Segmentation: the sum of class *c*'s scores over the pixels predicted as
#   *c* (:class:`~hooks_tutorial.SegmentationTarget`, or pass ``mask=`` for
#   another region).
# - Similarity: the cosine similarity between an image's embedding and a
#   reference embedding (:class:`~hooks_tutorial.SimilarityTarget`).
# - Check the maps against known answers: here, where their peaks fall.
#
# Exercises
# ---------
#
# 1. Explain the *background* of the test image (class 0). Where does the map
#    point?
# 2. Explain a ground-truth region instead of the predicted one:
#    ``ht.SegmentationTarget(c, mask=test.object_masks[0, 0])``. Does the map
#    change much?
# 3. Write the similarity target as a plain ``lambda`` and check that it
#    gives the same map as :class:`~hooks_tutorial.SimilarityTarget`.
#
# .. dropdown:: Solutions
#
#    .. code-block:: python
#
#       # 1. the background: the map avoids the objects
#       background_map = cam(image, target=ht.SegmentationTarget(0))[0]
#       plt.imshow(ht.overlay(image[0], background_map))
#       plt.show()
#
#       # 2. a ground-truth region: the same map, up to rounding. After relu3
#       #    this model is linear (upsampling, a 1 x 1 convolution), so
#       #    Grad-CAM's channel weights are the head's weights for the class
#       #    times the region's size, and the normalised map ignores the size.
#       truth = ht.SegmentationTarget(first, mask=test.object_masks[0, 0])
#       truth_map = cam(image, target=truth)[0]
#       print((truth_map - maps[first]).abs().max())
#
#       # 3. the same target as a lambda
#       reference = references[shape]
#       by_lambda = similarity_cam(
#           query, target=lambda out: F.cosine_similarity(out, reference[None], dim=1)
#       )[0]
#       print(torch.allclose(by_lambda, why))  # True
