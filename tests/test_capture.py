"""capture_activations and capture_gradients."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from hooks_tutorial.capture import (
    Captures,
    MissingCaptureError,
    capture_activations,
    capture_gradients,
)
from hooks_tutorial.hooks import count_hooks

# Values computed through the same ops in the same order are bitwise equal; a
# small tolerance still guards against a different but equivalent kernel path.
TOL = {"rtol": 1e-6, "atol": 1e-6}


class TwoHeads(nn.Module):
    """``fc2`` runs only when asked: a layer that may not run."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(3, 3)
        self.fc2 = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor, use_fc2: bool = False) -> torch.Tensor:
        x = self.fc1(x)
        return self.fc2(x) if use_fc2 else x


# -- capture_activations ---------------------------------------------------------


def test_activations_match_a_manual_forward(mlp):
    x = torch.randn(3, 4)
    with capture_activations(mlp, ["0", "2"]) as acts:
        out = mlp(x)
    h = mlp[0](x)
    torch.testing.assert_close(acts["0"], h, **TOL)
    torch.testing.assert_close(acts["2"], out, **TOL)
    assert acts["2"].shape == (3, 2)
    assert count_hooks(mlp) == {}


def test_activations_are_detached_and_latest(mlp):
    with capture_activations(mlp, "0") as acts:
        mlp(torch.zeros(1, 4))
        x = torch.ones(2, 4, requires_grad=True)
        mlp(x)
    assert acts["0"].shape == (2, 4 + 1)
    assert acts["0"].grad_fn is None
    assert not acts["0"].requires_grad  # no graph kept alive by the store
    assert acts.calls == {"0": 2}


def test_module_keys_membership_and_iteration(mlp):
    with capture_activations(mlp, [mlp[2], "1"]) as acts:
        mlp(torch.zeros(1, 4))
    assert acts.layers == ("2", "1")
    assert list(acts) == ["2", "1"]
    assert len(acts) == 2
    assert mlp[2] in acts
    assert "1" in acts
    assert "0" not in acts
    assert acts[mlp[2]] is acts["2"]
    assert isinstance(acts, Captures)
    assert repr(acts) == "Captures(outputs; {'2': tensor(1, 2), '1': tensor(1, 5)})"


def test_reading_a_layer_that_was_not_captured(mlp):
    with capture_activations(mlp, ["0", "2"]) as acts:
        mlp(torch.zeros(1, 4))
    with pytest.raises(KeyError, match=r"'1' is not one of the captured layers.*Captured: 0, 2"):
        acts["1"]
    with pytest.raises(KeyError, match="did you mean 'fc2' or 'fc1'"):
        capture_activations_of_two_heads()["fc"]
    with pytest.raises(KeyError, match="module ReLU is not one of the captured layers"):
        acts[mlp[1]]


def capture_activations_of_two_heads() -> Captures[torch.Tensor]:
    model = TwoHeads()
    with capture_activations(model, ["fc1", "fc2"]) as acts:
        model(torch.zeros(1, 3))
    return acts


def test_layer_that_did_not_run_names_itself():
    acts = capture_activations_of_two_heads()
    assert list(acts) == ["fc1"]
    with pytest.raises(MissingCaptureError) as info:
        acts["fc2"]
    assert isinstance(info.value, KeyError)
    assert str(info.value).startswith(
        "layer 'fc2' did not run during the forward pass; check that the model's forward calls it"
    )
    assert "calling layer.forward(x) directly skips hooks" in str(info.value)


def test_forward_outside_the_block_records_nothing(mlp):
    with capture_activations(mlp, "0") as acts:
        pass
    mlp(torch.zeros(1, 4))
    with pytest.raises(MissingCaptureError, match="inside the with block"):
        acts["0"]


def test_clone_keeps_values_from_before_an_inplace_relu(tiny_cnn, image):
    with torch.no_grad():
        conv_out = tiny_cnn[0](image)  # no hooks here: the reference value
        with (
            capture_activations(tiny_cnn, "0") as view,
            capture_activations(tiny_cnn, "0", clone=True) as copy,
        ):
            tiny_cnn(image)
    assert bool((conv_out < 0).any())  # the check below means something
    # detach() shares storage: the in-place ReLU changed the stored tensor
    torch.testing.assert_close(view["0"], conv_out.clamp(min=0), **TOL)
    torch.testing.assert_close(copy["0"], conv_out, **TOL)


