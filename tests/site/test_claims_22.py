"""Claims of page 22, beyond CNNs (each test names the sentence it backs)."""

from __future__ import annotations

import re

from sitecheck import match, number, outputs, run_page

PAGE = "22"


def test_naive_gradcam_works_on_layer4() -> None:
    # "On layer4, the whole last stage, it works"
    assert "layer4: maps (2, 2, 2) for inputs (2, 3, 64, 64)" in outputs(PAGE)


def test_naive_gradcam_fails_on_bn2_and_leaves_no_hook() -> None:
    printed = outputs(PAGE)
    # "On layer4[1].bn2 it fails ... autograd raises the error in the forward pass"
    assert "RuntimeError: Output 0 of BackwardHookFunction is a view" in printed
    # "The finally block did its job: no hook is left behind."
    first = printed.index("RuntimeError: Output 0")
    assert number(r"hooks left on the model: (\d+)", printed[first:]) == 0


def test_detach_shares_memory_with_the_output() -> None:
    printed = outputs(PAGE)
    # "the in-place addition and ReLU change the stored values too"
    assert number(r"stored values changed afterwards by: ([\d.]+)", printed) > 0
    # "A BatchNorm output has negative values; after the in-place ReLU the
    # detached copy has none."
    assert "negative values in the detached copy? False" in printed
    assert "negative values in the clone?         True" in printed


def test_the_wrong_map_differs() -> None:
    printed = outputs(PAGE)
    # "The resulting map differs from the one computed from the true activations"
    difference = number(r"max \|difference\| between the two maps: ([\d.e+-]+)", printed)
    largest = number(r"largest value of the correct map:\s+([\d.e+-]+)", printed)
    assert difference > 0.1 * largest


def test_library_map_equals_the_clone_based_map() -> None:
    printed = outputs(PAGE)
    # "in-place operations after the layer are harmless"
    assert "library map: (2, 2, 2)" in printed
    assert "same as the clone-based map (max |difference| < 1e-6)? True" in printed


def test_token_shapes_and_errors() -> None:
    printed = outputs(PAGE)
    # "64 patch tokens plus the class token"
    assert "output of blocks[0]: (2, 65, 32)" in printed
    # "the library says what is wrong and what to pass"
    assert "pass reshape_transform=token_reshape_transform" in printed
    # "lays the 64 patch tokens out on their 8 x 8 grid"
    assert "raw map: (2, 8, 8)  upsampled: (2, 64, 64)" in printed
    # "their gradient, and with it the map, is zero"
    assert number(r"largest value of the raw map at blocks.1: ([\d.]+)", printed) == 0
    # "With one extra token there are 66 tokens; neither 66 nor 65 is a square number"
    assert "cannot arrange 66 tokens in a square grid (neither 66 nor 65" in printed
    # "Telling it how many tokens come first fixes it"
    assert len(re.findall(r"raw map: \(2, 8, 8\)", printed)) == 2
    assert match(r"hooks left on the two transformers: (\d+) (\d+)", printed).groups() == ("0", "0")


# -- the answers of the exercises (sitecheck.run_page runs the solutions) ------


def test_answer_1_the_modules_that_raise() -> None:
    printed = run_page(PAGE).solutions
    total = number(r"(\d+) modules raise:", printed)
    kinds = {kind: number(rf"named {kind}: (\d+)", printed) for kind in ("bn1", "bn2", "relu")}
    # "26 modules raise the RuntimeError, of three kinds"
    assert total == sum(kinds.values()) == 26
    assert kinds == {"bn1": 9, "bn2": 8, "relu": 9}
    failing = match(r"modules raise: (\[.*\])", printed)[1]
    # "The convolutions, the downsampling branches and the whole blocks work"
    assert "conv" not in failing
    assert "downsample" not in failing
    assert "'layer4.1'" not in failing
    assert number(r"hooks left on the model: (\d+)", printed) == 0


def test_answer_2_the_careful_version_matches_the_library() -> None:
    printed = run_page(PAGE).solutions
    assert "careful map: (2, 2, 2)" in printed
    assert "same as the library's raw map: True" in printed


def test_answer_3_a_non_square_grid() -> None:
    printed = run_page(PAGE).solutions
    # "Without grid the transform refuses: 97 tokens ... do not form a square grid,
    # and the error says what to pass"
    assert "without grid: ValueError: cannot arrange 97 tokens in a square grid" in printed
    assert "grid=(h, w)" in printed
    # "the raw map is 8 x 12 and the upsampled map 64 x 96"
    assert "raw map: (2, 8, 12)  upsampled: (2, 64, 96)" in printed
