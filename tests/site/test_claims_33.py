"""Claims of page 33 (the residual stream and the logit lens) and of the chapter 7 index."""

from __future__ import annotations

import re

import torch
from sitecheck import match, number, numbers, outputs, prose, quoted_in_both_languages, run_page

from hooks_tutorial import lm

PAGE = "33"
INDEX = "auto_examples/07_language_models/index"
LAYERS = ("embeddings", "block 0", "block 1", "block 2")


def _last_position_table(printed: str) -> dict[str, list[float]]:
    """Rows of the last-position table: accuracy, logit diff, p(answer), p(subject), top = A or B."""
    table = printed.split("top = A or B", 1)[1]
    return {
        layer: numbers(rf"\n{layer} +([\d.-]+) +([\d.-]+) +([\d.]+) +([\d.]+) +([\d.]+)\n", table)
        for layer in LAYERS
    }


def _positions_table(printed: str) -> dict[str, list[float]]:
    """Rows of the all-positions table: template accuracy, p(right), random accuracy,
    accuracy after the comma, top = A or B after the comma."""
    table = printed.split("chance accuracy on the random words", 1)[1]
    return {
        layer: numbers(rf"\n{layer} +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+)\n", table)
        for layer in LAYERS
    }


def test_the_model_solves_the_task() -> None:
    printed = outputs(PAGE)
    sentence = "<bos> When Kate and Tom went to the garden , Kate gave a key to Tom ."
    # intro: completes "When Kate and Tom went to the garden , Kate gave a key to" with "Tom"
    assert f"a test sentence: {sentence}" in printed
    assert "its answer:      Tom" in printed
    # the generated sentence (greedy) is the right one
    assert f"\n{sentence}\n" in printed
    assert "parameters: 157,504" in printed
    assert "(0-2): 3 x Block(" in printed
    assert number(r"accuracy on 500 test sentences: ([\d.]+)", printed) == 1.0
    assert number(r"mean logit difference \(answer - subject\): ([\d.]+)", printed) > 5


def test_logit_difference_is_a_probability_ratio() -> None:
    # "a difference of d makes the answer e^d times more probable than the subject"
    logits = torch.randn(5, 42, generator=torch.Generator().manual_seed(0))
    probabilities = logits.softmax(-1)
    ratio = probabilities[:, 3] / probabilities[:, 7]
    torch.testing.assert_close(ratio, (logits[:, 3] - logits[:, 7]).exp())


def test_residual_stream_is_a_running_sum() -> None:
    printed = outputs(PAGE)
    for name in ("block input", "attn output", "mlp output", "block output"):
        assert re.search(rf"{name} +\[500, 15, 64\]", printed)
    assert "block output == input + attn output + mlp output: True" in printed
    # "Added in another order, floating-point rounding makes it differ in the last digits"
    difference = number(r"added in another order, largest difference: ([\d.e+-]+)", printed)
    assert 0 < difference < 1e-4
    # every hook is removed
    assert printed.count("hooks left on the model: 0") == 2


def test_embeddings_are_the_input_of_the_first_block() -> None:
    # "the embeddings (token plus position) ... are the input of blocks[0]"
    model = lm.pretrained_lm()
    tokens = lm.make_names(4, seed=1, split="test").prompts
    seen: list[torch.Tensor] = []
    handle = model.blocks[0].register_forward_pre_hook(lambda m, args: seen.append(args[0]))
    try:
        with torch.no_grad():
            model(tokens)
            expected = model.embed(tokens) + model.pos_embed(torch.arange(tokens.shape[1]))
    finally:
        handle.remove()
    assert torch.equal(seen[0], expected)
    printed = outputs(PAGE)
    for layer in LAYERS:
        assert re.search(rf"\n{layer} +\[500, 15, 64\]", printed)
    assert "same embeddings: True" in printed
    assert "same residuals after every block: True" in printed


def test_lens_on_the_last_block_is_the_model() -> None:
    assert "lens after the last block == the model's logits: True" in outputs(PAGE)


def test_lens_at_the_last_position() -> None:
    printed = outputs(PAGE)
    rows = _last_position_table(printed)
    # embeddings: the same name for all 500 sentences; accuracy near chance (1 in 16)
    assert "top tokens of the embeddings at the last position: {'Sarah': 500}" in printed
    accuracy, _, _, _, _ = rows["embeddings"]
    assert abs(accuracy - 1 / 16) < 0.03
    # block 0: one of the two names in most sentences, the answer about as often as
    # the subject, nearly equal probabilities, logit difference close to 0
    accuracy, logit_diff, p_answer, p_subject, either = rows["block 0"]
    assert either > 0.75
    assert abs(accuracy - (either - accuracy)) < 0.05
    assert abs(p_answer - p_subject) < 0.02
    assert abs(logit_diff) < 0.2
    # block 1 chooses: accuracy 1.000 with a large logit difference
    accuracy, logit_diff_1, p_answer_1, _, _ = rows["block 1"]
    assert accuracy == 1.0
    assert logit_diff_1 > 4
    # block 2 adds confidence, not accuracy
    accuracy, logit_diff_2, p_answer_2, _, _ = rows["block 2"]
    assert accuracy == 1.0
    assert logit_diff_2 > logit_diff_1
    assert p_answer_2 > p_answer_1
    assert "answer probability higher after block 1 than after block 0: 500 of 500" in printed
    quoted_in_both_languages(
        PAGE,
        f"{rows['embeddings'][0]:.3f}",
        f"{rows['block 0'][4]:.3f}",
        f"{rows['block 0'][0]:.3f}",
        f"{rows['block 0'][2]:.3f}",
        f"{rows['block 0'][3]:.3f}",
        f"{rows['block 0'][1]:.2f}",
        f"{logit_diff_1:.2f}",
        f"{logit_diff_2:.2f}",
    )
    assert "all 500 sentences" in prose(PAGE)
    quoted_in_both_languages(PAGE, "500")


