"""Claims of page 11 (parameter hooks), checked against what the page printed."""

from __future__ import annotations

import ast
import math
import re

import pytest
import torch
from sitecheck import match, number, numbers, outputs, quoted_in_both_languages, run_page
from torch import nn

PAGE = "11"


def _norms(label: str, printed: str) -> dict[str, float]:
    """The dict of gradient norms printed after ``label``."""
    found: dict[str, float] = ast.literal_eval(match(rf"{label}\s*(\{{[^}}]*\}})", printed)[1])
    return found


def test_register_hook_sees_each_contribution_post_accumulate_sees_the_sum() -> None:
    # "With two backward() calls (gradient accumulation) the difference shows."
    # Summary: "register_hook sees each new gradient contribution; the post-accumulate hook
    # sees the sum stored in .grad"
    printed = outputs(PAGE)
    assert "register_hook: new gradient 3.0\n  post-accumulate hook: weight.grad = 3.0" in printed
    assert "register_hook: new gradient 5.0\n  post-accumulate hook: weight.grad = 8.0" in printed


def test_large_weight_gradient_is_far_larger() -> None:
    # "one layer, large, whose weight gradient is far larger than the others, because its
    # input is scaled by 100"
    plain = _norms("no clipping:", outputs(PAGE))
    others = [v for k, v in plain.items() if k != "large.weight"]
    assert plain["large.weight"] > 50 * max(others)
    assert math.isclose(plain["large.weight"] / plain["small.weight"], 100, rel_tol=0.01)
    quoted_in_both_languages(PAGE, "100")


def test_per_parameter_clipping_shrinks_only_large_weight() -> None:
    # "rescales its gradient so that its norm is at most 50"
    # "Per-parameter clipping bounds each gradient separately: only large.weight was shrunk,
    # the other gradients kept their size."
    printed = outputs(PAGE)
    plain, clipped = _norms("no clipping:", printed), _norms("per parameter:", printed)
    assert max(clipped.values()) <= 50
    assert clipped["large.weight"] == 50.0
    assert {k: v for k, v in clipped.items() if k != "large.weight"} == {
        k: v for k, v in plain.items() if k != "large.weight"
    }
    quoted_in_both_languages(PAGE, "50")


def test_global_clipping_scales_everything_by_one_factor() -> None:
    # "computes one norm over all gradients together, and scales every gradient by the same
    # factor when that global norm is too large"; "the other gradients, which were below the
    # bound, shrink too"
    printed = outputs(PAGE)
    plain, global_clip = _norms("no clipping:", printed), _norms("global clipping:", printed)
    before = number(r"global norm before clipping: ([\d.]+)", printed)
    assert before > 50
    for name, value in plain.items():
        # rounded to 3 decimals in the print: tolerance of half a unit in the last place
        assert math.isclose(global_clip[name], value * 50 / before, abs_tol=6e-4), name
        assert global_clip[name] < value
    assert number(r"global norm after clipping: ([\d.]+)", printed) == 50.0


def test_optimizer_in_backward() -> None:
    # "the gradient can be freed at once"; Summary: "gives the same update as a step after
    # backward and frees each gradient early"; "A few more steps: the loss falls"
    printed = outputs(PAGE)
    assert "first-layer weights changed by backward(): True" in printed
    assert "gradients left after backward(): [None, None, None, None]" in printed
    assert "same weights as optimizer.step() after backward(): True" in printed
    first, last = (
        float(v) for v in match(r"loss at step 1: ([\d.]+), at step 30: ([\d.]+)", printed).groups()
    )
    assert last < first


def test_library_tools_scale_clip_and_leave_no_hooks() -> None:
    # "scale_gradients uses register_hook (it scales each new contribution)"; "the hooks are
    # removed when the block ends"; clip_gradients "bounds the accumulated .grad, per parameter"
    printed = outputs(PAGE)
    plain, scaled = _norms("plain:", printed), _norms("large scaled by 0.1:", printed)
    for name in ["large.weight", "large.bias"]:
        assert math.isclose(scaled[name], plain[name] * 0.1, abs_tol=1e-3)
    for name in ["small.weight", "small.bias"]:
        assert scaled[name] == plain[name]
    assert number(r"hooks on the model inside the block: (\d+)", printed) == 4
    assert number(r"hooks on the model after the block:\s+(\d+)", printed) == 0
    assert "matches the hand-written hook: True" in printed


def test_a_zero_gradient_does_not_freeze_a_layer() -> None:
    # "With a zero gradient only plain SGD leaves the layer where it was."
    # "requires_grad_(False) (the right-hand column, where nothing moves)"
    # Summary: "weight decay, momentum and Adam still move it"
    printed = outputs(PAGE)
    rows = {
        name: numbers
        for name in ["SGD", "SGD, momentum=0.9", "SGD, weight_decay=0.1", "Adam"]
        for numbers in [
            [
                float(v)
                for v in match(rf"\n{re.escape(name)}\s+([\d.]+)\s+([\d.]+)\n", printed).groups()
            ]
        ]
    }
    assert rows["SGD"] == [0.0, 0.0]
    for name in ["SGD, momentum=0.9", "SGD, weight_decay=0.1", "Adam"]:
        zero_gradient, no_gradient = rows[name]
        assert zero_gradient > 0.001, name
        assert no_gradient == 0.0, name


def test_zero_grad_sets_grad_to_none_and_optimizers_skip_it() -> None:
    # "optimizer.zero_grad() sets .grad to None by default, and optimizers skip parameters
    # whose .grad is None"
    layer = nn.Linear(2, 2)
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.1, momentum=0.9, weight_decay=0.1)
    layer(torch.randn(3, 2)).sum().backward()
    optimizer.step()
    optimizer.zero_grad()
    assert all(p.grad is None for p in layer.parameters())
    before = [p.detach().clone() for p in layer.parameters()]
    optimizer.step()  # momentum and weight decay would move a parameter with a .grad
    assert all(torch.equal(a, p) for a, p in zip(before, layer.parameters(), strict=True))


def test_step_hooks_run_around_each_step() -> None:
    # "A post hook is a good place to log something after every update, here the step count
    # and the weight norm."
    printed = outputs(PAGE)
    for step in [1, 2, 3]:
        assert f"after step {step}: weight norm" in printed


def test_solutions_state_their_answers() -> None:
    lines = run_page(PAGE).solutions.splitlines()
    # 1. "The two give the same gradients (``True``), none of whose entries is larger
    #    than 0.5 in size."
    assert lines[0] == "same gradients: True"
    assert number(r"largest gradient entry: ([\d.]+)", lines[1]) <= 0.5
    # 2. "``.grad`` is all zeros (``True``), but the SGD step still moves
    #    ``small.weight``, by up to 0.0050: ... each weight shrinks by
    #    ``lr * weight_decay = 0.01`` of its value"
    assert lines[2] == "small.weight.grad all zero: True"
    change, largest_weight = numbers(
        r"largest change of small.weight: ([\d.]+) = 0.1 \* 0.1 \* ([\d.]+)", lines[3]
    )
    assert change == pytest.approx(0.01 * largest_weight, abs=5e-5)
    assert f"{change:.4f}" == "0.0050"
    # 3. "halved in the pre-hooks of the 10th and the 20th step, from ``lr=0.1`` to 0.05,
    #    then 0.025"
    assert lines[4:] == ["step 10: lr = 0.05", "step 20: lr = 0.025"]
