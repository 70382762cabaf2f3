"""Claims of page 29 (checkpointing and offloading), checked against its outputs."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
import torch
from sitecheck import match, number, numbers, outputs, quoted_in_both_languages, run_page
from torch import nn
from torch.utils.checkpoint import checkpoint, checkpoint_sequential

PAGE = "29"


def _hook_calls(printed: str) -> list[tuple[float, float]]:
    found = re.findall(
        r"hook calls after forward:\s+(\d+)\nhook calls after backward:\s+(\d+)", printed
    )
    return [(float(a), float(b)) for a, b in found]


def test_forward_hooks_fire_again_under_checkpoint() -> None:
    printed = outputs(PAGE)
    plain, checkpointed = _hook_calls(printed)
    # "Eight linear layers, eight calls, and the backward pass adds none."
    assert plain == (8, 8)
    # "each checkpointed block ran its forward pass again ... But not all of them"
    assert checkpointed[0] == 8
    assert 8 < checkpointed[1] < 16
    rows = re.findall(r"(blocks\.\d\.\d)\s+(\d)\s+(\d)\s+(\d)", printed)
    assert len(rows) == 8
    for name, pre, default, no_early_stop in rows:
        # "the rerun is aborted inside that layer's call ... So that layer's forward
        # *pre*-hooks fire twice, but its forward hooks only once."
        assert int(pre) == 2, name
        assert int(default) == (2 if name.endswith(".0") else 1), name
        # "set_checkpoint_early_stop(False) ... then every layer runs twice"
        assert int(no_early_stop) == 2, name


def test_side_effects_happen_twice() -> None:
    printed = outputs(PAGE)
    # "A hook on the first linear layer that appends ... collects two per training step"
    assert number(r"activations appended: (\d+)", printed) == 2
    # "a hook that stores under a key ... is unaffected"
    assert number(r"activations stored:\s+(\d+)", printed) == 1
    # "The recomputed activation has the same values"
    assert "recomputed equals original: True" in printed


def test_checkpoint_restores_the_random_state() -> None:
    # "checkpoint restores the random-number state before the rerun, so even dropout
    # would draw the same mask" (and without preserve_rng_state it would not)
    torch.manual_seed(0)
    block = nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.5), nn.Linear(16, 8))
    x = torch.randn(4, 8, requires_grad=True)
    for preserve, same in ((True, True), (False, False)):
        masks: list[torch.Tensor] = []
        keep = masks.append
        with block[1].register_forward_hook(lambda m, a, out, keep=keep: keep(out.detach())):
            checkpoint(block, x, use_reentrant=False, preserve_rng_state=preserve).sum().backward()
        assert len(masks) == 2
        assert torch.equal(masks[0], masks[1]) is same


def test_use_reentrant() -> None:
    printed = outputs(PAGE)
    # "a hook cannot attach a tensor hook to the output" (reentrant), newer mode works
    assert (
        "use_reentrant=True: RuntimeError: cannot register a hook on a tensor "
        "that doesn't require gradient" in printed
    )
    assert "use_reentrant=False: works" in printed


def test_checkpoint_memory() -> None:
    printed = outputs(PAGE)
    without, n_without = numbers(r"without checkpoint:\s+(\d+) bytes in (\d+) tensors", printed)
    with_, n_with = numbers(r"with checkpoint:\s+(\d+) bytes in (\d+) tensors", printed)
    block_input = 64 * 128 * 4
    # "each block keeps its input and its hidden activation (four times wider)"
    assert without == 4 * (block_input + 4 * block_input)
    assert n_without == 8
    # "only the input of each block is kept: one 64×128 float32 tensor per block"
    assert with_ == 4 * block_input
    assert n_with == 4
    assert number(r"ratio: ([\d.]+)", printed) == round(with_ / without, 3)
    quoted_in_both_languages(PAGE, "64×128")


def test_saved_tensor_hooks_underneath_and_offloading() -> None:
    printed = outputs(PAGE)
    # "checkpoint(use_reentrant=False) installs its own saved-tensor hooks"
    assert "checkpoint's hooks are saved_tensors_hooks: True" in printed
    # "the pack hook writes the tensor to disk ... the unpack hook reads it back"
    assert number(r"tensors written to disk: (\d+)", printed) > 0
    assert "gradients identical: True" in printed
    # "save_on_cpu() is a pair of saved-tensor hooks"
    assert "save_on_cpu is a saved_tensors_hooks: True" in printed
    assert match(r"torch (\S+)", printed)


def test_recomputation_costs_half_a_forward_pass() -> None:
    printed = outputs(PAGE)
    forward = number(r"one forward pass:\s+(\d+) FLOPs", printed)
    plain = number(r"backward pass without checkpoint:\s+(\d+) FLOPs", printed)
    checkpointed = number(r"backward pass with checkpoint:\s+(\d+) FLOPs", printed)
    # "The recomputation costs half a forward pass, not a whole one"
    assert number(r"recomputation: ([\d.]+) of a forward pass", printed) == 0.5
    assert checkpointed - plain == forward / 2
    # "the first linear layer of each block runs again, and the second is stopped before
    # its matrix product": one 64x128 @ 128x512 product (2 FLOPs per multiply-add) per block
    first_linear = 2 * 64 * 128 * 512
    assert checkpointed - plain == 4 * first_linear
    # "a second forward call for half of the layers": 4 of the 8 layers fire twice
    rows = re.findall(r"(blocks\.\d\.\d)\s+\d\s+(\d)\s+\d", printed)
    assert sum(int(n) == 2 for _, n in rows) == len(rows) / 2


def _blocks() -> nn.ModuleList:
    torch.manual_seed(0)
    return nn.ModuleList(
        nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 128)) for _ in range(4)
    )


def _count(layers: list[nn.Module], run: Callable[[], object]) -> dict[int, int]:
    calls = dict.fromkeys(range(len(layers)), 0)

    def make(i: int) -> Callable[[nn.Module, object, object], None]:
        def hook(module: nn.Module, args: object, output: object) -> None:
            calls[i] += 1

        return hook

    handles = [layer.register_forward_hook(make(i)) for i, layer in enumerate(layers)]
    try:
        run()
    finally:
        for handle in handles:
            handle.remove()
    return calls


def test_exercise_answers() -> None:
    solutions = run_page(PAGE).solutions
    # 1. "Once: the forward hook fired 1 time."
    assert "forward hook calls: 1\n" in solutions
    # 2. "393216 bytes in 6 tensors, between the 131072 bytes (4 tensors) ... and the
    # 655360 bytes (8 tensors)"
    assert "every second block: 393216 bytes in 6 tensors" in solutions
    assert "no block:           655360 bytes in 8 tensors" in solutions
    assert "every block:        131072 bytes in 4 tensors" in solutions
    # 3. "blocks.0.0, blocks.0.2 and blocks.1.0 fire twice, the other five layers once"
    assert "twice: ['blocks.0.0', 'blocks.0.2', 'blocks.1.0']" in solutions
    once = match(r"once: +(\[.*\])", solutions)[1]
    assert once.count("blocks.") == 5
    # "checkpoint_sequential checkpoints every segment but the last": checked on torch
    blocks = _blocks()
    sequential = nn.Sequential(*blocks)
    linears = [layer for block in sequential for layer in block if isinstance(layer, nn.Linear)]
    calls = _count(
        linears,
        lambda: (
            checkpoint_sequential(sequential, 2, torch.randn(64, 128), use_reentrant=False)
            .sum()
            .backward()
        ),
    )
    assert [calls[i] for i in range(8)] == [2, 2, 2, 1, 1, 1, 1, 1]


def test_checkpoint_without_use_reentrant_warns() -> None:
    # "Calling checkpoint without the argument gives a warning."
    block = _blocks()[0]
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        checkpoint(block, torch.randn(2, 128, requires_grad=True))