def test_inputs_on_request(tiny_cnn, image):
    with capture_activations(tiny_cnn, ["1", "6"], inputs=True, clone=True) as acts:
        tiny_cnn(image)
    # input of the in-place ReLU, recorded before it ran: still has negatives
    torch.testing.assert_close(acts.inputs["1"][0], tiny_cnn[0](image), **TOL)
    assert acts.inputs["6"][0].shape == (2, 6)
    assert isinstance(acts.inputs["6"], tuple)


def test_inputs_not_requested(mlp):
    with capture_activations(mlp, "0") as acts:
        mlp(torch.zeros(1, 4))
    with pytest.raises(MissingCaptureError) as info:
        acts.inputs["0"]
    # the layer ran: the message must not say it did not
    assert info.value.args[0] == (
        "inputs of layer '0' were not recorded; pass inputs=True to capture_activations"
    )


def test_inputs_not_requested_tells_a_layer_that_ran_from_one_that_did_not(mlp):
    with capture_activations(mlp, ["0", "2"]) as acts:
        mlp[0](torch.zeros(1, 4))  # layer "2" does not run
    assert repr(acts.inputs) == "Captures(inputs; {'0': not recorded, '2': not run})"
    assert repr(acts) == "Captures(outputs; {'0': tensor(1, 5), '2': not run})"
    with pytest.raises(MissingCaptureError, match=r"^inputs of layer '0' were not recorded; "):
        acts.inputs[mlp[0]]
    with pytest.raises(MissingCaptureError) as info:
        acts.inputs["2"]
    assert info.value.args[0] == (
        "layer '2' did not run during the forward pass; inputs were not recorded: "
        "pass inputs=True to capture_activations"
    )
    assert list(acts.inputs) == []
    assert len(acts.inputs) == 0
    assert "0" not in acts.inputs


def test_inputs_requested_but_layer_did_not_run(mlp):
    with capture_activations(mlp, ["0", "2"], inputs=True) as acts:
        mlp[0](torch.zeros(1, 4))
    assert repr(acts.inputs) == "Captures(inputs; {'0': (tensor(1, 4)), '2': not run})"
    with pytest.raises(
        MissingCaptureError, match=r"layer '2' did not run during the forward pass; check"
    ):
        acts.inputs["2"]


def test_tuple_outputs_keep_their_structure():
    model = nn.Sequential(nn.LSTM(3, 4, batch_first=True))
    with capture_activations(model, "0") as acts:
        model(torch.randn(2, 5, 3))
    output, (h, c) = acts["0"]  # type: ignore[misc]
    assert output.shape == (2, 5, 4)
    assert h.shape == c.shape == (1, 2, 4)
    assert output.grad_fn is None


def test_resnet_layer4_and_all_convs(resnet18):
    convs = [n for n, m in resnet18.named_modules() if isinstance(m, nn.Conv2d)]
    with torch.no_grad(), capture_activations(resnet18, ["layer4", *convs]) as acts:
        resnet18(torch.randn(1, 3, 64, 64))
    assert acts["layer4"].shape == (1, 512, 2, 2)
    assert acts["conv1"].shape == (1, 64, 32, 32)
    assert len(acts) == 21  # layer4 + 20 convolutions (3 of them in downsample)
    assert count_hooks(resnet18) == {}


def test_bad_layer_names_leave_no_hook(mlp):
    with (
        pytest.raises(ValueError, match="no submodule named 'fc'"),
        capture_activations(mlp, ["0", "fc"]),
    ):
        pass  # pragma: no cover
    assert count_hooks(mlp) == {}


def test_model_and_layer_swapped(mlp):
    with (
        pytest.raises(TypeError, match="pass the model first"),
        capture_activations(
            "0",
            mlp,  # type: ignore[arg-type]
        ),
    ):
        pass  # pragma: no cover
    with pytest.raises(ValueError, match="got the model itself"), capture_activations(mlp, mlp):
        pass  # pragma: no cover


def test_exception_in_body_removes_hooks(mlp):
    kept = []

    def run() -> None:
        with capture_activations(mlp, ["0", "2"]) as acts:
            kept.append(acts)
            mlp(torch.zeros(1, 4))
            msg = "boom"
            raise RuntimeError(msg)

    with pytest.raises(RuntimeError, match="boom"):
        run()
    assert count_hooks(mlp) == {}
    assert kept[0]["0"].shape == (1, 5)


# -- capture_gradients -------------------------------------------------------------


def test_gradients_match_autograd(mlp):
    x = torch.randn(3, 4)
    with capture_gradients(mlp, ["0", "1"]) as grads:
        mlp(x).pow(2).sum().backward()
    h0 = mlp[0](x)
    h1 = mlp[1](h0)
    g0, g1 = torch.autograd.grad(mlp[2](h1).pow(2).sum(), [h0, h1])
    torch.testing.assert_close(grads["0"], g0, **TOL)
    torch.testing.assert_close(grads["1"], g1, **TOL)
    assert grads["0"].grad_fn is None
    assert count_hooks(mlp) == {}


