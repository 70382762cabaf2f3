"""Claims of page 14 (pitfalls), checked against what the page printed."""

from __future__ import annotations

import ast
import re

from sitecheck import match, number, numbers, outputs, run_page

PAGE = "14"


def test_full_backward_hook_and_inplace_relu_fail_in_the_forward_pass() -> None:
    # "the in-place ReLU that follows then modifies that output, and PyTorch refuses already in
    # the *forward* pass"  (the error is printed by the cell that only runs model(inputs))
    printed = outputs(PAGE)
    assert printed.startswith(
        "RuntimeError: Output 0 of BackwardHookFunction is a view and is being modified inplace."
    )


def test_resnet_uses_inplace_relu() -> None:
    # "Many networks (torchvision's ResNet among them) use nn.ReLU(inplace=True)."
    from torchvision.models import resnet18  # noqa: PLC0415  (only this test needs it)

    assert resnet18().relu.inplace


def test_detach_shares_memory_clone_does_not() -> None:
    # "It works with the in-place ReLU."  ".detach() returns a tensor that shares memory with
    # the original ... the "detached" copy lost its negative values ... .clone() kept the
    # values the hook saw."  "zero where the ReLU was inactive. A check against the chain rule"
    printed = outputs(PAGE)
    assert "gradient w.r.t. the Linear output, shape: (3, 6)" in printed
    assert number(r"stored with \.detach\(\):\s+(-?[\d.]+)", printed) == 0.0
    assert number(r"stored with \.detach\(\)\.clone\(\):\s*(-?[\d.]+)", printed) < 0
    assert "detached tensor shares memory with the output: True" in printed
    assert "cloned tensor shares memory with the output: False" in printed
    assert "gradient matches the chain rule: True" in printed


def test_no_grad_and_inference_mode_keep_forward_hooks_but_no_graph() -> None:
    # "forward hooks still fire, but no graph is built ...: the output does not require grad,
    # and registering a tensor hook fails."
    printed = outputs(PAGE)
    for mode in ["no_grad", "inference_mode"]:
        block = match(rf"under torch\.{mode}\(\):\n(.*\n.*)\n", printed)[1]
        assert "RuntimeError: cannot register a hook on a tensor that doesn't require" in block
        assert "forward hook fired: Linear; output.requires_grad = False" in block


def test_eval_changes_dropout_and_batchnorm_only() -> None:
    # "Dropout draws a new random mask at each call in training mode and is the identity in
    # eval mode. BatchNorm normalises with the statistics of the current batch in training
    # mode and with its stored running averages in eval mode. Linear layers behave the same in
    # both modes, and gradients stay on in eval mode"
    printed = outputs(PAGE)
    rows = re.findall(
        r"^(\w+)\s+train twice equal: (\w+)\s+train == eval: (\w+)\s+"
        r"eval output requires grad: (\w+)\s+eval output == input: (\w+)$",
        printed,
        flags=re.MULTILINE,
    )
    assert rows == [
        ("Linear", "True", "True", "True", "False"),
        ("BatchNorm1d", "True", "False", "True", "False"),
        ("Dropout", "False", "False", "True", "True"),
        ("Linear", "True", "True", "True", "False"),
    ]


def test_stored_outputs_keep_the_input_batches() -> None:
    # "With .detach() the memory grows only by the activations we chose to keep. Without it,
    # every step also keeps its input batch"; "a new input batch of 256 KiB each step"
    printed = outputs(PAGE)
    for step in [1, 10, 20]:
        graph, detached = numbers(
            rf"after step\s+{step}: stored output:\s+(\d+) KiB\s+stored output\.detach\(\):\s+"
            r"(\d+) KiB",
            printed,
        )
        assert detached == 16 * step  # one 64 x 64 float32 ReLU output (16 KiB) per step
        assert graph == (16 + 256) * step  # plus one 64 x 1024 float32 input batch
    assert number(r"extra growth per step / input batch size: ([\d.]+)", printed) == 1.0


def test_compile_and_hooks_added_before_or_after() -> None:
    # "a hook registered *before* compiling" fires; "The compiled model keeps using its
    # hook-free trace, and the new hook is silently ignored. The same module called directly
    # (not compiled) runs it. torch.compiler.reset() throws away the traces, and the next call
    # traces again and sees the hook."
    printed = outputs(PAGE)
    assert "hook registered before compiling fired: ['hook']" in printed
    assert "after handle.remove(), calls are still: ['hook']" in printed
    assert "compiled call after adding the hook: []" in printed
    assert re.search(r"plain call of the same model:\s+\['hook'\]", printed)
    assert re.search(r"compiled call after reset\(\):\s+\['hook', 'hook'\]", printed)


def test_a_backward_hook_leaves_nothing_compiled() -> None:
    # "Without hooks the model is one compiled graph. With the backward hook on its ReLU, no
    # graph at all is compiled: the whole model ... runs eagerly (uncompiled), while the hook
    # still fires."  "fullgraph=True turns this silent fallback into an error that says why"
    printed = outputs(PAGE)
    without = match(r"without hooks\s+: graphs compiled: (\d+), hook calls: (.*)", printed)
    with_hook = match(
        r"with a full backward hook: graphs compiled: (\d+), hook calls: (.*)", printed
    )
    assert (int(without[1]), ast.literal_eval(without[2])) == (1, [])
    assert (int(with_hook[1]), ast.literal_eval(with_hook[2])) == (0, ["backward"])
    assert "Unsupported: Module-level backwards hooks require compiled autograd." in printed


def test_solutions_state_their_answers() -> None:
    run = run_page(PAGE)
    lines = run.solutions.splitlines()
    # 1. "the forward pass runs and the hook fires (``hook fired``)"
    assert lines[0] == "hook fired"
    # 2. "Both lines show the same 327680 bytes after 20 steps, 16 KiB per step ... the
    #    stored ReLU outputs of 16 KiB each"
    assert lines[1:3] == [
        "stored output: 327680 bytes after 20 steps, 16 KiB per step",
        "stored output.detach(): 327680 bytes after 20 steps, 16 KiB per step",
    ]
    assert 327680 == 20 * 64 * 64 * 4  # 20 ReLU outputs of 64 x 64 float32 values
    # 3. "the compiled model ignores the new pre-hook (an empty list) until
    #    ``torch.compiler.reset()``; the next call traces again and the pre-hook fires"
    assert lines[3:5] == ["after adding the pre-hook: []", "after reset(): ['pre']"]
