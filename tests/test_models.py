"""Tests for hooks_tutorial.models: layer names, shapes, seeding and the CAM identity."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from hooks_tutorial import count_hooks
from hooks_tutorial.models import SimpleCNN, TinyConvNet


def test_simple_cnn_layer_names_in_order() -> None:
    names = [name for name, _ in SimpleCNN().named_children()]
    assert names == [
        "conv1", "bn1", "relu1", "pool1",
        "conv2", "bn2", "relu2", "pool2",
        "conv3", "bn3", "relu3",
        "gap", "flatten", "fc",
    ]  # fmt: skip


def test_simple_cnn_shapes() -> None:
    model = SimpleCNN(seed=0).eval()
    x = torch.rand(2, 3, 64, 64)
    assert model(x).shape == (2, 5)
    assert model.forward_features(x).shape == (2, 64, 8, 8)
    assert model.num_classes == 5


def test_simple_cnn_other_sizes() -> None:
    model = SimpleCNN(num_classes=3, in_channels=1, channels=(4, 8, 12), seed=0).eval()
    assert model(torch.rand(1, 1, 32, 32)).shape == (1, 3)
    assert model.forward_features(torch.rand(1, 1, 32, 32)).shape == (1, 12, 4, 4)


def test_relus_are_not_inplace() -> None:
    # in-place ReLUs break full backward hooks on the layer before them
    relus = [m for m in SimpleCNN().modules() if isinstance(m, nn.ReLU)]
    assert len(relus) == 3
    assert not any(relu.inplace for relu in relus)


def test_seed_gives_same_weights_and_keeps_global_rng() -> None:
    before = torch.random.get_rng_state()
    a, b = SimpleCNN(seed=3), SimpleCNN(seed=3)
    assert torch.equal(torch.random.get_rng_state(), before)
    for (name, p), q in zip(a.state_dict().items(), b.state_dict().values(), strict=True):
        assert torch.equal(p, q), name
    assert not torch.equal(a.conv1.weight, SimpleCNN(seed=4).conv1.weight)


@pytest.mark.parametrize("pool", ["avg", "max"])
def test_grad_cam_is_cam_over_positions(pool: str) -> None:
    """On GAP or GMP -> FC, each channel's gradient sums to w_ck: Grad-CAM == CAM / Z."""
    model = SimpleCNN(pool=pool, seed=0).eval()  # type: ignore[arg-type]
    x = torch.rand(2, 3, 64, 64)
    features = model.forward_features(x).detach().requires_grad_(True)
    scores = model.fc(model.flatten(model.gap(features)))
    target = 1
    (grad,) = torch.autograd.grad(scores[:, target].sum(), features)
    weight = model.fc.weight[target].detach()
    torch.testing.assert_close(grad.sum(dim=(2, 3)), weight.expand(2, -1))
    z = features.shape[-1] * features.shape[-2]
    cam = torch.relu(torch.einsum("k,bkij->bij", weight, features.detach()))
    grad_cam = torch.relu(torch.einsum("bk,bkij->bij", grad.mean(dim=(2, 3)), features.detach()))
    torch.testing.assert_close(grad_cam, cam / z, rtol=1e-5, atol=1e-7)
    if pool == "max":  # the gradient sits at one position per channel
        assert int((grad != 0).sum(dim=(2, 3)).max()) == 1


def test_gradient_of_score_is_fc_weight_over_positions() -> None:
    """On GAP -> FC, dy_c/dA_ij^k = w_ck / Z at every position: Grad-CAM == CAM / Z."""
    torch.manual_seed(0)
    model = SimpleCNN(seed=0).eval()
    x = torch.rand(2, 3, 64, 64)
    features = model.forward_features(x).detach().requires_grad_(True)
    scores = model.fc(model.flatten(model.gap(features)))
    target = 2
    (grad,) = torch.autograd.grad(scores[:, target].sum(), features)
    z = features.shape[-1] * features.shape[-2]
    expected = (model.fc.weight[target] / z)[None, :, None, None].expand_as(grad)
    # exact up to float32 rounding of the mean's 1/Z factor
    torch.testing.assert_close(grad, expected, rtol=1e-6, atol=1e-9)
    cam = torch.einsum("k,bkij->bij", model.fc.weight[target].detach(), features.detach())
    grad_cam = torch.einsum("bk,bkij->bij", grad.mean(dim=(2, 3)), features.detach())
    torch.testing.assert_close(grad_cam, cam / z, rtol=1e-5, atol=1e-7)


def test_pool_option() -> None:
    assert isinstance(SimpleCNN().gap, nn.AdaptiveAvgPool2d)
    model = SimpleCNN(pool="max", seed=0).eval()
    assert isinstance(model.gap, nn.AdaptiveMaxPool2d)
    x = torch.rand(2, 3, 64, 64)
    expected = model.forward_features(x).amax(dim=(2, 3)) @ model.fc.weight.T + model.fc.bias
    torch.testing.assert_close(model(x), expected)


def test_forward_equals_features_then_head() -> None:
    model = SimpleCNN(seed=1).eval()
    x = torch.rand(3, 3, 64, 64)
    features = model.forward_features(x)
    torch.testing.assert_close(
        model(x), features.mean(dim=(2, 3)) @ model.fc.weight.T + model.fc.bias
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_classes": 0}, "num_classes must be a positive int, got 0"),
        ({"in_channels": -1}, "in_channels must be a positive int"),
        ({"channels": (8, 16)}, "channels must give the widths of the 3 conv blocks"),
        ({"channels": (8, 0, 16)}, "c2 must be a positive int"),
        ({"pool": "sum"}, "pool must be 'avg' .* or 'max', got 'sum'"),
    ],
)
def test_simple_cnn_bad_sizes(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SimpleCNN(**kwargs)  # type: ignore[arg-type]


def test_tiny_conv_net_matches_the_course_example() -> None:
    model = TinyConvNet()
    seen: list[tuple[torch.Size, torch.Size]] = []

    def forward_hook(
        module: nn.Module, args: tuple[torch.Tensor, ...], output: torch.Tensor
    ) -> None:
        seen.append((args[0].shape, output.shape))

    handle = model.conv.register_forward_hook(forward_hook)
    try:
        out = model(torch.randn(1, 1, 4, 4))
    finally:
        handle.remove()
    assert out.shape == (1, 2)
    assert seen == [(torch.Size([1, 1, 4, 4]), torch.Size([1, 2, 4, 4]))]
    assert count_hooks(model) == {}


def test_tiny_conv_net_is_seeded_by_default() -> None:
    assert torch.equal(TinyConvNet().conv.weight, TinyConvNet().conv.weight)
    assert not torch.equal(TinyConvNet(seed=1).conv.weight, TinyConvNet().conv.weight)
    assert TinyConvNet(num_classes=3, input_size=5)(torch.randn(2, 1, 5, 5)).shape == (2, 3)


def test_tiny_conv_net_bad_size() -> None:
    with pytest.raises(ValueError, match="input_size must be a positive int"):
        TinyConvNet(input_size=0)
