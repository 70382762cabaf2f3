"""Behaviour of the CAM classes: API, hooks left behind, side effects, errors."""

from __future__ import annotations

import copy
import functools
from typing import Any

import pytest
import torch
from torch import nn

from hooks_tutorial import count_hooks
from hooks_tutorial.cam import (
    CAM,
    EigenCAM,
    GradCAM,
    GradCAMPlusPlus,
    GuidedBackprop,
    GuidedGradCAM,
    HiResCAM,
    LayerCAM,
    ScoreCAM,
    XGradCAM,
    token_reshape_transform,
)

GRADIENT_METHODS = [GradCAM, GradCAMPlusPlus, XGradCAM, LayerCAM, HiResCAM]
ALL_METHODS = [*GRADIENT_METHODS, ScoreCAM, EigenCAM]


# -- tiny models (kept here: tests/conftest.py belongs to another module) ----
class Net(nn.Module):
    """conv -> BN -> ReLU(inplace) -> conv ["features"] -> (in-place +1, ReLU) -> GAP -> fc.

    The target layer ``conv2`` is followed by two in-place operations, as
    in torchvision's ResNet blocks.
    """

    def __init__(self, inplace: bool = True, classes: int = 5) -> None:
        super().__init__()
        self.inplace = inplace
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=inplace)
        self.conv2 = nn.Conv2d(8, 12, 3, stride=2, padding=1)
        self.drop = nn.Dropout(0.5)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(12, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.bn(self.conv1(x)))
        out = self.conv2(out)
        if self.inplace:
            out += 0.1
            out = torch.relu_(out)
        else:
            out = torch.relu(out + 0.1)
        return self.fc(self.drop(self.pool(out).flatten(1)))


class DictNet(nn.Module):
    """Returns a dict, like many hub models."""

    def __init__(self) -> None:
        super().__init__()
        self.net = Net()

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"logits": self.net(x)}


class TinyViT(nn.Module):
    """Patch embedding -> [prefix tokens + 16 patches] -> 2 encoder blocks -> class token head."""

    def __init__(self, prefix: int = 1) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, 16, 4, stride=4)
        self.prefix = nn.Parameter(torch.randn(1, prefix, 16) * 0.1)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True) for _ in range(2)
        )
        self.norm = nn.LayerNorm(16)
        self.head = nn.Linear(16, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = self.patch(x).flatten(2).transpose(1, 2)
        t = torch.cat([self.prefix.expand(x.shape[0], -1, -1), t], dim=1)
        for block in self.blocks:
            t = block(t)
        return self.head(self.norm(t[:, 0]))


def make_net(**kwargs: Any) -> Net:
    torch.manual_seed(0)
    net = Net(**kwargs)
    with torch.no_grad():  # non-trivial BatchNorm statistics
        net.bn.running_mean.uniform_(-0.2, 0.2)
        net.bn.running_var.uniform_(0.5, 1.5)
    return net


@pytest.fixture
def net() -> Net:
    return make_net()


@pytest.fixture
def x() -> torch.Tensor:
    return torch.randn(3, 3, 16, 16, generator=torch.Generator().manual_seed(1))


def make_cam(method: type, model: nn.Module, layer: object = "conv2", **kwargs: Any) -> Any:
    if method is ScoreCAM:
        kwargs.setdefault("batch_size", 8)
    return method(model, layer, **kwargs)


# -- output ------------------------------------------------------------------
@pytest.mark.parametrize("method", ALL_METHODS)
def test_maps_shape_range_dtype_device(method: type, net: Net, x: torch.Tensor) -> None:
    maps = make_cam(method, net)(x)
    assert maps.shape == (3, 16, 16)
    assert maps.dtype == torch.float32
    assert maps.device == x.device
    assert not maps.requires_grad
    assert float(maps.min()) >= 0.0
    assert float(maps.max()) <= 1.0
    # min-max per image: each non-constant map reaches exactly 0 and 1
    flat = maps.flatten(1)
    nonconstant = flat.amax(1) > 0
    assert torch.equal(flat.amin(1)[nonconstant], torch.zeros(int(nonconstant.sum())))
    assert torch.equal(flat.amax(1)[nonconstant], torch.ones(int(nonconstant.sum())))


@pytest.mark.parametrize("method", ALL_METHODS)
def test_raw_map_is_at_feature_resolution(method: type, net: Net, x: torch.Tensor) -> None:
    raw = make_cam(method, net)(x, raw=True)
    assert raw.shape == (3, 8, 8)  # conv2 has stride 2


def test_normalised_map_is_upsampled_normalised_raw_map(net: Net, x: torch.Tensor) -> None:
    cam = GradCAM(net, "conv2")
    raw = cam(x, 2, raw=True)
    up = nn.functional.interpolate(raw[:, None], size=(16, 16), mode="bilinear")[:, 0]
    lo = up.flatten(1).amin(1)[:, None, None]
    hi = up.flatten(1).amax(1)[:, None, None]
    torch.testing.assert_close(cam(x, 2), (up - lo) / (hi - lo), rtol=0, atol=1e-6)


def test_all_zero_map_stays_zero_without_nan() -> None:
    # The features are all zero (ReLU of a large negative bias): the map is 0 / 0.
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 2))
    with torch.no_grad():
        model[0].bias.fill_(-100.0)
    maps = GradCAM(model, "1")(torch.rand(2, 3, 8, 8))
    assert torch.equal(maps, torch.zeros(2, 8, 8))


