"""scale_gradients, clip_gradients and detect_anomalies."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from hooks_tutorial.gradtools import (
    AnomalyError,
    clip_gradients,
    detect_anomalies,
    scale_gradients,
)
from hooks_tutorial.hooks import HookCounts, HookGroup, count_hooks

# Gradients here are small sums of products of small floats: float32 rounding
# stays far below 1e-6 relative.
TOL = {"rtol": 1e-6, "atol": 1e-7}


def grads_of(model: nn.Module, x: torch.Tensor) -> list[torch.Tensor]:
    """Reference gradients of ``model(x).sum()`` computed without hooks."""
    return list(torch.autograd.grad(model(x).sum(), list(model.parameters())))


@pytest.fixture
def line() -> nn.Linear:
    """y = w . x with w = [1, 1]; the gradient for x = [3, 4] is [3, 4]."""
    model = nn.Linear(2, 1, bias=False)
    with torch.no_grad():
        model.weight.fill_(1.0)
    return model


X34 = torch.tensor([[3.0, 4.0]])


# -- scale_gradients -------------------------------------------------------------


def test_scale_whole_model(mlp):
    x = torch.randn(3, 4)
    expected = grads_of(mlp, x)
    with scale_gradients(mlp, 0.25) as hooks:
        assert isinstance(hooks, HookGroup)
        assert len(hooks) == 4
        assert count_hooks(mlp)["0"] == HookCounts(0, 0, 0, 0, params=2)
        mlp(x).sum().backward()
    for p, g in zip(mlp.parameters(), expected, strict=True):
        torch.testing.assert_close(p.grad, 0.25 * g, **TOL)
    assert count_hooks(mlp) == {}


def test_scale_chosen_layers_only(mlp):
    x = torch.randn(3, 4)
    expected = grads_of(mlp, x)
    with scale_gradients(mlp, -2.0, layers=["2"]):
        mlp(x).sum().backward()
    torch.testing.assert_close(mlp[0].weight.grad, expected[0], **TOL)
    torch.testing.assert_close(mlp[2].weight.grad, -2.0 * expected[2], **TOL)
    torch.testing.assert_close(mlp[2].bias.grad, -2.0 * expected[3], **TOL)


def test_scale_parameter_list_and_accumulation(line):
    with scale_gradients(line.parameters(), 0.5):
        line(X34).sum().backward()
        line(X34).sum().backward()
    # each backward's contribution is scaled once: 0.5 * ([3, 4] + [3, 4])
    torch.testing.assert_close(line.weight.grad, torch.tensor([[3.0, 4.0]]))
    line(X34).sum().backward()  # hooks gone: unscaled
    torch.testing.assert_close(line.weight.grad, torch.tensor([[6.0, 8.0]]))


def test_scale_a_single_intermediate_tensor():
    x = torch.tensor(2.0, requires_grad=True)
    y = x**2
    with scale_gradients(y, 0.5):
        (y**3).backward()
    # dz/dy = 3 y^2 = 48, halved to 24; dy/dx = 4
    assert x.grad == pytest.approx(96.0)


def test_scale_argument_errors(mlp):
    with pytest.raises(TypeError, match="factor must be a number, got str"):
        scale_gradients(mlp, "0.5")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="factor must be a number, got bool"):
        scale_gradients(mlp, True)
    with pytest.raises(ValueError, match="factor must be finite"):
        scale_gradients(mlp, math.nan)
    with pytest.raises(TypeError, match=r"layers=\['layer4'\]"):
        scale_gradients("layer4", 0.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="item 1 is a str, not a tensor"):
        scale_gradients([mlp[0].weight, "2"], 0.5)  # type: ignore[list-item]
    with pytest.raises(ValueError, match=r"tensor 0 .* does not require grad"):
        scale_gradients([torch.zeros(2)], 0.5)
    with pytest.raises(ValueError, match="no parameters given"):
        scale_gradients([], 0.5)
    with pytest.raises(TypeError, match="layers= only works when the first argument is the model"):
        scale_gradients(mlp.parameters(), 0.5, layers="0")
    with pytest.raises(ValueError, match="no submodule named 'fc'"):
        scale_gradients(mlp, 0.5, layers="fc")
    mlp.requires_grad_(False)
    with pytest.raises(ValueError, match="no parameter of Sequential requires grad"):
        scale_gradients(mlp, 0.5)
    assert count_hooks(mlp) == {}


def test_scale_skips_frozen_parameters(mlp):
    mlp[0].requires_grad_(False)
    with scale_gradients(mlp, 3.0) as hooks:
        assert len(hooks) == 2
    assert count_hooks(mlp) == {}


def test_scale_hooks_removed_on_exception(mlp):
    def run() -> None:
        with scale_gradients(mlp, 2.0):
            msg = "in the body"
            raise RuntimeError(msg)

    with pytest.raises(RuntimeError, match="in the body"):
        run()
    assert count_hooks(mlp) == {}


# -- clip_gradients --------------------------------------------------------------


def test_clip_by_norm(line):
    with clip_gradients(line, max_norm=1.0):
        line(X34).sum().backward()
    torch.testing.assert_close(line.weight.grad, torch.tensor([[0.6, 0.8]]), **TOL)
    assert count_hooks(line) == {}


def test_clip_by_value_and_both(line):
    with clip_gradients(line, max_value=3.5):
        line(X34).sum().backward()
    torch.testing.assert_close(line.weight.grad, torch.tensor([[3.0, 3.5]]))
    line.weight.grad = None
    with clip_gradients(line, max_value=3.0, max_norm=1.0):
        line(X34).sum().backward()
    s = 1 / math.sqrt(2)
    torch.testing.assert_close(line.weight.grad, torch.tensor([[s, s]]), **TOL)


def test_clip_max_norm_inf(line):
    with clip_gradients(line, max_norm=2.0, norm_type=math.inf):
        line(X34).sum().backward()
    torch.testing.assert_close(line.weight.grad, torch.tensor([[1.5, 2.0]]), **TOL)


def test_clip_matches_clip_grad_norm_per_parameter(mlp):
    x = torch.randn(5, 4) * 10
    expected = grads_of(mlp, x)
    with clip_gradients(mlp, max_norm=0.5):
        mlp(x).sum().backward()
    for p, g in zip(mlp.parameters(), expected, strict=True):
        ref = nn.Parameter(torch.zeros_like(g))
        ref.grad = g.clone()
        torch.nn.utils.clip_grad_norm_([ref], 0.5)
        torch.testing.assert_close(p.grad, ref.grad, **TOL)


def test_clip_bounds_the_accumulated_gradient(line):
    with clip_gradients(line, max_norm=1.0):
        line(X34).sum().backward()
        line(X34).sum().backward()
    assert float(line.weight.grad.norm()) == pytest.approx(1.0, rel=1e-5)


def test_clip_argument_errors(mlp):
    with pytest.raises(ValueError, match="give max_norm, max_value or both"):
        clip_gradients(mlp)
    with pytest.raises(ValueError, match="max_norm must be a finite positive number, got -1"):
        clip_gradients(mlp, max_norm=-1)
    with pytest.raises(ValueError, match="max_value must be a finite positive number"):
        clip_gradients(mlp, max_value=math.inf)
    with pytest.raises(TypeError, match="max_norm must be a number"):
        clip_gradients(mlp, max_norm="1")  # type: ignore[arg-type]
    y = mlp[0].weight * 2
    with pytest.raises(ValueError, match=r"not a leaf tensor, so it has no \.grad"):
        clip_gradients([mlp[0].weight, y], max_norm=1.0)
    assert count_hooks(mlp) == {}


# -- detect_anomalies --------------------------------------------------------------


class Log(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(x)


class Sqrt(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sqrt(x)


class HiddenNaNGrad(nn.Module):
    """Forward is x (w = 0 adds 0); the gradient of w is 0 * inf = NaN."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.zeros(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + 0 * self.w.sqrt()


