# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
Attention maps from a Vision Transformer
========================================

.. index::
   ! attention
   ! 注意力
   ! ViT
   ! attention rollout
   ! 注意力展开

A vision transformer (ViT) does not only compute features: each of its
attention layers says, for every token, how much it reads from every other
token. Those weights look like a ready-made explanation, but torchvision's
ViT never returns them: it asks its attention layers not to compute them.
This page makes each attention layer compute them with a forward pre-hook
and catches them with a forward hook, combines them over the layers
(attention rollout) and compares the result with Grad-CAM on the same model:
which of the two points at the object more often?

.. rubric:: What you will learn
   :heading-level: 2

- how a forward pre-hook registered with ``with_kwargs=True`` makes each
  attention layer of torchvision's encoder compute its weights, how a forward
  hook catches them although the encoder block discards them, and that the
  model's output does not change;
- how attention rollout combines the weights of all layers into one map;
- why Grad-CAM on the output of the last transformer block is empty, and
  which layer to explain instead;
- how to compare the two maps with the pointing game.

**Prerequisites**: :doc:`/auto_examples/04_grad_cam/plot_22_beyond_cnns`
(``reshape_transform`` for tokens) and
:doc:`/auto_examples/05_real_models/plot_25_tuples_and_reuse` (hooks on
``nn.MultiheadAttention``, with keyword arguments).
"""

# %%
# A hybrid ViT
# ------------
#
# A plain ViT (Dosovitskiy et al., ICLR 2021) cuts the image into patches and
# learns everything from scratch; on our rotated shapes among clutter it
# needs far more training steps than a page can afford. We build a *hybrid*
# ViT instead (the same paper, section 3.1): its tokens
# are the positions of a CNN feature map. We take the conv blocks of the
# shapes classifier of chapter 4 and freeze them: ``relu3`` gives 64 channels
# on an 8 x 8 grid, so 64 tokens of 64 numbers, one per 8 x 8 pixel cell of
# the image. A class token goes in front, and torchvision's own transformer
# ``Encoder`` (2 blocks, 4 heads) mixes the 65 tokens; a linear head reads
# the class token. Only the encoder and the head are trained.

import inspect
import warnings

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn
from torchvision.models.vision_transformer import Encoder, EncoderBlock

import hooks_tutorial as ht
from hooks_tutorial.metrics import pointing_game

cnn = ht.pretrained("simple_cnn-shapes").eval()


class HybridViT(nn.Module):
    def __init__(self, cnn, dim=64, num_layers=2, num_heads=4, num_classes=5):
        super().__init__()
        self.cnn = cnn.requires_grad_(False)  # frozen: it only makes the tokens
        self.class_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.encoder = Encoder(
            seq_length=1 + 8 * 8,
            num_layers=num_layers,
            num_heads=num_heads,
            hidden_dim=dim,
            mlp_dim=2 * dim,
            dropout=0.0,
            attention_dropout=0.0,
        )
        self.head = nn.Linear(dim, num_classes)

    def tokens(self, x):
        features = self.cnn.forward_features(x)  # relu3: [B, 64, 8, 8]
        return features.flatten(2).transpose(1, 2)  # [B, 64 tokens, 64]

    def forward(self, x, tokens=None):
        tokens = self.tokens(x) if tokens is None else tokens
        class_token = self.class_token.expand(len(tokens), -1, -1)
        encoded = self.encoder(torch.cat([class_token, tokens], dim=1))  # [B, 65, 64]
        return self.head(encoded[:, 0])  # the class token only


# %%
# The frozen CNN always gives the same tokens for an image, so we compute
# them once and train on them. Two epochs are enough:

torch.manual_seed(0)
model = HybridViT(cnn)
train = ht.make_shapes(1536, split="train", seed=26)
test = ht.make_shapes(300, split="test", seed=26)
with torch.no_grad():
    train_tokens = model.tokens(train.images)

trained = [p for p in model.parameters() if p.requires_grad]
optimizer = torch.optim.AdamW(trained, lr=3e-3, weight_decay=0.01)
model.train()
for _ in range(2):  # epochs
    order = torch.randperm(len(train_tokens))
    for batch in order.split(64):
        loss = F.cross_entropy(model(None, train_tokens[batch]), train.labels[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
model.eval()

with torch.no_grad():
    logits = model(test.images)
acc = (logits.argmax(dim=1) == test.labels).float().mean().item()
print(f"trained parameters: {sum(p.numel() for p in trained)}")
print(f"frozen CNN parameters: {sum(p.numel() for p in model.cnn.parameters())}")
print(f"test accuracy: {acc:.3f}")

# sphinx_gallery_start_ignore
# "Only the encoder and the head are trained"; "Two epochs are enough": far above chance
# (0.2 for 5 classes), above 0.8 on 300 test images (0.883 in the builds so far)
assert not any(p.requires_grad for p in model.cnn.parameters())
assert {id(p) for p in trained} == {
    id(p) for part in (model.encoder, model.head) for p in part.parameters()
} | {id(model.class_token)}
assert acc > 0.8, acc
# sphinx_gallery_end_ignore

# %%
# Attention weights that are never computed
# -----------------------------------------
#
# Each block of the encoder is a torchvision ``EncoderBlock``. Its forward
# pass calls the attention layer with ``need_weights=False``:

print(inspect.getsource(EncoderBlock.forward))

# sphinx_gallery_start_ignore
# "calls the attention layer with need_weights=False"; "The block still throws them away
# (x, _ = self.self_attention(...) in the source above)"
assert "x, _ = self.self_attention(x, x, x, need_weights=False)" in inspect.getsource(
    EncoderBlock.forward
)
# sphinx_gallery_end_ignore

# %%
# So a forward hook on ``self_attention`` receives ``(values, None)``: the
# weights are not computed. A forward pre-hook registered with
# ``with_kwargs=True`` receives the keyword arguments and may return new
# ones; ours asks for the weights, one map per head
# (``average_attn_weights=False``), so the attention layer computes and
# returns them. The block still throws them away (``x, _ =
# self.self_attention(...)`` in the source above), so a forward hook on the
# attention layer keeps the second element of its output before that
# happens. Both hooks are removed in ``finally``.

seen = []
first_attention = model.encoder.layers[0].self_attention
handle = first_attention.register_forward_hook(lambda module, args, out: seen.append(out[1]))
try:
    with torch.no_grad():
        model(test.images[:1])
finally:
    handle.remove()
print("weights seen by a plain forward hook:", seen[0])

# sphinx_gallery_start_ignore
# "So a forward hook on self_attention receives (values, None)"
assert seen == [None]
# sphinx_gallery_end_ignore


def record_attention(model, x):
    """The attention weights of every block: a list of [B, heads, 65, 65]."""
    weights = []

    def ask_for_weights(module, args, kwargs):
        return args, {**kwargs, "need_weights": True, "average_attn_weights": False}

    def keep_weights(module, args, output):
        weights.append(output[1].detach())

    handles = []
    try:
        for block in model.encoder.layers:
            attention = block.self_attention
            handles.append(attention.register_forward_pre_hook(ask_for_weights, with_kwargs=True))
            handles.append(attention.register_forward_hook(keep_weights))
        with torch.no_grad():
            output = model(x)
    finally:
        for handle in handles:
            handle.remove()
    return weights, output


attention, hooked_logits = record_attention(model, test.images)
print("recorded:", [tuple(a.shape) for a in attention])
difference = (hooked_logits - logits).abs().max().item()
print(f"max |logits with hooks - logits without|: {difference:.1e}")
print("same predictions:", bool((hooked_logits.argmax(1) == logits.argmax(1)).all()))
print("hooks left on the model:", ht.count_hooks(model).total)

# sphinx_gallery_start_ignore
# "one 65 x 65 matrix per head, for each block. Asking for the weights does not change the
# logits, and no hook is left on the model." (the logits: equal up to float rounding, as
# the attention may take another kernel when it returns its weights; 0 so far)
assert [a.shape for a in attention] == [(len(test.images), 4, 65, 65)] * 2
assert difference <= 1e-5, difference
assert torch.equal(hooked_logits.argmax(1), logits.argmax(1))
assert ht.count_hooks(model).total == 0
# sphinx_gallery_end_ignore

# %%
# The weights have the shape the pre-hook asked for: one 65 x 65 matrix per
# head, for each block. Asking for the weights does not change the logits,
# and no hook is left on the model.
#
# Attention rollout
# -----------------
#
# Row *i* of an attention matrix says how much token *i* reads from each
# token. The class token's row of the last block is not yet an explanation:
# the tokens it reads have already mixed with each other in the block
# before. *Attention rollout* (Abnar and Zuidema, ACL 2020) follows the mixing
# through all blocks. For each block, average the heads, add the identity
# (the block adds its input back: ``x = x + input`` in the source above) and
# renormalise each row to sum to 1; then multiply the blocks' matrices. The
# class token's row of the product, over the 64 patch tokens, is an 8 x 8
# map. We upsample it to the image and rescale each map to [0, 1], as the
# CAM classes do.


def attention_rollout(attention):
    rollout = torch.eye(attention[0].shape[-1])
    for weights in attention:  # from the first block to the last
        mixed = weights.mean(dim=1) + torch.eye(weights.shape[-1])  # [B, 65, 65]
        mixed = mixed / mixed.sum(dim=-1, keepdim=True)
        rollout = mixed @ rollout
    return rollout


rollout = attention_rollout(attention)
row_sums = rollout.sum(dim=-1)
print(
    f"rollout: {tuple(rollout.shape)}, row sums between {row_sums.min():.4f} and {row_sums.max():.4f}"
)
rollout_maps = rollout[:, 0, 1:].reshape(-1, 1, 8, 8)  # class token -> the 64 patches
rollout_maps = F.interpolate(rollout_maps, size=(64, 64), mode="bilinear")[:, 0]
low = rollout_maps.amin(dim=(1, 2), keepdim=True)
high = rollout_maps.amax(dim=(1, 2), keepdim=True)
rollout_maps = (rollout_maps - low) / (high - low)
print("upsampled rollout maps:", tuple(rollout_maps.shape))

# sphinx_gallery_start_ignore
# "Each row of each matrix sums to 1, so each row of their product does too" (float32)
assert (row_sums - 1).abs().max() < 1e-5
# sphinx_gallery_end_ignore

# %%
# Each row of each matrix sums to 1, so each row of their product does too:
# the rollout is again a matrix of weights.
#
# Grad-CAM on the transformer
# ---------------------------
#
# Grad-CAM needs a feature map ``[B, C, h, w]``; the encoder's blocks return
# tokens ``[B, 65, 64]`` with the class token first, the layout that
# :obj:`hooks_tutorial.token_reshape_transform` expects (it drops the first
# token and lays the other 64 out on their 8 x 8 grid). We first try the
# natural choice, the output of the last block:

last_block = "encoder.layers.encoder_layer_1"
cam_output = ht.GradCAM(model, last_block, reshape_transform=ht.token_reshape_transform)
with warnings.catch_warnings(record=True) as caught:  # to print the warning's first words
    warnings.simplefilter("always", ht.ZeroMapWarning)
    output_maps = cam_output(test.images)
print(caught[0].category.__name__ + ":", str(caught[0].message).split(":")[0])
print(f"largest value of the maps at the last block's output: {output_maps.max().item():.2f}")
print(f"all-zero maps: {int((output_maps.flatten(1) == 0).all(dim=1).sum())} of {len(output_maps)}")

# sphinx_gallery_start_ignore
# "Every map is zero"
assert (output_maps == 0).all()
assert [w.category for w in caught] == [ht.ZeroMapWarning], caught
# sphinx_gallery_end_ignore

# %%
# Every map is zero, as on
# :doc:`/auto_examples/04_grad_cam/plot_22_beyond_cnns`. After the last
# block, the encoder's final ``LayerNorm`` works on each token separately and
# the head reads the class token only, so
# the score does not depend on the 64 patch tokens of the last block's
# output: their gradient is zero, and so is the map. The patch tokens reach
# the class token only *inside* the last block, through its attention. So we
# explain the input of that attention, the output of the block's first
# ``LayerNorm``, ``ln_1`` (pytorch-grad-cam's documentation gives the same
# advice for ViTs: the last block's ``norm1``).

cam_ln1 = ht.GradCAM(model, f"{last_block}.ln_1", reshape_transform=ht.token_reshape_transform)
gradcam_maps = cam_ln1(test.images)
print(f"largest value of the maps at the last block's ln_1: {gradcam_maps.max().item():.2f}")
print(
    f"all-zero maps: {int((gradcam_maps.flatten(1) == 0).all(dim=1).sum())} of {len(gradcam_maps)}"
)

# sphinx_gallery_start_ignore
# "These maps are not empty." (none of the 300)
assert (gradcam_maps.flatten(1) > 0).any(dim=1).all()
# sphinx_gallery_end_ignore

# %%
# These maps are not empty.
#
# Which map points at the object?
# -------------------------------
#
# The pointing game asks, for each test image, whether the map's largest
# value falls on the object (its mask). As a reference we add the CNN's own
# Grad-CAM at ``relu3``, the layer whose positions are the transformer's
# tokens. Grad-CAM explains the predicted class; the rollout does not depend
# on a class. A map that peaks at a random pixel would hit the object as
# often as the object's share of the image.

cnn_maps = ht.GradCAM(cnn, "relu3")(test.images)
results = {
    "attention rollout": rollout_maps,
    "Grad-CAM, last block's ln_1": gradcam_maps,
    "Grad-CAM, last block's output": output_maps,
    "CNN Grad-CAM at relu3": cnn_maps,
}
share = test.masks.float().mean().item()
print(f"share of the image covered by the object: {share:.3f}")
print(f"pointing game on {len(test.images)} test images:")
hits = {}
for name, maps in results.items():
    hits[name] = pointing_game(maps, test.masks).float().mean().item()
    print(f"  {name:<30} {hits[name]:.3f}")
print("hooks left on the model:", ht.count_hooks(model).total)

# sphinx_gallery_start_ignore
# "The empty maps never point at the object"; "The rollout points at the object for most
# images, about as often as the CNN's own Grad-CAM" (within 0.1: 0.893 and 0.857 in the
# builds so far, 300 images); "Grad-CAM at ln_1 does better than a random pixel (the
# object's share of the image) but far worse than the rollout" (0.280 so far, against a
# share of 0.101 and the rollout's 0.893; a hit rate on 300 images has a standard error of
# about 0.026, so the margins, 1.5 x the share and 0.3, are several standard errors wide)
rollout_hits = hits["attention rollout"]
gradcam_hits = hits["Grad-CAM, last block's ln_1"]
assert hits["Grad-CAM, last block's output"] == 0
assert rollout_hits > 0.5, hits
assert abs(rollout_hits - hits["CNN Grad-CAM at relu3"]) <= 0.1, hits
assert 1.5 * share < gradcam_hits < rollout_hits - 0.3, (share, hits)
assert ht.count_hooks(model).total == 0
# sphinx_gallery_end_ignore

# %%
# The empty maps never point at the object (a constant map has no maximum and
# counts as a miss). The rollout points at the object for most images, about
# as often as the CNN's own Grad-CAM. Grad-CAM at ``ln_1`` does better than a
# random pixel but far worse than the rollout. A likely reason: Grad-CAM
# gives each channel one weight, its gradient averaged over all 64 tokens,
# which assumes that a channel means the same at every position, as in a CNN.
# Here how much a token counts depends on how much the class token attends to
# it, and that average ignores it (exercise 3 tries a per-token weighting).
#
# Four test images, with the rollout and the Grad-CAM at ``ln_1``:

fig, axes = plt.subplots(4, 3, figsize=(5.2, 7.4), layout="constrained")
for row, i in enumerate(range(4)):
    image = test.images[i]
    name = ht.data.CLASSES[int(test.labels[i])]
    axes[row, 0].imshow(image.permute(1, 2, 0).numpy())
    axes[row, 0].set_title(f"a {name}")
    axes[row, 1].imshow(ht.overlay(image, rollout_maps[i]))
    axes[row, 1].set_title("rollout")
    axes[row, 2].imshow(ht.overlay(image, gradcam_maps[i]))
    axes[row, 2].set_title("Grad-CAM, ln_1")
for ax in axes.flat:
    ax.axis("off")
plt.show()

# %%
# Summary
# -------
#
# - A hybrid ViT takes its tokens from a CNN feature map; with the CNN
#   frozen, only the transformer and the head are trained.
# - torchvision's ``EncoderBlock`` calls its attention with
#   ``need_weights=False``. A forward pre-hook with ``with_kwargs=True`` makes
#   the attention layer compute the weights
#   (``need_weights=True, average_attn_weights=False``); the block still
#   discards them, so a forward hook on the attention layer keeps
#   ``output[1]``. Remove both hooks in ``finally``.
# - Attention rollout: average the heads, add the identity for the residual
#   connection, renormalise the rows, multiply over the blocks, and read the
#   class token's row over the patch tokens.
# - Grad-CAM on the output of the last block is empty when the head reads
#   only the class token: explain a layer whose patch tokens still reach the
#   score, such as the last block's ``ln_1``.
# - Compare maps against known answers (here the pointing game on the
#   shapes' masks) before trusting them: on this model the rollout points at
#   the object far more often than Grad-CAM does.
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
# 1. Compute the rollout without adding the identity: write
#    ``plain_rollout(attention)``, which returns it for the recorded list of
#    weights. How often does it point at the object? Check:
#    ``ht.exercises.check("26.1", plain_rollout)``.
# 2. Draw the class token's attention over the patches for each of the 4
#    heads of the last block, for the first test image: write
#    ``class_token_maps(weights)``, which turns one block's weights
#    ``[B, heads, 65, 65]`` into maps ``[B, heads, 8, 8]``. Check:
#    ``ht.exercises.check("26.2", class_token_maps)``.
# 3. Layer-CAM (:doc:`/auto_examples/04_grad_cam/plot_18_cam_family`)
#    weights each token by its own gradient instead of one weight per
#    channel. Play the pointing game with it at the last block's ``ln_1``:
#    write ``layer_cam_maps(model, layer, images)``, which returns its maps.
#    Check: ``ht.exercises.check("26.3", layer_cam_maps)``.

# %%
# .. rst-class:: solution
#
# **Solution 1.** It points at the object far less often than the rollout
# with the identity. Each block adds its input back, so a token keeps much of
# its own content; without the identity, the product assumes that every
# block replaces each token by a mix of the others, and the class token's row
# spreads over the image.


def plain_rollout(attention):
    plain = torch.eye(attention[0].shape[-1])
    for weights in attention:
        plain = weights.mean(dim=1) @ plain
    return plain


plain = plain_rollout(attention)
plain_maps = plain[:, 0, 1:].reshape(-1, 1, 8, 8)  # class token -> the 64 patches
plain_maps = F.interpolate(plain_maps, size=(64, 64), mode="bilinear")[:, 0]
plain_hits = pointing_game(plain_maps, test.masks).float().mean().item()
rollout_hits = pointing_game(rollout_maps, test.masks).float().mean().item()
print(f"rollout without the identity: {plain_hits:.3f}, with it: {rollout_hits:.3f}")

# sphinx_gallery_start_ignore
# "far less often": by more than 0.3 (0.363 against 0.893 in the builds so far, 300 images)
assert plain_hits < rollout_hits - 0.3, (plain_hits, rollout_hits)
# sphinx_gallery_end_ignore

ht.exercises.check("26.1", plain_rollout)

# sphinx_gallery_start_ignore
from page_checks import assert_check  # docs/_ext: the build's checks

# the page's rollout, with the identity
assert_check("26.1", plain_rollout, attention_rollout, "added_identity")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 2.** The four heads look at different places. For the first
# image the figure shows one map per head; over the test images, the head
# that points at the object most often does so far more often than the head
# that does least often. The rollout averages the heads, so it mixes those
# that follow the object with those that follow it less.


def class_token_maps(weights):
    return weights[:, :, 0, 1:].reshape(len(weights), -1, 8, 8)  # row 0, the 64 patches


token_maps = class_token_maps(attention[-1])  # [300, 4, 8, 8]
head_hits = []
fig, axes = plt.subplots(1, 4, figsize=(5.2, 1.7), layout="constrained")
for head, ax in enumerate(axes):
    head_maps = token_maps[:, head : head + 1]
    head_maps = F.interpolate(head_maps, size=(64, 64), mode="bilinear")[:, 0]
    head_hits.append(pointing_game(head_maps, test.masks).float().mean().item())
    print(f"head {head}: pointing game {head_hits[-1]:.3f}")
    ax.imshow(ht.overlay(test.images[0], head_maps[0]))
    ax.set_title(f"head {head}")
    ax.axis("off")
plt.show()

# sphinx_gallery_start_ignore
# "The four heads"; "far more often": the best head by more than 0.3 (0.860 against 0.337
# in the builds so far, 300 images)
assert len(head_hits) == attention[-1].shape[1] == 4
assert max(head_hits) - min(head_hits) > 0.3, head_hits
# sphinx_gallery_end_ignore

ht.exercises.check("26.2", class_token_maps)

# sphinx_gallery_start_ignore


# the class token's column: how much each patch reads from the class token
def class_token_columns(weights):
    return weights[:, :, 1:, 0].reshape(len(weights), -1, 8, 8)


assert_check("26.2", class_token_maps, class_token_columns, "column")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 3.** Layer-CAM points at the object far more often than Grad-CAM
# at the same layer. Weighting each token by its own gradient keeps what the
# channel average of Grad-CAM loses: how much that token counts for the class
# token.


def layer_cam_maps(model, layer, images):
    layer_cam = ht.LayerCAM(model, layer, reshape_transform=ht.token_reshape_transform)
    return layer_cam(images)


layer_cam_result = layer_cam_maps(model, f"{last_block}.ln_1", test.images)
layer_cam_hits = pointing_game(layer_cam_result, test.masks).float().mean().item()
gradcam_hits = pointing_game(gradcam_maps, test.masks).float().mean().item()
print(f"Layer-CAM at ln_1: {layer_cam_hits:.3f}, Grad-CAM: {gradcam_hits:.3f}")

# sphinx_gallery_start_ignore
# "far more often": by more than 0.3 (0.743 against 0.280 in the builds so far, 300 images)
assert layer_cam_hits > gradcam_hits + 0.3, (layer_cam_hits, gradcam_hits)
# sphinx_gallery_end_ignore

ht.exercises.check("26.3", layer_cam_maps)

# sphinx_gallery_start_ignore


# Grad-CAM: one weight per channel
def grad_cam_maps(model, layer, images):
    return ht.GradCAM(model, layer, reshape_transform=ht.token_reshape_transform)(images)


assert_check("26.3", layer_cam_maps, grad_cam_maps, "grad_cam")
from page_checks import assert_exercises_checked, assert_no_hooks_left  # docs/_ext

assert_exercises_checked()
assert_no_hooks_left(globals())
# sphinx_gallery_end_ignore
