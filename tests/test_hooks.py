"""HookGroup, count_hooks and remove_all_hooks."""

from __future__ import annotations

from collections import OrderedDict

import pytest
import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

from hooks_tutorial.hooks import HookCounts, HookGroup, HookReport, count_hooks, remove_all_hooks


def noop_forward(module: nn.Module, args: object, output: object) -> None:
    return None


def test_group_registers_each_kind_and_removes_all(mlp):
    x = torch.randn(3, 4, requires_grad=True)
    calls: list[str] = []
    with HookGroup() as hooks:
        hooks.forward(mlp[0], lambda m, a, o: calls.append("fwd"))
        hooks.forward_pre(mlp[0], lambda m, a: calls.append("pre"))
        hooks.full_backward(mlp[2], lambda m, gi, go: calls.append("bwd"))
        hooks.full_backward_pre(mlp[2], lambda m, go: calls.append("bpre"))
        hooks.tensor(x, lambda g: calls.append("tensor"))
        hooks.post_accumulate_grad(mlp[0].weight, lambda t: calls.append("acc"))
        assert len(hooks) == 6
        assert count_hooks(mlp) == {
            "0": HookCounts(forward=1, forward_pre=1, backward=0, backward_pre=0, params=1),
            "2": HookCounts(forward=0, forward_pre=0, backward=1, backward_pre=1, params=0),
        }
        mlp(x).sum().backward()
    assert calls[:2] == ["pre", "fwd"]
    assert sorted(calls[2:]) == sorted(["bpre", "bwd", "tensor", "acc"])
    assert len(hooks) == 0
    assert count_hooks(mlp) == {}
    assert x._backward_hooks == {}
    assert count_hooks(mlp) == {}


def test_group_removes_hooks_when_body_raises(mlp):
    def run() -> None:
        with HookGroup() as hooks:
            hooks.forward(mlp[0], noop_forward)
            hooks.full_backward(mlp[0], lambda m, gi, go: None)
            _ = 1 / 0

    with pytest.raises(ZeroDivisionError):
        run()
    assert count_hooks(mlp) == {}


def test_remove_is_idempotent_and_group_reusable(mlp):
    group = HookGroup()
    group.forward(mlp[1], noop_forward)
    group.remove()
    group.remove()
    assert count_hooks(mlp) == {}
    group.forward(mlp[1], noop_forward)
    assert count_hooks(mlp)["1"].forward == 1
    group.remove()
    assert count_hooks(mlp) == {}


def test_remove_continues_after_a_failing_handle(mlp):
    class Broken(RemovableHandle):
        def remove(self) -> None:
            msg = "cannot remove"
            raise OSError(msg)

    group = HookGroup()
    group.forward(mlp[0], noop_forward)
    group.add(Broken(OrderedDict()))
    group.forward(mlp[2], noop_forward)
    with pytest.raises(OSError, match="cannot remove"):
        group.remove()
    assert count_hooks(mlp) == {}
    assert len(group) == 0


def test_exit_does_not_swallow_and_chains_removal_errors(mlp):
    class Broken(RemovableHandle):
        def remove(self) -> None:
            msg = "cannot remove"
            raise OSError(msg)

    def run() -> None:
        with HookGroup() as group:
            group.add(Broken(OrderedDict()))
            group.forward(mlp[0], noop_forward)
            msg = "body"
            raise KeyError(msg)

    with pytest.raises(OSError, match="cannot remove") as info:
        run()
    assert isinstance(info.value.__context__, KeyError)
    assert count_hooks(mlp) == {}


def test_add_rejects_a_function():
    with pytest.raises(TypeError, match=r"group.add\(module.register_forward_hook\(fn\)\)"):
        HookGroup().add(noop_forward)  # type: ignore[arg-type]


def test_registrar_rejects_non_module():
    with pytest.raises(TypeError, match=r"expected an nn\.Module to hook, got Tensor"):
        HookGroup().forward(torch.zeros(1), noop_forward)  # type: ignore[arg-type]


