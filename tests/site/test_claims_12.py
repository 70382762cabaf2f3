"""Claims of page 12 (saved-tensor hooks), checked against what the page printed."""

from __future__ import annotations

import re

import pytest
import torch
from sitecheck import number, numbers, outputs, quoted_in_both_languages, run_page

PAGE = "12"


def _table(printed: str) -> list[tuple[int, str, str, int, str]]:
    """Rows of the table of saved tensors: index, shape, dtype, bytes, note."""
    rows = re.findall(
        r"^ *(\d+) +(\([\d, ]*\)) +(torch\.\w+) +(\d+) *(.*)$", printed, flags=re.MULTILINE
    )
    return [(int(i), shape, dtype, int(size), note.strip()) for i, shape, dtype, size, note in rows]


def test_sin_saves_x_and_unpacks_it_in_backward() -> None:
    # "The derivative of sin(x) is cos(x), so the backward pass needs x again." pack at
    # forward, unpack at backward, "even though the block has ended"
    printed = outputs(PAGE)
    forward = printed.index("forward pass:\n  pack:   saving a tensor of shape (5,)")
    backward = printed.index("backward pass:\n  unpack: backward needs the tensor of shape (5,)")
    assert forward < backward
    assert "x.grad equals cos(x): True" in printed


def test_what_the_mlp_saves() -> None:
    # "The pack hook was called once per *save*, not once per tensor. The output of each ReLU
    # is saved twice ... The weights appear as transposed views of the parameters, and the
    # first layer saves the input batch itself"
    printed = outputs(PAGE)
    rows = _table(printed)
    assert len(rows) == number(r"pack calls: (\d+)", printed) == 11
    repeats = [r for r in rows if r[4].startswith("same tensor as")]
    relu_outputs = [r for r in repeats if r[1] == "(128, 512)"]
    assert len(relu_outputs) == 2  # two ReLUs, each output saved a second time
    views = [r[1] for r in rows if r[4] == "view of a parameter"]
    assert views == ["(512, 512)", "(512, 10)"]  # Linear(512, 10).weight is (10, 512)
    assert rows[0][1:] == ("(128, 256)", "torch.float32", 131072, "the batch (inputs or targets)")


def test_bytes_added_leave_out_parameters_batch_and_repeats() -> None:
    # "the bytes of the distinct storages of the saved tensors, leaving out the parameters
    # and the batch"
    printed = outputs(PAGE)
    rows = _table(printed)
    added = sum(r[3] for r in rows if r[4] == "")
    assert number(r"not parameters or batch\): (\d+)", printed) == added
    assert number(r"sum of their sizes: (\d+) bytes", printed) == sum(r[3] for r in rows)


def test_save_on_cpu_changes_nothing_on_cpu() -> None:
    # "save_on_cpu() is a subclass of saved_tensors_hooks ... tensor.cpu() returns the tensor
    # itself, so nothing moves and the gradients are identical"
    printed = outputs(PAGE)
    assert "save_on_cpu is a saved_tensors_hooks: True" in printed
    assert "CUDA available here: False" in printed
    assert "tensor.cpu() is tensor on this machine: True" in printed
    assert "gradients identical: True" in printed


def test_float16_halves_the_bytes_the_graph_adds() -> None:
    # "Measured the same way on both sides, float16 storage halves the memory the graph adds
    # (ratio 0.500). Compressing the batch as well does worse, not better"
    printed = outputs(PAGE)
    default, ratio_default = numbers(r"default \(float32\):\s+(\d+)\s+ratio ([\d.]+)", printed)
    alone, ratio_alone = numbers(r"batch left alone:\s+(\d+)\s+ratio ([\d.]+)", printed)
    copied, ratio_copied = numbers(r"batch copied too:\s+(\d+)\s+ratio ([\d.]+)", printed)
    assert ratio_default == 1.0
    assert abs(alone / default - 0.5) < 0.0005
    assert ratio_alone == 0.5
    assert ratio_copied > ratio_alone
    assert copied - alone == 128 * 256 * 2  # the float16 copy of the input batch
    assert default == number(r"not parameters or batch\): (\d+)", printed)
    quoted_in_both_languages(PAGE, "0.500")


def test_float16_gradient_errors_are_small() -> None:
    # "The forward pass is unchanged (it used the original tensors); only the backward pass
    # sees rounded values."  Summary: "gave relative gradient errors below 0.001"
    errors = [float(e) for e in re.findall(r"relative gradient error: ([\d.e+-]+)", outputs(PAGE))]
    assert len(errors) == 6
    assert all(0 < e < 0.001 for e in errors)
    quoted_in_both_languages(PAGE, "0.001")


def test_the_forward_pass_is_unchanged_by_float16_storage() -> None:
    # "The forward pass is unchanged (it used the original tensors)"
    ns = run_page(PAGE).namespace
    model, inputs = ns["model"], ns["inputs"]
    plain = model(inputs)
    with ns["make_float16_hooks"](ns["held_elsewhere"], []):
        packed = model(inputs)
    assert torch.equal(plain, packed)


def test_solutions_state_their_answers() -> None:
    lines = run_page(PAGE).solutions.splitlines()
    # 1. "Yes, here they are equal: ``{'pack': 11, 'unpack': 11}``"
    assert lines[0] == "{'pack': 11, 'unpack': 11}"
    # 2. "bfloat16's relative errors are 1.40e-03 to 2.21e-03, 7.6 to 8.9 times
    #    float16's ... 8 significant bits against float16's 11, so it rounds to steps
    #    ``2 ** 3`` = 8 times coarser. (... the float16 errors are the page's, ``True``.)"
    assert lines[1] == "same float16 errors as the page: True"
    low, high = numbers(r"bfloat16 / float16: ([\d.]+) to ([\d.]+) times", lines[3])
    assert 2**3 / 1.5 < low <= high < 2**3 * 1.5  # about 8, as the three fewer bits predict
    assert lines[4] == "significant bits: bfloat16 8 float16 11"
    quoted_in_both_languages(PAGE, f"{low:.1f}", f"{high:.1f}")
    # 3. "Without the cache the graph adds 529410 bytes, about the 529412 of float32,
    #    against 264706 with the cache"
    without_cache, default, cached = numbers(
        r"without the cache: (\d+) bytes; float32: (\d+); float16 with the cache: (\d+)",
        lines[5],
    )
    assert abs(without_cache / default - 1) < 0.01
    assert cached / default == pytest.approx(0.5, abs=0.01)
