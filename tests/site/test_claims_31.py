"""Claims of page 31 (state-dict hooks), checked against its outputs."""

from __future__ import annotations

from collections import OrderedDict

import torch
from sitecheck import outputs, run_page
from torch import nn

import hooks_tutorial as ht

PAGE = "31"
OLD_KEYS = "['features.weight', 'features.bias', 'head.weight', 'head.bias']"


def test_renamed_layers_break_the_old_checkpoint() -> None:
    printed = outputs(PAGE)
    assert f"keys in the old checkpoint: {OLD_KEYS}" in printed
    # "The old checkpoint no longer loads." (missing and unexpected keys)
    assert "RuntimeError: Error(s) in loading state_dict for NewNet:" in printed
    assert 'Missing key(s) in state_dict: "encoder.weight"' in printed
    assert 'Unexpected key(s) in state_dict: "features.weight"' in printed


def test_load_pre_hook_renames() -> None:
    printed = outputs(PAGE)
    # "here it moves every old name to the new one" -> the load succeeds
    after = printed.split("Unexpected key(s)", 1)[1]
    following = [line for line in after.splitlines()[1:] if line.strip()]
    assert following[0] == "<All keys matched successfully>"
    assert "same outputs as the old model: True" in printed
    # "the renaming does not touch the caller's dictionary"
    assert f"keys in the old checkpoint now: {OLD_KEYS}" in printed
    # "count_hooks ... not state-dict hooks"
    assert "count_hooks: no hooks" in printed
    assert "load pre-hooks on the model: 1" in printed


def test_count_hooks_counts_module_and_parameter_hooks() -> None:
    # "it counts the module hooks of the forward and backward passes (forward, forward
    # pre-, backward and backward pre-hooks) and the gradient hooks on parameters, but
    # not state-dict hooks"
    layer = nn.Linear(2, 2)
    handles = [
        layer.register_forward_hook(lambda m, a, o: None),
        layer.register_forward_pre_hook(lambda m, a: None),
        layer.register_full_backward_hook(lambda m, gi, go: None),
        layer.register_full_backward_pre_hook(lambda m, go: None),
        layer.weight.register_hook(lambda g: None),
        layer.bias.register_post_accumulate_grad_hook(lambda p: None),
        layer.register_load_state_dict_pre_hook(lambda *args: None),
        layer.register_state_dict_post_hook(lambda *args: None),
    ]
    try:
        counts = ht.count_hooks(layer)[""]
        assert tuple(counts) == (1, 1, 1, 1, 2)
        assert counts.total == 6  # the two state-dict hooks are not counted
    finally:
        for handle in handles:
            handle.remove()


def test_state_dict_post_hook() -> None:
    printed = outputs(PAGE)
    # "the post-hook must edit in place and return None; returning the dict is an error"
    assert "RuntimeError: state_dict post-hook must return None" in printed
    # "local_metadata ... which torch.save keeps"
    assert (
        "metadata of the top module after torch.load: {'version': 1, 'format_version': 2}"
        in printed
    )
    # "the load pre-hook renames only checkpoints without a version"
    assert (
        "  loading a checkpoint of format 1\nold checkpoint: <All keys matched successfully>\n"
        "  loading a checkpoint of format 2\nnew checkpoint: <All keys matched successfully>"
    ) in printed


def test_batchnorm_upgrades_old_checkpoints() -> None:
    # "BatchNorm stores a version in the same metadata and adds num_batches_tracked
    # when it loads a checkpoint written before that buffer existed"
    norm = nn.BatchNorm1d(3)
    state = norm.state_dict()
    assert state._metadata[""]["version"] == 2  # type: ignore[attr-defined]
    old = OrderedDict((k, v) for k, v in state.items() if k != "num_batches_tracked")
    old._metadata = OrderedDict({"": {"version": 1}})  # type: ignore[attr-defined]
    assert not norm.load_state_dict(old).missing_keys


def test_optimizer_hooks() -> None:
    printed = outputs(PAGE)
    # the four hooks fire in this order, and the load pre-hook changes the learning rate
    assert (
        "saving:\n  state_dict pre-hook\n  state_dict post-hook: learning rate 0.1\n"
        "loading:\n  load pre-hook: learning rate 0.1 -> 0.01\n"
        "  load post-hook: momentum buffers restored: 4\n"
        "learning rate after loading: 0.01\nsaved learning rate unchanged: 0.1"
    ) in printed
    # "when the job is done, remove them with their handles"
    assert "state-dict hooks left on the model: 0" in printed
    assert "state-dict hooks left on the optimizer: 0" in printed


class _New(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Linear(4, 8)
        self.classifier = nn.Linear(8, 2)


def _old_checkpoint() -> dict[str, torch.Tensor]:
    model = _New()
    renames = {"encoder.": "features.", "classifier.": "head."}
    return {
        next(o + k.removeprefix(n) for n, o in renames.items() if k.startswith(n)): v
        for k, v in model.state_dict().items()
    }


def _rename(module: nn.Module, state_dict: dict, prefix: str, *rest: object) -> None:
    for key in list(state_dict):
        for old, new in {"features.": "encoder.", "head.": "classifier."}.items():
            if key.startswith(prefix + old):
                state_dict[prefix + new + key.removeprefix(prefix + old)] = state_dict.pop(key)


def test_exercise_answers() -> None:
    solutions = run_page(PAGE).solutions
    # 1. "Without the post-hook, loading fails on the missing scale ...
    # <All keys matched successfully>"
    assert 'without the post-hook: Missing key(s) in state_dict: "scale".' in solutions
    assert "with the post-hook: <All keys matched successfully>" in solutions
    # 2. "The prefix is 'encoder.', and the hook receives no key at all ... loading fails"
    assert "prefix 'encoder.', keys received: []" in solutions
    assert "RuntimeError: Error(s) in loading state_dict for NewNet:" in solutions
    # 3. "The saved one, 0.1, not the 0.5 it was created with"
    assert "learning rate before loading: 0.5" in solutions
    assert "learning rate after loading:  0.1" in solutions


def test_load_post_hook_runs_before_the_strict_check() -> None:
    # answer 1: "the post-hook runs after the tensors were copied and before the strict
    # check, and removes scale from the list of missing keys in place"
    checkpoint = _old_checkpoint()

    class WithScale(_New):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("scale", torch.ones(1))

    copied: list[bool] = []

    def accept_missing_scale(module: nn.Module, incompatible_keys: object) -> None:
        copied.append(torch.equal(module.encoder.weight, checkpoint["features.weight"]))
        incompatible_keys.missing_keys.remove("scale")  # type: ignore[attr-defined]

    model = WithScale()
    with (
        model.register_load_state_dict_pre_hook(_rename),
        model.register_load_state_dict_post_hook(accept_missing_scale),
    ):
        result = model.load_state_dict(checkpoint)
    assert copied == [True]
    assert not result.missing_keys
    assert not result.unexpected_keys
