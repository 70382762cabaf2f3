"""The checks of chapter 7, language models (pages 33 to 37)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from .. import lm
from ..hooks import count_hooks
from ._guard import watch
from ._helpers import require_callable, returned_type
from ._language import Text
from ._registry import Problem, Values, exercise


def _tiny_lm(n_layers: int = 2) -> lm.TinyLM:
    """A small untrained :class:`~hooks_tutorial.lm.TinyLM`, the same weights every time."""
    model = lm.TinyLM(d_model=16, n_layers=n_layers, n_heads=4, d_mlp=32, seed=0).eval()
    return watch(model)


def _recorded(model: nn.Module, module: nn.Module, tokens: torch.Tensor) -> dict[str, torch.Tensor]:
    """The input and output of ``module`` when ``model`` reads ``tokens``."""
    seen: dict[str, torch.Tensor] = {}

    def keep(m: nn.Module, args: tuple[Any, ...], output: torch.Tensor) -> None:
        seen["input"], seen["output"] = args[0].detach(), output.detach()

    with module.register_forward_hook(keep), torch.no_grad():
        model(tokens)
    return seen


def _same(got: object, expected: torch.Tensor) -> bool:
    """``got`` is ``expected`` (a tensor of its shape, equal up to float rounding).

    The check and the learner's code run the same forward pass on the same
    CPU, so the numbers are equal; the tolerance only forgives another order
    of the same sums (a learner who recomputes a part by hand).
    """
    return (
        isinstance(got, torch.Tensor)
        and got.shape == expected.shape
        and torch.allclose(got.detach().float(), expected, rtol=1e-4, atol=1e-5)
    )


# -- page 33: the residual stream and the logit lens -------------------------------------


@exercise(
    "33.1",
    passed=Text(
        "Your function returned the input of `blocks[1].ln2`: the residual stream after "
        "block 1's attention added its output, before the MLP adds its own.",
        "你的函数返回了 `blocks[1].ln2` 的输入，即块 1 的注意力加上它的输出之后、"
        "MLP 加上自己的输出之前的残差流。",
    ),
    not_a_tensor=Text(
        "`middle_stream(model, tokens)` returned a `{got}`; it should return one tensor, "
        "`[batch, positions, width]`: `args[0]` as the pre-hook on `blocks[1].ln2` saw it.",
        "`middle_stream(model, tokens)` 返回了一个 `{got}`；它应当返回一个张量，"
        "形状为 `[batch, positions, width]`，即 `blocks[1].ln2` 上的预钩子看到的 `args[0]`。",
    ),
    normalised=Text(
        "Your function returned the *output* of `blocks[1].ln2`: the stream after the "
        "LayerNorm normalised it, not the stream itself. A forward pre-hook on `ln2` "
        "receives its input, `args[0]`: register it with `register_forward_pre_hook`.",
        "你的函数返回的是 `blocks[1].ln2` 的*输出*，即被 LayerNorm 归一化之后的残差流，"
        "而不是残差流本身。`ln2` 上的前向预钩子收到的是它的输入 `args[0]`，"
        "请用 `register_forward_pre_hook` 注册。",
    ),
    after_mlp=Text(
        "Your function returned the output of `blocks[1]`: the stream after the MLP has "
        "added its output too. The input of `blocks[1].ln2` comes before the MLP.",
        "你的函数返回的是 `blocks[1]` 的输出，即 MLP 也加上了它的输出之后的残差流。"
        "`blocks[1].ln2` 的输入在 MLP 之前。",
    ),
    before_attention=Text(
        "Your function returned the stream that enters block 1, before its attention. The "
        "input of `blocks[1].ln2` comes after the attention added its output.",
        "你的函数返回的是进入块 1 时、注意力之前的残差流。`blocks[1].ln2` 的输入在注意力"
        "加上它的输出之后。",
    ),
    attention_only=Text(
        "Your function returned the output of `blocks[1].attn`: what the attention adds to "
        "the stream, not the stream itself. Read the input of `blocks[1].ln2`, where the "
        "addition is done.",
        "你的函数返回的是 `blocks[1].attn` 的输出，即注意力加到残差流上的部分，而不是残差流本身。"
        "请读取 `blocks[1].ln2` 的输入，那里加法已经完成。",
    ),
    wrong_stream=Text(
        "The tensor your function returned is not the input of `blocks[1].ln2`: register "
        "a forward pre-hook on `model.blocks[1].ln2`, keep `args[0].detach()`, run the "
        "model on `tokens`, remove the hook and return what it kept.",
        "你的函数返回的张量不是 `blocks[1].ln2` 的输入，请在 `model.blocks[1].ln2` 上注册"
        "前向预钩子，保存 `args[0].detach()`，在 `tokens` 上运行模型，移除钩子，"
        "然后返回保存的张量。",
    ),
)
def _middle_stream(answer: object) -> Values:
    middle_stream = require_callable(answer)
    model = _tiny_lm()
    tokens = lm.make_names(4, seed=5).prompts
    block = model.blocks[1]
    assert isinstance(block, lm.Block)
    ln2 = _recorded(model, block.ln2, tokens)
    candidates = {
        "normalised": ln2["output"],
        "after_mlp": _recorded(model, block, tokens)["output"],
        "before_attention": _recorded(model, block, tokens)["input"],
        "attention_only": _recorded(model, block.attn, tokens)["output"],
    }
    got = middle_stream(model, tokens)
    if not isinstance(got, torch.Tensor):
        raise Problem("not_a_tensor", got=type(got).__name__)
    # the whole stream, or the last position only (the exercise's lens reads that)
    if _same(got, ln2["input"]) or _same(got, ln2["input"][:, -1]):
        return {}
    for problem, tensor in candidates.items():
        if _same(got, tensor) or _same(got, tensor[:, -1]):
            raise Problem(problem)
    raise Problem("wrong_stream")


def _as_shape(value: object) -> list[int] | None:
    """``value`` as a list of ints if it is a shape (``torch.Size``, tuple, list), else None."""
    if isinstance(value, (torch.Size, tuple, list)) and all(
        isinstance(n, int) and not isinstance(n, bool) for n in value
    ):
        return list(value)
    return None


@exercise(
    "33.2",
    passed=Text(
        "Your function recorded {calls} calls of `blocks[2]`, with shapes `{shapes}`: "
        "`lm.generate` runs the model once per new token, on the whole sequence so far, "
        "since it keeps no key-value cache.",
        "你的函数记录到 `blocks[2]` 被调用了 {calls} 次，形状依次是 `{shapes}`。"
        "`lm.generate` 每生成一个新词元就运行一次模型，而且每次都读入目前为止的整个序列，"
        "因为它不保留键值缓存。",
    ),
    not_shapes=Text(
        "`generation_shapes(model, tokens)` returned `{got}`; it should return a list with "
        "one shape per call of the hook, such as `[[1, 15, 64], ...]` "
        "(`list(output.shape)`).",
        "`generation_shapes(model, tokens)` 返回了 `{got}`；它应当返回一个列表，钩子每调用一次"
        "就有一个形状，例如 `[[1, 15, 64], ...]`（`list(output.shape)`）。",
    ),
    one_call=Text(
        "Your function recorded one call, `{shapes}`: it ran the model once. Generate with "
        "`lm.generate(model, tokens)`, which runs the model once per new token; here it "
        "makes {calls} calls, `{expected}`.",
        "你的函数只记录到一次调用 `{shapes}`，它只运行了一次模型。请用 "
        "`lm.generate(model, tokens)` 生成，它每生成一个新词元就运行一次模型；"
        "这里一共有 {calls} 次调用，`{expected}`。",
    ),
    wrong_module=Text(
        "Your function recorded `{shapes}`, whose last size is the vocabulary's ({vocab}): "
        "those are the logits of the whole model. Register the hook on `model.blocks[2]`, "
        "whose output is the residual stream, `{expected}`.",
        "你的函数记录到 `{shapes}`，最后一维是词表的大小（{vocab}），那是整个模型输出的 logit。"
        "请把钩子注册在 `model.blocks[2]` 上，它的输出是残差流，`{expected}`。",
    ),
    wrong_shapes=Text(
        "Your function recorded `{shapes}`; the output of `blocks[2]` had the shapes "
        "`{expected}` while `lm.generate(model, tokens)` ran.",
        "你的函数记录到 `{shapes}`；在 `lm.generate(model, tokens)` 运行期间，"
        "`blocks[2]` 的输出形状依次是 `{expected}`。",
    ),
)
def _generation_shapes(answer: object) -> Values:
    generation_shapes = require_callable(answer)
    # the trained model: it answers and stops at "." after two tokens, whatever
    # max_new_tokens (two or more) the learner passes
    model = watch(lm.pretrained_lm())
    tokens = lm.make_names(1, seed=3, split="test").prompts
    expected: list[list[int]] = []
    with model.blocks[2].register_forward_hook(
        lambda m, args, output: expected.append(list(output.shape))
    ):
        lm.generate(model, tokens)
    got = generation_shapes(model, tokens)
    shapes = [_as_shape(s) for s in got] if isinstance(got, (list, tuple)) else [None]
    if any(s is None for s in shapes):
        text = repr(got)
        raise Problem("not_shapes", got=text if len(text) < 60 else text[:57] + "...")
    shown: Values = {"shapes": shapes, "expected": expected, "calls": len(expected)}
    if shapes == expected:
        return shown
    vocab = len(lm.VOCAB)
    if shapes and all(s and s[-1] == vocab for s in shapes):
        raise Problem("wrong_module", vocab=vocab, **shown)
    if len(shapes) == 1:
        raise Problem("one_call", **shown)
    raise Problem("wrong_shapes", **shown)


@exercise(
    "33.3",
    passed=Text(
        "On data made from a known affine map and a little noise, the map your function "
        "returned predicts what least squares does (largest difference {gap:.1e}), with "
        "the bias included.",
        "在由已知仿射映射加少量噪声构成的数据上，你的函数返回的映射与最小二乘法的预测一致"
        "（最大差值 {gap:.1e}），并且包含了偏置。",
    ),
    not_callable_map=Text(
        "`fit_affine(x, y)` returned a `{got}`; it should return a function that applies "
        "the fitted map to new rows: `translate = fit_affine(x, y)`, then `translate(x_new)`.",
        "`fit_affine(x, y)` 返回了一个 `{got}`；它应当返回一个把拟合出的映射应用到新行上的函数："
        "`translate = fit_affine(x, y)`，然后 `translate(x_new)`。",
    ),
    wrong_shape=Text(
        "For `x` of shape `{x}` and `y` of shape `{y}`, the map applied to {n} new rows of "
        "`x` gave `{got}`, not `{expected}`: fit the map from `x` to `y`, with one column of "
        "ones for the bias, `torch.linalg.lstsq(torch.cat([x, ones], 1), y)`.",
        "对形状为 `{x}` 的 `x` 和形状为 `{y}` 的 `y`，把映射应用到 {n} 个新的 `x` 行上，"
        "得到的形状是 `{got}`，而不是 `{expected}`。请拟合从 `x` 到 `y` 的映射，并加一列 1 "
        "作为偏置，`torch.linalg.lstsq(torch.cat([x, ones], 1), y)`。",
    ),
    no_bias=Text(
        "Your map is linear, without a bias: on data whose `y` has an offset, it misses it "
        "(largest error {gap:.2f}). An affine map is `x @ W + b`: add a column of ones to "
        "`x` before `torch.linalg.lstsq`, and to the new rows before applying it.",
        "你的映射是线性的，没有偏置。在 `y` 带有偏移的数据上，它漏掉了这个偏移（最大误差 {gap:.2f}）。"
        "仿射映射是 `x @ W + b`，请在 `torch.linalg.lstsq` 之前给 `x` 加一列 1，"
        "应用时也给新的行加上这一列。",
    ),
    not_least_squares=Text(
        "The map your function returned does not predict what the least-squares fit does "
        "(largest difference {gap:.2f}): solve `torch.linalg.lstsq(inputs, y)` with "
        "`inputs = torch.cat([x, ones], 1)`.",
        "你的函数返回的映射与最小二乘拟合的预测不一致（最大差值 {gap:.2f}），请用 "
        "`inputs = torch.cat([x, ones], 1)` 求解 `torch.linalg.lstsq(inputs, y)`。",
    ),
)
def _fit_affine(answer: object) -> Values:
    fit_affine = require_callable(answer)
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(200, 6, generator=generator)
    weight = torch.randn(6, 4, generator=generator)
    y = x @ weight + 3.0 + 0.1 * torch.randn(200, 4, generator=generator)
    new = torch.randn(20, 6, generator=generator)

    def fitted(inputs: torch.Tensor, new_inputs: torch.Tensor) -> torch.Tensor:
        solution: torch.Tensor = torch.linalg.lstsq(inputs, y).solution
        return new_inputs @ solution

    ones, new_ones = torch.ones(200, 1), torch.ones(20, 1)
    expected = fitted(torch.cat([x, ones], 1), torch.cat([new, new_ones], 1))
    linear = fitted(x, new)
    translate = fit_affine(x.clone(), y.clone())
    if not callable(translate):
        raise Problem("not_callable_map", got=type(translate).__name__)
    got = translate(new.clone())
    if not isinstance(got, torch.Tensor) or got.shape != expected.shape:
        shape = list(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__
        sizes = {"x": list(x.shape), "y": list(y.shape), "n": 20, "expected": [20, 4]}
        raise Problem("wrong_shape", got=shape, **sizes)
    gap = (got.detach().float() - expected).abs().max().item()
    # a 7-column problem with well-spread data: lstsq, pinv and the normal equations
    # agree to about 1e-5 in float32; 1e-3 forgives any of them, and a missing bias
    # (offset 3) misses by whole units
    if gap < 1e-3:
        return {"gap": gap}
    if torch.allclose(got.detach().float(), linear, atol=1e-3):
        raise Problem("no_bias", gap=gap)
    raise Problem("not_least_squares", gap=gap)


# -- page 34: attention heads and ablation ------------------------------------------------

#: Width of one head's output in the input of ``attn.out`` (the page's model: 64 / 4 heads).
_HEAD_WIDTH = 16


def _columns(head: int) -> slice:
    return slice(_HEAD_WIDTH * head, _HEAD_WIDTH * (head + 1))


def _through_pre_hook(hook: Callable[..., Any], x: torch.Tensor) -> torch.Tensor:
    """What a layer receives when the pre-hook ``hook`` sits on it and it is called with ``x``.

    The layer is an ``nn.Identity`` standing for ``attn.out``: its output is the
    (edited) input. The shared problems come from here: the hook returned None,
    edited the caller's tensor, or returned something that is not the input.
    """
    layer = watch(nn.Identity())
    before = x.clone()
    returned: list[object] = []

    def spy(module: nn.Module, args: tuple[Any, ...]) -> Any:
        returned.append(hook(module, args))
        return returned[-1]

    with layer.register_forward_pre_hook(spy), torch.no_grad():
        received = layer(x)
    if not torch.equal(x, before):
        raise Problem("changed_in_place")
    if returned and returned[0] is None:
        raise Problem("returned_none")
    if not isinstance(received, torch.Tensor) or received.shape != x.shape:
        raise Problem("not_the_input", got=returned_type(returned[0] if returned else None))
    return received


# the messages every pre-hook of page 34 may need
_PRE_HOOK = {
    "changed_in_place": Text(
        "Your pre-hook changed the caller's tensor in place: after the call, `args[0]` "
        "itself holds the edit, and so does every other hook or layer that keeps it. Edit "
        "a copy, `x = args[0].clone()`, and return `(x,)`.",
        "你的预钩子原地修改了调用者的张量，调用之后，`args[0]` 本身带上了修改，保存着它的其他钩子"
        "或层也都一样。请修改一份副本 `x = args[0].clone()`，并返回 `(x,)`。",
    ),
    "returned_none": Text(
        "Your pre-hook returned None, so `attn.out` received its input unchanged: a "
        "forward pre-hook changes the input only by returning the new one, as a tuple "
        "`(x,)`.",
        "你的预钩子返回了 None，所以 `attn.out` 收到的输入没有变化。前向预钩子只有返回新的输入"
        "（一个元组 `(x,)`）才能改变输入。",
    ),
    "not_the_input": Text(
        "Your pre-hook returned a `{got}` that `attn.out` cannot take as its input: return "
        "the edited heads as a tuple of one tensor of the input's shape, `(x,)`.",
        "你的预钩子返回了一个 `{got}`，`attn.out` 无法把它当作输入。请把修改后的各头输出作为"
        "只含一个张量、形状与输入相同的元组返回，`(x,)`。",
    ),
}


def _heads_input(generator: torch.Generator, batch: int = 6) -> torch.Tensor:
    """A random input of ``attn.out``: ``[batch, 15, 64]``, four heads side by side."""
    return torch.randn(batch, 15, 4 * _HEAD_WIDTH, generator=generator)


@exercise(
    "34.1",
    passed=Text(
        "Your pre-hook gave each sentence head {head}'s output from another sentence of "
        "the batch, and left the other heads' columns as they were: a resample ablation.",
        "你的预钩子让每个句子都得到批次中另一个句子上头 {head} 的输出，其他头的列保持不变，"
        "这就是重采样消融。",
    ),
    all_heads=Text(
        "Your pre-hook moved every head's output to another sentence, not only head "
        "{head}'s: that ablates the whole attention layer. Roll only the head's columns, "
        "`x[..., 16 * head:16 * (head + 1)]`.",
        "你的预钩子把每个头的输出都换成了另一个句子的，而不只是头 {head} 的，这相当于消融了整个"
        "注意力层。请只对该头的列做滚动，`x[..., 16 * head:16 * (head + 1)]`。",
    ),
    other_columns=Text(
        "Your pre-hook changed columns of the input that belong to another head than "
        "{head}: head `h` holds columns `16 * h` to `16 * (h + 1)`.",
        "你的预钩子改动了不属于头 {head} 的列，头 `h` 占据第 `16 * h` 到 `16 * (h + 1)` 列。",
    ),
    same_sentence=Text(
        "In some sentences head {head}'s columns are not another sentence's output of the "
        "head: roll along the batch, `torch.roll(x, 1, dims=0)`, not along the positions "
        "(`dims=1`), so that each sentence gets the one before it.",
        "在某些句子中，头 {head} 的列不是另一个句子上该头的输出。请沿批次滚动，"
        "`torch.roll(x, 1, dims=0)`，而不是沿位置滚动（`dims=1`），让每个句子得到它前面那个句子的输出。",
    ),
    **_PRE_HOOK,
)
def _resample_head(answer: object) -> Values:
    resample_head = require_callable(answer)
    generator = torch.Generator().manual_seed(0)
    for head in (3, 1):
        x = _heads_input(generator)
        received = _through_pre_hook(resample_head(head), x)
        columns = _columns(head)
        others = torch.ones(x.shape[-1], dtype=torch.bool)
        others[columns] = False
        if not torch.equal(received[..., others], x[..., others]):
            rolled = torch.roll(x, 1, dims=0)
            if torch.equal(received, rolled):
                raise Problem("all_heads", head=head)
            raise Problem("other_columns", head=head)
        # each sentence's columns must be another sentence's, whole (all positions)
        for i in range(len(x)):
            if not any(
                torch.equal(received[i, :, columns], x[j, :, columns])
                for j in range(len(x))
                if j != i
            ):
                raise Problem("same_sentence", head=head)
    return {"head": 3}


@exercise(
    "34.2",
    passed=Text(
        "Your pre-hook put the given values in the columns of every head you named, "
        "`{heads}` and `{other}`, and left the other heads as they were.",
        "你的预钩子把给定的值放进了你指定的每个头的列中（`{heads}` 和 `{other}`），"
        "其他头保持不变。",
    ),
    missed_heads=Text(
        "For `heads={heads}`, head {missed}'s columns kept their own output: only some of "
        "the heads were replaced. Make one copy, `x = args[0].clone()`, before the loop, "
        "then replace each head's columns in that copy.",
        "当 `heads={heads}` 时，头 {missed} 的列保留了自己的输出，只有部分头被替换了。"
        "请在循环之前只复制一次，`x = args[0].clone()`，再在这份副本中替换每个头的列。",
    ),
    wrong_values=Text(
        "For `heads={heads}`, head {head}'s columns do not hold the same columns of the "
        "values given, `values[..., columns]`.",
        "当 `heads={heads}` 时，头 {head} 的列中不是给定值的同样那些列 `values[..., columns]`。",
    ),
    other_columns=Text(
        "For `heads={heads}`, your pre-hook changed head {head}'s columns, a head that was "
        "not named: head `h` holds columns `16 * h` to `16 * (h + 1)`.",
        "当 `heads={heads}` 时，你的预钩子改动了头 {head} 的列，而这个头并没有被指定。"
        "头 `h` 占据第 `16 * h` 到 `16 * (h + 1)` 列。",
    ),
    **_PRE_HOOK,
)
def _replace_heads(answer: object) -> Values:
    replace_heads = require_callable(answer)
    generator = torch.Generator().manual_seed(0)
    cases = [(1, 2, 3), (0, 2)]
    for heads in cases:
        x = _heads_input(generator)
        values = torch.randn(15, 4 * _HEAD_WIDTH, generator=generator)
        received = _through_pre_hook(replace_heads(heads, values), x)
        for head in range(4):
            got, columns = received[..., _columns(head)], _columns(head)
            if head not in heads and not torch.equal(got, x[..., columns]):
                raise Problem("other_columns", heads=list(heads), head=head)
            if head in heads and torch.equal(got, x[..., columns]):
                raise Problem("missed_heads", heads=list(heads), missed=head)
            if head in heads and not torch.equal(got, values[..., columns].expand_as(got)):
                raise Problem("wrong_values", heads=list(heads), head=head)
    return {"heads": list(cases[0]), "other": list(cases[1])}


@exercise(
    "34.3",
    passed=Text(
        "Your pre-hook replaced head {head}'s columns at the positions you named, "
        "`{positions}` and then `{other}`, and nowhere else.",
        "你的预钩子只在你指定的位置（`{positions}`，然后是 `{other}`）替换了头 {head} 的列，"
        "其他地方都没有动。",
    ),
    all_positions=Text(
        "For `positions={positions}`, your pre-hook replaced head {head}'s columns at every "
        "position: index the positions too, `x[:, positions, columns] = values[positions, "
        "columns]` (dimension 1 of `[batch, positions, width]`).",
        "当 `positions={positions}` 时，你的预钩子在每个位置都替换了头 {head} 的列。"
        "请同时按位置索引，`x[:, positions, columns] = values[positions, columns]`"
        "（`[batch, positions, width]` 的第 1 维）。",
    ),
    wrong_dimension=Text(
        "For `positions={positions}`, your pre-hook did not replace head {head}'s columns "
        "at those positions of every sentence: the positions are dimension 1 of `[batch, "
        "positions, width]`, so index `x[:, positions, columns]`, not `x[positions, ...]`.",
        "当 `positions={positions}` 时，你的预钩子没有在每个句子的这些位置上替换头 {head} 的列。"
        "位置是 `[batch, positions, width]` 的第 1 维，所以要索引 `x[:, positions, columns]`，"
        "而不是 `x[positions, ...]`。",
    ),
    other_columns=Text(
        "Your pre-hook changed columns of another head than {head}: head `h` holds columns "
        "`16 * h` to `16 * (h + 1)`.",
        "你的预钩子改动了头 {head} 以外的列，头 `h` 占据第 `16 * h` 到 `16 * (h + 1)` 列。",
    ),
    **_PRE_HOOK,
)
def _replace_head_at(answer: object) -> Values:
    replace_head_at = require_callable(answer)
    generator = torch.Generator().manual_seed(0)
    head, columns = 3, _columns(3)
    cases = [[14], list(range(14)), [2, 10]]
    for positions in cases:
        x = _heads_input(generator, batch=15)  # as many sentences as positions
        values = torch.randn(15, 4 * _HEAD_WIDTH, generator=generator)
        received = _through_pre_hook(replace_head_at(head, values, positions), x)
        expected = x.clone()
        expected[:, positions, columns] = values[positions, columns]
        if torch.equal(received, expected):
            continue
        if not torch.equal(received[..., : columns.start], x[..., : columns.start]):
            raise Problem("other_columns", head=head)
        everywhere = x.clone()
        everywhere[..., columns] = values[..., columns]
        shown = {"head": head, "positions": positions}
        if torch.equal(received, everywhere):
            raise Problem("all_positions", **shown)
        raise Problem("wrong_dimension", **shown)
    return {"head": head, "positions": cases[0], "other": cases[2]}


# -- page 35: activation patching ------------------------------------------------------------


def _through_forward_hook(
    hook: Callable[..., Any], module: nn.Module, x: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``module(x)`` without and with the forward hook ``hook``: (plain, hooked) outputs."""
    module = watch(module)
    with torch.no_grad():
        plain = module(x)
        with module.register_forward_hook(hook):
            hooked = module(x)
    if not isinstance(hooked, torch.Tensor) or hooked.shape != plain.shape:
        raise Problem(
            "replaced_output", layer=type(module).__name__, returned=returned_type(hooked)
        )
    return plain, hooked


