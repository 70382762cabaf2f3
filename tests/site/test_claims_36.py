"""Claims of page 36 (steering vectors while the model generates), checked against its outputs."""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import pytest
import torch
from sitecheck import number, numbers, outputs, quoted_in_both_languages, run_page
from torch import Tensor

from hooks_tutorial import lm

PAGE = "36"


def test_two_sets() -> None:
    printed = outputs(PAGE)
    assert "prompts per set: 64 64 held out: 64" in printed
    assert "set 1: the model answers Mary in 1.00 of the prompts" in printed
    assert "set 2: the model answers John in 1.00 of the prompts" in printed
    # "differ only in the behaviour": the two sets' prompts differ in one token, the subject
    namespace = run_page(PAGE).namespace
    differ = namespace["to_mary"] != namespace["to_john"]
    assert differ.sum(1).tolist() == [1] * 64
    assert differ[:, lm.POSITIONS["S"]].all()
    # "the difference of the means is the mean of the 64 pairs' differences"
    for k in range(3):
        pairs = namespace["mary_residuals"][k] - namespace["john_residuals"][k]
        torch.testing.assert_close(pairs.mean(0), namespace["directions"][k], atol=1e-5, rtol=1e-5)


def test_direction_per_block() -> None:
    printed = outputs(PAGE)
    lengths = {
        k: numbers(
            rf"after block {k}: \|direction\| = ([\d.]+), \|residual\| = ([\d.]+) on average",
            printed,
        )
        for k in range(3)
    }
    # "After block 0 the two means are almost equal: the direction is tiny next to the residual"
    assert lengths[0][0] < 0.05 * lengths[0][1]
    # "after block 0 the last position barely depends on which of them is the subject":
    # every pair, not only the mean, differs little there
    namespace = run_page(PAGE).namespace
    pairs = namespace["mary_residuals"][0] - namespace["john_residuals"][0]
    assert float(pairs.norm(dim=-1).max()) < 0.05 * lengths[0][1]
    # "After blocks 1 and 2 the difference is as long as a typical residual, or longer."
    assert lengths[1][0] == pytest.approx(lengths[1][1], rel=0.05)
    assert lengths[2][0] > lengths[2][1]
    # "Block 0's direction does nothing ... Block 1 is the first block after which it works"
    flips = [
        number(rf"steer after block {k} with alpha 1: Mary in ([\d.]+)", printed) for k in range(3)
    ]
    assert flips == [0.0, 1.0, 1.0]


def test_block_1_moves_the_subject_to_the_last_position() -> None:
    # "which of them is the subject reaches the last position only in block 1 (the head
    # that pages 34 and 35 found)": block 1 head 3 looks from the last position at the subject
    namespace = run_page(PAGE).namespace
    model = namespace["model"]
    seen: dict[str, Tensor] = {}

    def keep(module: torch.nn.Module, args: tuple[Tensor, ...], output: Tensor) -> None:
        seen["pattern"] = output.detach()

    with model.blocks[1].attn.softmax.register_forward_hook(keep), torch.no_grad():
        model(namespace["to_john"])
    to_subject = seen["pattern"][:, 3, lm.POSITIONS["end"], lm.POSITIONS["S"]].mean()
    assert to_subject > 0.5
    # "what block 1 writes at the last position is ... the subject's [identity], which the head
    # moves there so that the model does not say it": the difference between block 1's attention
    # outputs on the two sets (subject John minus subject Mary), read by the unembedding, is
    # lowest for John among the names, and positive for Mary
    written = {}
    for label in ["to_mary", "to_john"]:

        def keep_attn(
            module: torch.nn.Module, args: tuple[Tensor, ...], output: Tensor, label=label
        ) -> None:
            written[label] = output[:, -1].detach().mean(0)

        with model.blocks[1].attn.register_forward_hook(keep_attn), torch.no_grad():
            model(namespace[label])
    reading = (model.unembed.weight @ (written["to_mary"] - written["to_john"])).detach()
    names = namespace["NAME_IDS"]
    assert int(names[reading[names].argmin()]) == int(namespace["JOHN"])
    assert float(reading[int(namespace["MARY"])]) > 0


