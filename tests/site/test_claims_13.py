"""Claims of page 13 (debugging with hooks), checked against what the page printed."""

from __future__ import annotations

import ast
import itertools
import re

import torch
from sitecheck import match, number, numbers, outputs, quoted_in_both_languages, run_page

PAGE = "13"


def test_log_of_tanh_gives_nan_everywhere() -> None:
    # "Its input comes from a Tanh, which is negative about half of the time, and the log of a
    # negative number is NaN. The final output is NaN everywhere"
    printed = outputs(PAGE)
    nan, total = numbers(r"NaN values in the final output: (\d+) of (\d+)", printed)
    assert nan == total
    bad, size = numbers(r"'log' has (\d+) NaN and 0 Inf values \(of (\d+)\)", printed)
    assert 0.3 < bad / size < 0.7


def test_the_first_report_names_the_module_where_nan_appeared() -> None:
    # "the first report names the module where the NaN appeared; every module after it only
    # passes the NaN on"
    printed = outputs(PAGE)
    assert "first module with non-finite output: log (LogFeatures)" in printed
    reports = re.findall(r"^\s+(\w+) \(\w+\): \d+ non-finite values$", printed, flags=re.MULTILINE)
    assert reports == ["log", "fc2"]


def test_lambdas_defined_in_a_loop_see_only_the_last_name() -> None:
    # "a lambda defined in the loop would see only the last name"
    model = run_page(PAGE).namespace["model"]
    seen: list[str] = []
    handles = [
        m.register_forward_hook(lambda module, args, output: seen.append(name))  # noqa: B023 (the trap)
        for name, m in model.named_modules()
        if name
    ]
    try:
        model(torch.randn(2, 8))
    finally:
        for handle in handles:
            handle.remove()
    assert len(seen) == 4
    assert set(seen) == {"fc2"}


def test_detect_anomalies_names_the_module_and_leaves_no_hook() -> None:
    # "It raises AnomalyError at the first non-finite value"; Summary: "raises AnomalyError with
    # the module's name; no hook is left afterwards"
    printed = outputs(PAGE)
    assert "module: log | phase: forward | NaN count: 34" in printed
    assert number(r"hooks left on the model: (\d+)", printed) == 0


def test_torch_where_nan_appears_only_in_backward() -> None:
    # "The forward pass is then finite, but the gradients are not."
    printed = outputs(PAGE)
    assert "forward output is finite: True" in printed
    nan, total = numbers(r"NaN values in fc1\.weight\.grad: (\d+) of (\d+)", printed)
    assert 0 < nan <= total


def test_detect_anomaly_names_the_backward_function_and_the_forward_line() -> None:
    # "Forward checks see nothing here. ... raises at the first NaN. It also records ... where
    # each operation was called, and reports that place in a warning."
    # "Anomaly mode names the autograd function (SqrtBackward0) and the line of the forward
    # pass that created it. As its warning says, it slows every operation down"
    printed = outputs(PAGE)
    assert "RuntimeError: Function 'SqrtBackward0' returned nan values" in printed
    assert "warning: Anomaly Detection has been enabled. This mode will increase the runtime" in (
        printed
    )
    assert "Error detected in SqrtBackward0." in printed
    assert (
        "forward call that created it: return torch.where(x > 0, torch.sqrt(x), "
        "torch.zeros_like(x))" in printed
    )
    quoted_in_both_languages(PAGE, "SqrtBackward0")
    # detect_anomalies "names the module whose backward produced the NaN" and its forward
    # checks found nothing (the error is from the backward pass)
    error = match(r"AnomalyError: (backward pass: .*)", printed)[1]
    assert "NaN" in error
    assert error.endswith("'sqrt'")


def test_dead_relus() -> None:
    # "In the first two ReLU layers about half of the outputs are zero and no unit is dead ...
    # The layer with the negative bias is silent. The layer after it receives only zeros, so
    # each of its units outputs its bias alone ...: where that bias is negative the unit is
    # dead too."
    printed = outputs(PAGE)
    stats = {
        name: numbers(rf"ReLU {name}\s+zero outputs: ([\d.]+)\s+dead units: ([\d.]+)", printed)
        for name in ["1", "3", "5", "7"]
    }
    for name in ["1", "3"]:
        assert 0.4 <= stats[name][0] <= 0.6
        assert stats[name][1] == 0.0
    assert stats["5"] == [1.0, 1.0]
    assert stats["7"][0] == stats["7"][1]  # every zero output is a dead unit's
    mlp = run_page(PAGE).namespace["mlp"]
    negative_bias = (mlp[6].bias <= 0).float().mean().item()
    assert round(negative_bias, 2) == stats["7"][1]


def test_gradient_norms_small_and_exploding_runs() -> None:
    # "with the small learning rate no layer's gradient norm exceeds 3 in any step; with the
    # large one the norm of every layer grows more than ten-thousandfold from step 1 to step 4
    # and overflows at step 5"
    printed = outputs(PAGE)
    small, large = printed.split("lr=0.15:")
    assert number(r"largest finite norm over all layers and steps: ([\d.e+]+)", small) < 3
    assert "first step with a non-finite gradient norm: None" in small
    assert number(r"smallest growth from step 1 to step 4 over all layers: ([\d.e+]+)", large) > 1e4
    assert number(r"first step with a non-finite gradient norm: (\d+)", large) == 5


def test_solutions_state_their_answers() -> None:
    lines = run_page(PAGE).solutions.splitlines()
    # 1. "No module reports anything (an empty list)"
    assert lines[0] == "reports: []"
    # 2. "the gradient of the ReLU's output has 38 Inf values (of 80), one for each of the
    #    38 zeros in that output ... It names ``sqrt`` ... ``torch.autograd.detect_anomaly()``
    #    raises nothing ... the parameter gradients stay finite (``True``)."
    inf, total = numbers(
        r"^backward pass: .* has 0 NaN and (\d+) Inf values \(of (\d+)\).*'sqrt'$", lines[1]
    )
    assert lines[2] == f"zero outputs of the ReLU: {int(inf)}"
    assert total == 80
    assert lines[3:5] == ["detect_anomaly raised: False", "fc1 gradient finite: True"]
    quoted_in_both_languages(PAGE, f"{int(inf)}")
    # 3. "Only the last ReLU, ``ReLU 7``, still has dead units (0.41 of them) ... the
    #    input-driven part of the signal [shrinks] about threefold per layer ... so at
    #    ``mlp[6]`` the biases ... outweigh the input"
    dead = ast.literal_eval(lines[5])
    assert [name for name, fraction in dead.items() if fraction > 0] == ["ReLU 7"]
    assert torch.equal(run_page(PAGE).namespace["mlp"][4].bias, torch.zeros(32))
    rows = [
        numbers(r"input-driven std ([\d.]+), mean \|bias\| ([\d.]+)", line) for line in lines[6:]
    ]
    stds = [std for std, _ in rows]
    assert len(stds) == 4
    assert all(2 < a / b < 4.5 for a, b in itertools.pairwise(stds))  # about threefold
    assert rows[3][1] > 3 * rows[3][0]  # at mlp[6] the biases outweigh the input