def test_gradients_work_with_inplace_relu_after_the_layer(tiny_cnn, image):
    with capture_gradients(tiny_cnn, "0") as grads:
        tiny_cnn(image)[:, 1].sum().backward()
    # reference without hooks and without the in-place op
    h = tiny_cnn[0](image)
    rest = nn.Sequential(*list(tiny_cnn)[2:])
    (expected,) = torch.autograd.grad(rest(torch.relu(h))[:, 1].sum(), h)
    torch.testing.assert_close(grads["0"], expected, **TOL)
    assert bool((expected == 0).any())  # the ReLU's mask is in the gradient


def test_full_backward_hook_fails_where_capture_gradients_works(resnet18):
    x = torch.randn(1, 3, 64, 64)
    handle = resnet18.bn1.register_full_backward_hook(lambda m, gi, go: None)
    try:
        with pytest.raises(RuntimeError, match="is a view and is being modified inplace"):
            resnet18(x)
    finally:
        handle.remove()
    with capture_gradients(resnet18, ["bn1", "layer4"]) as grads:
        resnet18(x)[0, 7].backward()
    assert grads["bn1"].shape == (1, 64, 32, 32)
    assert grads["layer4"].shape == (1, 512, 2, 2)
    assert count_hooks(resnet18) == {}


@pytest.mark.parametrize("context", [torch.no_grad, torch.inference_mode])
def test_gradients_with_autograd_disabled(mlp, context):
    with (
        pytest.raises(RuntimeError, match=r"layer '0' ran with autograd disabled.*enable_grad"),
        context(),
        capture_gradients(mlp, "0"),
    ):
        mlp(torch.zeros(1, 4))
    assert count_hooks(mlp) == {}


def test_enable_grad_inside_no_grad_works(mlp):
    with torch.no_grad(), capture_gradients(mlp, "2") as grads, torch.enable_grad():
        mlp(torch.zeros(1, 4)).sum().backward()
    torch.testing.assert_close(grads["2"], torch.ones(1, 2))


def test_gradients_when_nothing_requires_grad(mlp):
    mlp.requires_grad_(False)
    with (
        pytest.raises(RuntimeError, match=r"output of layer '2' does not require grad"),
        capture_gradients(mlp, "2"),
    ):
        mlp(torch.zeros(1, 4))
    assert count_hooks(mlp) == {}


def test_layer_ran_but_no_backward(mlp):
    with capture_gradients(mlp, ["0", "2"]) as grads:
        out = mlp(torch.zeros(1, 4))
    out.sum().backward()  # after the block: the tensor hooks are gone
    assert out._backward_hooks == {}
    with pytest.raises(MissingCaptureError, match="no gradient reached the output of layer '0'"):
        grads["0"]
    assert len(grads) == 0


def test_gradient_for_a_layer_that_did_not_run():
    model = TwoHeads()
    with capture_gradients(model, ["fc1", "fc2"]) as grads:
        model(torch.zeros(1, 3)).sum().backward()
    assert list(grads) == ["fc1"]
    with pytest.raises(MissingCaptureError, match="layer 'fc2' did not run during the forward"):
        grads["fc2"]


def test_gradients_need_tensor_outputs():
    model = nn.Sequential(nn.LSTM(3, 4))
    with (
        pytest.raises(TypeError, match=r"layer '0' \(LSTM\) returned tuple"),
        capture_gradients(model, "0"),
    ):
        model(torch.zeros(2, 1, 3))
    assert count_hooks(model) == {}


def test_many_forward_passes_keep_memory_bounded(mlp):
    with capture_gradients(mlp, "0") as grads:
        for _ in range(200):
            mlp(torch.randn(2, 4)).sum().backward()
    assert grads.calls == {"0": 200}
    assert grads["0"].shape == (2, 5)


def test_layer_called_through_forward_skips_hooks():
    class Direct(TwoHeads):
        def forward(self, x: torch.Tensor, use_fc2: bool = False) -> torch.Tensor:
            return self.fc2.forward(self.fc1(x))  # .forward() bypasses hooks

    model = Direct()
    with capture_activations(model, ["fc1", "fc2"]) as acts:
        model(torch.zeros(1, 3))
    assert list(acts) == ["fc1"]
    with pytest.raises(MissingCaptureError, match="layer 'fc2' did not run"):
        acts["fc2"]