_RETURNED_NONE = Text(
    "The layer's output did not change: your hook edited a copy (`out.clone()`) but "
    "returned None. A forward hook replaces the output only with what it returns: "
    "`return out`.",
    "这一层的输出没有变化，你的钩子修改的是一份副本（`out.clone()`），却返回了 None。"
    "前向钩子只会用它返回的值替换输出：`return out`。",
)


@exercise(
    "35.1",
    passed=Text(
        "Your hook replaced the last position of the output with the clean run's, in every "
        "sentence, and left the other positions as the layer computed them.",
        "你的钩子在每个句子中都把输出的最后一个位置换成了干净运行的值，其他位置保持这一层"
        "自己算出的结果。",
    ),
    returned_none=_RETURNED_NONE,
    all_positions=Text(
        "Your hook replaced the output at every position, not only at the last: that "
        "patches the whole clean output in. Replace `out[:, -1]` only, with "
        "`clean_output[:, -1]`.",
        "你的钩子替换了所有位置上的输出，而不只是最后一个位置，这等于把干净运行的整个输出都修补进去了。"
        "请只替换 `out[:, -1]`，换成 `clean_output[:, -1]`。",
    ),
    last_sentence=Text(
        "Your hook replaced the last *sentence* of the batch, `out[-1]`: the output is "
        "`[batch, positions, width]`, so the last position is `out[:, -1]`.",
        "你的钩子替换的是批次中的最后一个*句子* `out[-1]`。输出的形状是 "
        "`[batch, positions, width]`，所以最后一个位置是 `out[:, -1]`。",
    ),
    wrong_position=Text(
        "Your hook did not put `clean_output[:, -1]` at the last position of the output, "
        "`out[:, -1]`, or it changed other positions too.",
        "你的钩子没有把 `clean_output[:, -1]` 放到输出的最后一个位置 `out[:, -1]` 上，"
        "或者它还改动了其他位置。",
    ),
    replaced_output=Text(
        "The hook on `{layer}` returned a `{returned}`, not an output of the layer's "
        "shape: return the edited output, `out`.",
        "`{layer}` 上的钩子返回了一个 `{returned}`，而不是与这一层输出形状相同的张量，"
        "请返回修改后的输出 `out`。",
    ),
)
def _put_last(answer: object) -> Values:
    put_last = require_callable(answer)
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(4, 6, 8, generator=generator)
    clean_output = torch.randn(4, 6, 8, generator=generator)
    plain, hooked = _through_forward_hook(put_last(clean_output.clone()), nn.Linear(8, 8), x)
    expected = plain.clone()
    expected[:, -1] = clean_output[:, -1]
    if torch.equal(hooked, expected):
        return {}
    if torch.equal(hooked, plain):
        raise Problem("returned_none")
    if torch.equal(hooked, clean_output):
        raise Problem("all_positions")
    last_sentence = plain.clone()
    last_sentence[-1] = clean_output[-1]
    if torch.equal(hooked, last_sentence):
        raise Problem("last_sentence")
    raise Problem("wrong_position")


