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
    # "(0.81 is an average: exercise 2 looks sentence by sentence)"
    looks = match(r"attention from the last position to position 10: ([\d.]+)", printed)[1]
    quoted_in_both_languages(PAGE, looks)
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
    # "at the last position its output barely changes between the two runs, while head
    # 1.3's changes by more than its own size"
    outputs_differ = (
        r"block {}, head {}, last position: .* differ by ([\d.]+) \(mean size ([\d.]+)\)"
    )
    gap, size = numbers_of(outputs_differ.format(found[1], found[2]), printed)
    assert gap < 0.1 * size
    gap, size = numbers_of(outputs_differ.format(1, 3), printed)
    assert gap > size


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
    # "Swapping the subject back turns a corrupted sentence into its clean one, so noising
    # a pair makes exactly the runs of denoising the swapped pair, and gives the same
    # share (the logit difference only changes sign). The swapped pairs are pairs of the
    # same task"
    data = lm.make_names(50, seed=1, split="test")
    swapped = data.with_other_subject()
    assert torch.equal(swapped.with_other_subject().tokens, data.tokens)
    assert torch.equal(swapped.answers, data.subjects)
    assert torch.equal(swapped.subjects, data.answers)
    names = swapped.tokens[:, [lm.POSITIONS["A"], lm.POSITIONS["B"]]]
    assert ((names == swapped.subjects[:, None]).sum(1) == 1).all()
    assert ((names == swapped.answers[:, None]).sum(1) == 1).all()
    model = lm.pretrained_lm()
    rows = torch.arange(len(data))

    def diff(logits: torch.Tensor, names: lm.NameSentences) -> float:
        last = logits[:, -1]
        return (last[rows, names.answers] - last[rows, names.subjects]).mean().item()

    def run(prompts: torch.Tensor, value: torch.Tensor | None = None) -> torch.Tensor:
        def put(module: torch.nn.Module, args: object, output: torch.Tensor) -> torch.Tensor:
            output = output.clone()
            output[:, 10] = value
            return output

        handle = model.blocks[0].register_forward_hook(put) if value is not None else None
        try:
            with torch.no_grad():
                return model(prompts)
        finally:
            if handle is not None:
                handle.remove()

    saved = {}
    handle = model.blocks[0].register_forward_hook(lambda m, a, o: saved.__setitem__("x", o))
    try:
        with torch.no_grad():
            model(swapped.prompts)
    finally:
        handle.remove()
    clean_logits, corrupted_logits = run(data.prompts), run(swapped.prompts)
    noised = run(data.prompts, saved["x"][:, 10])  # the clean run with a corrupted activation
    lost = (diff(clean_logits, data) - diff(noised, data)) / (
        diff(clean_logits, data) - diff(corrupted_logits, data)
    )
    # the same run is the swapped pair's denoising run: clean' = swapped, corrupted' = data
    restored = (diff(noised, swapped) - diff(clean_logits, swapped)) / (
        diff(corrupted_logits, swapped) - diff(clean_logits, swapped)
    )
    assert abs(diff(noised, swapped) + diff(noised, data)) < 1e-4
    assert abs(lost - restored) < 1e-5
    # "drawn just as likely as the original ones ... on average": the subject is either
    # name with equal chance, so a sentence and its swap are equally likely (the 100
    # sentences of the page do not hold each other's swaps: they agree on average only)
    many = lm.make_names(20000, seed=1, split="test")
    assert abs(many.subject_is_a.float().mean().item() - 0.5) < 0.01


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
    assert printed.count("hooks left on the toy: no hooks") == 2
    # "Swap the toy's pair ... for this pair the AND model is an OR. Over a set that holds
    # each pair and its swap ... both directions give 0.5 at each site"
    assert numbers_of(r"AND, swap +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+)", printed) == [1, 1, 0, 0]
    both = numbers_of(r"AND, both +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+)", printed)
    assert both == [0.5] * 4
    quoted_in_both_languages(PAGE, "0.5")


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
    # restore nothing (-0.01 and -0.00): what they write at the last position barely
    # differs between the runs (by 0.09 and 0.02, for outputs of size 3.60 and 7.38)"
    for part in ("attn", "mlp"):
        gap, size = numbers_of(
            rf"{part} of block 0, last position: .*differ by ([\d.]+) \(size ([\d.]+)\)",
            solutions,
        )
        assert gap < 0.05 * size
    assert abs(share["attn", 1] - 1) <= NEAR
    assert 0.1 < share["mlp", 1] < 0.6
    assert 0.1 < share["mlp", 2] < 0.6
    assert 0 < share["attn", 2] < 0.1
    assert abs(share["attn", 0]) <= NEAR
    assert abs(share["mlp", 0]) <= NEAR
    # 2. "0.25, an average over sentences that behave very differently ... 0.81 of its
    # attention on position 10 in both runs ... in each sentence it looks almost entirely
    # at one position (0.94) ... 65 sentences ... 0.02 ... 17 where the clean run looks
    # elsewhere (always at a position before 10 ... 9 of them have Anna as the subject)
    # ... 1.00 ... only the corrupted run looks away (18 sentences), 0.46"
    pattern = number(r"pattern of head 1.3 patched: share restored (-?[\d.]+)", solutions)
    assert 0.1 < pattern < 0.5
    clean, corrupted = numbers_of(
        r"mean attention to position 10: clean ([\d.]+), corrupted ([\d.]+)", solutions
    )
    assert clean == corrupted > 0.5
    assert number(r"largest weight in a sentence's row, mean: ([\d.]+)", solutions) > 0.9
    groups = {
        label: numbers_of(rf"{label}: (\d+) sentences, share restored (-?[\d.]+)", solutions)
        for label in (
            "both runs look at position 10",
            "the clean run looks elsewhere",
            "only the corrupted run looks elsewhere",
        )
    }
    assert sum(count for count, _ in groups.values()) == 100
    assert abs(groups["both runs look at position 10"][1]) <= NEAR
    assert abs(groups["the clean run looks elsewhere"][1] - 1) <= NEAR
    assert 0.2 < groups["only the corrupted run looks elsewhere"][1] < 0.8
    elsewhere = match(r"where the clean run looks instead: \[(.*)\]", solutions)[1]
    assert all(int(p) < 10 for p in elsewhere.split(","))
    name, count = match(r"their most common subject: (\w+) \((\d+) sentences\)", solutions).groups()
    assert name == "Anna"
    assert int(count) > groups["the clean run looks elsewhere"][0] / 2
    # 3. "-0.13, about zero ... restores 1.03"
    third = number(r"third-name run: logit difference (-?[\d.]+)", solutions)
    assert abs(third) < 0.5
    head = number(r"head 1.3 patched at the last position: share restored (-?[\d.]+)", solutions)
    assert abs(head - 1) <= NEAR
    # "... with a third name as with the swapped subject": the page's own corruption
    last = outputs(PAGE).split("one head patched at the last position:", 1)[1]
    swapped = [float(v) for v in match(r"\nblock 1 +(.*)", last)[1].split()]
    assert abs(swapped[3] - 1) <= NEAR
