"""Claims of page 35 (activation patching), checked against its outputs."""

from __future__ import annotations

import re

import torch
from sitecheck import match, number, outputs, quoted_in_both_languages, run_page

from hooks_tutorial import lm

PAGE = "35"
LAYERS = ["embed", "block 0", "block 1", "block 2"]
# a share "lights up" or is "nothing" with this margin: the page rounds to 2 decimals,
# and the cells it calls 0 or 1 print as 0.00 to 0.02 away from it
NEAR = 0.05


def _table(title: str, printed: str, rows: list[str]) -> dict[str, list[float]]:
    """The rows of a printed table that starts with the line ``title``."""
    block = printed.split(title, 1)[1].splitlines()
    found = {}
    for line in block:
        for row in rows:
            if line.startswith(row) and row not in found:
                found[row] = [float(v) for v in line[len(row) :].split()]
        if len(found) == len(rows):
            return found
    msg = f"table {title!r} incomplete: {found}"
    raise AssertionError(msg)


def _residual_map(printed: str, title: str = "share restored  PLACE") -> dict[str, list[float]]:
    return _table(title, printed, LAYERS)


def _head_map(printed: str, label: str) -> list[list[float]]:
    rows = _table(f"one head patched {label}:", printed, ["block 0", "block 1", "block 2"])
    return [rows[f"block {b}"] for b in range(3)]


def test_clean_and_corrupted_runs() -> None:
    printed = outputs(PAGE)
    # "The two differ in one token only, the subject at position 10"
    assert "positions where the prompts differ: [10]" in printed
    # "the corrupted run, whose answer is the clean subject, scores about as low"
    clean = number(r"logit difference, clean run:\s+(-?[\d.]+)", printed)
    corrupted = number(r"logit difference, corrupted run:\s+(-?[\d.]+)", printed)
    assert clean > 5
    assert corrupted < -5
    assert abs(clean + corrupted) < 0.5
    data = lm.make_names(20, seed=1, split="test")
    assert torch.equal(data.with_other_subject().answers, data.subjects)


def test_positions_before_the_subject_are_equal() -> None:
    printed = outputs(PAGE)
    # "before position 10 ... their residuals are equal ... From position 10 on they differ"
    for layer in LAYERS:
        line = match(
            rf"{layer} *: positions 0-9 equal: (\w+); mean distance at 10-14: (.*)", printed
        )
        assert line[1] == "True"
        assert float(line[2].split()[0]) > 1
    # "every hook ... is removed"
    assert printed.count("hooks left: no hooks") == 3


def test_the_residual_map() -> None:
    printed = outputs(PAGE)
    assert "one patch, block 0 at position 10:\n  share restored 1.01" in printed
    # "Each copy is then its own patched run": the batched grid gives the single run's value
    assert "block 0 at position 10 as in the single run: True" in printed
    restored = _residual_map(printed)
    assert number(r"positions 0-7, largest \|share\|: ([\d.]+)", printed) <= NEAR
    # "Only four cells light up": embed and block 0 at position 10 (S), blocks 1 and 2 at
    # position 14 (columns 8..14 are printed; 10 is the third, 14 the last)
    lit = [
        (layer, 8 + j)
        for layer, row in restored.items()
        for j, v in enumerate(row)
        if abs(v) > NEAR
    ]
    assert lit == [("embed", 10), ("block 0", 10), ("block 1", 14), ("block 2", 14)]
    for layer, position in lit:
        assert abs(restored[layer][position - 8] - 1) <= NEAR
    # "shares of 0 or 1"
    assert all(min(abs(v), abs(v - 1)) <= NEAR for row in restored.values() for v in row)
    lines = re.findall(r"share > 0.5: (.*) at position (\d+) \((\S+)\): ([\d.]+)", printed)
    assert [(a, int(b), c) for a, b, c, _ in lines] == [
        ("embed", 10, "S"),
        ("block 0", 10, "S"),
        ("block 1", 14, "to"),
        ("block 2", 14, "to"),
    ]
    # "A share can also come out a little above 1, as in 1.01"
    assert "1.01" in [v for *_, v in lines]
    quoted_in_both_languages(PAGE, "1.01")
    # "After block 1, position 10 still differs between the runs ... yet patching it
    # restores nothing"
    for layer in ("block 1", "block 2"):
        distance = number(
            rf"{layer} *: positions 0-9 equal: True; mean distance at 10-14: +([\d.]+)", printed
        )
        assert distance > 1
        assert abs(restored[layer][10 - 8]) <= NEAR


def test_layernorm_and_mlp_act_on_each_position_alone() -> None:
    # "Only attention moves information between positions (the LayerNorms and the MLP act
    # on each position alone)"
    model = lm.pretrained_lm()
    block = model.blocks[1]
    x = torch.randn(2, 15, 64)
    y = x.clone()
    y[:, 10] += 5
    with torch.no_grad():
        for part in (block.ln1, block.ln2, block.mlp, model.ln_final):
            changed = (part(x) - part(y)).abs().amax(dim=(0, 2)) > 0
            assert changed.nonzero().flatten().tolist() == [10]
        changed = (block.attn(x) - block.attn(y)).abs().amax(dim=(0, 2)) > 1e-6
        assert changed.nonzero().flatten().tolist() == [10, 11, 12, 13, 14]