def test_float64_model_gives_float64_maps(net: Net, x: torch.Tensor) -> None:
    maps = GradCAM(net.double(), "conv2")(x.double())
    assert maps.dtype == torch.float64


# -- targets -----------------------------------------------------------------
def test_target_forms_agree(net: Net, x: torch.Tensor) -> None:
    cam = GradCAM(net, "conv2")
    top1 = net.eval()(x).argmax(1)
    by_none = cam(x)
    torch.testing.assert_close(cam(x, top1), by_none, rtol=0, atol=0)
    torch.testing.assert_close(cam(x, top1.tolist()), by_none, rtol=0, atol=0)
    torch.testing.assert_close(cam(x, tuple(top1.tolist())), by_none, rtol=0, atol=0)
    by_callable = cam(x, lambda out: out.gather(1, top1[:, None]).squeeze(1))
    torch.testing.assert_close(by_callable, by_none, rtol=0, atol=0)
    one_class = cam(x, 4)
    torch.testing.assert_close(one_class, cam(x, [4, 4, 4]), rtol=0, atol=0)
    torch.testing.assert_close(one_class, cam(x, torch.tensor(4)), rtol=0, atol=0)


def test_different_classes_give_different_maps(net: Net, x: torch.Tensor) -> None:
    cam = GradCAM(net, "conv2")
    assert not torch.allclose(cam(x, 0, raw=True), cam(x, 1, raw=True))


def test_callable_target_on_dict_output() -> None:
    torch.manual_seed(0)
    model = DictNet()
    x = torch.randn(2, 3, 16, 16)
    maps = GradCAM(model, "net.conv2")(x, lambda out: out["logits"][:, 1])
    expected = GradCAM(model.net, "conv2")(x, 1)
    torch.testing.assert_close(maps, expected, rtol=0, atol=0)


# -- hooks and side effects --------------------------------------------------
@pytest.mark.parametrize("method", ALL_METHODS)
def test_model_state_is_untouched(method: type, net: Net, x: torch.Tensor) -> None:
    net.train()
    net.drop.eval()  # mixed flags must come back exactly
    state = copy.deepcopy(net.state_dict())
    net.fc.weight.grad = torch.full_like(net.fc.weight, 7.0)
    make_cam(method, net)(x)
    assert net.training
    assert net.bn.training
    assert not net.drop.training
    assert net.conv1.weight.grad is None
    assert torch.equal(net.fc.weight.grad, torch.full_like(net.fc.weight, 7.0))
    for key, value in net.state_dict().items():  # includes BatchNorm running stats
        assert torch.equal(value, state[key]), key