@exercise(
    "35.2",
    passed=Text(
        "Your hook put head {head}'s clean pattern into the softmax's output, every "
        "position, and left the other heads' patterns as the corrupted run computed them.",
        "你的钩子把头 {head} 的干净注意力模式放进了 softmax 的输出（所有位置），"
        "其他头的模式保持损坏运行算出的结果。",
    ),
    returned_none=_RETURNED_NONE,
    all_heads=Text(
        "Your hook replaced the pattern of every head, not only head {head}'s: the "
        "output is `[batch, heads, positions, positions]`, so head {head} is "
        "`out[:, {head}]`.",
        "你的钩子替换了所有头的模式，而不只是头 {head} 的。输出的形状是 "
        "`[batch, heads, positions, positions]`，所以头 {head} 是 `out[:, {head}]`。",
    ),
    wrong_dimension=Text(
        "Your hook did not replace `out[:, {head}]`, head {head}'s whole pattern: the "
        "softmax's output is `[batch, heads, positions, positions]`, and the head is "
        "dimension 1 (`out[..., {head}]` is a column of every head's pattern).",
        "你的钩子替换的不是头 {head} 的整个模式 `out[:, {head}]`。softmax 的输出形状是 "
        "`[batch, heads, positions, positions]`，头在第 1 维（`out[..., {head}]` 是每个头的模式中的一列）。",
    ),
    replaced_output=Text(
        "The hook on `{layer}` returned a `{returned}`, not an output of the layer's "
        "shape: return the whole edited pattern, `out`, all heads.",
        "`{layer}` 上的钩子返回了一个 `{returned}`，而不是与这一层输出形状相同的张量，"
        "请返回修改后的整个模式 `out`（包含所有头）。",
    ),
)
def _patch_pattern(answer: object) -> Values:
    patch_pattern = require_callable(answer)
    generator = torch.Generator().manual_seed(0)
    scores = torch.randn(3, 4, 6, 6, generator=generator)
    clean_pattern = torch.randn(3, 4, 6, 6, generator=generator).softmax(-1)
    for head in (3, 1):
        hook = patch_pattern(clean_pattern.clone(), head)
        plain, hooked = _through_forward_hook(hook, nn.Softmax(dim=-1), scores)
        expected = plain.clone()
        expected[:, head] = clean_pattern[:, head]
        if torch.equal(hooked, expected):
            continue
        if torch.equal(hooked, plain):
            raise Problem("returned_none")
        if torch.equal(hooked, clean_pattern):
            raise Problem("all_heads", head=head)
        raise Problem("wrong_dimension", head=head)
    return {"head": 3}


