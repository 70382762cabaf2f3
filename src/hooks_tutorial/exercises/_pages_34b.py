"""The checks of page 34b, attention weights under fused attention (chapter 7).

Exercise 1 computes the last row of the attention pattern from the output of
``attn.qkv``; exercise 2 writes a context manager that runs a model's
attention on the eager path. Exercise 3 asks why: it is answered in words.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from .. import lm
from ._guard import watch
from ._helpers import require_callable, returned_type
from ._language import Text
from ._registry import Problem, Values, exercise, prose

prose("34b.3")


def _pattern(
    qkv_output: torch.Tensor, n_heads: int, *, scale: bool = True, mask: bool = True
) -> torch.Tensor:
    """The causal pattern ``[B, heads, T, T]`` from the output of ``attn.qkv`` (page 34b)."""
    batch, length, width3 = qkv_output.shape
    d_head = width3 // 3 // n_heads
    q, k, _ = qkv_output.view(batch, length, 3, n_heads, d_head).permute(2, 0, 3, 1, 4)
    scores = q @ k.transpose(-1, -2)
    if scale:
        scores = scores / math.sqrt(d_head)
    if mask:
        future = torch.ones(length, length, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
    return torch.softmax(scores, dim=-1)


def _close(got: torch.Tensor, expected: torch.Tensor) -> bool:
    # float rounding only: the learner may take another order of the same sums (one query
    # row against the keys instead of the whole product); weights lie in [0, 1], and a
    # missing scale or the wrong row moves them by 0.05 or more on these inputs
    return got.shape == expected.shape and torch.allclose(
        got.detach().float(), expected, rtol=1e-4, atol=1e-5
    )


@exercise(
    "34b.1",
    passed=Text(
        "Your function returned the last row of the attention pattern: where the last "
        "position looks, one weight per head and position, computed from the query of the "
        "last position and every key. The last position may read every position, so no "
        "mask is needed.",
        "你的函数返回了注意力模式的最后一行，即最后一个位置看向哪里，每个头、每个位置一个权重，"
        "由最后一个位置的查询和所有的键算出。最后一个位置可以读取所有位置，所以不需要掩码。",
    ),
    not_a_tensor=Text(
        "Your function returned a `{returned}`; it should return a tensor "
        "`[batch, heads, positions]`.",
        "你的函数返回了一个 `{returned}`，它应当返回一个张量 `[batch, heads, positions]`。",
    ),
    whole_pattern=Text(
        "Your function returned the whole pattern, `{shape}`; return only its last row, "
        "`[batch, heads, positions]`: the attention of the last position. It needs only "
        "the last query, `q[:, :, -1]`.",
        "你的函数返回了整个注意力模式 `{shape}`。请只返回它的最后一行 `[batch, heads, positions]`，"
        "即最后一个位置的注意力。它只需要最后一个查询 `q[:, :, -1]`。",
    ),
    wrong_shape=Text(
        "Your function returned a tensor of shape {shape} instead of {expected} "
        "(`[batch, heads, positions]`): split the output of `attn.qkv` with "
        "`.view(batch, length, 3, n_heads, d_head)`, where `d_head = width // 3 // n_heads`; "
        "the check tries several numbers of heads.",
        "你的函数返回的张量形状是 {shape}，而不是 {expected}（`[batch, heads, positions]`）。"
        "请用 `.view(batch, length, 3, n_heads, d_head)` 拆分 `attn.qkv` 的输出，其中 "
        "`d_head = width // 3 // n_heads`；检查会尝试几种不同的头数。",
    ),
    first_row=Text(
        "Your function returned the row of the *first* position, the query `q[:, :, 0]`; "
        "the last position is index -1: `q[:, :, -1]`.",
        "你的函数返回的是*第一个*位置的那一行，即查询 `q[:, :, 0]` 的那一行。"
        "最后一个位置的索引是 -1，即 `q[:, :, -1]`。",
    ),
    no_scale=Text(
        "Your weights are those of the scores without the scale: divide `q @ k.T` by "
        "`math.sqrt(d_head)` before the softmax, as the model does.",
        "你的权重是没有缩放的得分给出的。请像模型那样，在 softmax 之前把 `q @ k.T` 除以 "
        "`math.sqrt(d_head)`。",
    ),
    not_normalized=Text(
        "Your weights do not sum to 1 over the positions: take the softmax over the last "
        "dimension, the keys' positions (`dim=-1`).",
        "你的权重在各个位置上的和不是 1。请在最后一维，即键的位置上做 softmax（`dim=-1`）。",
    ),
    wrong_row=Text(
        "Your function's weights are not the last row of the attention pattern: "
        "`softmax(q[:, :, -1] @ k.T / sqrt(d_head))`, with q and k split from the output of "
        "`attn.qkv` as the model splits it (queries first, then keys, then values).",
        "你的函数给出的权重不是注意力模式的最后一行 "
        "`softmax(q[:, :, -1] @ k.T / sqrt(d_head))`。q 和 k 要像模型那样从 `attn.qkv` "
        "的输出中拆分（先是查询，然后是键，最后是值）。",
    ),
)
def _last_row(answer: object) -> Values:
    last_row = require_callable(answer)
    generator = torch.Generator().manual_seed(0)
    for batch, length, n_heads, d_head in [(3, 6, 2, 4), (2, 5, 3, 4)]:
        qkv_output = 2 * torch.randn(batch, length, 3 * n_heads * d_head, generator=generator)
        pattern = _pattern(qkv_output, n_heads)
        expected = pattern[:, :, -1]
        got = last_row(qkv_output.clone(), n_heads)
        if not isinstance(got, torch.Tensor):
            raise Problem("not_a_tensor", returned=returned_type(got))
        if list(got.shape) == list(pattern.shape):
            raise Problem("whole_pattern", shape=list(got.shape))
        if got.shape != expected.shape:
            raise Problem("wrong_shape", shape=list(got.shape), expected=list(expected.shape))
        if _close(got, expected):
            continue
        unmasked = _pattern(qkv_output, n_heads, mask=False)
        if _close(got, pattern[:, :, 0]) or _close(got, unmasked[:, :, 0]):
            raise Problem("first_row")
        if _close(got, _pattern(qkv_output, n_heads, scale=False)[:, :, -1]):
            raise Problem("no_scale")
        if not torch.allclose(got.detach().float().sum(-1), torch.ones(batch, n_heads)):
            raise Problem("not_normalized")
        raise Problem("wrong_row")
    return {}


def _small_lm(fused: list[bool]) -> lm.TinyLM:
    """A small untrained TinyLM whose blocks run fused or eager as ``fused`` says."""
    model = lm.TinyLM(d_model=16, n_layers=len(fused), n_heads=2, d_mlp=32, seed=0).eval()
    for block, flag in zip(_blocks(model), fused, strict=True):
        block.attn.fused = flag
    return watch(model)


def _blocks(model: lm.TinyLM) -> list[lm.Block]:
    return [block for block in model.blocks if isinstance(block, lm.Block)]


def _flags(model: lm.TinyLM) -> list[bool]:
    return [block.attn.fused for block in _blocks(model)]


class _Stop(Exception):
    """The error the check raises inside the learner's ``with`` block."""