def _table(printed: str) -> dict[float, tuple[list[float], list[float], int]]:
    rows = re.findall(
        r"^\s*([\d.]+) \| ([\d. ]+) \| ([\d. ]+) \|\s*(\d+)$", printed, flags=re.MULTILINE
    )
    return {
        float(a): ([float(v) for v in s.split()], [float(v) for v in r.split()], int(u))
        for a, s, r, u in rows
    }


def test_sweep() -> None:
    printed = outputs(PAGE)
    table = _table(printed)
    assert sorted(table) == [0, 0.5, 1, 1.5, 2, 4, 6, 7, 8, 10]
    assert "|direction| = 7.06, |random directions| = 7.06 to 7.06" in printed
    namespace = run_page(PAGE).namespace
    steering, alphas = namespace["shares"], namespace["alphas"]
    random, shown = namespace["random_shares"], namespace["shown"]
    assert random.shape == (10, len(shown), 4)
    # the printed rows are the page's data
    for i, alpha in enumerate(shown):
        row_steering, row_random, unchanged = table[alpha]
        assert row_steering == pytest.approx(
            [round(v, 2) for v in steering[alphas.index(alpha)].tolist()], abs=1e-9
        )
        assert row_random == pytest.approx(
            [round(v, 2) for v in random[:, i].mean(0).tolist()], abs=1e-9
        )
        assert unchanged == int((random[:, i, 1] == 1).sum())
    by_alpha = dict(zip(alphas, steering.tolist(), strict=True))
    # "flips 0.81 of the answers at alpha 0.5 and all of them from 1 to 6.5"
    assert round(by_alpha[0.5][0], 2) == 0.81
    assert all(by_alpha[a][0] == 1.0 for a in alphas if 1 <= a <= 6.5)
    # "at 7 some answers and from 7.5 on all of them are another name, neither Mary nor John"
    assert 0 < by_alpha[7.0][2] < 1
    assert all(by_alpha[a][2] == 1.0 for a in alphas if a >= 7.5)
    # "up to 10 it never gives a word that is not a name"
    assert float(steering[:, 3].max()) == 0.0
    # "None of the ten random directions ... changes a single answer up to alpha 1"
    assert all(table[a][2] == 10 for a in shown if a <= 1)
    # "From 1.5 on, more and more of them break the model"
    counts = [table[a][2] for a in shown if a >= 1.5]
    assert counts[0] < 10
    assert counts == sorted(counts, reverse=True)
    # "each in its own way": some give other names, some words that are not names
    assert float(random[:, -1, 2].max()) > 0
    assert float(random[:, -1, 3].max()) > 0
    # "at 7 none of them leaves every answer John, and on average 0.46 ... not names and 0.35
    # ... other names"
    assert table[7.0][2] == 0
    assert table[7.0][1][3] == 0.46
    assert table[7.0][1][2] == 0.35
    # "One of the ten even gives Mary at large strengths"
    assert "random directions that ever give Mary: 1 of 10" in printed
    assert float(random[:, : shown.index(1.5) + 1, 0].max()) == 0.0
    quoted_in_both_languages(PAGE, "0.81", "0.46", "0.35")


def test_generation_shapes_and_continuations() -> None:
    printed = outputs(PAGE)
    # "a hook sees 15 positions at the first step, 16 at the second"; "stopped ... after two steps"
    seen = re.findall(r"the hook on blocks\[1\] sees (\[.*\])", printed)
    assert seen == ["[1, 15, 64]", "[1, 16, 64]"]
    assert "generated: John ." in printed
    assert "steering alpha 0.0: John . | John . | John ." in printed
    assert "steering alpha 1.0: Mary . | Mary . | Mary ." in printed
    assert "steering alpha 8.0: Sam . | Sam . | Sam ." in printed
    # "the first random direction at alpha 2, where it breaks": not a name
    random = match_line(r"random   alpha 2.0: (.*)", printed).split(" | ")
    names = set(lm.NAMES)
    assert all(words.split()[0] not in names for words in random)


