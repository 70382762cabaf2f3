"""Score-CAM's fast masked passes: folded BatchNorm and the factored first convolution.

Each fast path must give the map of the plain definition (every masked input
built and run through the model as it is), here a float64 loop that shares
no code with the library, leave the user's model as it was, and fall back
when its pattern does not hold. ``FoldedPasses`` (private) is inspected to
prove that the fast path did run where it should and did not where it
should not; the maps are what the user sees.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from hooks_tutorial import capture_activations, count_hooks
from hooks_tutorial.cam import ScoreCAM
from hooks_tutorial.cam._fold import FoldedPasses

SIZE = 16


class ConvBNNet(nn.Module):
    """conv1 (7x7, input only here) -> BN -> ReLU -> conv -> BN -> ReLU -> conv -> BN -> ReLU.

    The last feature map (``body.6``, 16 channels, 2 x 2) is the target: 16 masks
    per image on a basis of 5 maps, enough for the first conv to be factored.
    """

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv1 = nn.Conv2d(3, 8, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.body = nn.Sequential(
            nn.ReLU(),
            nn.Conv2d(8, 12, 3, stride=2, padding=1),
            nn.BatchNorm2d(12),
            nn.ReLU(),
            nn.Conv2d(12, 16, 3, stride=2, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
        )
        self.fc = nn.Linear(16, 5)
        with torch.no_grad():
            for bn in (self.bn1, self.body[2], self.body[5]):
                bn.running_mean.uniform_(-0.5, 0.5)
                bn.running_var.uniform_(0.5, 2.0)
                bn.weight.uniform_(0.5, 1.5)
                bn.bias.uniform_(-0.2, 0.2)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self.bn1(self.conv1(x)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.features(x).mean(dim=(2, 3)))


class ReusesConvOutput(ConvBNNet):
    """The second conv's output is used after its BN too: that pair must not fold."""

    def features(self, x: torch.Tensor) -> torch.Tensor:
        h = self.body[0](self.bn1(self.conv1(x)))
        c = self.body[1](h)
        h = self.body[3](self.body[2](c)) + 0.1 * c
        return self.body[6](self.body[5](self.body[4](h)))


class ChangesPathWithBatch(ConvBNNet):
    """Leaves the pattern only on inputs with a zero pixel: masked ones, not the probe.

    Uses the conv output after its BN and the input after the first conv, so
    both fast paths must detect it on the masked passes and run the batch
    again as it is. Data-dependent Python like this is also what fx tracing
    cannot handle.
    """

    def features(self, x: torch.Tensor) -> torch.Tensor:
        c = self.conv1(x)
        h = self.bn1(c)
        if float(x.amin()) == 0.0:
            h = h + 0.05 * c.mean((1, 2, 3), keepdim=True) + 0.01 * x.mean((1, 2, 3), keepdim=True)
        return self.body(h)


class UsesInputOnBatches(ConvBNNet):
    """Uses its input after the first conv, but only on batches of several images."""

    def features(self, x: torch.Tensor) -> torch.Tensor:
        h = self.bn1(self.conv1(x))
        if x.shape[0] > 1:
            h = h + 0.01 * x.mean((1, 2, 3), keepdim=True)
        return self.body(h)


class BNStaysTraining(ConvBNNet):
    """``eval()`` leaves the batch norms in training mode: nothing may fold."""

    def train(self, mode: bool = True) -> BNStaysTraining:
        super().train(mode)
        for module in self.modules():
            if isinstance(module, nn.BatchNorm2d):
                module.training = True
        return self


def reference_map(model: nn.Module, x: torch.Tensor, target: int) -> torch.Tensor:
    """Raw channel-probability Score-CAM of ``model.features``, in float64, one mask at a time."""
    m64 = copy.deepcopy(model).double().eval()
    x64 = x.double()
    with torch.no_grad():
        acts = m64.features(x64)
        maps = []
        for i in range(x.shape[0]):
            weights = torch.zeros(acts.shape[1], dtype=torch.float64)
            for k in range(acts.shape[1]):
                a = acts[i : i + 1, k : k + 1]
                up = F.interpolate(a, size=(SIZE, SIZE), mode="bilinear", align_corners=False)
                span = up.max() - up.min()
                if float(span) <= 0:
                    continue
                mask = (up - up.min()) / span
                weights[k] = m64(x64[i : i + 1] * mask).softmax(1)[0, target]
            maps.append(torch.relu(torch.einsum("k,khw->hw", weights, acts[i])))
    return torch.stack(maps)


def passes(model: nn.Module, x: torch.Tensor) -> FoldedPasses:
    with torch.inference_mode():
        return FoldedPasses(model.eval(), x[:1])


@pytest.fixture
def x() -> torch.Tensor:
    return torch.rand(2, 3, SIZE, SIZE, generator=torch.Generator().manual_seed(3))


def snapshot(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in model.state_dict().items()}


def check_map(model: nn.Module, x: torch.Tensor) -> None:
    got = ScoreCAM(model, "body.6", batch_size=5)(x, 2, raw=True)
    expected = reference_map(model, x, 2)
    # float32 passes against float64: 1e-5 of the map's range.
    assert float((got.double() - expected).abs().max()) <= 1e-5 * float(expected.abs().max())