@exercise(
    "34b.2",
    passed=Text(
        "Inside your `with` block every block's `attn.softmax` ran, so a hook there sees the "
        "pattern; afterwards each block was fused or eager again as before, also when the "
        "code inside raised, and the error reached the caller.",
        "在你的 `with` 块内，每个块的 `attn.softmax` 都运行了，所以那里的钩子能看到注意力模式；"
        "之后每个块都恢复成原来的融合或 eager 设置，块内代码抛出异常时也是如此，并且异常传给了调用者。",
    ),
    not_a_context_manager=Text(
        "`eager_attention(model)` returned a `{returned}`, which `with` cannot use: write a "
        "generator function decorated with `@contextlib.contextmanager` (or a class with "
        "`__enter__` and `__exit__`).",
        "`eager_attention(model)` 返回了一个 `{returned}`，`with` 无法使用它。请写一个用 "
        "`@contextlib.contextmanager` 装饰的生成器函数（或者一个带 `__enter__` 和 `__exit__` 的类）。",
    ),
    still_fused=Text(
        "Inside your `with` block `attn.softmax` ran in {ran} of {blocks} blocks: the others "
        "still ran fused, so no hook sees their pattern. Set `block.attn.fused = False` on "
        "every block of `model.blocks` before the `yield`.",
        "在你的 `with` 块内，`attn.softmax` 只在 {blocks} 个块中的 {ran} 个里运行了，"
        "其余的块仍按融合方式运行，没有钩子能看到它们的注意力模式。请在 `yield` 之前给 "
        "`model.blocks` 的每个块设置 `block.attn.fused = False`。",
    ),
    not_restored=Text(
        "After your `with` block the blocks' `attn.fused` were {after} instead of {before}: "
        "the model stayed on the eager path. Put the old values back after the `yield`.",
        "你的 `with` 块结束后，各块的 `attn.fused` 是 {after}，而不是 {before}，"
        "模型一直停留在 eager 路径上。请在 `yield` 之后把原来的值放回去。",
    ),
    not_restored_after_error=Text(
        "When the code inside your `with` block raised, the blocks' `attn.fused` stayed "
        "{after} instead of {before}: the error left the generator at the `yield` and the "
        "line after it never ran. Put the `yield` in `try:` and restore in `finally:`.",
        "当你的 `with` 块内的代码抛出异常时，各块的 `attn.fused` 停留在 {after}，而不是 {before}。"
        "异常在 `yield` 处离开了生成器，它后面的那一行没有运行。请把 `yield` 放进 `try:`，"
        "并在 `finally:` 中恢复。",
    ),
    swallowed=Text(
        "The error raised inside your `with` block did not reach the caller: your context "
        "manager swallowed it (an `except` around the `yield`, or an `__exit__` that returns "
        "True). Restore in `finally:` and let the error through.",
        "在你的 `with` 块内抛出的异常没有传给调用者，你的上下文管理器把它吞掉了（`yield` 外面有 "
        "`except`，或者 `__exit__` 返回了 True）。请在 `finally:` 中恢复，并让异常继续传出。",
    ),
    forced=Text(
        "A model whose blocks were {before} became {after} after your `with` block: you set "
        "every block to fused at the end instead of restoring what each block had. Save "
        "`[block.attn.fused for block in model.blocks]` before switching and put it back.",
        "一个各块原本为 {before} 的模型，在你的 `with` 块之后变成了 {after}。你在结束时把每个块"
        "都设成了融合，而不是恢复各块原来的设置。请在切换之前保存 "
        "`[block.attn.fused for block in model.blocks]`，之后再放回去。",
    ),
)
def _eager_attention(answer: object) -> Values:
    eager_attention = require_callable(answer)
    tokens = lm.make_names(3, seed=7).prompts
    model = _small_lm([True, True])
    before = _flags(model)
    manager: Any = eager_attention(model)
    if not (hasattr(manager, "__enter__") and hasattr(manager, "__exit__")):
        raise Problem("not_a_context_manager", returned=returned_type(manager))
    ran: set[int] = set()

    def spy(index: int) -> Any:
        def hook(module: nn.Module, args: tuple[Any, ...], output: torch.Tensor) -> None:
            ran.add(index)

        return hook

    with manager:
        handles = [
            block.attn.softmax.register_forward_hook(spy(i))
            for i, block in enumerate(_blocks(model))
        ]
        try:
            with torch.no_grad():
                model(tokens)
        finally:
            for handle in handles:
                handle.remove()
    if len(ran) < len(before):
        raise Problem("still_fused", ran=len(ran), blocks=len(before))
    if _flags(model) != before:
        raise Problem("not_restored", after=_flags(model), before=before)
    reached = False
    try:
        with eager_attention(model):
            raise _Stop
    except _Stop:
        reached = True
    if _flags(model) != before:
        raise Problem("not_restored_after_error", after=_flags(model), before=before)
    if not reached:
        raise Problem("swallowed")
    for mixed in ([False, True], [False, False]):
        other = _small_lm(mixed)
        with eager_attention(other):
            pass
        if _flags(other) != mixed:
            raise Problem("forced", before=mixed, after=_flags(other))
    return {}