def test_first_sentence_heatmap() -> None:
    printed = outputs(PAGE)
    # "the lens after block 0 even predicts Kate, the subject, at the last position;
    # after block 1 it predicts Tom"
    lines = ("embeddings " + printed.rsplit("\nembeddings ", 1)[1]).splitlines()[:4]
    row = {
        layer: line.removeprefix(layer).split() for layer, line in zip(LAYERS, lines, strict=True)
    }
    assert all(len(tokens) == 15 for tokens in row.values())
    assert row["block 0"][-1] == "Kate"
    assert row["block 1"][-1] == "Tom"
    assert row["block 2"][-1] == "Tom"


def test_lens_at_every_position() -> None:
    printed = outputs(PAGE)
    chance = number(r"chance accuracy on the random words: ([\d.]+)", printed)
    assert chance == round((1 / 16 + 1 / 15 + 1 / 8 + 1 / 8) / 4, 3)
    rows = _positions_table(printed)
    # the template words are read from block 0 on (0.985), with probability 0.994 after block 1
    assert rows["block 0"][0] > 0.95
    assert rows["block 1"][0] == rows["block 2"][0] == 1.0
    assert rows["block 1"][1] > 0.99
    # the random words are no better than chance at any layer
    assert all(values[2] <= chance + 0.01 for values in rows.values())
    # after the comma: one of the two names from block 0 on, right about half of the time
    for layer in ("block 0", "block 1", "block 2"):
        assert rows[layer][4] > 0.95
        assert 0.45 < rows[layer][3] < 0.55
    quoted_in_both_languages(
        PAGE, f"{rows['block 0'][0]:.3f}", f"{rows['block 1'][1]:.3f}", f"{chance:.3f}"
    )


def test_exercise_answers() -> None:
    solutions = run_page(PAGE).solutions
    middle = numbers(
        r"after block 1's attention: accuracy ([\d.]+), logit diff ([\d.-]+)", solutions
    )
    before = numbers(r"after block 0: accuracy ([\d.]+), logit diff ([\d.-]+)", solutions)
    after = numbers(r"after block 1: accuracy ([\d.]+), logit diff ([\d.-]+)", solutions)
    # 1. block 1's attention chooses the answer, its MLP finishes the job
    assert before[0] < 0.5
    assert 0.9 < middle[0] <= after[0]
    assert before[1] < middle[1] < after[1]
    # 2. twice, [1, 15, 64] then [1, 16, 64], and the sentence ends with "Tom ."
    assert "calls: 2 shapes: [[1, 15, 64], [1, 16, 64]]" in solutions
    assert "gave a key to Tom .\n" in solutions
    # 3. the tuned lens reads block 0 better, but it is still a coin toss
    plain = numbers(r"block 0, plain lens: accuracy ([\d.]+), logit diff ([\d.-]+)", solutions)
    tuned = numbers(r"block 0, tuned lens: accuracy ([\d.]+), logit diff ([\d.-]+)", solutions)
    assert plain == before
    assert plain[0] < tuned[0] < 0.6
    assert plain[1] < tuned[1] < 0.5
    # "after block 0 the last position holds at most a trace of which name was repeated,
    # which reaches it in block 1 (page 35)": page 35's mean distance between the clean
    # and the corrupted residual at the last position (14) after block 0 and block 1
    patching = outputs("35")
    distances = {
        layer: [
            float(d)
            for d in match(rf"{layer} +: positions 0-9 equal: True; [^:]+:(.*)", patching)[
                1
            ].split()
        ]
        for layer in ("block 0", "block 1")
    }
    assert distances["block 0"][-1] < 0.05 * distances["block 1"][-1]


def test_chapter_index() -> None:
    # "3 blocks of 4 attention heads, 157,504 parameters"
    model = lm.pretrained_lm()
    assert len(model.blocks) == 3
    assert all(block.attn.n_heads == 4 for block in model.blocks)
    assert f"{sum(p.numel() for p in model.parameters()):,}" == "157,504"
    for language in ("en", "zh_CN"):
        text = prose(INDEX, language)
        assert "157,504" in text
    assert "3 blocks of 4 attention heads" in prose(INDEX)
    # "TransformerLens with forward hooks on named identity modules, nnsight with a
    # wrapper around each module's forward": page 37 shows both
    assert "nnsight with a wrapper around each module" in prose(INDEX)
    libraries = outputs("37")
    assert "in the hook: HookPoint 'blocks.1.attn.out.hook_in', forward hooks:" in libraries
    assert "forward of blocks[1].attn.out after:  Controller" in libraries
    assert "paused at blocks[1].attn.out: forward hooks {}" in libraries
    assert "parameters: 157,504" in outputs(PAGE)
