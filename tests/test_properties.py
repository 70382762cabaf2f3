"""Property-based tests over small random Sequential CNNs (hypothesis)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from hooks_tutorial.capture import capture_activations, capture_gradients
from hooks_tutorial.gradtools import clip_gradients, detect_anomalies, scale_gradients
from hooks_tutorial.hooks import count_hooks
from hooks_tutorial.tracing import trace

SETTINGS = settings(max_examples=25, deadline=None)
# Hooked and reference passes run the same kernels on the same values, so they
# agree to float32 rounding; 1e-5 leaves room for a different reduction order.
TOL = {"rtol": 1e-5, "atol": 1e-6}


class Tripwire(nn.Module):
    """Identity that raises in the forward or the backward pass when armed."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = ""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.armed == "forward":
            msg = "tripwire in forward"
            raise ArithmeticError(msg)
        if self.armed == "backward":
            return _RaiseInBackward.apply(x)  # type: ignore[no-any-return]
        return x


class _RaiseInBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        msg = "tripwire in backward"
        raise ArithmeticError(msg)


LAYER = st.one_of(
    st.tuples(st.just("conv"), st.integers(1, 4), st.sampled_from([1, 3])),
    st.tuples(st.just("relu"), st.booleans()),
    st.tuples(st.just("bn")),
    st.tuples(st.just("pool")),
    st.tuples(st.just("tanh")),
)


@st.composite
def networks(draw: st.DrawFn) -> tuple[nn.Sequential, torch.Tensor]:
    specs = draw(st.lists(LAYER, min_size=1, max_size=6))
    seed = draw(st.integers(0, 2**16))
    torch.manual_seed(seed)
    channels = draw(st.integers(1, 3))
    size = draw(st.integers(4, 8))
    layers: list[nn.Module] = []
    c = channels
    for spec in specs:
        if spec[0] == "conv":
            layers.append(nn.Conv2d(c, spec[1], spec[2], padding=spec[2] // 2))
            c = spec[1]
        elif spec[0] == "relu":
            # In-place only where PyTorch allows it: not on a value that the previous
            # op saved for its backward (ReLU and Tanh save their output).
            inplace = spec[1] and not (layers and isinstance(layers[-1], (nn.ReLU, nn.Tanh)))
            layers.append(nn.ReLU(inplace=inplace))
        elif spec[0] == "bn":
            bn = nn.BatchNorm2d(c)
            with torch.no_grad():
                bn.running_mean.normal_()
                bn.running_var.uniform_(0.5, 2.0)
                bn.weight.normal_()
            layers.append(bn)
        elif spec[0] == "pool":
            layers.append(nn.MaxPool2d(2, ceil_mode=True))
        else:
            layers.append(nn.Tanh())
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, 3)]
    model = nn.Sequential(*layers).eval()
    x = torch.randn(draw(st.integers(1, 2)), channels, size, size)
    return model, x


def reference_forward(model: nn.Sequential, x: torch.Tensor) -> list[torch.Tensor]:
    """Each layer's output, computed layer by layer without hooks or in-place ops."""
    outs = []
    h = x
    for layer in model:
        h = torch.relu(h) if isinstance(layer, nn.ReLU) else layer(h)
        outs.append(h)
    return outs


@pytest.mark.slow
@SETTINGS
@given(net=networks(), data=st.data())
def test_activations_equal_layer_by_layer_outputs(
    net: tuple[nn.Sequential, torch.Tensor], data: st.DataObject
) -> None:
    model, x = net
    names = [str(i) for i in range(len(model))]
    chosen = data.draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
    with torch.no_grad():
        expected = reference_forward(model, x)
        with capture_activations(model, chosen, clone=True) as acts:
            model(x)
    for name in chosen:
        torch.testing.assert_close(acts[name], expected[int(name)], **TOL)
    assert count_hooks(model) == {}


