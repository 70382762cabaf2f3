"""Page 34 (attention patterns and head ablation): the prose against the outputs."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from sitecheck import (
    EXAMPLES,
    match,
    number,
    numbers,
    outputs,
    prose,
    quoted_in_both_languages,
    run_page,
)

from hooks_tutorial import lm

PAGE = "34"
OTHERS = [(b, h) for b in range(3) for h in range(4) if (b, h) != (1, 3)]


@pytest.fixture(scope="module")
def printed() -> str:
    return outputs(PAGE)


def table(kind: str, printed: str) -> tuple[np.ndarray, np.ndarray]:
    """The page's ablation table of one kind: (logit difference [3, 4], accuracy [3, 4])."""
    start = printed.index(f"{kind} ablation (clean:")
    rows = re.findall(r"^block (\d) ((?:\s+-?[\d.]+){8})$", printed[start:], flags=re.MULTILINE)[:3]
    values = np.array([[float(v) for v in row.split()] for _, row in rows])
    assert values.shape == (3, 8)
    return values[:, :4], values[:, 4:]


def last_position_reads(printed: str) -> dict[str, list[tuple[int, float]]]:
    """head name -> [(position, weight), (position, weight)] as printed."""
    found = re.findall(
        r"^ (\d\.\d)\s+\S+ \(position\s+(\d+)\) ([\d.]+),\s+\S+ \(position\s+(\d+)\) ([\d.]+)$",
        printed,
        flags=re.MULTILINE,
    )
    assert len(found) == 12
    return {n: [(int(p1), float(w1)), (int(p2), float(w2))] for n, p1, w1, p2, w2 in found}


def test_a_forward_hook_and_a_forward_pre_hook() -> None:
    # "A forward hook and a forward pre-hook tell: the first records where each head
    # looks ..., the second removes one head's output"
    (script,) = EXAMPLES.glob("*/plot_34_*.py")
    source = script.read_text(encoding="utf-8")
    assert "block.attn.softmax.register_forward_hook(keep_pattern(i))" in source
    assert "attn.out.register_forward_pre_hook(replace_head(head, values))" in source


def test_the_model_and_the_task(printed: str) -> None:
    # "This model has 12 of them (3 blocks of 4 heads)"; "its 16 columns"
    model = lm.pretrained_lm()
    assert len(model.blocks) == 3
    assert all(block.attn.n_heads == 4 for block in model.blocks)
    assert model.blocks[0].attn.out.in_features // model.blocks[0].attn.n_heads == 16
    # "the two names sit at positions 2 and 4, the subject at 10, and the model
    # predicts the answer at position 14 ... Each prompt is the first 15 tokens."
    assert lm.POSITIONS == {"A": 2, "B": 4, "S": 10, "end": 14, "IO": 15}
    assert "prompt shape: [500, 15]" in printed  # "over 500 sentences"
    # the intro's sentence is answered with Mary
    prompt = lm.encode("<bos> When Mary and John went to the shop , John gave a book to")
    assert lm.decode(lm.generate(model, prompt, 1)[0, -1:]) == "Mary"
    difference, accuracy = numbers(
        r"clean run: mean logit difference ([\d.]+), accuracy ([\d.]+)", printed
    )
    assert difference > 5
    assert accuracy == 1.0


def test_patterns_are_causal_rows_that_sum_to_one(printed: str) -> None:
    # "Each row sums to 1 and nothing lies above the diagonal"
    assert "pattern of block 0: [500, 4, 15, 15]" in printed
    assert number(r"largest \|row sum - 1\|: ([\d.e+-]+)", printed) < 1e-5
    assert "largest weight on a later position: 0.0" in printed
    # every hook the page adds is removed
    assert printed.count("hooks left on the model: 0") == 3


def test_only_heads_move_information_between_positions() -> None:
    # "in a transformer only the attention heads move information between positions":
    # with every head's output replaced by its mean, a change at position 2 no longer
    # reaches the last position
    model = lm.pretrained_lm()
    sentences = lm.make_names(2, seed=5)
    tokens = sentences.prompts.clone()
    tokens[1] = tokens[0]
    tokens[1, 2] = tokens[0, 4]  # one word changed, at position 2

    def constant(module: torch.nn.Module, args: tuple[torch.Tensor]) -> tuple[torch.Tensor]:
        return (torch.zeros_like(args[0]),)

    handles = [block.attn.out.register_forward_pre_hook(constant) for block in model.blocks]
    try:
        with torch.no_grad():
            last = model(tokens)[:, -1]
    finally:
        for handle in handles:
            handle.remove()
    torch.testing.assert_close(last[0], last[1])