@exercise(
    "35.3",
    passed=Text(
        "In all {n} prompts your function put at position 10 a name that is neither of "
        "the sentence's two names, and changed nothing else (not even the sentences you "
        "were given).",
        "在全部 {n} 个提示中，你的函数都在位置 10 放了一个既不是句中第一个名字、也不是第二个名字的名字，"
        "其他什么都没有改（包括传入的句子）。",
    ),
    not_prompts=Text(
        "`third_name(sentences)` returned `{got}`; it should return the prompts, a "
        "`[sentences, 15]` tensor of token ids like `sentences.prompts`.",
        "`third_name(sentences)` 返回了 `{got}`；它应当返回提示，即一个像 `sentences.prompts` "
        "那样形状为 `[sentences, 15]` 的词元编号张量。",
    ),
    changed_in_place=Text(
        "Your function changed the sentences it was given: `sentences.prompts` is a view "
        "of `sentences.tokens`, so writing into it edits the clean sentences too. Write "
        "into a copy, `sentences.prompts.clone()`.",
        "你的函数修改了传入的句子。`sentences.prompts` 是 `sentences.tokens` 的一个视图，"
        "写入它也会改动干净的句子。请写入一份副本 `sentences.prompts.clone()`。",
    ),
    other_positions=Text(
        "Your function changed the prompts at position(s) {positions}: only position 10, "
        "the subject, should change.",
        "你的函数改动了提示中的位置 {positions}，应当只改位置 10，即主语。",
    ),
    not_a_name=Text(
        "In {count} prompt(s), position 10 holds `{word}`, which is not a name: take the "
        "third name from the names, tokens 10 to 25 of `lm.VOCAB`.",
        "在 {count} 个提示中，位置 10 上是 `{word}`，它不是名字。请从名字中选第三个名字，"
        "即 `lm.VOCAB` 中的第 10 到 25 个词元。",
    ),
    in_sentence=Text(
        "In {count} prompt(s), position 10 holds a name that is already in the sentence, "
        "such as `{text}`: the third name must differ from both names, the answer "
        "included (`sentences.answers`).",
        "在 {count} 个提示中，位置 10 上的名字已经在句子中出现过，例如 `{text}`。"
        "第三个名字必须与两个名字都不同，包括答案（`sentences.answers`）。",
    ),
)
def _third_name(answer: object) -> Values:
    third_name = require_callable(answer)
    sentences = lm.make_names(200, seed=4, split="test")
    tokens = sentences.tokens.clone()
    got = third_name(sentences)
    if not torch.equal(sentences.tokens, tokens):
        raise Problem("changed_in_place")
    prompts = tokens[:, : lm.POSITIONS["IO"]]
    if not isinstance(got, torch.Tensor) or got.shape != prompts.shape:
        shown = f"a tensor of shape {list(got.shape)}" if isinstance(got, torch.Tensor) else None
        raise Problem("not_prompts", got=shown or f"a {type(got).__name__}")
    subject = lm.POSITIONS["S"]
    changed = (got != prompts).any(0).nonzero().flatten().tolist()
    if set(changed) - {subject}:
        raise Problem("other_positions", positions=sorted(set(changed) - {subject}))
    names = {lm.VOCAB.index(name) for name in lm.NAMES}
    third = got[:, subject].tolist()
    not_names = [t for t in third if t not in names]
    if not_names:
        word = lm.VOCAB[not_names[0]] if 0 <= not_names[0] < len(lm.VOCAB) else not_names[0]
        raise Problem("not_a_name", count=len(not_names), word=word)
    a, b = prompts[:, lm.POSITIONS["A"]], prompts[:, lm.POSITIONS["B"]]
    repeated = (got[:, subject] == a) | (got[:, subject] == b)
    if repeated.any():
        first = int(repeated.nonzero()[0])
        raise Problem("in_sentence", count=int(repeated.sum()), text=lm.decode(got[first]))
    return {"n": len(got)}


