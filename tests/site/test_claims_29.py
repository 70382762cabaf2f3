"""Claims of page 29 (checkpointing and offloading), checked against its outputs."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
import torch
from sitecheck import match, number, numbers, outputs, quoted_in_both_languages
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
    blocks = _blocks()
    inputs = torch.randn(64, 128)
    # 1. "once: without gradients there is no backward pass to recompute for"
    with torch.no_grad():
        calls = _count([blocks[0][0]], lambda: checkpoint(blocks[0], inputs, use_reentrant=False))
    assert calls == {0: 1}
    # 2. "393216 bytes, against 655360 and 131072"
    parameters = {p.untyped_storage().data_ptr() for p in blocks.parameters()}
    sizes: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in parameters:
            sizes[storage.data_ptr()] = storage.nbytes()
        return tensor

    x = inputs
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        for i, block in enumerate(blocks):
            x = checkpoint(block, x, use_reentrant=False) if i % 2 else block(x)
    assert sum(sizes.values()) == 393216
    # 3. "blocks.0.0, blocks.0.2 and blocks.1.0" fire twice
    sequential = nn.Sequential(*blocks)
    linears = [layer for block in sequential for layer in block if isinstance(layer, nn.Linear)]
    calls = _count(
        linears,
        lambda: checkpoint_sequential(sequential, 2, inputs, use_reentrant=False).sum().backward(),
    )
    twice = [i for i, n in calls.items() if n == 2]
    assert twice == [0, 1, 2]  # blocks.0.0, blocks.0.2, blocks.1.0
    assert all(n == 1 for i, n in calls.items() if i not in twice)


def test_checkpoint_without_use_reentrant_warns() -> None:
    # "Calling checkpoint without the argument gives a warning."
    block = _blocks()[0]
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        checkpoint(block, torch.randn(2, 128, requires_grad=True))