def test_where_the_heads_look(printed: str) -> None:
    reads = last_position_reads(printed)
    # "Three heads of block 0 (heads 1, 2 and 3) split the last position's attention
    # between the two names, A and B"
    for head in ("0.1", "0.2", "0.3"):
        assert {p for p, _ in reads[head]} == {2, 4}
        assert all(0.25 <= w <= 0.45 for _, w in reads[head])
    # "heads 2.0 and 2.1, which give about half of their attention at the last
    # position to one of the names" (and cost little alone: test_head_1_3_carries_the_answer)
    for head in ("2.0", "2.1"):
        position, weight = reads[head][0]
        assert position in (2, 4)
        assert 0.4 < weight < 0.6
    # "block 1, head 3 reads the subject S"
    assert reads["1.3"][0][0] == 10
    assert reads["1.3"][0][1] > 0.7
    assert number(r"block 1, head 3 reads S at the last position: ([\d.]+)", printed) > 0.7


def test_the_head_columns_are_the_input_of_out() -> None:
    # "the four heads' results, 16 numbers each, are laid side by side (head h in
    # columns 16*h to 16*h + 16)": recompute head 3 of block 1 by hand
    model = lm.pretrained_lm()
    attn = model.blocks[1].attn
    x = torch.randn(2, 15, 64)
    seen: list[torch.Tensor] = []
    with attn.out.register_forward_pre_hook(lambda m, args: seen.append(args[0])), torch.no_grad():
        attn(x)
    q, k, v = attn.qkv(x).view(2, 15, 3, 4, 16).permute(2, 0, 3, 1, 4)
    scores = (q @ k.transpose(-1, -2) / 4).masked_fill(
        torch.ones(15, 15, dtype=torch.bool).triu(1), float("-inf")
    )
    head3 = (scores.softmax(-1) @ v)[:, 3]
    torch.testing.assert_close(seen[0][..., 48:64], head3.detach())


def test_head_1_3_carries_the_answer(printed: str) -> None:
    clean = number(r"clean run: mean logit difference ([\d.]+)", printed)
    for kind in ("zero", "mean"):
        difference, accuracy = table(kind, printed)
        # "without block 1, head 3 the mean logit difference falls to about zero and
        # the accuracy to about one half, with either kind of ablation"
        assert abs(difference[1, 3]) < 0.5
        assert 0.4 < accuracy[1, 3] < 0.6
        # "Every other head can go alone at a small cost."
        for b, h in OTHERS:
            assert difference[b, h] > clean - 0.5
            assert accuracy[b, h] >= 0.93
    assert number(r"lowest logit difference without another head: ([\d.]+)", printed) > 6
    # the direct runs agree with the tables
    for kind in ("zero", "mean"):
        direct = numbers(
            rf"block 1, head 3, {kind} ablation: (-?[\d.]+), accuracy ([\d.]+)", printed
        )
        assert direct == [table(kind, printed)[0][1, 3], table(kind, printed)[1][1, 3]]


def test_without_1_3_a_coin_flip_between_the_two_names(printed: str) -> None:
    # "the model still answers with a name from the sentence (almost always), but it
    # names the subject about half of the time"
    for kind in ("zero", "mean"):
        names, subject = numbers(
            rf"{kind} ablation of 1.3: the answer is one of the two names ([\d.]+), "
            r"the subject ([\d.]+)",
            printed,
        )
        assert names >= 0.95
        assert 0.4 <= subject <= 0.6


def test_zero_and_mean_ablation_disagree_on_1_0_and_1_1(printed: str) -> None:
    clean = number(r"clean run: mean logit difference ([\d.]+)", printed)
    zero_difference, zero_accuracy = table("zero", printed)
    mean_difference, mean_accuracy = table("mean", printed)
    # "zero ablation costs them logit difference and accuracy, mean ablation costs
    # almost nothing"
    for head in (0, 1):
        assert zero_difference[1, head] < clean - 0.25
        assert zero_accuracy[1, head] < 0.97
        assert mean_difference[1, head] >= clean
        assert mean_accuracy[1, head] >= 0.98
    # "removing only the mean costs about as much as zero ablation, while mean ablation
    # costs nothing"; "Head 1.3 loses far more under either ablation than when only
    # its mean is removed"
    rows = {
        name: [float(v) for v in values.split()]
        for name, values in re.findall(
            r"^ (1\.[013])((?:\s+-?[\d.]+){3})$", printed, flags=re.MULTILINE
        )
    }
    for head in ("1.0", "1.1"):
        zero, mean, shifted = rows[head]
        assert shifted < clean - 0.25
        assert abs(shifted - zero) < 0.15
        assert mean >= clean
    zero, mean, shifted = rows["1.3"]
    assert shifted - max(zero, mean) > 3


