"""Claims of page 28 (pruning is a forward pre-hook), checked against its outputs."""

from __future__ import annotations

import torch
from sitecheck import match, number, numbers, outputs, run_page
from torch import nn
from torch.nn.utils import prune

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


def test_optimizer_moves_weight_orig_but_the_mask_keeps_zeros() -> None:
    printed = outputs(PAGE)
    # "A zero gradient does not freeze a weight, though: weight decay ... momentum ...
    # So the optimizer does update weight_orig at the pruned positions"
    assert "weight_orig moved at all pruned positions: True" in printed
    assert number(r"largest move at a pruned position: ([\d.]+)", printed) > 0
    # "what keeps them pruned is the mask, which the pre-hook applies again"
    assert "weight still zero at all pruned positions: True" in printed


def test_momentum_from_before_pruning_moves_weight_orig() -> None:
    # "The same holds for momentum left over from training before pruning, when these
    # weights still had gradients." (no weight decay here: momentum alone moves them)
    torch.manual_seed(0)
    layer = nn.Linear(4, 3)
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.1, momentum=0.9)
    for _ in range(3):
        optimizer.zero_grad()
        layer(torch.randn(8, 4)).sum().backward()
        optimizer.step()
    prune.l1_unstructured(layer, "weight", amount=0.5)
    assert layer.weight_orig is optimizer.param_groups[0]["params"][0]  # same Parameter
    pruned = layer.weight_mask == 0
    before = layer.weight_orig.detach().clone()
    optimizer.zero_grad()
    layer(torch.randn(8, 4)).sum().backward()
    assert bool((layer.weight_orig.grad[pruned] == 0).all())
    optimizer.step()
    assert bool((layer.weight_orig.detach() != before)[pruned].all())
    layer(torch.randn(1, 4))
    assert bool((layer.weight[pruned] == 0).all())


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
    solutions = run_page(PAGE).solutions
    # 1. "One hook ... a PruningContainer that holds both ... the zeros go from 6 to 9 of 12"
    assert "zeros after the first pruning: 6 of 12" in solutions
    assert "zeros after the second pruning: 9 of 12" in solutions
    assert "fraction of zeros: 0.75" in solutions
    assert "hooks: 1\n['PruningContainer']" in solutions
    # 2. "Two hooks, one forward pre-hook on each pruned module ... the ReLU gets none ...
    # zeroes the 14 smallest, wherever they are ... not the same fraction in each"
    match(r"\n0\s+0\s+1\s+0\s+0\s+0\s+1\n2\s+0\s+1\s+0\s+0\s+0\s+1\ntotal", solutions)
    assert "zeros in total: 14 of 48" in solutions
    first = numbers(r"layer 0: (\d+) of (\d+) zero", solutions)
    second = numbers(r"layer 2: (\d+) of (\d+) zero", solutions)
    assert first[0] + second[0] == 14
    assert first[0] / first[1] != second[0] / second[1]
    # 3. "No: the output changed by 0.0 ... ignores every change to weight_orig ...
    # the second backward raises RuntimeError: Trying to backward through the graph a
    # second time"
    assert "output changed by: 0.0" in solutions
    assert "weight equals weight_orig * weight_mask: False" in solutions
    assert "RuntimeError: Trying to backward through the graph a second time" in solutions
