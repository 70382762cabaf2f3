# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
Grad-CAM beyond plain CNNs: residual networks and transformers
==============================================================

.. index::
   ! reshape_transform
   ! transformer
   ! beyond CNNs

``SimpleCNN`` is a friendly model to explain: no operation changes a tensor
in place, and every convolutional block returns a 4-D feature map. Real
models are less kind. torchvision's ResNets end each residual block with ``out += identity``
and ``ReLU(inplace=True)``, and a vision transformer returns tokens
``[B, tokens, C]`` instead of a map. Hook code that works on ``SimpleCNN``
raises an error, or worse, silently computes something else. This page shows
both failures and how the library's hooks avoid them.

.. rubric:: What you will learn
   :heading-level: 2

- why a full backward hook raises a ``RuntimeError`` when the hooked
  layer's output is later modified in place;
- why storing ``output.detach()`` without a copy records the wrong
  activations;
- how a forward hook that keeps the output and hands the model a copy
  avoids both;
- how ``reshape_transform`` turns transformer tokens into a feature map, and
  what happens when the tokens do not fit a grid.

**Prerequisites**: :doc:`/auto_examples/03_tensor_hooks/plot_14_pitfalls`
(in-place operations and hooks) and the Grad-CAM pages before this one.
"""

# %%
# A ResNet with random weights
# ----------------------------
#
# We build torchvision's ``resnet18`` for our 5 classes with random weights
# (``weights=None``: nothing is downloaded). Training it would not fit in the
# few seconds a page may take, and it is not needed: this page is about the
# mechanics (what runs, what raises, which numbers agree), not about what the
# maps mean. Random weights give meaningless but perfectly computable maps.

import functools
import inspect
import textwrap
import warnings

import torch
import torchvision
from torch import nn

import hooks_tutorial as ht

torch.manual_seed(0)
resnet = torchvision.models.resnet18(weights=None, num_classes=5).eval()
images = ht.make_shapes(2, split="test", seed=22).images  # [2, 3, 64, 64]
print(resnet.layer4[1])
print(inspect.getsource(torchvision.models.resnet.BasicBlock.forward))

# %%
# Each ``BasicBlock`` runs ``conv1, bn1, relu, conv2, bn2``, then
# ``out += identity`` and ``relu`` once more (the source above). Both the
# addition and the ReLU (``inplace=True``) overwrite the output of ``bn2``:
# the tensor that a hook on ``bn2`` sees is changed in place right after the
# hook has run.
#
# A naive Grad-CAM
# ----------------
#
# Here is the Grad-CAM a reader would write after the earlier pages: a
# forward hook stores the activation, a full backward hook stores the gradient
# of the layer's output, and both are removed in ``finally``.


def naive_gradcam(model, layer, x, class_index):
    stored = {}

    def save_activation(module, args, output):
        stored["activation"] = output.detach()

    def save_gradient(module, grad_input, grad_output):
        stored["gradient"] = grad_output[0]

    handles = [
        layer.register_forward_hook(save_activation),
        layer.register_full_backward_hook(save_gradient),
    ]
    try:
        model(x)[:, class_index].sum().backward()
    finally:
        for handle in handles:
            handle.remove()
    weights = stored["gradient"].mean(dim=(2, 3), keepdim=True)
    return torch.relu((weights * stored["activation"]).sum(dim=1))


# %%
# On ``layer4``, the whole last stage, it works: what follows ``layer4`` is
# average pooling, which does not touch its input.

maps = naive_gradcam(resnet, resnet.layer4, images, class_index=0)
print(f"layer4: maps {tuple(maps.shape)} for inputs {tuple(images.shape)}")

# sphinx_gallery_start_ignore
# "On layer4 ... it works": one 2 x 2 map per image
assert maps.shape == (2, 2, 2)
assert images.shape == (2, 3, 64, 64)
# sphinx_gallery_end_ignore

# %%
# On ``layer4[1].bn2`` it fails. The full backward hook wraps the layer's
# output in a view made by a custom autograd function, ``out += identity``
# modifies that view in place, and autograd raises the error in the
# *forward* pass:

message = None
try:
    naive_gradcam(resnet, resnet.layer4[1].bn2, images, class_index=0)
except RuntimeError as error:
    message = str(error).splitlines()[0]
    print("RuntimeError:", message[:100], "...")
print("hooks left on the model:", ht.count_hooks(resnet).total)

# sphinx_gallery_start_ignore
# "On layer4[1].bn2 it fails ... modifies that view in place, and autograd raises the
# error": the view made by the full backward hook's function
assert message is not None
assert "BackwardHookFunction" in message
assert "view" in message
# "The finally block did its job: no hook is left behind."
assert ht.count_hooks(resnet).total == 0
# sphinx_gallery_end_ignore

# %%
# The ``finally`` block did its job: no hook is left behind.
#
# A tensor hook instead: no error, wrong numbers
# ----------------------------------------------
#
# The usual fix for the gradient is a tensor hook registered from the forward
# hook (see :doc:`/auto_examples/03_tensor_hooks/plot_14_pitfalls`). It works.
# But the activation is still stored with ``output.detach()``, which shares
# memory with ``output``: the in-place addition and ReLU change the stored
# values too. We keep a ``.clone()`` next to it to compare.

stored = {}


def save_both(module, args, output):
    stored["detached"] = output.detach()  # shares memory with output
    stored["cloned"] = output.detach().clone()  # a copy of the values now
    output.register_hook(lambda grad: stored.update(gradient=grad))


handle = resnet.layer4[1].bn2.register_forward_hook(save_both)
try:
    resnet(images)[:, 0].sum().backward()
finally:
    handle.remove()

print(
    "stored values changed afterwards by:",
    f"{(stored['detached'] - stored['cloned']).abs().max().item():.3f}",
)
print("negative values in the detached copy?", bool((stored["detached"] < 0).any()))
print("negative values in the clone?        ", bool((stored["cloned"] < 0).any()))

# sphinx_gallery_start_ignore
# "the in-place addition and ReLU change the stored values too"
assert (stored["detached"] != stored["cloned"]).any()
# "A BatchNorm output has negative values; after the in-place ReLU the detached copy has
# none."
assert (stored["cloned"] < 0).any()
assert not (stored["detached"] < 0).any()
# sphinx_gallery_end_ignore

# %%
# A BatchNorm output has negative values; after the in-place ReLU the
# detached copy has none. The resulting map differs from the one computed
# from the true activations:

weights = stored["gradient"].mean(dim=(2, 3), keepdim=True)
map_detached = torch.relu((weights * stored["detached"]).sum(dim=1))
map_cloned = torch.relu((weights * stored["cloned"]).sum(dim=1))
print(
    "max |difference| between the two maps:",
    f"{(map_detached - map_cloned).abs().max().item():.3e}",
)
print("largest value of the correct map:     ", f"{map_cloned.abs().max().item():.3e}")

# sphinx_gallery_start_ignore
# "The resulting map differs from the one computed from the true activations": by more
# than a tenth of the correct map's largest value
assert (map_detached - map_cloned).abs().max() > 0.1 * map_cloned.abs().max()
# sphinx_gallery_end_ignore

# %%
# The library's way
# -----------------
#
# :obj:`hooks_tutorial.GradCAM` registers only a forward hook. The hook keeps the
# layer's output for itself and *returns a clone*, which replaces the output
# for the rest of the model; the in-place operations then change the clone,
# never the kept tensor. The gradient comes from ``torch.autograd.grad`` with
# respect to the kept tensor, so there is no module backward hook to break
# and the parameters' ``.grad`` stay untouched. We ask for the raw map (not
# upsampled, not normalised) to compare it with the careful version above.

cam = ht.GradCAM(resnet, "layer4.1.bn2")
library_map = cam(images, target=0, raw=True)
print("library map:", tuple(library_map.shape))
difference = (library_map - map_cloned).abs().max().item()
print("same as the clone-based map (max |difference| < 1e-6)?", difference < 1e-6)
print("hooks left on the model:", ht.count_hooks(resnet).total)

# sphinx_gallery_start_ignore
# "in-place operations after the layer are harmless": the same map as the careful version
assert library_map.shape == (2, 2, 2)
assert difference < 1e-6, difference
assert ht.count_hooks(resnet).total == 0
# sphinx_gallery_end_ignore

# %%
# A vision transformer in miniature
# ---------------------------------
#
# A vision transformer cuts the image into patches, turns each patch into a
# token vector, puts a learned *class token* in front, and lets transformer
# layers mix the tokens; the classifier reads the class token only. We build
# a tiny one from ``nn.TransformerEncoderLayer``: 8 x 8 pixel patches of a
# 64 x 64 image give an 8 x 8 grid, so 64 patch tokens plus the class token.
# Its weights are random too.


class TinyViT(nn.Module):
    def __init__(self, num_classes=5, image_size=64, patch=8, dim=32, depth=2, extra_tokens=0):
        super().__init__()
        patches = (image_size // patch) ** 2
        self.patch_embed = nn.Conv2d(3, dim, kernel_size=patch, stride=patch)
        # the class token, plus optional extra ("register") tokens
        self.prefix = nn.Parameter(torch.randn(1, 1 + extra_tokens, dim) * 0.02)
        self.position = nn.Parameter(torch.randn(1, 1 + extra_tokens + patches, dim) * 0.02)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(
                dim, nhead=4, dim_feedforward=2 * dim, dropout=0.0, batch_first=True
            )
            for _ in range(depth)
        )
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        tokens = self.patch_embed(x).flatten(2).transpose(1, 2)  # [B, 64, dim]
        prefix = self.prefix.expand(x.shape[0], -1, -1)
        tokens = torch.cat([prefix, tokens], dim=1) + self.position
        for block in self.blocks:
            tokens = block(tokens)
        return self.head(self.norm(tokens[:, 0]))  # the class token only


torch.manual_seed(0)
vit = TinyViT().eval()
tokens = {}
handle = vit.blocks[0].register_forward_hook(lambda m, args, out: tokens.update(out=out.shape))
vit(images)
handle.remove()
print("output of blocks[0]:", tuple(tokens["out"]))

# sphinx_gallery_start_ignore
# "64 patch tokens plus the class token", 32 values each
assert tuple(tokens["out"]) == (2, 65, 32)
# sphinx_gallery_end_ignore

# %%
# Grad-CAM needs ``[B, C, h, w]``. Given the tokens as they are, the library
# says what is wrong and what to pass:

message = None
try:
    ht.GradCAM(vit, "blocks.0")(images)
except ValueError as error:
    message = str(error)
    print("ValueError:", error)

# sphinx_gallery_start_ignore
# "the library says what is wrong and what to pass"
assert message is not None
assert "reshape_transform=token_reshape_transform" in message
# sphinx_gallery_end_ignore

# %%
# :obj:`hooks_tutorial.token_reshape_transform` drops the class token and lays
# the 64 patch tokens out on their 8 x 8 grid. The library applies it to the
# activations and to their gradients alike, so Grad-CAM's formula works
# unchanged. We explain ``blocks.0``, whose output feeds the last block.

cam = ht.GradCAM(vit, "blocks.0", reshape_transform=ht.token_reshape_transform)
print("raw map:", tuple(cam(images, raw=True).shape), " upsampled:", tuple(cam(images).shape))

# sphinx_gallery_start_ignore
# "lays the 64 patch tokens out on their 8 x 8 grid"
assert cam(images, raw=True).shape == (2, 8, 8)
assert cam(images).shape == (2, 64, 64)
# sphinx_gallery_end_ignore

# %%
# Why not the last block? After it, the classifier reads the class token
# only, so the score does not depend on the patch tokens of the last block's
# output: their gradient, and with it the map, is zero.

last = ht.GradCAM(vit, "blocks.1", reshape_transform=ht.token_reshape_transform)
with warnings.catch_warnings(record=True) as caught:  # to print the warning below
    warnings.simplefilter("always", ht.ZeroMapWarning)
    last_map = last(images, raw=True)
print("largest value of the raw map at blocks.1:", last_map.abs().max().item())
print(caught[0].category.__name__ + ":")
print(textwrap.fill(str(caught[0].message), width=72))

# sphinx_gallery_start_ignore
# "their gradient, and with it the map, is zero": exactly, no gradient path exists
assert last_map.abs().max() == 0
# "the library warns": one ZeroMapWarning, naming this layer and a layer that works
assert [w.category for w in caught] == [ht.ZeroMapWarning], caught
assert "'blocks.1'" in str(caught[0].message)
assert "norm1" in str(caught[0].message)
# sphinx_gallery_end_ignore

# %%
# The library warns when a map is zero at every position
# (:class:`~hooks_tutorial.ZeroMapWarning`), names the likely causes and
# suggests a layer that works. The page records the warning to print it;
# in your own code it appears by itself.

# %%
# When the tokens do not fit a grid
# ---------------------------------
#
# Some transformers put more than one token in front of the patches (for
# example *register* tokens, Darcet et al., ICLR 2024). With one extra token
# there are 66 tokens; neither 66 nor 65 is a square number, so the transform
# cannot guess the grid and says so:

vit_registers = TinyViT(extra_tokens=1).eval()
message = None
try:
    ht.GradCAM(vit_registers, "blocks.0", reshape_transform=ht.token_reshape_transform)(images)
except ValueError as error:
    message = str(error)
    print("ValueError:", error)

# sphinx_gallery_start_ignore
# "there are 66 tokens; neither 66 nor 65 is a square number, so the transform cannot
# guess the grid and says so"
assert message is not None
assert "cannot arrange 66 tokens in a square grid" in message
assert "neither 66 nor 65" in message
# sphinx_gallery_end_ignore

# %%
# Telling it how many tokens come first fixes it:

two_prefix_tokens = functools.partial(ht.token_reshape_transform, prefix_tokens=2)
cam = ht.GradCAM(vit_registers, "blocks.0", reshape_transform=two_prefix_tokens)
print("raw map:", tuple(cam(images, raw=True).shape))
print(
    "hooks left on the two transformers:",
    ht.count_hooks(vit).total,
    ht.count_hooks(vit_registers).total,
)

# sphinx_gallery_start_ignore
# "Telling it how many tokens come first fixes it"; no hook left on either transformer
assert cam(images, raw=True).shape == (2, 8, 8)
assert ht.count_hooks(vit).total == ht.count_hooks(vit_registers).total == 0
# sphinx_gallery_end_ignore

# %%
# Summary
# -------
#
# - Whether naive hook code works depends on what runs *after* the hooked
#   layer: on ``layer4`` of a ResNet it works, on ``layer4[1].bn2`` (followed
#   by ``out += identity`` and an in-place ReLU) the full backward hook
#   raises a ``RuntimeError`` in the forward pass.
# - ``output.detach()`` shares memory: in-place operations later change what
#   you stored. Store ``output.detach().clone()`` when the values matter.
# - The library's forward hook keeps the output, returns a clone to the model
#   and differentiates with ``torch.autograd.grad``: in-place operations after
#   the layer are harmless.
# - Transformer tokens ``[B, tokens, C]`` need a ``reshape_transform`` that
#   drops the prefix tokens and arranges the patches on their grid; explain a
#   layer whose patch tokens still reach the score.
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
# 1. Write ``failing_modules(model, x)``, which returns the names of the
#    modules of ``model`` on which ``naive_gradcam`` raises, and apply it to
#    ``resnet``. (Hint: loop over ``model.named_modules()``, skip the model
#    itself, the ``nn.Sequential`` stages and ``fc``, and catch the
#    ``RuntimeError``.) Which kinds of module are they, and why does a ReLU
#    fail too? Check: ``ht.exercises.check("22.1", failing_modules)``.
# 2. Write ``careful_gradcam(model, layer, x, class_index)``, a version of
#    ``naive_gradcam`` that works on ``layer4[1].bn2``, using a forward hook
#    that returns a clone, as the library does. Check:
#    ``ht.exercises.check("22.2", careful_gradcam)``.
# 3. Build a ``TinyViT`` for 64 x 96 images (an 8 x 12 grid) and write
#    ``wide_cam(vit, images)``, which returns its raw Grad-CAM maps at
#    ``blocks.0`` with ``functools.partial(ht.token_reshape_transform,
#    grid=(8, 12))``. What happens without ``grid``? Check:
#    ``ht.exercises.check("22.3", wide_cam)``.

# %%
# .. rst-class:: solution
#
# **Solution 1.** 26 modules raise the ``RuntimeError``, of three kinds: the 9
# named ``bn1`` (the stem's and each block's, followed by an in-place ReLU),
# the 8 named ``bn2`` (followed by ``out += identity``) and the 9 ReLUs. A
# ReLU fails although nothing after it changes its output: a full backward
# hook wraps the module's inputs as well as its outputs, and an in-place ReLU
# overwrites its own input, the wrapped view. The convolutions, the
# downsampling branches and the whole blocks work, and ``finally`` leaves 0
# hooks on the model.


def failing_modules(model, x):
    failing = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # conv1's input needs no gradient: torch warns
        for name, module in model.named_modules():
            if name == "" or isinstance(module, (nn.Sequential, nn.Linear)):
                continue
            try:
                naive_gradcam(model, module, x, class_index=0)
            except RuntimeError:
                failing.append(name)
    return failing


failing = failing_modules(resnet, images)
print(len(failing), "modules raise:", failing)
kinds = {}
for kind in ("bn1", "bn2", "relu"):
    kinds[kind] = sum(name.split(".")[-1] == kind for name in failing)
    print(f"  named {kind}: {kinds[kind]}")
print("hooks left on the model:", ht.count_hooks(resnet).total)

# sphinx_gallery_start_ignore
# "26 modules ..., of three kinds: the 9 named bn1, the 8 named bn2 and the 9 ReLUs"
assert len(failing) == sum(kinds.values()) == 26
assert kinds == {"bn1": 9, "bn2": 8, "relu": 9}, kinds
# "The convolutions, the downsampling branches and the whole blocks work"
assert not any("conv" in name or "downsample" in name for name in failing), failing
assert not any(isinstance(resnet.get_submodule(name), type(resnet.layer4[1])) for name in failing)
# "finally leaves 0 hooks on the model"
assert ht.count_hooks(resnet).total == 0
# sphinx_gallery_end_ignore

ht.exercises.check("22.1", failing_modules)

# sphinx_gallery_start_ignore
from page_checks import assert_check  # docs/_ext: the build's checks


# guessed instead of tried: the BatchNorms before an in-place operation, no ReLU
def failing_batchnorms(model, x):
    return [
        name
        for name, module in model.named_modules()
        if isinstance(module, nn.BatchNorm2d) and "downsample" not in name
    ]


assert_check("22.1", failing_modules, failing_batchnorms, "missed_relus")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 2.** The careful version gives a (2, 2, 2) map on
# ``layer4[1].bn2``, the same as the library's raw map: the rest of the model
# computes on the clone, so ``out += identity`` and the in-place ReLU change
# the clone, never the kept output, and there is no module backward hook to
# break.


def careful_gradcam(model, layer, x, class_index):
    kept = {}

    def keep_output(module, args, output):
        kept["activation"] = output
        return output.clone()  # the rest of the model gets the clone

    handle = layer.register_forward_hook(keep_output)
    try:
        score = model(x)[:, class_index].sum()
    finally:
        handle.remove()
    (gradient,) = torch.autograd.grad(score, kept["activation"])
    weights = gradient.mean(dim=(2, 3), keepdim=True)
    return torch.relu((weights * kept["activation"].detach()).sum(dim=1))


careful = careful_gradcam(resnet, resnet.layer4[1].bn2, images, 0)
print("careful map:", tuple(careful.shape))
print("same as the library's raw map:", torch.allclose(careful, library_map, atol=1e-6))

# sphinx_gallery_start_ignore
# "gives a (2, 2, 2) map ..., the same as the library's raw map"
assert careful.shape == (2, 2, 2)
assert torch.allclose(careful, library_map, atol=1e-6)
# sphinx_gallery_end_ignore

ht.exercises.check("22.2", careful_gradcam)

# sphinx_gallery_start_ignore
# the page's naive version: its full backward hook raises on a bn2
assert_check("22.2", careful_gradcam, naive_gradcam, "backward_hook")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 3.** Without ``grid`` the transform refuses: 97 tokens (a class
# token and 96 patches) do not form a square grid, and the error says what to
# pass. With ``grid=(8, 12)`` the raw map is 8 x 12 and the upsampled map
# 64 x 96, the size of the image: the transform drops the class token and lays
# the 96 patch tokens out row by row.


class WideViT(TinyViT):
    def __init__(self):
        super().__init__()
        self.position = nn.Parameter(torch.randn(1, 1 + 8 * 12, 32) * 0.02)


wide_vit, wide = WideViT().eval(), torch.rand(2, 3, 64, 96)
message = None
try:
    ht.GradCAM(wide_vit, "blocks.0", reshape_transform=ht.token_reshape_transform)(wide)
except ValueError as error:
    message = str(error)
    print("without grid: ValueError:", error)


def wide_cam(vit, images):
    grid_8x12 = functools.partial(ht.token_reshape_transform, grid=(8, 12))
    return ht.GradCAM(vit, "blocks.0", reshape_transform=grid_8x12)(images, raw=True)


grid_8x12 = functools.partial(ht.token_reshape_transform, grid=(8, 12))
cam = ht.GradCAM(wide_vit, "blocks.0", reshape_transform=grid_8x12)
print("raw map:", tuple(wide_cam(wide_vit, wide).shape), " upsampled:", tuple(cam(wide).shape))

# sphinx_gallery_start_ignore
# "97 tokens ... do not form a square grid, and the error says what to pass"
assert message is not None
assert "cannot arrange 97 tokens in a square grid" in message
assert "grid=(h, w)" in message
# "the raw map is 8 x 12 and the upsampled map 64 x 96"
assert cam(wide, raw=True).shape == (2, 8, 12)
assert cam(wide).shape == (2, 64, 96)
assert torch.equal(wide_cam(wide_vit, wide), cam(wide, raw=True))
# sphinx_gallery_end_ignore

ht.exercises.check("22.3", wide_cam)

# sphinx_gallery_start_ignore


# rows and columns swapped: a 12 x 8 grid
def wide_cam_swapped(vit, images):
    grid_12x8 = functools.partial(ht.token_reshape_transform, grid=(12, 8))
    return ht.GradCAM(vit, "blocks.0", reshape_transform=grid_12x8)(images, raw=True)


assert_check("22.3", wide_cam, wide_cam_swapped, "swapped")
from page_checks import assert_exercises_checked, assert_no_hooks_left  # docs/_ext

assert_exercises_checked()
assert_no_hooks_left(globals())
# sphinx_gallery_end_ignore
