"""Layer outputs that are not ``[B, C, h, w]``, and maps that come back all zero.

- Channels-last outputs ``[B, H, W, C]`` (timm's Swin) are refused with the
  fix named, never read as ``[B, C, H, W]``; a convolution in the
  ``torch.channels_last`` memory format is not that case and just works.
- A layer that returns a dict or a tuple (a feature pyramid) is explained
  through a ``reshape_transform`` that receives the raw output.
- A map that is zero everywhere comes with a :class:`ZeroMapWarning`.

Every test also checks that no hook is left on the model.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from hooks_tutorial import count_hooks
from hooks_tutorial.cam import (
    CAM,
    EigenCAM,
    GradCAM,
    GradCAMPlusPlus,
    HiResCAM,
    LayerCAM,
    ScoreCAM,
    XGradCAM,
    ZeroMapWarning,
    channels_last_reshape_transform,
    token_reshape_transform,
)

GRADIENT_METHODS = [GradCAM, GradCAMPlusPlus, XGradCAM, LayerCAM, HiResCAM]
ALL_METHODS = [*GRADIENT_METHODS, ScoreCAM, EigenCAM]


def make_cam(method: type, model: nn.Module, layer: object, **kwargs: Any) -> Any:
    if method is ScoreCAM:
        kwargs.setdefault("batch_size", 8)
    return method(model, layer, **kwargs)


def gradcam_by_hand(a: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """Grad-CAM's formula on ``[B, C, h, w]``, with the final ReLU."""
    return (g.mean(dim=(2, 3), keepdim=True) * a).sum(dim=1).clamp(min=0)


# -- channels-last outputs ---------------------------------------------------------
class SwinStage(nn.Module):
    """Like a Swin stage: works on ``[B, H, W, C]`` and ends in a ``LayerNorm(C)``."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.mix = nn.Conv2d(channels, channels, 3, padding=1)  # some spatial mixing
        self.mlp = nn.Linear(channels, channels)
        self.norm = nn.LayerNorm(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [B, H, W, C] -> [B, H, W, C]
        mixed = self.mix(x.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)
        return self.norm(x + self.mlp(torch.relu(mixed)))


class TinySwin(nn.Module):
    """Patch embedding (channels-last, as timm's Swin) -> 2 stages -> mean over H, W -> head."""

    def __init__(self, channels: int = 8) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, channels, 4, stride=4)
        self.stages = nn.Sequential(SwinStage(channels), SwinStage(channels))
        self.head = nn.Linear(channels, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = self.patch(x).permute(0, 2, 3, 1)  # [B, H, W, C]
        return self.head(self.stages(t).mean(dim=(1, 2)))


def tiny_swin() -> TinySwin:
    torch.manual_seed(0)
    return TinySwin().eval()


@pytest.mark.parametrize("layer", ["stages.1", "stages.1.norm", "stages.1.mlp"])
@pytest.mark.parametrize("method", ALL_METHODS)
def test_channels_last_output_is_refused_with_the_fix_named(method: type, layer: str) -> None:
    model = tiny_swin()
    x = torch.randn(2, 3, 16, 16)  # a 4 x 4 grid of 8 channels: [2, 4, 4, 8]
    with pytest.raises(
        ValueError,
        match=r"has shape \(2, 4, 4, 8\): its last dimension is 8, .* channels-last "
        r"\[B, H, W, C\].*reshape_transform=channels_last_reshape_transform",
    ):
        make_cam(method, model, layer)(x)
    assert count_hooks(model) == {}


def test_channels_last_error_names_where_the_channel_count_comes_from() -> None:
    model = tiny_swin()
    x = torch.randn(1, 3, 16, 16)
    with pytest.raises(ValueError, match=r"the normalized_shape of its LayerNorm 'norm'"):
        GradCAM(model, "stages.1")(x)
    with pytest.raises(ValueError, match=r"the normalized_shape of the LayerNorm itself"):
        GradCAM(model, "stages.1.norm")(x)
    assert count_hooks(model) == {}


def test_channels_last_with_a_grid_as_wide_as_the_channels_is_refused_at_a_layernorm() -> None:
    # [B, 8, 8, 8]: H = W = C. A LayerNorm acts on the last dimension, whatever the shape.
    model = tiny_swin()
    x = torch.randn(1, 3, 32, 32)
    with pytest.raises(ValueError, match=r"channels-last"):
        GradCAM(model, "stages.1.norm")(x)
    assert count_hooks(model) == {}


@pytest.mark.parametrize("method", ALL_METHODS)
def test_channels_last_reshape_transform_gives_the_map_of_the_permuted_layer(
    method: type,
) -> None:
    model = tiny_swin().double()
    x = torch.randn(2, 3, 16, 16, dtype=torch.float64)
    got = make_cam(method, model, "stages.1", reshape_transform=channels_last_reshape_transform)(
        x, 1, raw=True
    )
    assert got.shape == (2, 4, 4)
    assert count_hooks(model) == {}
    if method is GradCAM:
        a = model.stages(model.patch(x).permute(0, 2, 3, 1))
        (g,) = torch.autograd.grad(model.head(a.mean(dim=(1, 2)))[:, 1].sum(), a)
        expected = gradcam_by_hand(a.permute(0, 3, 1, 2), g.permute(0, 3, 1, 2))
        torch.testing.assert_close(got, expected.detach(), rtol=1e-10, atol=1e-12)


def test_channels_last_memory_format_is_not_channels_last_layout() -> None:
    # torch.channels_last changes the strides only: the shape stays [B, C, H, W].
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(inplace=True),
        nn.Conv2d(8, 16, 3, padding=1),  # W = 16 = C: must not look channels-last
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(16, 3),
    ).eval()
    x = torch.randn(2, 3, 16, 16)
    top_k = {"top_k": 3}  # ScoreCAM: few passes
    expected = {
        (method, layer): make_cam(method, model, layer, **top_k if method is ScoreCAM else {})(x)
        for method in ALL_METHODS
        for layer in ["1", "3"]
    }
    model = model.to(memory_format=torch.channels_last)
    x = x.to(memory_format=torch.channels_last)
    assert model[3].weight.is_contiguous(memory_format=torch.channels_last)
    for (method, layer), maps in expected.items():
        got = make_cam(method, model, layer, **top_k if method is ScoreCAM else {})(x)
        torch.testing.assert_close(got, maps, rtol=1e-4, atol=1e-5)
    assert count_hooks(model) == {}