def test_the_library_gives_the_same_numbers(printed: str) -> None:
    direct = match(r"block 1, head 3, mean ablation: (.*)", printed)[1]
    assert f"with HookGroup, mean ablation of 1.3: {direct}" in printed


def test_the_summary_and_the_answers_quote_the_printed_numbers() -> None:
    quoted_in_both_languages(
        PAGE, "-0.31", "0.384", "0.061", "0.820", "7.61", "-0.17", "0.462", "GPT-2 small"
    )
    assert "144" in prose(PAGE, "en")  # GPT-2 small: 12 layers of 12 heads


def test_exercise_answers(printed: str) -> None:
    solutions = run_page(PAGE).solutions
    clean = number(r"clean run: mean logit difference ([\d.]+)", printed)
    zero_accuracy, mean_accuracy = table("zero", printed)[1], table("mean", printed)[1]
    # 1. "falls to -0.31 and the accuracy to 0.384 ... even below one half, and lower
    # than with the other two kinds"
    difference, accuracy = numbers(
        r"resample ablation of 1.3: (-?[\d.]+), accuracy ([\d.]+)", solutions
    )
    assert abs(difference) < 0.5
    assert accuracy < 0.5
    assert accuracy < min(zero_accuracy[1, 3], mean_accuracy[1, 3])
    # "because a real output of the head, taken from another sentence, carries that
    # sentence's names: 59 answers are neither name of the sentence, and 52 of them are
    # the other sentence's answer; in the 33 sentences whose answer is the other
    # sentence's subject, the accuracy is 0.061"
    neither, donor_answer = numbers(
        r"neither name of the sentence: (\d+), the other sentence's answer: (\d+)", solutions
    )
    assert donor_answer > 0.8 * neither
    hit, hit_accuracy = numbers(
        r"where the other sentence's subject is this answer \((\d+) sentences\): "
        r"accuracy ([\d.]+)",
        solutions,
    )
    assert hit >= 20
    assert hit_accuracy < 0.2
    # the other two kinds answer with a name of the sentence far more often
    for kind in ("zero", "mean"):
        in_sentence = number(
            rf"{kind} ablation of 1.3: the answer is one of the two names ([\d.]+)", printed
        )
        assert neither / 500 > 2 * (1 - in_sentence)
    # 2. "falls to 0.820, although each of the three heads alone kept it at 0.962 or
    # more; yet the logit difference rises to 7.61" and "2 are the subject and 80 are
    # a name that is not in the sentence at all"
    alone = [float(v) for v in match(r"mean-ablated: \[([\d. ]+)\]", solutions)[1].split()]
    assert min(alone) == 0.962
    assert list(alone) == list(mean_accuracy[0, 1:])
    together, accuracy = numbers(r"block 0 heads 1-3: ([\d.]+), accuracy ([\d.]+)", solutions)
    assert accuracy < min(alone)
    assert together > clean
    wrong, subject, elsewhere, not_a_name = numbers(
        r"wrong answers: (\d+), the subject: (\d+), a name not in the sentence: (\d+), "
        r"not a name: (\d+)",
        solutions,
    )
    assert elsewhere > 0.8 * wrong
    assert subject < 0.05 * wrong
    assert subject + elsewhere + not_a_name == wrong  # the three kinds cover every error
    # 3. "At the last position only ... the whole loss. At every position but the last
    # ... no loss."
    last_only = numbers(r"1.3, last only: (-?[\d.]+), accuracy ([\d.]+)", solutions)
    others = numbers(r"1.3, all but last: (-?[\d.]+), accuracy ([\d.]+)", solutions)
    assert abs(last_only[0]) < 0.5
    assert last_only[1] < 0.6
    assert others[0] > 6.5
    assert others[1] == 1.0


def test_the_softmax_is_a_module_on_purpose() -> None:
    # "TinyLM makes the softmax a module on purpose": the pattern hook needs it
    model = lm.pretrained_lm()
    assert all(isinstance(block.attn.softmax, torch.nn.Softmax) for block in model.blocks)
    assert "makes the softmax a module on purpose" in prose(PAGE)


def test_zero_ablation_keeps_the_bias_of_out() -> None:
    # "the bias of attn.out belongs to no head and stays": with every head's columns
    # zeroed, attn.out returns its bias
    out = lm.pretrained_lm().blocks[1].attn.out
    assert out.bias is not None
    with torch.no_grad():
        torch.testing.assert_close(out(torch.zeros(1, 64))[0], out.bias)