# -- page 36: steering -------------------------------------------------------------------------


@exercise(
    "36.1",
    passed=Text(
        "Your direction is the mean of the first set's residuals minus the mean of the "
        "second's, also when the two sets have different sizes ({sizes}).",
        "你的方向是第一组残差的均值减去第二组残差的均值，两组大小不同时（{sizes}）也是如此。",
    ),
    not_a_vector=Text(
        "`difference_of_means(residuals, in_first)` returned `{got}`; it should return one "
        "vector of the residuals' width, `[{width}]`.",
        "`difference_of_means(residuals, in_first)` 返回了 `{got}`；它应当返回一个与残差宽度相同的向量，"
        "`[{width}]`。",
    ),
    reversed=Text(
        "Your direction points the other way: it is the second set's mean minus the "
        "first's. Steering adds the direction, so it must point from the second set to "
        "the first: `residuals[in_first].mean(0) - residuals[~in_first].mean(0)`.",
        "你的方向反了，它是第二组的均值减去第一组的均值。引导时要加上这个方向，所以它必须从第二组指向"
        "第一组：`residuals[in_first].mean(0) - residuals[~in_first].mean(0)`。",
    ),
    sums=Text(
        "Your direction is a difference of sums, not of means: with {sizes} residuals in "
        "the two sets, the larger set weighs more and the length grows with the number of "
        "sentences. Use `.mean(0)` for each set.",
        "你的方向是两个和之差，而不是两个均值之差。两组各有 {sizes} 个残差，大的那一组权重更大，"
        "方向的长度也会随句子数增长。请对每一组用 `.mean(0)`。",
    ),
    wrong_direction=Text(
        "Your direction is not the mean of the residuals where `in_first` is True minus "
        "the mean of those where it is False (largest difference {gap:.3f}).",
        "你的方向不是 `in_first` 为 True 的残差均值减去为 False 的残差均值（最大差值 {gap:.3f}）。",
    ),
)
def _difference_of_means(answer: object) -> Values:
    difference_of_means = require_callable(answer)
    generator = torch.Generator().manual_seed(0)
    residuals = torch.randn(50, 8, generator=generator) + torch.linspace(0, 1, 8)
    in_first = torch.zeros(50, dtype=torch.bool)
    in_first[:20] = True
    in_first = in_first[torch.randperm(50, generator=generator)]
    first, second = residuals[in_first], residuals[~in_first]
    sizes = f"{len(first)}, {len(second)}"
    got = difference_of_means(residuals.clone(), in_first.clone())
    if not isinstance(got, torch.Tensor) or got.shape != (8,):
        shown = f"a tensor of shape {list(got.shape)}" if isinstance(got, torch.Tensor) else None
        raise Problem("not_a_vector", got=shown or f"a {type(got).__name__}", width=8)
    got = got.detach().float()
    expected = first.mean(0) - second.mean(0)
    # means of 20 and 30 numbers: another order of the sums changes the last bits only
    if torch.allclose(got, expected, atol=1e-5):
        return {"sizes": sizes}
    if torch.allclose(got, -expected, atol=1e-5):
        raise Problem("reversed")
    if torch.allclose(got.abs(), (first.sum(0) - second.sum(0)).abs(), atol=1e-4):
        raise Problem("sums", sizes=sizes)
    raise Problem("wrong_direction", gap=(got - expected).abs().max().item())