class ConvNeXtBlock(nn.Module):
    """Permutes to channels-last for its LayerNorm and Linear, and back: ``[B, C, H, W]``."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.dwconv = nn.Conv2d(channels, channels, 3, padding=1, groups=channels)
        self.norm = nn.LayerNorm(channels)
        self.pwconv = nn.Linear(channels, channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = self.pwconv(self.norm(self.dwconv(x).permute(0, 2, 3, 1)))
        return x + t.permute(0, 3, 1, 2)


class DenseBlock(nn.Module):
    """Concatenates its input with a conv of 8 channels: its last conv does not give C."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, 8, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([x, self.conv(x)], dim=1)


@pytest.mark.parametrize("block", [ConvNeXtBlock(8), DenseBlock(4)])
def test_channels_first_blocks_ending_in_linear_or_concat_are_not_refused(
    block: nn.Module,
) -> None:
    # Width 8 equals the count of the block's last Linear / conv; dim 1 holds the channels.
    torch.manual_seed(0)
    channels = 8 if isinstance(block, ConvNeXtBlock) else 12
    model = nn.Sequential(
        nn.Conv2d(3, 8 if isinstance(block, ConvNeXtBlock) else 4, 3, padding=1),
        block,
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(channels, 2),
    ).eval()
    maps = GradCAM(model, "1")(torch.randn(2, 3, 8, 8))
    assert maps.shape == (2, 8, 8)
    assert count_hooks(model) == {}


def test_channels_last_reshape_transform() -> None:
    t = torch.arange(2 * 3 * 4 * 5.0).reshape(2, 3, 4, 5)
    out = channels_last_reshape_transform(t)
    assert out.shape == (2, 5, 3, 4)
    assert torch.equal(out[1, 4, 2, 3], t[1, 2, 3, 4])
    with pytest.raises(ValueError, match=r"\(2, 9, 8\).*use token_reshape_transform"):
        channels_last_reshape_transform(torch.zeros(2, 9, 8))


def test_token_reshape_transform_on_a_4d_map_names_the_right_fix() -> None:
    with pytest.raises(ValueError, match=r"expected tokens \[B, N, C\]") as info:
        token_reshape_transform(torch.zeros(1, 4, 4, 8))
    message = str(info.value)
    assert "reshape_transform=channels_last_reshape_transform" in message
    assert "needs no reshape_transform" in message
    assert "transpose" not in message