def test_conv_bn_model_folds_every_pair_and_factors_the_first_conv(x: torch.Tensor) -> None:
    model = ConvBNNet()
    fast = passes(model, x)
    assert len(fast.folds) == 3
    assert fast.first is not None
    assert fast.factorable(2 * 2 + 1, 16)


# (BNStaysTraining is left out: its masked passes use batch statistics, so its
# map depends on the batch size by construction; it is checked not to fold.)
@pytest.mark.parametrize("make", [ConvBNNet, ReusesConvOutput, ChangesPathWithBatch])
def test_fast_or_fallback_the_map_is_the_definition(
    make: Callable[[], ConvBNNet], x: torch.Tensor
) -> None:
    check_map(make(), x)


def test_folded_and_unfolded_maps_agree_for_both_weightings(x: torch.Tensor) -> None:
    model = ConvBNNet().eval()
    for weights in ("probability", "channel_softmax"):
        cam = ScoreCAM(model, "body", weights=weights)  # type: ignore[arg-type]
        fast = cam(x, 1)
        with capture_activations(model, "fc"):  # an active hook: nothing folds
            slow = cam(x, 1)
        assert float((fast - slow).abs().max()) <= 1e-5


def test_a_conv_output_used_twice_is_not_folded(x: torch.Tensor) -> None:
    fast = passes(ReusesConvOutput(), x)
    assert len(fast.folds) == 2  # conv1 + bn1 and the last pair; not the reused one


def test_pattern_seen_only_on_the_probe_falls_back_on_the_masked_passes(
    x: torch.Tensor,
) -> None:
    model = ChangesPathWithBatch().eval()
    fast = passes(model, x)
    assert len(fast.folds) == 3
    masks = torch.rand(4, SIZE, SIZE)
    masks[:, 0, 0] = 0.0
    with torch.inference_mode():
        got = fast(x[:1] * masks[:, None])
        assert fast.folds == {}  # the batch ran again unfolded, and so will the next ones
        expected = model(x[:1] * masks[:, None])
    torch.testing.assert_close(got, expected, rtol=0, atol=0)


def factored_inputs(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A basis of 5 maps, 7 masks as their weighted sums, and the masked inputs."""
    generator = torch.Generator().manual_seed(4)
    basis = torch.rand(5, SIZE, SIZE, generator=generator)
    coefficients = torch.rand(7, 5, generator=generator) - 0.3
    return basis, coefficients, x[:1] * (coefficients @ basis.flatten(1)).view(7, 1, SIZE, SIZE)


def test_factored_first_conv_is_the_masked_pass(x: torch.Tensor) -> None:
    model = ConvBNNet().eval()
    fast = passes(model, x)
    basis, coefficients, masked = factored_inputs(x)
    with torch.inference_mode():
        got = fast.factored(x[:1], basis, coefficients)
        expected = model(masked)
    assert isinstance(got, torch.Tensor)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def test_factoring_falls_back_when_the_input_is_used_again(x: torch.Tensor) -> None:
    model = UsesInputOnBatches().eval()
    fast = passes(model, x)
    assert fast.first is not None  # the probe (one image) uses the input once
    basis, coefficients, _ = factored_inputs(x)
    with torch.inference_mode():
        assert fast.factored(x[:1], basis, coefficients) is None
    assert fast.first is None  # not tried again in this call
    # The model depends on the batch size, so compare with the same batches run
    # the plain way (an active hook on the model turns the fast paths off).
    cam = ScoreCAM(model, "body.6", batch_size=5)
    got = cam(x, 2)
    with capture_activations(model, "fc"):
        expected = cam(x, 2)
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-5)


def test_batch_norm_in_training_mode_is_not_folded(x: torch.Tensor) -> None:
    assert passes(BNStaysTraining(), x).folds == {}
    no_stats = ConvBNNet()
    no_stats.bn1 = nn.BatchNorm2d(8, track_running_stats=False)
    fast = passes(no_stats, x)
    assert len(fast.folds) == 2  # the other two pairs


def test_an_active_hook_turns_folding_off(x: torch.Tensor) -> None:
    model = ConvBNNet().eval()
    seen: list[torch.Tensor] = []
    handle = model.conv1.register_forward_hook(lambda _m, _a, out: seen.append(out.clone()))
    try:
        fast = passes(model, x)
        assert fast.folds == {}
        assert fast.first is None
    finally:
        handle.remove()


def test_the_users_model_is_left_as_it_was(x: torch.Tensor) -> None:
    model = ConvBNNet().train()
    state = snapshot(model)
    for weights in ("probability", "channel_softmax"):
        ScoreCAM(model, "body", weights=weights)(x)  # type: ignore[arg-type]
    assert count_hooks(model) == {}
    assert all(m.training for m in model.modules())
    for key, value in model.state_dict().items():
        assert torch.equal(value, state[key]), key  # bit-identical, BN statistics included
    assert all(p.is_contiguous() for p in model.parameters())  # no memory-format change


def test_weights_changed_between_calls_are_used(x: torch.Tensor) -> None:
    model = ConvBNNet().eval()
    cam = ScoreCAM(model, "body")
    first = cam(x, 2, raw=True)
    with torch.no_grad():
        model.bn1.running_mean += 0.3
        model.conv1.weight.mul_(1.1)
    second = cam(x, 2, raw=True)
    assert float((first - second).abs().max()) > 1e-4
    expected = reference_map(model, x, 2)
    assert float((second.double() - expected).abs().max()) <= 1e-5 * float(expected.abs().max())
