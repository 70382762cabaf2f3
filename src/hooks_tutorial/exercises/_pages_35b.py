"""The checks of page 35b, attribution patching (chapter 7).

Exercise 1 writes the attribution-patching estimate of one site; exercises 2
and 3 ask why: they are answered in words.
"""

from __future__ import annotations

import torch

from ._helpers import require_callable, returned_type
from ._language import Text
from ._registry import Problem, Values, exercise, prose

prose("35b.2", "35b.3")

_BATCH, _POSITIONS, _WIDTH = 3, 5, 4


def _close(got: torch.Tensor, expected: torch.Tensor) -> bool:
    """Equal up to float rounding: the learner may sum in another order (float32 sums)."""
    return got.shape == expected.shape and torch.allclose(
        got.detach().double(), expected, rtol=1e-4, atol=1e-5
    )


@exercise(
    "35b.1",
    passed=Text(
        "Your function returned one estimate per position: (clean - corrupted) times the "
        "gradient, summed over the features and over the sentences. Each number is the "
        "first-order change of the metric if that position alone were patched.",
        "你的函数为每个位置返回了一个估计值，即（干净 - 损坏）乘以梯度，再对特征和句子求和。"
        "每个数都是只修补这一个位置时指标的一阶变化量。",
    ),
    not_a_tensor=Text(
        "`attribution_at(clean, corrupted, grad)` returned a `{got}`; it should return one "
        "tensor with one number per position, of shape `[{positions}]`.",
        "`attribution_at(clean, corrupted, grad)` 返回了一个 `{got}`；它应当返回一个张量，"
        "每个位置一个数，形状为 `[{positions}]`。",
    ),
    per_sentence=Text(
        "Your function returned a `[batch, positions]` tensor: one estimate per sentence. "
        "Sum over the sentences too, `dim=0`: the metric is a mean over sentences, so the "
        "gradient already carries the `1/batch`, and the sum is the change of that mean.",
        "你的函数返回了形状为 `[batch, positions]` 的张量，即每个句子一个估计值。"
        "还要对句子求和（`dim=0`）——指标是对句子取的平均，梯度里已经带着 `1/batch`，"
        "求和得到的正是这个平均值的变化。",
    ),
    per_feature=Text(
        "Your function returned a `[positions, width]` tensor: the features are not summed. "
        "The estimate is a dot product over the features at each position: sum over "
        "`dim=2` as well as over the sentences, `dim=(0, 2)`.",
        "你的函数返回了形状为 `[positions, width]` 的张量，没有对特征求和。"
        "估计值是每个位置上对特征做的点积，除了对句子求和，还要对特征求和（`dim=2`），即 `dim=(0, 2)`。",
    ),
    one_number=Text(
        "Your function returned a single number: it summed over the positions too. The map "
        "needs one estimate per position, so keep `dim=1`: sum over `dim=(0, 2)` only.",
        "你的函数只返回了一个数，它把各个位置也加在一起了。修补图需要每个位置一个估计值，"
        "所以要保留 `dim=1`，只对 `dim=(0, 2)` 求和。",
    ),
    wrong_shape=Text(
        "Your function returned a tensor of shape `{shape}`; the estimate has one number "
        "per position, shape `[{positions}]`: sum over the sentences and the features, "
        "`dim=(0, 2)`.",
        "你的函数返回的张量形状为 `{shape}`；估计值每个位置一个数，形状为 `[{positions}]`，"
        "请对句子和特征求和，即 `dim=(0, 2)`。",
    ),
    wrong_sign=Text(
        "Your estimate has the wrong sign: it is `(corrupted - clean) . grad`. The patch "
        "moves the activation from the corrupted value to the clean one, and the gradient "
        "is taken in the corrupted run, so the step is `clean - corrupted`.",
        "你的估计值符号反了，算的是 `(corrupted - clean) . grad`。修补把激活值从损坏的值"
        "移到干净的值，梯度取自损坏运行，所以这一步是 `clean - corrupted`。",
    ),
    mean_over_sentences=Text(
        "Your estimate is {batch} times too small: it takes the mean over the sentences. "
        "The metric is already a mean, so its gradient carries the `1/batch`; sum over the "
        "sentences, or you divide by the batch twice.",
        "你的估计值小了 {batch} 倍，因为它对句子取了平均。指标本身已经是平均值，"
        "它的梯度里带着 `1/batch`；请对句子求和，否则就除了两次批大小。",
    ),
    no_difference=Text(
        "Your estimate uses one activation times the gradient, not the difference between "
        "the runs. Patching changes the activation by `clean - corrupted`, and to first "
        "order the metric changes by that step times the gradient.",
        "你的估计值用的是某一个激活值乘以梯度，而不是两次运行之间的差。修补使激活值改变了 "
        "`clean - corrupted`，一阶近似下指标的变化就是这一步乘以梯度。",
    ),
    changed_inputs=Text(
        "Your function changed a tensor it was given (in place). The same activations and "
        "gradients feed every site's estimate: compute a new tensor, and leave them as "
        "they were.",
        "你的函数原地修改了传给它的张量。所有位置的估计都用同样的激活值和梯度，"
        "请计算出一个新的张量，不要改动它们。",
    ),
    wrong_values=Text(
        "Your function returned one number per position, but not the estimate: "
        "`((clean - corrupted) * grad).sum(dim=(0, 2))`.",
        "你的函数为每个位置返回了一个数，但不是这个估计值——"
        "`((clean - corrupted) * grad).sum(dim=(0, 2))`。",
    ),
)
def _attribution_at(answer: object) -> Values:
    attribution_at = require_callable(answer)
    generator = torch.Generator().manual_seed(0)
    clean, corrupted, grad = (
        torch.randn(_BATCH, _POSITIONS, _WIDTH, generator=generator) for _ in range(3)
    )
    given = [clean.clone(), corrupted.clone(), grad.clone()]
    got = attribution_at(*given)
    if not all(torch.equal(a, b) for a, b in zip(given, (clean, corrupted, grad), strict=True)):
        raise Problem("changed_inputs")
    if not isinstance(got, torch.Tensor):
        raise Problem("not_a_tensor", got=returned_type(got), positions=_POSITIONS)
    # the expected values in float64, so that only the learner's rounding is forgiven
    product = (clean.double() - corrupted.double()) * grad.double()
    expected = product.sum(dim=(0, 2))
    if _close(got, expected):
        return {}
    shapes = {
        (_BATCH, _POSITIONS): "per_sentence",
        (_POSITIONS, _WIDTH): "per_feature",
        (): "one_number",
    }
    if tuple(got.shape) in shapes:
        raise Problem(shapes[tuple(got.shape)])
    if tuple(got.shape) != (_POSITIONS,):
        raise Problem("wrong_shape", shape=list(got.shape), positions=_POSITIONS)
    if _close(got, -expected):
        raise Problem("wrong_sign")
    if _close(got, expected / _BATCH):
        raise Problem("mean_over_sentences", batch=_BATCH)
    for one in (clean, corrupted, -corrupted):
        if _close(got, (one.double() * grad.double()).sum(dim=(0, 2))):
            raise Problem("no_difference")
    raise Problem("wrong_values")