def test_forward_kwargs_are_passed_through(mlp):
    seen = []
    with HookGroup() as hooks:
        hooks.forward(mlp[2], lambda m, a, k, o: seen.append(k), with_kwargs=True)
        hooks.forward(mlp[2], noop_forward, always_call=True)
        mlp(torch.zeros(1, 4))
    assert seen == [{}]
    assert count_hooks(mlp) == {}
    # count_hooks reads _forward_hooks; the flags of these two options live apart
    assert len(mlp[2]._forward_hooks_with_kwargs) == 0
    assert len(mlp[2]._forward_hooks_always_called) == 0


def test_count_hooks_counts_deprecated_backward_hook_and_root():
    model = nn.Sequential(nn.Linear(2, 2))
    handle_old = model[0].register_backward_hook(lambda m, gi, go: None)
    handle_root = model.register_forward_pre_hook(lambda m, a: None)
    report = count_hooks(model)
    assert report == {
        "": HookCounts(0, 1, 0, 0),
        "0": HookCounts(0, 0, 1, 0),
    }
    assert report.total == 2
    assert report["0"].total == 1
    handle_old.remove()
    handle_root.remove()
    assert count_hooks(model) == {}


def test_count_hooks_str_is_an_aligned_table(mlp):
    with HookGroup() as hooks:
        hooks.forward(mlp[0], noop_forward)
        hooks.forward(mlp[0], noop_forward)
        hooks.full_backward_pre(mlp[2], lambda m, g: None)
        text = str(count_hooks(mlp))
    assert text.splitlines() == [
        "module  forward  forward_pre  backward  backward_pre  params  total",
        "0             2            0         0             0       0      2",
        "2             0            0         0             1       0      1",
        "total         2            0         0             1       0      3",
    ]
    assert str(HookReport()) == "no hooks"


def test_count_hooks_rejects_non_module():
    with pytest.raises(TypeError, match=r"expected the model as an nn\.Module"):
        count_hooks("model")  # type: ignore[arg-type]


def test_remove_all_hooks_clears_everything_and_resets_backward_kind(mlp):
    mlp[0].register_forward_hook(noop_forward, with_kwargs=False, always_call=True)
    mlp[0].register_forward_hook(lambda m, a, k, o: None, with_kwargs=True)
    mlp[0].register_forward_pre_hook(lambda m, a, k: None, with_kwargs=True)
    mlp[2].register_full_backward_hook(lambda m, gi, go: None)
    mlp[2].register_full_backward_pre_hook(lambda m, g: None)
    mlp[2].weight.register_hook(lambda g: g * 0)
    mlp[2].bias.register_post_accumulate_grad_hook(lambda t: None)
    assert remove_all_hooks(mlp) == 7
    assert count_hooks(mlp) == {}
    assert mlp[2]._is_full_backward_hook is None
    # the old-style hook can be registered again (it would raise if the flag stayed True)
    handle = mlp[2].register_backward_hook(lambda m, gi, go: None)
    handle.remove()
    # the cleared tensor hook really no longer fires: the gradient is not zeroed
    mlp(torch.ones(1, 4)).sum().backward()
    assert mlp[2].weight.grad is not None
    assert mlp[2].weight.grad.abs().sum() > 0
    assert remove_all_hooks(mlp) == 0


def test_late_binding_closure_pitfall_is_avoided_by_a_factory(mlp):
    # The bug the library avoids: every lambda sees the loop variable's last value.
    seen_bad: list[str] = []
    seen_good: list[str] = []

    def recorder(name: str):
        return lambda m, a, o: seen_good.append(name)

    with HookGroup() as hooks:
        for name, module in mlp.named_children():
            hooks.forward(module, lambda m, a, o: seen_bad.append(name))  # noqa: B023
            hooks.forward(module, recorder(name))
        mlp(torch.zeros(1, 4))
    assert seen_bad == ["2", "2", "2"]
    assert seen_good == ["0", "1", "2"]


def test_model_forward_skips_hooks(mlp):
    calls = []
    with HookGroup() as hooks:
        hooks.forward(mlp[0], lambda m, a, o: calls.append(1))
        hooks.forward(mlp, lambda m, a, o: calls.append(2))
        mlp.forward(torch.zeros(1, 4))  # the children run through __call__, the root does not
    assert calls == [1]