def test_timm_swin_stage_is_refused_then_explained() -> None:
    # the test group installs timm, so a missing timm fails here instead of skipping;
    # imported here, as only this test needs it (0.5 s per worker at collection)
    import timm  # noqa: PLC0415

    torch.manual_seed(0)
    model = timm.create_model(  # timm's Swin code, narrowed and shortened to run fast
        "swin_tiny_patch4_window7_224",
        pretrained=False,
        img_size=64,
        num_classes=3,
        embed_dim=16,
        depths=(1, 1, 1, 2),
        num_heads=(1, 1, 1, 1),
    ).eval()
    x = torch.randn(1, 3, 64, 64)
    for layer in ["layers.3", "layers.3.blocks.1", "norm"]:  # [1, 2, 2, 128]
        with pytest.raises(ValueError, match="channels_last_reshape_transform"):
            GradCAM(model, layer)(x)
        cam = GradCAM(model, layer, reshape_transform=channels_last_reshape_transform)
        assert cam(x, raw=True).shape == (1, 2, 2)
    assert count_hooks(model) == {}


# -- layers that return a dict or a tuple --------------------------------------------
class TinyFPN(nn.Module):
    """Levels ``"0"`` (8 x 8), ``"1"`` (4 x 4) and ``"pool"`` (2 x 2) in an OrderedDict.

    Like torchvision's FPN, including the ``"pool"`` level that a classifier head
    may leave unused.
    """

    def __init__(self) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(3, 6, 3, stride=2, padding=1)
        self.c2 = nn.Conv2d(6, 6, 3, stride=2, padding=1)
        self.lateral = nn.Conv2d(6, 6, 1)

    def forward(self, x: torch.Tensor) -> OrderedDict[str, torch.Tensor]:
        c1 = torch.relu(self.c1(x))
        c2 = torch.relu(self.c2(c1))
        p1 = self.lateral(c1) + F.interpolate(c2, scale_factor=2.0)
        return OrderedDict([("0", p1), ("1", c2), ("pool", F.max_pool2d(c2, 1, 2))])