def match_line(pattern: str, text: str) -> str:
    found = re.search(pattern, text)
    assert found is not None, pattern
    return found[1]


def test_last_or_every_position() -> None:
    printed = outputs(PAGE)
    assert "last  position: positions edited at each step: ['14', '15']" in printed
    assert "every position: positions edited at each step: ['0 to 14', '0 to 15']" in printed
    # "On this model both hooks write the same words ... and a full stop follows it"
    assert "the same tokens generated by both hooks: True" in printed
    assert "continuations: ['Mary .']" in printed
    # "at alpha 0.5, Mary in 0.81 ... last position and 0.83 with ... every position; at 7,
    # 0.56 and 1.00"
    assert "alpha 0.5: Mary in 0.81 (last position), 0.83 (every)" in printed
    assert "alpha 7.0: Mary in 0.56 (last position), 1.00 (every)" in printed
    quoted_in_both_languages(PAGE, "0.83", "0.56", "1.00")
    # "the hook on every position also edits positions 0 to 13, which block 2's attention reads
    # from position 14": block 2 at the last position attends to earlier positions
    namespace = run_page(PAGE).namespace
    model, seen = namespace["model"], {}

    def keep(module: torch.nn.Module, args: tuple[Tensor, ...], output: Tensor) -> None:
        seen["pattern"] = output.detach()

    with model.blocks[2].attn.softmax.register_forward_hook(keep), torch.no_grad():
        model(namespace["test_to_john"])
    assert float(seen["pattern"][:, :, 14, :14].sum(-1).mean()) > 0.1


def _cached_generate(
    model: lm.TinyLM,
    tokens: Tensor,
    steps: int,
    steer_block_1: Callable[[Tensor], Tensor],
    shapes: list[list[int]],
) -> tuple[Tensor, list[Tensor]]:
    """Greedy generation with a key-value cache, as Hugging Face's ``generate`` does.

    After the first step only the new token runs; its attention reads the stored keys
    and values. ``steer_block_1`` edits what a hook on ``blocks[1]`` would see.
    """
    cache: list[tuple[Tensor, Tensor] | None] = [None] * len(model.blocks)
    new, start, logits_seen = tokens, 0, []
    with torch.no_grad():
        for _ in range(steps):
            length = new.shape[1]
            x = model.embed(new) + model.pos_embed(torch.arange(start, start + length))
            for i, block in enumerate(model.blocks):
                attn = block.attn
                batch, _, width = x.shape
                d_head = width // attn.n_heads
                q, k, v = (
                    attn.qkv(block.ln1(x))
                    .view(batch, length, 3, attn.n_heads, d_head)
                    .permute(2, 0, 3, 1, 4)
                )
                stored = cache[i]
                if stored is not None:
                    k, v = torch.cat([stored[0], k], 2), torch.cat([stored[1], v], 2)
                cache[i] = (k, v)
                query_at = torch.arange(start, start + length)[:, None]
                future = torch.arange(k.shape[2])[None, :] > query_at
                scores = (q @ k.transpose(-1, -2) / math.sqrt(d_head)).masked_fill(
                    future, float("-inf")
                )
                heads = (scores.softmax(-1) @ v).transpose(1, 2).reshape(batch, length, width)
                x = x + attn.out(heads)
                x = x + block.mlp(block.ln2(x))
                if i == 1:
                    shapes.append(list(x.shape))
                    x = steer_block_1(x)
            logits = model.unembed(model.ln_final(x))[:, -1]
            logits_seen.append(logits)
            following = logits.argmax(-1)
            tokens = torch.cat([tokens, following[:, None]], dim=1)
            start, new = start + length, following[:, None]
    return tokens, logits_seen


def _uncached(model: lm.TinyLM, tokens: Tensor, steps: int, first: int | None, vector: Tensor):
    """The page's loop (no cache) with a hook adding ``vector`` from ``first`` on (None: -1)."""
    logits_seen = []

    def hook(module: torch.nn.Module, args: tuple[Tensor, ...], output: Tensor) -> Tensor:
        steered = output.clone()
        steered[:, output.shape[1] - 1 if first is None else first :] += vector
        return steered

    with model.blocks[1].register_forward_hook(hook), torch.no_grad():
        for _ in range(steps):
            logits = model(tokens)[:, -1]
            logits_seen.append(logits)
            tokens = torch.cat([tokens, logits.argmax(-1)[:, None]], dim=1)
    return tokens, logits_seen


