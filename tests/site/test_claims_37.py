"""Claims of page 37 (the interpretability libraries: hook points and wrappers), checked against its outputs.

The page runs nnsight (a docs dependency); TransformerLens is not installed, so
the page's claims about it are about its source and are not checked here. The
page's own hook points, hooks context and cache are.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import pytest
import torch
from sitecheck import match, number, outputs, quoted_in_both_languages, run_page
from torch import nn

import hooks_tutorial as ht
from hooks_tutorial import lm

PAGE = "37"


def test_the_plain_measurement() -> None:
    printed = outputs(PAGE)
    # "on the chapter's model and 500 test sentences"
    assert "| test sentences: 500" in printed
    clean = number(r"logit difference, clean:\s+([\d.]+)", printed)
    ablated = number(r"logit difference, head 1\.3 zeroed:\s+(-?[\d.]+)", printed)
    # "Head 3 of block 1 ... zeroing its output ... removes almost all of the difference"
    assert clean > 5
    assert abs(ablated) < 0.05 * clean
    lens = match(r"logit lens accuracy after each block: \[(.*?)\]", printed)[1]
    assert lens == "'0.40', '1.00', '1.00'"
    assert "hooks left on the model: no hooks" in printed
    # "whose input holds the heads side by side, 16 columns each"
    model = lm.pretrained_lm()
    assert model.blocks[1].attn.n_heads * 16 == model.embed.embedding_dim


def test_hook_points_change_nothing_and_have_names() -> None:
    printed = outputs(PAGE)
    # "the copy computes exactly the same logits"
    assert "max abs difference from the model without hook points: 0.0" in printed
    assert "hook points: 52" in printed
    assert "'blocks.1.attn.out.hook_in'" in printed
    namespace = run_page(PAGE).namespace
    hooked, model = namespace["hooked_model"], namespace["model"]
    prompts = namespace["prompts"][:8]
    # "blocks.1.attn.out.hook_in holds the four heads' outputs of block 1,
    # blocks.2.ln1.hook_in is the residual stream that enters block 2 (the one after
    # block 1), and ln_final.hook_in the one after the last block"
    seen: dict[str, torch.Tensor] = {}
    plain: dict[str, torch.Tensor] = {}
    handles = [
        model.blocks[1].attn.out.register_forward_pre_hook(
            lambda m, args: plain.__setitem__("z", args[0])
        ),
        model.blocks[1].register_forward_hook(lambda m, a, o: plain.__setitem__("after1", o)),
        model.blocks[2].register_forward_hook(lambda m, a, o: plain.__setitem__("after2", o)),
    ]
    try:
        model(prompts)
    finally:
        for handle in handles:
            handle.remove()
    _, cache = namespace["run_with_cache"](
        hooked, prompts, ["blocks.1.attn.out.hook_in", "blocks.2.ln1.hook_in", "ln_final.hook_in"]
    )
    seen = cache
    assert seen["blocks.1.attn.out.hook_in"].shape == (8, 15, 64)
    torch.testing.assert_close(seen["blocks.1.attn.out.hook_in"], plain["z"], rtol=0, atol=0)
    torch.testing.assert_close(seen["blocks.2.ln1.hook_in"], plain["after1"], rtol=0, atol=0)
    torch.testing.assert_close(seen["ln_final.hook_in"], plain["after2"], rtol=0, atol=0)
    assert not ht.count_hooks(hooked)


def test_embeddings_cannot_be_wrapped() -> None:
    # "(The embeddings stay as they are: TinyLM reads their sizes.)"
    namespace = run_page(PAGE).namespace
    model = copy.deepcopy(namespace["model"])
    model.embed = namespace["WithHookPoints"](model.embed)
    with pytest.raises(AttributeError, match="num_embeddings"):
        model(namespace["prompts"][:2])


def test_hooks_by_name_are_removed() -> None:
    printed = outputs(PAGE)
    # the hook sits in the hook point's _forward_hooks while the model runs, and is gone after
    assert "in the hook: HookPoint 'blocks.1.attn.out.hook_in', forward hooks:" in printed
    assert re.search(r"\{\d+: 'hooks\.<locals>\.forward_hook'\}", printed)
    assert "forward hooks on the hook point afterwards: {}" in printed
    # the same numbers as the plain hooks
    assert "logit difference, head 1.3 zeroed by name: 0.01" in printed
    assert printed.count("max abs difference from the plain hook: 0.0") == 2
    assert printed.count("max abs difference from the plain hooks' residuals: 0.0") == 2
    assert "cached: ['blocks.1.ln1.hook_in', 'blocks.2.ln1.hook_in', 'ln_final.hook_in']" in printed
    assert printed.count("logit lens accuracy after each block: ['0.40', '1.00', '1.00']") == 3
    assert "hooks left on the copy: no hooks" in printed


def test_hook_point_is_an_identity_module() -> None:
    namespace = run_page(PAGE).namespace
    point = namespace["HookPoint"]()
    assert isinstance(point, nn.Identity)
    x = torch.randn(2, 3)
    assert point(x) is x


def test_nnsight_wraps_forward_without_hooks() -> None:
    printed = outputs(PAGE)
    assert re.search(r"^nnsight 0\.8\.\d+$", printed, flags=re.MULTILINE)
    # "it replaces each submodule's forward with a Controller" (no hooks while paused)
    assert "forward of blocks[1].attn.out before: method" in printed
    assert "forward of blocks[1].attn.out after:  Controller" in printed
    assert "paused at blocks[1].attn.out: forward hooks {}" in printed
    assert "forward pre-hooks {}" in printed
    assert "logit difference, head 1.3 zeroed with nnsight: 0.01" in printed
    # "plain hooks still work on the wrapped model, and they run around it"
    assert (
        "forward pre-hook -> trace reads .input -> trace reads .output -> forward hook" in printed
    )
    # "It stays on the model after the trace ... count_hooks finds none of nnsight's"
    assert "forward of blocks[1].attn.out after the traces: Controller" in printed
    assert printed.count("hooks left on the model: no hooks") == 2
    # "reading block 0's output after block 2's in the same trace fails, and nnsight says why"
    assert (
        "OutOfOrderError: 'model.blocks.0.output.i0' was requested but the model already "
        "ran past it" in printed
    )


def test_nnsight_wraps_every_submodule_and_keeps_only_saved_values() -> None:
    from nnsight import NNsight  # noqa: PLC0415

    model = lm.pretrained_lm()
    prompts = lm.make_names(4, seed=1, split="test").prompts
    wrapped = NNsight(model)
    # "it replaces each submodule's forward with a Controller"
    for name, module in model.named_modules():
        assert type(module.__dict__.get("forward")).__name__ == "Controller", name
    with torch.no_grad(), wrapped.trace(prompts):
        kept = wrapped.blocks[0].output.save()
        dropped = wrapped.blocks[1].output  # not saved: it does not leave the trace
    assert kept.shape == (4, 15, 64)
    assert "dropped" not in locals()
    # "Outside a trace the wrapper only calls the original"
    torch.testing.assert_close(model(prompts), lm.pretrained_lm()(prompts), rtol=0, atol=0)
    assert not ht.count_hooks(model)


def test_plain_hooks_run_around_nnsight_and_the_wrapper_stays() -> None:
    import gc  # noqa: PLC0415

    from nnsight import NNsight  # noqa: PLC0415

    model = lm.pretrained_lm().requires_grad_(False)
    prompts = lm.make_names(4, seed=1, split="test").prompts
    out = model.blocks[1].attn.out
    seen: dict[str, float] = {}
    # "a forward pre-hook runs before the trace sees .input, and a forward hook runs
    # after the trace has seen (and may have edited) .output"
    handles = [
        out.register_forward_pre_hook(lambda m, args: (torch.full_like(args[0], 7.0),)),
        out.register_forward_hook(lambda m, a, o: seen.__setitem__("hook", o.abs().max().item())),
    ]
    wrapped = NNsight(model)
    try:
        with wrapped.trace(prompts):
            seen["trace"] = wrapped.blocks[1].attn.out.input.min().item()
            wrapped.blocks[1].attn.out.output = torch.zeros(4, 15, 64)
    finally:
        for handle in handles:
            handle.remove()
    assert seen == {"trace": 7.0, "hook": 0.0}
    # "The wrapper stays on the model after the trace ... no call that takes the wrapper off"
    del wrapped
    gc.collect()
    assert type(out.__dict__["forward"]).__name__ == "Controller"
    assert not ht.count_hooks(model)


def test_nnsight_gradients_use_self_removing_tensor_hooks() -> None:
    # "(Gradients are the exception: reading .grad inside with loss.backward():
    # registers tensor hooks, which remove themselves.)"
    from nnsight import NNsight  # noqa: PLC0415

    model = lm.pretrained_lm()
    prompts = lm.make_names(4, seed=1, split="test").prompts
    registered: list[torch.Tensor] = []
    original = torch.Tensor.register_hook

    def counting(self: torch.Tensor, hook: Callable[..., Any]) -> Any:
        registered.append(self)
        return original(self, hook)

    wrapped = NNsight(model)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(torch.Tensor, "register_hook", counting)
        with wrapped.trace(prompts):
            residual = wrapped.blocks[0].output.save()
            loss = wrapped.output.sum()
            with loss.backward():
                grad = residual.grad.save()
    assert grad.shape == (4, 15, 64)
    assert len(registered) == 1
    assert not registered[0]._backward_hooks
    assert not ht.count_hooks(model)


def test_plain_nnsight_cannot_batch_two_invokes() -> None:
    # answer 2: "nnsight's LanguageModel ... can batch the clean and the corrupted prompts
    # as two invokes of one trace; the plain NNsight wrapper cannot, and says so"
    from nnsight import LanguageModel, NNsight  # noqa: PLC0415

    assert LanguageModel._batch is not NNsight._batch
    data = lm.make_names(4, seed=1, split="test")
    wrapped = NNsight(lm.pretrained_lm())

    def clean_and_corrupted_in_one_trace() -> None:
        with wrapped.trace() as tracer:
            with tracer.invoke(data.prompts):
                clean = wrapped.blocks[0].output[:, 10]
            with tracer.invoke(data.with_other_subject().prompts):
                wrapped.blocks[0].output[:, 10] = clean

    with pytest.raises(NotImplementedError, match="does not support batching multiple invokes"):
        clean_and_corrupted_in_one_trace()


def test_exercise_answers() -> None:
    solutions = run_page(PAGE).solutions
    # 1. "gives 0.78 of its attention ... the same tensor (max abs difference 0.0)"
    assert "head 1.3, last position -> position 10: 0.78" in solutions
    # 2. "restores 1.01 ... with nnsight and 1.01 with the plain forward hook ... 0.0"
    assert "nnsight: share restored 1.01" in solutions
    assert "plain hook: share restored 1.01" in solutions
    assert solutions.count("max abs difference: 0.0") == 2
    # 3. "None: ... the error reaches you and no hook stays behind"
    assert "error: broken hook" in solutions
    assert "hooks left on hooked_model: no hooks" in solutions


def test_quoted_numbers() -> None:
    # prose numbers that both languages quote (the answers are checked by test_answers)
    quoted_in_both_languages(PAGE, "500", "16", "0.78", "1.01")