@exercise(
    "36.2",
    passed=Text(
        "With your function and a random vector of the check's, {changed} of {n} answers "
        "of the page's model changed, exactly as with the vector added at the last "
        "position after the block, and your hook was removed afterwards.",
        "用你的函数和检查自带的一个随机向量，本页模型的 {n} 个答案中有 {changed} 个改变了，与在该块之后的最后一个位置加上"
        "这个向量的结果完全一致，而且你的钩子在之后被移除了。",
    ),
    not_tokens=Text(
        "`steered_answers(model, block, prompts, vector)` returned `{got}`; it should return "
        "the next token of each prompt, `[{n}]` token ids: "
        "`model(prompts)[:, -1].argmax(-1)`.",
        "`steered_answers(model, block, prompts, vector)` 返回了 `{got}`；它应当返回每个提示的下一个"
        "词元，即 `[{n}]` 个词元编号：`model(prompts)[:, -1].argmax(-1)`。",
    ),
    not_steered=Text(
        "The answers are the model's own, as if nothing was added: did the hook return "
        "the steered output? A forward hook changes the output only by returning it.",
        "这些答案与模型自己的答案相同，就像什么都没加一样。钩子返回引导后的输出了吗？"
        "前向钩子只有返回输出才能改变它。",
    ),
    opposite=Text(
        "The answers are those of the vector *subtracted*: add `vector` itself to the "
        "output; the exercise passes `-1` times the direction as the vector.",
        "这些答案是*减去*这个向量时的答案。请把 `vector` 本身加到输出上；练习中传入的向量就是"
        "方向的 `-1` 倍。",
    ),
    every_position=Text(
        "The answers are those of the vector added at every position: add it at the last "
        "position only, `steered[:, -1] += vector`.",
        "这些答案是在每个位置都加上这个向量时的答案。请只在最后一个位置加，"
        "`steered[:, -1] += vector`。",
    ),
    wrong_answers=Text(
        "{wrong} of {n} answers differ from those of the model with `vector` added to the "
        "output of `block` at the last position.",
        "{n} 个答案中有 {wrong} 个与在 `block` 输出的最后一个位置加上 `vector` 之后的模型答案不同。",
    ),
)
def _steered_answers(answer: object) -> Values:
    steered_answers = require_callable(answer)
    # the trained model (an untrained one gives one answer to every prompt, steered or
    # not): with this vector at the last position after block 1, most of the 64 answers
    # change, and adding it elsewhere or the other way gives other answers
    model = watch(lm.pretrained_lm())
    block = model.blocks[1]
    prompts = lm.make_names(64, seed=6).prompts
    vector = 2 * torch.randn(64, generator=torch.Generator().manual_seed(0))

    def answers_with(edit: Callable[[torch.Tensor], None] | None) -> torch.Tensor:
        def hook(module: nn.Module, args: tuple[Any, ...], output: torch.Tensor) -> torch.Tensor:
            steered = output.clone()
            if edit is not None:
                edit(steered)
            return steered

        with block.register_forward_hook(hook), torch.no_grad():
            found: torch.Tensor = model(prompts)[:, -1].argmax(-1)
        return found

    def add_last(x: torch.Tensor) -> None:
        x[:, -1] += vector

    def subtract_last(x: torch.Tensor) -> None:
        x[:, -1] -= vector

    def add_everywhere(x: torch.Tensor) -> None:
        x += vector

    expected = answers_with(add_last)
    others = {
        "not_steered": answers_with(None),
        "opposite": answers_with(subtract_last),
        "every_position": answers_with(add_everywhere),
    }
    got = steered_answers(model, block, prompts.clone(), vector.clone())
    n = len(prompts)
    if not isinstance(got, torch.Tensor) or got.shape != (n,) or got.is_floating_point():
        shown = f"a tensor of shape {list(got.shape)}" if isinstance(got, torch.Tensor) else None
        raise Problem("not_tokens", got=shown or f"a {type(got).__name__}", n=n)
    if torch.equal(got, expected):
        return {"changed": int((expected != others["not_steered"]).sum()), "n": n}
    for problem, tokens in others.items():
        if torch.equal(got, tokens):  # the check's vector changes many answers each way
            raise Problem(problem)
    raise Problem("wrong_answers", wrong=int((got != expected).sum()), n=n)