def test_one_head_moves_the_subject() -> None:
    printed = outputs(PAGE)
    last = _head_map(printed, "at the last position")
    every = _head_map(printed, "at every position")
    # "One head carries the whole difference: block 1, head 3"
    assert "the head that restores most: block 1, head 3" in printed
    assert abs(last[1][3] - 1) <= NEAR
    # "Patching its output at the last position alone restores as much as patching it
    # at every position"
    assert last[1][3] == every[1][3]
    # "Every other head, patched alone, restores almost nothing"
    others = [
        v for b in range(3) for h in range(4) if (b, h) != (1, 3) for v in (last[b][h], every[b][h])
    ]
    assert max(abs(v) for v in others) <= NEAR
    # "from the last position it looks mostly at position 10, the subject"
    assert number(r"attention from the last position to position 10: ([\d.]+)", printed) > 0.5
    assert "where it looks most: position 10 (S)" in printed


def test_the_same_head_as_ablation() -> None:
    printed = outputs(PAGE)
    clean = number(r"logit difference, clean run:\s+(-?[\d.]+)", printed)
    ablated = number(r"zero ablation, block 1, head 3: logit difference (-?[\d.]+)", printed)
    low, high = numbers_of(r"every other head: from (-?[\d.]+) to (-?[\d.]+)", printed)
    # page 34: without block 1, head 3 the difference collapses; any other head costs little
    assert ablated < 1
    assert clean - 1 < low <= high < clean + 1
    assert "the head ablation hurts most: block 1, head 3" in printed
    assert "the same head as patching: True" in printed
    # "A head whose output is about the same in both prompts restores nothing when
    # patched, whatever ablation costs: the head that costs most after 1.3 is an example."
    found = match(
        r"block (\d), head (\d): zero ablation costs ([\d.]+), patching restores (-?[\d.]+)",
        printed,
    )
    assert (found[1], found[2]) != ("1", "3")
    assert float(found[3]) > 0.2
    assert abs(float(found[4])) <= NEAR


def numbers_of(pattern: str, text: str) -> list[float]:
    return [float(v) for v in match(pattern, text).groups()]


def test_denoising_and_noising_agree_here() -> None:
    printed = outputs(PAGE)
    restored = _residual_map(printed)
    lost = _residual_map(printed, "share lost      PLACE")
    # "Here the two maps agree"
    assert number(r"largest gap between the two maps: ([\d.]+)", printed) <= 0.02
    assert all(
        abs(a - b) <= 0.02
        for layer in LAYERS
        for a, b in zip(restored[layer], lost[layer], strict=True)
    )
    # "swapping the subject back turns a corrupted sentence into its clean one, and the
    # corrupted prompts are sentences of the same task"
    data = lm.make_names(50, seed=1, split="test")
    swapped = data.with_other_subject()
    assert torch.equal(swapped.with_other_subject().tokens, data.tokens)
    names = swapped.tokens[:, [lm.POSITIONS["A"], lm.POSITIONS["B"]]]
    assert ((names == swapped.subjects[:, None]).sum(1) == 1).all()
    assert ((names == swapped.answers[:, None]).sum(1) == 1).all()


def test_and_or_toy() -> None:
    printed = outputs(PAGE)
    # "In the AND model, noising flags both sites and denoising neither; in the OR model,
    # the opposite."
    assert numbers_of(r"AND \(min\) +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+)", printed) == [
        0,
        0,
        1,
        1,
    ]
    assert numbers_of(r"OR \(max\) +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+)", printed) == [
        1,
        1,
        0,
        0,
    ]
    assert "hooks left on the toy: no hooks" in printed


def test_exercise_answers() -> None:
    solutions = run_page(PAGE).solutions
    share = {
        (part, int(b)): float(v)
        for part, b, v in re.findall(
            r"(attn|mlp) of block (\d), last position: share restored (-?[\d.]+)", solutions
        )
    }
    # 1. "The attention layer of block 1 restores 1.01 ... The MLPs of blocks 1 and 2
    # restore 0.30 and 0.33 and block 2's attention 0.06 ... Block 0's attention and MLP
    # restore nothing (-0.01 and -0.00)"
    assert abs(share["attn", 1] - 1) <= NEAR
    assert 0.1 < share["mlp", 1] < 0.6
    assert 0.1 < share["mlp", 2] < 0.6
    assert 0 < share["attn", 2] < 0.1
    assert abs(share["attn", 0]) <= NEAR
    assert abs(share["mlp", 0]) <= NEAR
    # 2. "0.25 ... 0.81 of its attention goes to position 10 in each ... a small weight on
    # the name that is not the subject (0.12 clean, 0.13 corrupted)"
    pattern = number(r"pattern of head 1.3 patched: share restored (-?[\d.]+)", solutions)
    assert 0.1 < pattern < 0.5
    clean = numbers_of(r"clean *: to position 10 ([\d.]+), to the other name ([\d.]+)", solutions)
    corrupted = numbers_of(
        r"corrupted: to position 10 ([\d.]+), to the other name ([\d.]+)", solutions
    )
    assert clean[0] == corrupted[0] > 0.5
    assert clean[1] < 0.2
    assert corrupted[1] < 0.2
    # 3. "-0.13, about zero ... restores 1.03"
    third = number(r"third-name run: logit difference (-?[\d.]+)", solutions)
    assert abs(third) < 0.5
    head = number(r"head 1.3 patched at the last position: share restored (-?[\d.]+)", solutions)
    assert abs(head - 1) <= NEAR
