"""The checks of page 36b, a sparse autoencoder spliced into the residual stream (chapter 7).

Exercise 1 writes a forward hook that splices in an SAE with one feature switched
off; exercise 2 computes the fraction of a logit difference a splice recovers.
Exercise 3 asks why: it is answered in words.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from ._guard import watch
from ._helpers import require_callable, returned_type
from ._language import Text
from ._registry import Problem, Values, exercise, prose

prose("36b.3")

_LENGTH = 15  # positions, as the page's prompts: its LAST (14) and -1 are the same position


class _SmallSAE(nn.Module):
    """An SAE with the page's interface (``encode``, ``decode``, calling it reconstructs).

    Feature 3's encoder bias is large, so it is active in every row: switching it off
    changes every reconstruction.
    """

    def __init__(self) -> None:
        super().__init__()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            self.encoder = nn.Linear(8, 12)
            self.decoder = nn.Linear(12, 8)
        with torch.no_grad():
            self.encoder.bias[3] = 5.0

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.encoder(x - self.decoder.bias))

    def decode(self, features: torch.Tensor) -> torch.Tensor:
        decoded: torch.Tensor = self.decoder(features)
        return decoded

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decode(self.encode(x))


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    # the learner's hook and the check compute the same float32 operations; the
    # tolerance forgives only another order of the same sums
    return torch.allclose(a, b, rtol=1e-4, atol=1e-5)


@exercise(
    "36b.1",
    passed=Text(
        "On the check's small layer and SAE, your hook replaced the last position by the "
        "reconstruction with feature {feature} switched off, and left the other positions "
        "as the layer computed them.",
        "在检查自带的小层和小 SAE 上，你的钩子把最后一个位置换成了关掉特征 {feature} 之后的重建，"
        "其他位置保持这一层计算出的值。",
    ),
    not_a_tensor=Text(
        "The hook returned a `{returned}`, not a tensor shaped like the layer's output: "
        "return the whole output with its last position replaced.",
        "钩子返回了一个 `{returned}`，而不是与这一层输出形状相同的张量。"
        "请返回整个输出，只替换其中最后一个位置。",
    ),
    returned_none=Text(
        "The layer's output did not change: a forward hook replaces the output only with "
        "what it returns. Return the edited copy: `return replaced`.",
        "这一层的输出没有变化。前向钩子只会用它返回的值替换输出，请返回修改后的副本："
        "`return replaced`。",
    ),
    not_switched_off=Text(
        "The last position holds the SAE's plain reconstruction, `sae(x)`: feature "
        "{feature} is still on. Encode, set `features[:, feature] = 0`, then decode.",
        "最后一个位置是 SAE 的普通重建 `sae(x)`，特征 {feature} 仍然开着。"
        "请先编码，设 `features[:, feature] = 0`，再解码。",
    ),
    other_positions=Text(
        "Your hook changed positions before the last one too: replace only the last "
        "position, `replaced[:, -1] = ...`, and keep the others as they are.",
        "你的钩子也改变了最后一个位置之前的位置。请只替换最后一个位置，"
        "`replaced[:, -1] = ...`，其他位置保持原样。",
    ),
    wrong_values=Text(
        "The last position is not the SAE's reconstruction with feature {feature} "
        "switched off: `features = sae.encode(output[:, -1])`, "
        "`features[:, feature] = 0`, then `sae.decode(features)`.",
        "最后一个位置不是关掉特征 {feature} 之后的 SAE 重建。请先 "
        "`features = sae.encode(output[:, -1])`，再 `features[:, feature] = 0`，"
        "然后 `sae.decode(features)`。",
    ),
)
def _without_feature(answer: object) -> Values:
    without_feature = require_callable(answer)
    sae = watch(_SmallSAE().eval())
    layer = watch(nn.Linear(8, 8))
    feature = 3
    x = torch.randn(2, _LENGTH, 8, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        plain = layer(x)
        with layer.register_forward_hook(without_feature(sae, feature)):
            hooked: Any = layer(x)
        features = sae.encode(plain[:, -1])
        reconstructed = sae.decode(features)
        features[:, feature] = 0
        expected = sae.decode(features)
    if not isinstance(hooked, torch.Tensor) or hooked.shape != plain.shape:
        raise Problem("not_a_tensor", returned=returned_type(hooked))
    hooked = hooked.detach()
    if torch.equal(hooked, plain):
        raise Problem("returned_none")
    if not _close(hooked[:, :-1], plain[:, :-1]):
        raise Problem("other_positions")
    if _close(hooked[:, -1], reconstructed):
        raise Problem("not_switched_off", feature=feature)
    if not _close(hooked[:, -1], expected):
        raise Problem("wrong_values", feature=feature)
    return {"feature": feature}


@exercise(
    "36b.2",
    passed=Text(
        "Your function gives the share of the gap between the ablation and the clean "
        "model that the splice recovers: 1 when the splice does as well as the clean "
        "model, 0 when it does no better than the ablation.",
        "你的函数给出了拼接找回的、消融与干净模型之间差距的比例。拼接与干净模型一样好时为 1，"
        "不比消融好时为 0。",
    ),
    not_a_number=Text(
        "`fraction_recovered(clean, spliced, ablated)` returned a `{returned}`; it should "
        "return one number.",
        "`fraction_recovered(clean, spliced, ablated)` 返回了一个 `{returned}`，它应当返回一个数。",
    ),
    ignores_baseline=Text(
        "Your function returned `spliced / clean`, the share of the clean difference: "
        "it leaves the ablation out. Measure from the baseline: "
        "`(spliced - ablated) / (clean - ablated)`.",
        "你的函数返回的是 `spliced / clean`，即占干净差值的比例，它没有考虑消融。"
        "请从基线开始量：`(spliced - ablated) / (clean - ablated)`。",
    ),
    lost=Text(
        "Your function returned the share that is lost, not the share recovered: a "
        "splice as good as the clean model should give 1.",
        "你的函数返回的是丢失的比例，而不是找回的比例。与干净模型一样好的拼接应当得到 1。",
    ),
    wrong_value=Text(
        "For clean {clean}, spliced {spliced} and ablated {ablated} your function returned "
        "{got} instead of {expected}: `(spliced - ablated) / (clean - ablated)`.",
        "对于 clean {clean}、spliced {spliced} 和 ablated {ablated}，你的函数返回了 {got}，"
        "而不是 {expected}：`(spliced - ablated) / (clean - ablated)`。",
    ),
)
def _fraction_recovered(answer: object) -> Values:
    fraction_recovered = require_callable(answer)
    cases = [(6.0, 5.0, 2.0), (4.0, 4.0, -1.0), (3.0, 1.0, 1.0), (5.0, 6.0, 0.0)]
    results = []
    for clean, spliced, ablated in cases:
        got = fraction_recovered(clean, spliced, ablated)
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = got.item()
        if not isinstance(got, (int, float)) or isinstance(got, bool):
            raise Problem("not_a_number", returned=returned_type(got))
        results.append(float(got))

    def all_close(values: list[float]) -> bool:
        # exact arithmetic on small floats: the tolerance forgives another order of operations
        return all(math.isclose(a, b, abs_tol=1e-9) for a, b in zip(results, values, strict=True))

    expected = [(s - a) / (c - a) for c, s, a in cases]
    if all_close(expected):
        return {}
    if all_close([s / c for c, s, _ in cases]):
        raise Problem("ignores_baseline")
    if all_close([1 - e for e in expected]):
        raise Problem("lost")
    for (clean, spliced, ablated), got, right in zip(cases, results, expected, strict=True):
        if not math.isclose(got, right, abs_tol=1e-9):
            raise Problem(
                "wrong_value",
                clean=clean,
                spliced=spliced,
                ablated=ablated,
                got=f"{got:.4g}",
                expected=f"{right:.4g}",
            )
    return {}