@exercise(
    "36.3",
    passed=Text(
        "Your hook added the vector at position 14 when it saw the 15 positions of the "
        "prompt, and changed nothing when it saw 16 or 17 (the later steps of "
        "generation).",
        "你的钩子在看到提示的 15 个位置时，在位置 14 加上了这个向量；看到 16 或 17 个位置"
        "（生成的后续步骤）时什么也没改。",
    ),
    returned_none=_RETURNED_NONE,
    every_step=Text(
        "When your hook saw {length} positions (a later step of generation), it changed "
        "the output too: check the length first, `if output.shape[1] != 15: return None`.",
        "当你的钩子看到 {length} 个位置时（生成的后续步骤），它也改动了输出。请先检查长度，"
        "`if output.shape[1] != 15: return None`。",
    ),
    all_positions=Text(
        "On the prompt your hook changed positions other than 14 too: add the vector at "
        "position 14 only, `steered[:, 14] += vector`.",
        "在提示上，你的钩子还改动了位置 14 以外的位置。请只在位置 14 加上这个向量，"
        "`steered[:, 14] += vector`。",
    ),
    wrong_push=Text(
        "On the prompt, position 14 of the output is not the layer's output plus the "
        "vector (alpha 1): `steered[:, 14] += vector`.",
        "在提示上，输出的位置 14 不等于这一层的输出加上这个向量（alpha 为 1）："
        "`steered[:, 14] += vector`。",
    ),
    replaced_output=Text(
        "The hook on `{layer}` returned a `{returned}`, not an output of the layer's "
        "shape: return the whole steered output, or None to leave it.",
        "`{layer}` 上的钩子返回了一个 `{returned}`，而不是与这一层输出形状相同的张量。"
        "请返回整个引导后的输出，或者返回 None 保持原样。",
    ),
)
def _prompt_only(answer: object) -> Values:
    prompt_only = require_callable(answer)
    generator = torch.Generator().manual_seed(0)
    vector = torch.randn(8, generator=generator)
    for length in (15, 16, 17):
        x = torch.randn(3, length, 8, generator=generator)
        plain, hooked = _through_forward_hook(prompt_only(vector.clone()), nn.Linear(8, 8), x)
        if length != 15:
            if not torch.equal(hooked, plain):
                raise Problem("every_step", length=length)
            continue
        if torch.equal(hooked, plain):
            raise Problem("returned_none")
        if not torch.equal(hooked[:, :14], plain[:, :14]):
            raise Problem("all_positions")
        # the hook adds in float32 as the check does: equal up to rounding
        if not torch.allclose(hooked[:, 14], plain[:, 14] + vector, atol=1e-6):
            raise Problem("wrong_push")
    return {}


# -- page 37: interpretability libraries ---------------------------------------------------------