def test_key_value_cache() -> None:
    namespace = run_page(PAGE).namespace
    model, prompts = namespace["model"], namespace["test_to_john"][:8]
    vector = 0.6 * namespace["direction"]

    def last(x: Tensor) -> Tensor:
        x = x.clone()
        x[:, -1] += vector
        return x

    # the cached loop is right: without steering it writes what lm.generate writes
    shapes: list[list[int]] = []
    plain, _ = _cached_generate(model, prompts, 2, lambda x: x, shapes)
    assert torch.equal(plain, lm.generate(model, prompts, 2, stop="<bos>"))
    # "A hook on a block then sees [1, 15, 64] at the first step and [1, 1, 64] later"
    shapes = []
    _cached_generate(model, prompts[:1], 3, lambda x: x, shapes)
    assert shapes == [[1, 15, 64], [1, 1, 64], [1, 1, 64]]
    # "with a cache, a hook that edits -1 ... is what a hook that edits every position
    # from 14 on does in this loop without a cache"; the hook on -1 here does something else
    cached_tokens, cached_logits = _cached_generate(model, prompts, 3, last, [])
    from_14, from_14_logits = _uncached(model, prompts, 3, 14, vector)
    _, on_last_logits = _uncached(model, prompts, 3, None, vector)
    assert torch.equal(cached_tokens, from_14)
    for a, b in zip(cached_logits, from_14_logits, strict=True):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(cached_logits[0], on_last_logits[0], atol=1e-4, rtol=1e-4)
    assert (cached_logits[1] - on_last_logits[1]).abs().max() > 1e-2
    # "a hook that indexes [:, 14] fails at the second step, whose tensor has one position"
    with pytest.raises(IndexError):
        torch.zeros(1, 1, 64)[:, 14]


def test_what_the_direction_means() -> None:
    printed = outputs(PAGE)
    assert "Alice and Bob, alpha 0.0: Bob 1.00, Mary 0.00" in printed
    # "At alpha 1, the strength that flipped every held-out prompt, the model already says
    # Mary in every sentence about Alice and Bob, where Mary does not appear"
    assert "steer after block 1 with alpha 1: Mary in 1.00" in printed
    assert "  1.0 | 1.00 0.00 0.00 0.00 |" in printed
    assert "Alice and Bob, alpha 1.0: Bob 0.00, Mary 1.00" in printed
    assert "hooks left on the model: no hooks" in printed
    # "the direction ranks Sam first, Mary second and John last"
    assert (
        "the direction alone, read by ln_final and unembed: Sam > Mary > Alice ... John" in printed
    )
    # "from alpha 7.5 ... the model says the name the direction alone says, Sam"
    namespace = run_page(PAGE).namespace
    answers, hook = namespace["answers"], namespace["add_at_last_position"]
    sam = lm.encode("Sam")[0, 0]
    for alpha in [7.5, 8.0, 10.0]:
        said = answers(
            namespace["test_to_john"], namespace["block"], hook(namespace["direction"], alpha)
        )
        assert bool((said == sam).all())
    assert "steering alpha 8.0: Sam . | Sam . | Sam ." in printed


def test_exercise_answers() -> None:
    solutions = run_page(PAGE).solutions
    assert "|first-vs-second direction| = 0.83" in solutions
    assert "|Mary-vs-John direction| = 7.06" in solutions
    assert "alpha 1: first name 0.00, second name 1.00" in solutions
    assert "alpha 10: first name 0.08," in solutions
    assert (
        "alpha 20: first name 0.10, second name 0.22, another name 0.67, not a name 0.00"
        in solutions
    )
    assert "alpha -1 on answer-Mary prompts: John 1.00" in solutions
    assert "prompt only: Mary 1.00" in solutions
    assert "every continuation ends with a full stop: True" in solutions