class PyramidNet(nn.Module):
    """An FPN followed by a head that reads the levels in ``uses`` (in place first)."""

    def __init__(self, uses: tuple[str, ...] = ("0", "1")) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.fpn = TinyFPN()
        self.uses = uses
        self.head = nn.Linear(6 * len(uses), 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        levels = self.fpn(x)
        pooled = [torch.relu_(levels[k]).mean(dim=(2, 3)) for k in self.uses]  # in place
        return self.head(torch.cat(pooled, dim=1))


@pytest.mark.parametrize("method", ALL_METHODS)
@pytest.mark.parametrize("level", ["0", "1"])
def test_reshape_transform_picks_a_level_of_a_dict_output(method: type, level: str) -> None:
    model = PyramidNet().eval()
    x = torch.randn(2, 3, 16, 16)
    side = 8 if level == "0" else 4
    cam = make_cam(method, model, "fpn", reshape_transform=lambda out: out[level])
    assert cam(x, raw=True).shape == (2, side, side)
    assert count_hooks(model) == {}


@pytest.mark.parametrize("level", ["0", "1"])
def test_gradient_is_taken_with_respect_to_the_picked_level(level: str) -> None:
    model = PyramidNet().double().eval()
    x = torch.randn(2, 3, 16, 16, dtype=torch.float64)
    got = GradCAM(model, "fpn", reshape_transform=lambda out: out[level])(x, 2, raw=True)
    levels = model.fpn(x)
    picked = levels[level]
    score = model.head(torch.cat([torch.relu(levels[k]).mean(dim=(2, 3)) for k in "01"], 1))
    (g,) = torch.autograd.grad(score[:, 2].sum(), picked)
    torch.testing.assert_close(got, gradcam_by_hand(picked, g).detach(), rtol=1e-10, atol=1e-12)
    assert count_hooks(model) == {}


def test_reshape_transform_can_merge_levels() -> None:
    model = PyramidNet().eval()

    def merge(out: OrderedDict[str, torch.Tensor]) -> torch.Tensor:
        return torch.cat([out["0"], F.interpolate(out["1"], scale_factor=2.0)], dim=1)

    maps = GradCAM(model, "fpn", reshape_transform=merge)(torch.randn(2, 3, 16, 16), raw=True)
    assert maps.shape == (2, 8, 8)
    assert bool(torch.isfinite(maps).all())
    assert count_hooks(model) == {}


def test_torchvision_feature_pyramid_network() -> None:
    from torchvision.ops import FeaturePyramidNetwork  # noqa: PLC0415

    class Detector(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            torch.manual_seed(0)
            self.c1 = nn.Conv2d(3, 4, 3, stride=2, padding=1)
            self.c2 = nn.Conv2d(4, 8, 3, stride=2, padding=1)
            self.fpn = FeaturePyramidNetwork([4, 8], 6)
            self.head = nn.Linear(12, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            c1 = torch.relu(self.c1(x))
            c2 = torch.relu(self.c2(c1))
            levels = self.fpn(OrderedDict([("feat1", c1), ("feat2", c2)]))
            return self.head(torch.cat([v.mean(dim=(2, 3)) for v in levels.values()], 1))

    model = Detector().double().eval()
    x = torch.randn(2, 3, 16, 16, dtype=torch.float64)
    with pytest.raises(
        TypeError,
        match=r"the target layer 'fpn' returned a OrderedDict, not a tensor; pass a "
        r"reshape_transform .*lambda out: out\['feat1'\] \(keys: 'feat1', 'feat2'\)",
    ):
        GradCAM(model, "fpn")(x)
    got = GradCAM(model, "fpn", reshape_transform=lambda out: out["feat2"])(x, 1, raw=True)
    c1 = torch.relu(model.c1(x))
    levels = model.fpn(OrderedDict([("feat1", c1), ("feat2", torch.relu(model.c2(c1)))]))
    score = model.head(torch.cat([v.mean(dim=(2, 3)) for v in levels.values()], 1))[:, 1]
    (g,) = torch.autograd.grad(score.sum(), levels["feat2"])
    expected = gradcam_by_hand(levels["feat2"], g).detach()
    torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-12)
    assert count_hooks(model) == {}


def test_dict_output_without_reshape_transform_names_the_fix() -> None:
    model = PyramidNet()
    for method in ALL_METHODS:
        with pytest.raises(
            TypeError,
            match=r"the target layer 'fpn' returned a OrderedDict, not a tensor; pass a "
            r"reshape_transform.*lambda out: out\['0'\] \(keys: '0', '1', 'pool'\)",
        ):
            make_cam(method, model, "fpn")(torch.randn(1, 3, 16, 16))
    assert count_hooks(model) == {}


def test_tuple_output_with_reshape_transform_and_a_frozen_model() -> None:
    class Pair(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)

        def forward(self, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            out = self.conv(t)
            return out, out.argmax(dim=1)  # an integer tensor rides along

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            torch.manual_seed(0)
            self.pair = Pair()
            self.head = nn.Linear(4, 2)

        def forward(self, t: torch.Tensor) -> torch.Tensor:
            features, _ = self.pair(t)
            return self.head(torch.relu(features).mean(dim=(2, 3)))

    model = Model().eval().requires_grad_(False)
    x = torch.randn(2, 3, 8, 8)
    maps = GradCAM(model, "pair", reshape_transform=lambda out: out[0])(x)
    expected = GradCAM(model, "pair.conv")(x)
    torch.testing.assert_close(maps, expected, rtol=0, atol=0)
    assert count_hooks(model) == {}


def test_no_hook_left_when_reshape_transform_fails() -> None:
    model = PyramidNet()
    x = torch.randn(1, 3, 16, 16)
    with pytest.raises(KeyError, match="'2'"):
        GradCAM(model, "fpn", reshape_transform=lambda out: out["2"])(x)
    with pytest.raises(ValueError, match=r"reshape_transform turned the output of layer 'fpn'"):
        GradCAM(model, "fpn", reshape_transform=lambda out: out["0"][0])(x)
    assert count_hooks(model) == {}


# -- maps that are zero everywhere ----------------------------------------------------
class TinyViT(nn.Module):
    """Patch embedding -> [class token + 16 patches] -> 2 encoder blocks -> class token head."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.patch = nn.Conv2d(3, 16, 4, stride=4)
        self.cls = nn.Parameter(torch.randn(1, 1, 16) * 0.1)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(
                16, 2, 32, dropout=0.0, batch_first=True, norm_first=True
            )  # pre-norm, as in timm's and torchvision's ViTs
            for _ in range(2)
        )
        self.head = nn.Linear(16, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = self.patch(x).flatten(2).transpose(1, 2)
        t = torch.cat([self.cls.expand(x.shape[0], -1, -1), t], dim=1)
        for block in self.blocks:
            t = block(t)
        return self.head(t[:, 0])


@pytest.mark.parametrize("method", GRADIENT_METHODS)
def test_vit_last_block_warns_that_its_map_is_zero(method: type) -> None:
    model = TinyViT().eval()
    x = torch.randn(2, 3, 16, 16)
    cam = method(model, "blocks.1", reshape_transform=token_reshape_transform)
    with pytest.warns(ZeroMapWarning) as caught:
        maps = cam(x, raw=True)
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "the map of layer 'blocks.1' is zero for all 2 image(s)" in message
    assert "gradient with respect to this layer's output is zero at every position" in message
    assert "its first LayerNorm, norm1 or ln_1" in message
    assert caught[0].filename == __file__  # points at the call, not into the library
    assert torch.equal(maps, torch.zeros(2, 4, 4))
    # the layer the message suggests gives a map, and no warning (filterwarnings=error)
    assert method(model, "blocks.1.norm1", reshape_transform=token_reshape_transform)(x).any()
    assert count_hooks(model) == {}


def test_a_pyramid_level_the_score_does_not_use_warns() -> None:
    model = PyramidNet().eval()
    x = torch.randn(2, 3, 16, 16)
    with pytest.warns(ZeroMapWarning, match=r"the map of layer 'fpn' is zero for all 2 image"):
        maps = GradCAM(model, "fpn", reshape_transform=lambda out: out["pool"])(x, raw=True)
    assert torch.equal(maps, torch.zeros(2, 2, 2))
    # level "1" is read by the head and, upsampled, through level "0": no warning
    GradCAM(model, "fpn", reshape_transform=lambda out: out["1"])(x)
    assert count_hooks(model) == {}


def test_zero_gradient_warning_names_the_images() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 4, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 2)
    )
    x = torch.randn(3, 3, 8, 8)
    weights = torch.tensor([1.0, 0.0, 1.0])  # image 1's score is constant

    with pytest.warns(ZeroMapWarning, match=r"is zero for image\(s\) 1 of 3"):
        maps = GradCAM(model, "0")(x, lambda out: out[:, 0] * weights)
    assert not maps[1].any()
    assert maps[0].any()
    assert maps[2].any()
    assert count_hooks(model) == {}


class Constant(nn.Module):
    """A layer whose output is the same at every position."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean(dim=(2, 3), keepdim=True).expand_as(x)


class Dead(nn.Module):
    """A layer whose output is zero everywhere (like a ReLU that is off everywhere)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 0


@pytest.mark.parametrize(
    ("method", "layer"), [(ScoreCAM, Constant), (ScoreCAM, Dead), (EigenCAM, Dead)]
)
def test_methods_without_gradients_warn_when_the_map_is_zero(method: type, layer: type) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 4, 3), layer(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 2)
    )
    with pytest.warns(ZeroMapWarning) as caught:
        make_cam(method, model, "1")(torch.randn(2, 3, 8, 8))
    assert len(caught) == 1
    message = str(caught[0].message)
    assert f"the map of layer '1' is zero for all 2 image(s): {method.__name__} found" in message
    assert "the same at every position" in message
    assert caught[0].filename == __file__
    make_cam(method, model, "0")(torch.randn(2, 3, 8, 8))  # an earlier layer: no warning
    assert count_hooks(model) == {}


def test_no_warning_for_a_map_that_is_zero_only_after_the_final_relu() -> None:
    # At a layer that is constant over positions, the gradient is not zero, and HiResCAM's
    # signed map is constant: negative for one of the two opposite scores. That map is
    # zero after the ReLU ("no positive evidence"), which is not worth a warning.
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 4, 3), Constant(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 2)
    )
    x = torch.randn(2, 3, 8, 8)
    zero_maps = 0
    for sign in (1.0, -1.0):
        maps = HiResCAM(model, "1")(x, lambda out, s=sign: s * out[:, 0], raw=True)
        zero_maps += int((~maps.flatten(1).any(dim=1)).sum())
    assert zero_maps == 2  # one per image, and no ZeroMapWarning (filterwarnings=error)
    assert CAM(model, "1", "4")(x).shape == (2, 8, 8)  # constant, not zero: no warning
    assert count_hooks(model) == {}
