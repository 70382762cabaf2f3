"""Claims of page 28 (pruning is a forward pre-hook), checked against its outputs."""

from __future__ import annotations

import torch
from sitecheck import match, numbers, outputs
from torch import nn
from torch.nn.utils import prune

import hooks_tutorial as ht

PAGE = "28"


def _hook_row(printed: str, after: str) -> list[float]:
    """The ``(model)`` row of the first hook table printed after ``after``."""
    tail = printed.split(after, 1)[1]
    return numbers(r"\(model\)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", tail)


def test_pruning_adds_one_forward_pre_hook() -> None:
    printed = outputs(PAGE)
    # "Pruning added one forward pre-hook."
    assert "before pruning: no hooks" in printed
    assert _hook_row(printed, "after pruning:") == [0, 1, 0, 0, 0, 1]
    # "it is the pruning method object itself"
    assert "forward pre-hook: L1Unstructured" in printed
    assert "is a BasePruningMethod: True" in printed
    # "pruning half of its weights"
    assert match(r"zeros in weight: (\d+) of (\d+)", printed).groups() == ("6", "12")


def test_weight_is_renamed_and_recomputed() -> None:
    printed = outputs(PAGE)
    # "renamed it weight_orig ... added a buffer weight_mask ... weight is now a plain attribute"
    assert "parameters: ['bias', 'weight_orig']" in printed
    assert "buffers:    ['weight_mask']" in printed
    assert "weight is a Parameter: False" in printed
    assert "weight's grad_fn: MulBackward0" in printed
    # "weight is out of date until the next forward pass brings it back in line"
    assert "in sync after pruning: True" in printed
    assert "in sync after changing weight_orig: False" in printed
    assert "in sync after a forward pass: True" in printed
    # "the gradient that reaches weight_orig is zero wherever the mask is zero"
    assert "gradient zero at all pruned positions: True" in printed
    assert "all nonzero elsewhere: True" in printed


def test_plain_pytorch_version_behaves_alike() -> None:
    printed = outputs(PAGE)
    # "This layer behaves like the pruned one above." (one pre-hook, masked weight)
    tail = printed.split("all nonzero elsewhere", 1)[1]
    assert _hook_row(tail, "\n") == [0, 1, 0, 0, 0, 1]
    assert "weight equals weight_orig * weight_mask: True" in printed


def test_prune_remove_keeps_zeros_and_drops_hook() -> None:
    printed = outputs(PAGE)
    # "The zeros stay; the machinery goes."
    assert "hooks after prune.remove: no hooks" in printed
    tail = printed.split("hooks after prune.remove", 1)[1]
    assert "parameters: ['bias', 'weight']" in tail
    assert "buffers:    []" in tail
    assert match(r"zeros in weight: (\d+) of (\d+)", tail).groups() == ("6", "12")


def test_parametrize_uses_no_hook() -> None:
    printed = outputs(PAGE)
    # "It uses no hook: it swaps the layer's class for a subclass"
    assert "hooks: no hooks" in printed
    assert "class: ParametrizedLinear" in printed
    assert "parameters: ['bias', 'parametrizations.weight.original']" in printed
    # "never out of date, even outside a forward pass"
    assert "in sync without a forward pass: True" in printed
    # "remove_parametrizations ... is the counterpart of prune.remove"
    assert "class after removal: Linear" in printed


def test_exercise_answers() -> None:
    # 1. "one hook ... 75% of the weights are zero"
    layer = nn.Linear(4, 3)
    prune.l1_unstructured(layer, "weight", amount=0.5)
    prune.l1_unstructured(layer, "weight", amount=0.5)
    assert ht.count_hooks(layer).total == 1
    assert isinstance(next(iter(layer._forward_pre_hooks.values())), prune.PruningContainer)
    assert (layer.weight == 0).float().mean().item() == 0.75
    # 2. "one forward pre-hook per pruned parameter: one on module 0, one on module 2"
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    prune.global_unstructured(
        [(model[0], "weight"), (model[2], "weight")],
        pruning_method=prune.L1Unstructured,
        amount=0.3,
    )
    report = ht.count_hooks(model)
    assert sorted(report) == ["0", "2"]
    assert report["0"].forward_pre == report["2"].forward_pre == 1
    # 3. "no: without the hook, nothing recomputes weight"
    my_layer = nn.Linear(4, 3)
    my_layer.weight_orig = nn.Parameter(my_layer.weight.detach().clone())
    del my_layer.weight
    my_layer.register_buffer("weight_mask", (my_layer.weight_orig.abs() > 0.2).float())

    def apply_mask(module: nn.Module, args: object) -> None:
        module.weight = module.weight_orig * module.weight_mask

    handle = my_layer.register_forward_pre_hook(apply_mask)
    apply_mask(my_layer, ())
    handle.remove()
    with torch.no_grad():
        my_layer.weight_orig.add_(1.0)
    x = torch.randn(1, 4)
    assert torch.allclose(my_layer(x), x @ my_layer.weight.T + my_layer.bias)
    assert not torch.equal(my_layer.weight, my_layer.weight_orig * my_layer.weight_mask)