@exercise(
    "37.1",
    passed=Text(
        "Your function returned the output of `blocks[1].attn.softmax`, `{shape}`: the "
        "attention pattern of every head, whose rows sum to 1. A hook point on the "
        "softmax's output sees the same tensor.",
        "你的函数返回了 `blocks[1].attn.softmax` 的输出 `{shape}`，即每个头的注意力模式，"
        "每一行的和为 1。softmax 输出上的钩子点看到的也是同一个张量。",
    ),
    not_a_tensor=Text(
        "`pattern_by_hook(model, tokens)` returned a `{got}`; it should return one tensor, "
        "the `output` the forward hook on `model.blocks[1].attn.softmax` received.",
        "`pattern_by_hook(model, tokens)` 返回了一个 `{got}`；它应当返回一个张量，"
        "即 `model.blocks[1].attn.softmax` 上的前向钩子收到的 `output`。",
    ),
    scores=Text(
        "Your function returned the *input* of the softmax, the scaled scores (with "
        "`-inf` above the diagonal), not the pattern: keep `output`, the third argument "
        "of a forward hook, not `args[0]`.",
        "你的函数返回的是 softmax 的*输入*，即缩放后的得分（对角线上方是 `-inf`），而不是注意力模式。"
        "请保存前向钩子的第三个参数 `output`，而不是 `args[0]`。",
    ),
    wrong_block=Text(
        "Your function returned the pattern of block 0: `model.blocks[1]` is the second "
        "block (the blocks count from 0).",
        "你的函数返回的是块 0 的注意力模式。`model.blocks[1]` 是第二个块（块从 0 开始编号）。",
    ),
    one_head=Text(
        "Your function returned one head's pattern; return the whole output, `[batch, "
        "heads, positions, positions]`, and pick head 3 afterwards, `pattern[:, 3]`.",
        "你的函数只返回了一个头的模式。请返回整个输出 `[batch, heads, positions, positions]`，"
        "之后再取出头 3，`pattern[:, 3]`。",
    ),
    wrong_pattern=Text(
        "The tensor your function returned is not the output of "
        "`model.blocks[1].attn.softmax` for `tokens`: register a forward hook there, keep "
        "its `output`, run the model, remove the hook and return what it kept.",
        "你的函数返回的张量不是 `model.blocks[1].attn.softmax` 对 `tokens` 的输出。请在那里注册"
        "一个前向钩子，保存它的 `output`，运行模型，移除钩子，然后返回保存的张量。",
    ),
)
def _pattern_by_hook(answer: object) -> Values:
    pattern_by_hook = require_callable(answer)
    model = _tiny_lm()
    tokens = lm.make_names(4, seed=7).prompts
    blocks = [b for b in model.blocks if isinstance(b, lm.Block)]
    softmax = [_recorded(model, b.attn.softmax, tokens) for b in blocks]
    expected = softmax[1]["output"]
    got = pattern_by_hook(model, tokens)
    if not isinstance(got, torch.Tensor):
        raise Problem("not_a_tensor", got=type(got).__name__)
    if _same(got, expected):
        return {"shape": list(expected.shape)}
    if got.shape == expected.shape and torch.equal(got.detach(), softmax[1]["input"]):
        raise Problem("scores")  # equal, -inf included (allclose would say no)
    if _same(got, softmax[0]["output"]):
        raise Problem("wrong_block")
    if any(_same(got, expected[:, h]) for h in range(expected.shape[1])):
        raise Problem("one_head")
    raise Problem("wrong_pattern")


@exercise(
    "37.2",
    passed=Text(
        "Your hook wrote the clean value into position {position} of the output, in every "
        "sentence, and left the other positions as the layer computed them: what "
        "`nn_model.blocks[0].output[:, S] = clean_resid[:, S]` does inside a trace.",
        "你的钩子在每个句子中都把干净的值写入了输出的位置 {position}，其他位置保持这一层自己算出的结果，"
        "这正是 trace 中 `nn_model.blocks[0].output[:, S] = clean_resid[:, S]` 所做的事。",
    ),
    returned_none=_RETURNED_NONE,
    all_positions=Text(
        "Your hook replaced the output at every position, not only at position "
        "{position}: write `output[:, position] = clean_output[:, position]`.",
        "你的钩子替换了所有位置上的输出，而不只是位置 {position}，"
        "请写 `output[:, position] = clean_output[:, position]`。",
    ),
    one_sentence=Text(
        "Your hook replaced *sentence* {position} of the batch, `output[position]`: the "
        "output is `[batch, positions, width]`, so the position is `output[:, position]`.",
        "你的钩子替换的是批次中的第 {position} 个*句子* `output[position]`。输出的形状是 "
        "`[batch, positions, width]`，所以位置要写成 `output[:, position]`。",
    ),
    wrong_position=Text(
        "Your hook did not put `clean_output[:, {position}]` at position {position} of "
        "the output (and only there).",
        "你的钩子没有把 `clean_output[:, {position}]` 放到输出的位置 {position} 上"
        "（并且只放在那里）。",
    ),
    replaced_output=Text(
        "The hook on `{layer}` returned a `{returned}`, not an output of the layer's "
        "shape: return the whole patched output.",
        "`{layer}` 上的钩子返回了一个 `{returned}`，而不是与这一层输出形状相同的张量，"
        "请返回修补后的整个输出。",
    ),
)
def _patch_position(answer: object) -> Values:
    patch_position = require_callable(answer)
    generator = torch.Generator().manual_seed(0)
    for position in (2, 4):
        x = torch.randn(6, 7, 8, generator=generator)
        clean_output = torch.randn(6, 7, 8, generator=generator)
        hook = patch_position(clean_output.clone(), position)
        plain, hooked = _through_forward_hook(hook, nn.Linear(8, 8), x)
        expected = plain.clone()
        expected[:, position] = clean_output[:, position]
        if torch.equal(hooked, expected):
            continue
        if torch.equal(hooked, plain):
            raise Problem("returned_none")
        if torch.equal(hooked, clean_output):
            raise Problem("all_positions", position=position)
        one_sentence = plain.clone()
        one_sentence[position] = clean_output[position]
        if torch.equal(hooked, one_sentence):
            raise Problem("one_sentence", position=position)
        raise Problem("wrong_position", position=position)
    return {"position": 2}


@exercise(
    "37.3",
    passed=Text(
        "Your hook raised `{error}`; the error reached the caller, and {left} hooks were "
        "left on the model: a `hooks` context manager that removes its handles in "
        "`finally` cleans up whether its block ends normally or with an error.",
        "你的钩子抛出了 `{error}`；这个错误传到了调用者，模型上留下了 {left} 个钩子。"
        "在 `finally` 中移除句柄的 `hooks` 上下文管理器，无论它的块是正常结束还是因错误结束，"
        "都会做好清理。",
    ),
    did_not_raise=Text(
        "Your hook returned `{returned}` and raised nothing, so the run went through: "
        'raise an error in it, `raise ValueError("broken hook")`, to see what a failing '
        "hook leaves behind.",
        "你的钩子返回了 `{returned}`，没有抛出任何异常，所以这次运行顺利完成了。请在其中抛出一个错误，"
        '`raise ValueError("broken hook")`，看看出错的钩子会留下什么。',
    ),
)
def _broken_hook(answer: object) -> Values:
    broken = require_callable(answer)
    model = _tiny_lm()
    block = model.blocks[1]
    assert isinstance(block, lm.Block)
    point = block.attn.out  # where the page's hook point "blocks.1.attn.out" sits
    returned: list[object] = []

    def forward_hook(module: nn.Module, args: tuple[Any, ...], output: torch.Tensor) -> Any:
        returned.append(broken(output, "blocks.1.attn.out.hook_out"))
        return returned[-1]

    error: Exception | None = None
    handle = point.register_forward_hook(forward_hook)  # the page's `hooks`, for one hook
    try:
        model(lm.make_names(2, seed=8).prompts)
    except Exception as raised:  # noqa: BLE001 - the learner's error is what the exercise shows
        error = raised
    finally:
        handle.remove()
    if error is None:
        shown = repr(returned[0]) if returned else "None"
        raise Problem("did_not_raise", returned=shown if len(shown) < 40 else shown[:37] + "...")
    left = count_hooks(model).total
    return {"error": f"{type(error).__name__}: {error}".rstrip(": "), "left": left}