@SETTINGS
@given(net=networks(), data=st.data())
def test_views_change_only_when_an_inplace_op_follows(
    net: tuple[nn.Sequential, torch.Tensor], data: st.DataObject
) -> None:
    model, x = net
    i = data.draw(st.integers(0, len(model) - 1))
    with torch.no_grad():
        expected = reference_forward(model, x)[i]
        with capture_activations(model, str(i)) as acts:
            model(x)
    nxt = model[i + 1] if i + 1 < len(model) else None
    if isinstance(nxt, nn.ReLU) and nxt.inplace:
        # detach() shares storage: the stored tensor now holds relu(output)
        torch.testing.assert_close(acts[str(i)], torch.relu(expected), **TOL)
    else:
        torch.testing.assert_close(acts[str(i)], expected, **TOL)


@SETTINGS
@given(net=networks(), data=st.data())
def test_gradients_equal_autograd_grad(
    net: tuple[nn.Sequential, torch.Tensor], data: st.DataObject
) -> None:
    model, x = net
    x.requires_grad_(True)  # so that layers before the first parameter get gradients too
    names = [str(i) for i in range(len(model))]
    chosen = data.draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
    weights = torch.randn(x.shape[0], 3, generator=torch.Generator().manual_seed(0))
    outs = reference_forward(model, x)
    expected = torch.autograd.grad((outs[-1] * weights).sum(), [outs[int(n)] for n in chosen])
    with capture_gradients(model, chosen) as grads:
        (model(x.clone()) * weights).sum().backward()  # clone: in-place ReLU first
    for name, ref in zip(chosen, expected, strict=True):
        torch.testing.assert_close(grads[name], ref, **TOL)
    assert count_hooks(model) == {}


ContextFactory = Callable[[nn.Module], AbstractContextManager[Any]]

CONTEXTS: dict[str, ContextFactory] = {
    "activations": lambda m: capture_activations(m, ["0", "1"], clone=True, inputs=True),
    "gradients": lambda m: capture_gradients(m, ["0", "2"]),
    "anomalies": detect_anomalies,
    "scale": lambda m: scale_gradients(m, 0.5),
    "clip": lambda m: clip_gradients(m, max_norm=1.0),
}


@SETTINGS
@given(
    net=networks(),
    contexts=st.lists(st.sampled_from(sorted(CONTEXTS)), min_size=1, max_size=3, unique=True),
    where=st.sampled_from(["enter", "forward", "backward", "after"]),
    position=st.integers(0, 10),
    user_hook_on=st.integers(0, 10),
)
def test_no_hook_survives_an_exception(
    net: tuple[nn.Sequential, torch.Tensor],
    contexts: list[str],
    where: str,
    position: int,
    user_hook_on: int,
) -> None:
    model, x = net
    tripwire = Tripwire()
    layers = list(model)
    layers.insert(min(position, len(layers) - 3), tripwire)  # before the head
    model = nn.Sequential(*layers)
    # a hook of the user's own must survive untouched
    user_module = model[user_hook_on % len(model)]
    user_handle = user_module.register_forward_hook(lambda m, a, o: None)
    before = count_hooks(model)
    assert before.total == 1
    tripwire.armed = where if where in ("forward", "backward") else ""
    raised = False
    try:
        with ExitStack() as stack:
            for name in contexts:
                stack.enter_context(CONTEXTS[name](model))
            if where == "enter":
                msg = "right after entering"
                raise ArithmeticError(msg)
            # x requires grad so that every layer's output does (capture_gradients needs it)
            model(x.requires_grad_().clone()).sum().backward()
            if where == "after":
                msg = "after backward"
                raise ArithmeticError(msg)
    except ArithmeticError:
        raised = True
    assert raised
    assert count_hooks(model) == before
    user_handle.remove()
    assert count_hooks(model) == {}


@SETTINGS
@given(net=networks(), armed=st.booleans())
def test_trace_leaves_no_hook(net: tuple[nn.Sequential, torch.Tensor], armed: bool) -> None:
    model, x = net
    tripwire = Tripwire()
    tripwire.armed = "forward" if armed else ""
    model = nn.Sequential(tripwire, *model)
    try:
        result = trace(model, x)
    except ArithmeticError:
        assert armed
    else:
        assert not armed
        assert [r.name for r in result] == [str(i) for i in range(len(model))]
    assert count_hooks(model) == {}