def test_runs_in_eval_mode(net: Net, x: torch.Tensor) -> None:
    # Dropout(0.5) in train mode would make two calls differ; in eval they agree.
    net.train()
    cam = GradCAM(net, "conv2")
    torch.testing.assert_close(cam(x, 1), cam(x, 1), rtol=0, atol=0)


def test_parameters_grad_stay_none(net: Net, x: torch.Tensor) -> None:
    GradCAM(net, "conv2")(x)
    GuidedGradCAM(net, "conv2")(x)
    assert all(p.grad is None for p in net.parameters())


# -- in-place operations, grad modes ------------------------------------------
@pytest.mark.parametrize("method", GRADIENT_METHODS)
def test_in_place_ops_after_target_layer(method: type, x: torch.Tensor) -> None:
    # Same weights, one model with in-place ops after conv2 and one without:
    # exact same maps (the captured output is protected from the in-place ops).
    inplace, plain = make_net(inplace=True), make_net(inplace=False)
    plain.load_state_dict(inplace.state_dict())
    got = method(inplace, "conv2")(x, raw=True)
    expected = method(plain, "conv2")(x, raw=True)
    torch.testing.assert_close(got, expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("method", ALL_METHODS)
def test_works_inside_no_grad(method: type, net: Net, x: torch.Tensor) -> None:
    expected = make_cam(method, net)(x)
    with torch.no_grad():
        got = make_cam(method, net)(x)
    torch.testing.assert_close(got, expected, rtol=0, atol=0)


@pytest.mark.parametrize("method", [*GRADIENT_METHODS, GuidedBackprop])
def test_inference_mode_raises_clear_error(method: type, net: Net, x: torch.Tensor) -> None:
    cam = method(net) if method is GuidedBackprop else method(net, "conv2")
    with torch.inference_mode(), pytest.raises(RuntimeError, match=r"inference_mode\(\)"):
        cam(x)
    assert count_hooks(net) == {}


@pytest.mark.parametrize("method", [ScoreCAM, EigenCAM, CAM])
def test_gradient_free_methods_work_in_inference_mode(
    method: type, net: Net, x: torch.Tensor
) -> None:
    cam = CAM(net, "conv2", "fc") if method is CAM else make_cam(method, net)
    expected = cam(x)
    with torch.inference_mode():
        got = cam(x)
    torch.testing.assert_close(got, expected, rtol=0, atol=0)


def test_inference_tensor_input_outside_inference_mode(net: Net) -> None:
    with torch.inference_mode():
        x = torch.randn(2, 3, 16, 16)
    assert x.is_inference()
    assert GradCAM(net, "conv2")(x).shape == (2, 16, 16)


def test_frozen_model(net: Net, x: torch.Tensor) -> None:
    expected = GradCAM(net, "conv2")(x, raw=True)
    for p in net.parameters():
        p.requires_grad_(False)
    got = GradCAM(net, "conv2")(x, raw=True)
    torch.testing.assert_close(got, expected, rtol=0, atol=0)


# -- batches and layers --------------------------------------------------------
@pytest.mark.parametrize("method", ALL_METHODS)
def test_batch_consistency(method: type, net: Net, x: torch.Tensor) -> None:
    cam = make_cam(method, net)
    batch = cam(x, [0, 1, 2], raw=True)
    for i in range(3):
        alone = cam(x[i : i + 1], [i], raw=True)
        # Tolerance: convolution kernels may sum in another order for another batch size.
        torch.testing.assert_close(alone[0], batch[i], rtol=1e-4, atol=1e-6)


def test_layer_given_as_module_name_or_list(net: Net, x: torch.Tensor) -> None:
    by_name = GradCAM(net, "conv2")(x)
    torch.testing.assert_close(GradCAM(net, net.conv2)(x), by_name, rtol=0, atol=0)
    torch.testing.assert_close(GradCAM(net, ["conv2"])(x), by_name, rtol=0, atol=0)


def test_several_layers_are_averaged(net: Net, x: torch.Tensor) -> None:
    both = LayerCAM(net, ["relu", "conv2"])(x, 1)
    a = LayerCAM(net, "relu")(x, 1)
    b = LayerCAM(net, "conv2")(x, 1)
    mean = (a + b) / 2
    lo = mean.flatten(1).amin(1)[:, None, None]
    hi = mean.flatten(1).amax(1)[:, None, None]
    torch.testing.assert_close(both, (mean - lo) / (hi - lo), rtol=0, atol=1e-6)
    raw = LayerCAM(net, ["relu", "conv2"])(x, 1, raw=True)
    assert raw.shape == (3, 16, 16)  # the finer of the two grids


def test_layer_called_twice_warns(x: torch.Tensor) -> None:
    relu = nn.ReLU()
    model = nn.Sequential(nn.Conv2d(3, 4, 3), relu, nn.Conv2d(4, 4, 3), relu, nn.Flatten())
    model.append(nn.Linear(4 * 12 * 12, 2))
    with pytest.warns(UserWarning, match=r"ran 2 times in one forward pass; the map uses its last"):
        maps = GradCAM(model, "1")(x, raw=True)
    assert maps.shape == (3, 12, 12)  # the last call's grid
    assert count_hooks(model) == {}


# -- transformers --------------------------------------------------------------
def test_token_reshape_transform_grids() -> None:
    t = torch.arange(2 * 17 * 3, dtype=torch.float32).reshape(2, 17, 3)
    out = token_reshape_transform(t)
    assert out.shape == (2, 3, 4, 4)
    assert torch.equal(out[1, 2, 0, 1], t[1, 2, 2])  # token 1 + (0 * 4 + 1), channel 2
    assert token_reshape_transform(torch.zeros(1, 16, 3)).shape == (1, 3, 4, 4)
    assert token_reshape_transform(torch.zeros(1, 21, 3), prefix_tokens=5).shape == (1, 3, 4, 4)
    assert token_reshape_transform(torch.zeros(1, 7, 3), grid=(2, 3)).shape == (1, 3, 2, 3)


def test_token_reshape_transform_errors() -> None:
    with pytest.raises(
        ValueError, match=r"cannot arrange 21 tokens in a square grid.*prefix_tokens"
    ):
        token_reshape_transform(torch.zeros(1, 21, 3))
    with pytest.raises(ValueError, match=r"leaves 18, which is not a square number"):
        token_reshape_transform(torch.zeros(1, 21, 3), prefix_tokens=3)
    with pytest.raises(ValueError, match=r"do not fit a grid of 4 x 4"):
        token_reshape_transform(torch.zeros(1, 21, 3), grid=(4, 4), prefix_tokens=1)
    with pytest.raises(ValueError, match=r"expected tokens \[B, N, C\]"):
        token_reshape_transform(torch.zeros(1, 3, 4, 4))


@pytest.mark.parametrize("prefix", [1, 5])
def test_transformer_tokens(prefix: int) -> None:
    torch.manual_seed(0)
    model = TinyViT(prefix)
    x = torch.randn(2, 3, 16, 16)
    transform = functools.partial(token_reshape_transform, prefix_tokens=prefix)
    for method in ALL_METHODS:
        maps = make_cam(method, model, "blocks.0", reshape_transform=transform)(x)
        assert maps.shape == (2, 16, 16)
        assert bool(torch.isfinite(maps).all())
    assert count_hooks(model) == {}


def test_transformer_gradcam_matches_manual_computation() -> None:
    torch.manual_seed(0)
    model = TinyViT(1).double().eval()
    x = torch.randn(2, 3, 16, 16, dtype=torch.float64)
    got = GradCAM(model, "blocks.0", reshape_transform=token_reshape_transform)(x, 2, raw=True)
    t = model.patch(x).flatten(2).transpose(1, 2)
    t = torch.cat([model.prefix.expand(2, -1, -1), t], dim=1)
    a = model.blocks[0](t)
    y = model.head(model.norm(model.blocks[1](a)[:, 0]))[:, 2].sum()
    (g,) = torch.autograd.grad(y, a)
    a4 = a[:, 1:].reshape(2, 4, 4, 16).permute(0, 3, 1, 2)
    g4 = g[:, 1:].reshape(2, 4, 4, 16).permute(0, 3, 1, 2)
    expected = (g4.mean((2, 3))[:, :, None, None] * a4).sum(1).clamp(min=0)
    torch.testing.assert_close(got, expected.detach(), rtol=1e-10, atol=1e-12)


def test_tokens_without_reshape_transform_explain_what_to_do() -> None:
    model = TinyViT()
    with pytest.raises(
        ValueError, match=r"has shape \(2, 17, 16\) \(3-D\).*token_reshape_transform"
    ):
        GradCAM(model, "blocks.0")(torch.randn(2, 3, 16, 16))
    assert count_hooks(model) == {}


def test_reshape_transform_with_wrong_output() -> None:
    model = TinyViT()
    with pytest.raises(ValueError, match=r"reshape_transform turned the output"):
        GradCAM(model, "blocks.0", reshape_transform=lambda t: t)(torch.randn(2, 3, 16, 16))
    with pytest.raises(TypeError, match="reshape_transform must be a callable"):
        GradCAM(model, "blocks.0", reshape_transform=3)  # type: ignore[arg-type]


# -- bad input: clear errors and no hook left behind ------------------------------
def test_single_image_without_batch_dimension(net: Net) -> None:
    with pytest.raises(ValueError, match=r"add a batch dimension with x.unsqueeze\(0\)"):
        GradCAM(net, "conv2")(torch.randn(3, 16, 16))
    with pytest.raises(ValueError, match=r"\[B, C, H, W\] \(4-D\)"):
        GradCAM(net, "conv2")(torch.randn(1, 1, 3, 16, 16))
    with pytest.raises(TypeError, match=r"expected the input as a torch\.Tensor"):
        GradCAM(net, "conv2")([[1.0]])  # type: ignore[arg-type]


@pytest.mark.parametrize("method", [m for m in ALL_METHODS if m is not EigenCAM])
def test_target_out_of_range(method: type, net: Net, x: torch.Tensor) -> None:
    with pytest.raises(
        IndexError, match=r"target class 5 is out of range .* 5 outputs; use a class index in 0..4"
    ):
        make_cam(method, net)(x, 5)
    with pytest.raises(IndexError, match="target class -1"):
        make_cam(method, net)(x, [0, -1, 2])
    assert count_hooks(net) == {}


def test_wrong_target_types_and_lengths(net: Net, x: torch.Tensor) -> None:
    cam = GradCAM(net, "conv2")
    with pytest.raises(ValueError, match=r"got 2 target indices .* batch of 3 image"):
        cam(x, [0, 1])
    with pytest.raises(TypeError, match="must be integers"):
        cam(x, torch.tensor([0.0, 1.0, 2.0]))
    with pytest.raises(TypeError, match="not a bool"):
        cam(x, True)
    with pytest.raises(TypeError, match="string"):
        cam(x, "cat")  # type: ignore[arg-type]
    assert count_hooks(net) == {}


@pytest.mark.parametrize("method", [m for m in ALL_METHODS if m is not EigenCAM])
def test_callable_target_with_wrong_shape(method: type, net: Net, x: torch.Tensor) -> None:
    with pytest.raises(
        ValueError,
        match=r"returned a tensor of shape \(3, 5\); it must return one score per image, shape \(3,\)",
    ):
        make_cam(method, net)(x, lambda out: out)
    with pytest.raises(TypeError, match="the target callable returned a float"):
        make_cam(method, net)(x, lambda out: 1.0)
    assert count_hooks(net) == {}


def test_output_not_a_tensor_without_callable_target(x: torch.Tensor) -> None:
    model = DictNet()
    with pytest.raises(
        TypeError, match=r"the model returned a dict.*callable target.*out\['logits'\]"
    ):
        GradCAM(model, "net.conv2")(x)
    with pytest.raises(ValueError, match=r"\[B, classes\]"):
        GradCAM(nn.Sequential(nn.Conv2d(3, 2, 3), nn.ReLU()), "0")(x)
    assert count_hooks(model) == {}


def test_layer_not_4d_without_reshape_transform(net: Net, x: torch.Tensor) -> None:
    with pytest.raises(
        ValueError,
        match=r"the output of layer 'fc' has shape \(3, 5\) \(2-D\); CAM methods need a feature map",
    ):
        GradCAM(net, "fc")(x)
    assert count_hooks(net) == {}


def test_layer_not_reached_in_forward(x: torch.Tensor) -> None:
    model = make_net()
    model.unused = nn.Conv2d(3, 3, 1)
    for method in ALL_METHODS:
        with pytest.raises(
            RuntimeError, match=r"the target layer 'unused' did not run during the forward pass"
        ):
            make_cam(method, model, "unused")(x)
    assert count_hooks(model) == {}


def test_unknown_layer_name(net: Net) -> None:
    with pytest.raises(ValueError, match=r"no submodule named 'conv3'; did you mean 'conv2'"):
        GradCAM(net, "conv3")


def test_layer_with_tuple_output(x: torch.Tensor) -> None:
    class Pair(nn.Module):
        def forward(self, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return t, t

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.pair = Pair()
            self.head = nn.Sequential(nn.Flatten(), nn.Linear(3 * 16 * 16, 2))

        def forward(self, t: torch.Tensor) -> torch.Tensor:
            return self.head(self.pair(t)[0])

    model = Model()
    with pytest.raises(
        TypeError,
        match=r"the target layer 'pair' returned a tuple, not a tensor; pass a reshape_transform"
        r".*reshape_transform=lambda out: out\[0\] \(2 items\)",
    ):
        GradCAM(model, "pair")(x)
    assert count_hooks(model) == {}


def test_score_not_depending_on_layer(x: torch.Tensor) -> None:
    class Branch(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.side = nn.Conv2d(3, 2, 3)
            self.main = nn.Sequential(nn.Flatten(), nn.Linear(3 * 16 * 16, 2))

        def forward(self, t: torch.Tensor) -> torch.Tensor:
            self.side(t)
            return self.main(t)

    model = Branch()
    with pytest.raises(RuntimeError, match=r"does not depend on the output of layer 'side'"):
        GradCAM(model, "side")(x)
    assert count_hooks(model) == {}


@pytest.mark.parametrize("method", ALL_METHODS)
def test_nan_in_activations(method: type, net: Net, x: torch.Tensor) -> None:
    bad = x.clone()
    bad[0, 0, 0, 0] = float("nan")
    with pytest.raises(
        FloatingPointError, match=r"activations of layer 'conv2' contain .* non-finite"
    ):
        make_cam(method, net)(bad)
    assert count_hooks(net) == {}


def test_nan_in_gradients(x: torch.Tensor) -> None:
    class NaNGrad(torch.autograd.Function):
        @staticmethod
        def forward(ctx: object, t: torch.Tensor) -> torch.Tensor:
            return t.clone()

        @staticmethod
        def backward(ctx: object, grad: torch.Tensor) -> torch.Tensor:
            return grad * float("nan")

    class Model(Net):
        def forward(self, t: torch.Tensor) -> torch.Tensor:
            out = self.conv2(self.relu(self.bn(self.conv1(t))))
            return self.fc(self.pool(NaNGrad.apply(out)).flatten(1))

    model = Model()
    with pytest.raises(FloatingPointError, match=r"gradients at layer 'conv2' contain"):
        GradCAM(model, "conv2")(x)
    assert count_hooks(model) == {}


# -- method-specific behaviour -------------------------------------------------------
def test_scorecam_batch_size_does_not_change_the_map(net: Net, x: torch.Tensor) -> None:
    maps = [ScoreCAM(net, "conv2", batch_size=b)(x, 3, raw=True) for b in (1, 7, 1000)]
    torch.testing.assert_close(maps[0], maps[1], rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(maps[0], maps[2], rtol=1e-5, atol=1e-7)


def test_scorecam_top_k(net: Net, x: torch.Tensor) -> None:
    exact = ScoreCAM(net, "conv2")(x, raw=True)
    all_channels = ScoreCAM(net, "conv2", top_k=12)(x, raw=True)
    torch.testing.assert_close(all_channels, exact, rtol=0, atol=0)
    budget = ScoreCAM(net, "conv2", top_k=3)(x, raw=True)
    assert budget.shape == exact.shape
    assert not torch.equal(budget, exact)  # 3 of 12 channels: another map


def test_scorecam_rejects_bad_settings(net: Net) -> None:
    with pytest.raises(ValueError, match="batch_size must be a positive int, got 0"):
        ScoreCAM(net, "conv2", batch_size=0)
    with pytest.raises(ValueError, match="top_k must be None or a positive int"):
        ScoreCAM(net, "conv2", top_k=-1)


def test_scorecam_callable_target(net: Net, x: torch.Tensor) -> None:
    maps = ScoreCAM(net, "conv2")(x, lambda out: out.softmax(1)[:, 2])
    torch.testing.assert_close(maps, ScoreCAM(net, "conv2")(x, 2), rtol=1e-5, atol=1e-6)


def test_eigencam_ignores_target_and_accepts_any_output(x: torch.Tensor) -> None:
    model = DictNet()
    maps = EigenCAM(model, "net.conv2")(x)
    torch.testing.assert_close(EigenCAM(model, "net.conv2")(x, 3), maps, rtol=0, atol=0)


def test_cam_requires_linear_layer_and_index(net: Net, x: torch.Tensor) -> None:
    with pytest.raises(TypeError, match="has no 2-D weight"):
        CAM(net, "conv2", "pool")
    with pytest.raises(TypeError, match="not lists"):
        CAM(net, ["conv2"], "fc")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="CAM needs a class index"):
        CAM(net, "conv2", "fc")(x, lambda out: out[:, 0])
    with pytest.raises(ValueError, match="takes 12 features but the target layer 'conv1' has 8"):
        CAM(net, "conv1", "fc")(x)


def test_guided_backprop_shapes_and_errors(net: Net, x: torch.Tensor) -> None:
    saliency = GuidedBackprop(net)(x, 1)
    assert saliency.shape == x.shape
    assert GuidedGradCAM(net, "conv2")(x, 1).shape == x.shape
    with pytest.raises(ValueError, match=r"has no nn\.ReLU module"):
        GuidedBackprop(nn.Sequential(nn.Conv2d(3, 3, 1), nn.GELU()))
    assert repr(GradCAM(net, "conv2")) == "GradCAM(target_layer='conv2')"


GUIDED_NO_INPUT = (
    "the score does not depend on the input; cannot backpropagate to it; check that the "
    "model's forward does not detach its output or run under torch.no_grad(), and that "
    "a callable target returns a score computed from the output"
)


class DetachedOutput(nn.Module):
    """A ReLU network whose forward detaches its output (the mistake to catch)."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 14 * 14, 2)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x).detach()


def test_guided_backprop_score_without_input_says_what_to_check(net: Net, x: torch.Tensor) -> None:
    model = DetachedOutput()
    with pytest.raises(RuntimeError) as info:
        GuidedBackprop(model)(x)
    assert str(info.value) == GUIDED_NO_INPUT
    assert count_hooks(model) == {}
    constant = torch.ones(x.shape[0])  # a callable target that ignores the output
    with pytest.raises(RuntimeError) as info:
        GuidedBackprop(net)(x, lambda out: constant)
    assert str(info.value) == GUIDED_NO_INPUT
    assert count_hooks(net) == {}


def test_guided_gradcam_is_product(net: Net, x: torch.Tensor) -> None:
    guided = GuidedBackprop(net)(x)
    cam = GradCAM(net, "conv2")(x)
    got = GuidedGradCAM(net, "conv2")(x)
    torch.testing.assert_close(got, guided * cam[:, None], rtol=0, atol=0)


def test_guided_backprop_leaves_inplace_flags(net: Net, x: torch.Tensor) -> None:
    GuidedBackprop(net)(x)
    assert net.relu.inplace