def test_forward_anomaly_names_the_module():
    model = nn.Sequential(nn.Identity(), Log(), nn.Identity())
    with pytest.raises(AnomalyError) as info, detect_anomalies(model):
        model(torch.tensor([1.0, 0.0, -1.0, -2.0]))
    err = info.value
    assert isinstance(err, RuntimeError)
    assert (err.module, err.phase, err.what, err.nan, err.inf, err.numel) == (
        "1",
        "forward",
        "output",
        2,
        1,
        4,
    )
    assert str(err) == (
        "forward pass: the output of module '1' has 2 NaN and 1 Inf values (of 4); "
        "its inputs were finite, so Log created them in its forward"
    )
    assert count_hooks(model) == {}


def test_bad_model_input():
    model = nn.Sequential(nn.Linear(2, 2))
    with (
        pytest.raises(AnomalyError, match=r"input of module \(the model itself\) has 1 NaN"),
        detect_anomalies(model),
    ):
        model(torch.tensor([[math.nan, 1.0]]))


def test_bad_input_from_a_parents_own_code():
    class Parent(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(2, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(x / 0)

    model = nn.Sequential(Parent())
    with (
        pytest.raises(AnomalyError, match=r"input of module '0.fc'.*forward code of '0'"),
        detect_anomalies(model),
    ):
        model(torch.ones(1, 2))


def test_backward_anomaly_names_module_and_its_user():
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU(inplace=True), Sqrt(), nn.Linear(3, 1))
    with torch.no_grad():
        model[0].weight.fill_(1.0)
        model[0].bias.fill_(-100.0)  # ReLU output all 0, d sqrt(0) = inf
    with pytest.raises(AnomalyError) as info, detect_anomalies(model):
        model(torch.ones(2, 3)).sum().backward()
    err = info.value
    assert (err.module, err.phase, err.what, err.nan, err.inf) == (
        "1",
        "backward",
        "gradient of the output",
        0,
        6,
    )
    assert "computed by the backward of the module(s) using this output: '2'" in str(err)
    assert count_hooks(model) == {}


def test_backward_anomaly_from_the_loss():
    model = nn.Sequential(nn.Linear(2, 2))
    with (
        pytest.raises(AnomalyError, match=r"module '0' has 2 NaN.*outside the model's modules"),
        detect_anomalies(model),
    ):
        (model(torch.ones(1, 2)).sum() * math.nan).backward()


def test_backward_anomaly_in_a_parameter_gradient():
    model = nn.Sequential(nn.Linear(2, 2), HiddenNaNGrad())
    with pytest.raises(AnomalyError) as info, detect_anomalies(model):
        model(torch.ones(1, 2)).sum().backward()
    assert info.value.module == "1"
    assert info.value.what == "gradient of parameter '1.w'"
    assert info.value.nan == 1


def test_no_anomaly_means_no_error_and_no_hooks(tiny_cnn, image):
    with detect_anomalies(tiny_cnn):
        out = tiny_cnn(image)
        out.sum().backward()
    assert out._backward_hooks == {}
    assert count_hooks(tiny_cnn) == {}


def test_detects_in_resnet18(resnet18):
    with torch.no_grad():
        resnet18.layer3[0].conv2.weight[0, 0, 0, 0] = math.inf
    with (
        pytest.raises(AnomalyError, match=r"forward pass: the output of module 'layer3.0.conv2'"),
        detect_anomalies(resnet18),
    ):
        resnet18(torch.randn(1, 3, 64, 64))
    assert count_hooks(resnet18) == {}


def test_detect_anomalies_needs_a_module():
    with (
        pytest.raises(TypeError, match="with detect_anomalies"),
        detect_anomalies(
            [nn.Linear(1, 1)]  # type: ignore[arg-type]
        ),
    ):
        pass  # pragma: no cover
