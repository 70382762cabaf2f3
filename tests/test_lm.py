"""The language model of chapter 7: its task, its hook points, training and loading."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

import hooks_tutorial as ht
from hooks_tutorial import lm

PROMPT = "<bos> When Mary and John went to the shop , John gave a book to"


@pytest.fixture(scope="module")
def model() -> lm.TinyLM:
    return lm.pretrained_lm()


def test_encode_and_decode_are_inverse() -> None:
    ids = lm.encode(PROMPT)
    assert ids.shape == (1, 15)
    assert ids.dtype == torch.int64
    assert lm.decode(ids[0]) == PROMPT
    assert lm.decode(ids[0].tolist()) == PROMPT


def test_an_unknown_word_names_the_closest_known_one() -> None:
    with pytest.raises(ValueError, match=r"does not know the word 'Marry'; did you mean 'Mary'"):
        lm.encode("<bos> When Marry and John")
    with pytest.raises(ValueError, match=r"separate punctuation with spaces"):
        lm.encode("<bos> When Mary and John went to the shop,")


def test_decode_takes_one_sequence() -> None:
    with pytest.raises(ValueError, match=r"decode each row"):
        lm.decode(lm.encode(PROMPT))


def test_sentences_follow_the_template() -> None:
    data = lm.make_names(500, seed=3)
    tokens = data.tokens
    assert tokens.shape == (500, 17)
    p = lm.POSITIONS
    a, b = tokens[:, p["A"]], tokens[:, p["B"]]
    assert bool((a != b).all())
    # the subject is one of the two names, the answer is the other one
    assert bool(((data.subjects == a) | (data.subjects == b)).all())
    assert bool((data.answers != data.subjects).all())
    assert bool((data.answers + data.subjects == a + b).all())
    assert bool((data.subjects == torch.where(data.subject_is_a, a, b)).all())
    assert data.prompts.shape == (500, 15)
    assert lm.decode(data.prompts[0]).endswith("to")
    # both orders occur, about equally often
    assert 0.4 < data.subject_is_a.float().mean().item() < 0.6


def test_sentences_are_seeded_and_splits_differ() -> None:
    assert torch.equal(lm.make_names(50, seed=1).tokens, lm.make_names(50, seed=1).tokens)
    assert not torch.equal(lm.make_names(50, seed=1).tokens, lm.make_names(50, seed=2).tokens)
    train = lm.make_names(50, seed=1)
    test = lm.make_names(50, seed=1, split="test")
    assert not torch.equal(train.tokens, test.tokens)


def test_the_other_subject_flips_the_answer_and_nothing_else() -> None:
    data = lm.make_names(100, seed=0)
    other = data.with_other_subject()
    assert torch.equal(other.answers, data.subjects)
    assert torch.equal(other.subjects, data.answers)
    assert torch.equal(other.subject_is_a, ~data.subject_is_a)
    changed = (other.prompts != data.prompts).any(dim=0).nonzero().flatten().tolist()
    assert changed == [lm.POSITIONS["S"]]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"n": 0}, r"n must be a positive int"), ({"n": 5, "split": "val"}, r"'train' or 'test'")],
)
def test_make_names_rejects_bad_arguments(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        lm.make_names(**kwargs)  # type: ignore[arg-type]


def test_the_shipped_model_solves_the_task(model: lm.TinyLM) -> None:
    test = lm.make_names(1000, seed=7, split="test")
    with torch.no_grad():
        logits = model(test.prompts)[:, -1]
    accuracy = (logits.argmax(-1) == test.answers).float().mean().item()
    assert accuracy > 0.99
    assert lm.decode(lm.generate(model, lm.encode(PROMPT))[0, -2:]) == "Mary ."


def test_logits_have_one_row_per_position(model: lm.TinyLM) -> None:
    tokens = lm.make_names(4).prompts
    assert model(tokens).shape == (4, 15, len(lm.VOCAB))


def test_the_named_modules_are_the_hook_points(model: lm.TinyLM) -> None:
    tokens = lm.make_names(3).prompts
    seen: dict[str, torch.Tensor] = {}
    block = model.blocks[1]
    handles = [
        block.register_forward_hook(lambda m, i, o: seen.__setitem__("resid", o)),
        block.attn.softmax.register_forward_hook(lambda m, i, o: seen.__setitem__("pattern", o)),
        block.attn.out.register_forward_pre_hook(lambda m, a: seen.__setitem__("heads", a[0])),
    ]
    try:
        with torch.no_grad():
            model(tokens)
    finally:
        for handle in handles:
            handle.remove()
    assert seen["resid"].shape == (3, 15, 64)
    pattern = seen["pattern"]
    assert pattern.shape == (3, 4, 15, 15)
    torch.testing.assert_close(pattern.sum(-1), torch.ones(3, 4, 15))
    # causal: no position looks at a later one
    assert float(pattern.triu(1).abs().max()) == 0.0
    assert seen["heads"].shape == (3, 15, 64)
    assert ht.count_hooks(model).total == 0


def _fused(model: lm.TinyLM, fused: bool) -> None:
    for block in model.blocks:
        block.attn.fused = fused


def test_fused_attention_gives_the_same_logits(model: lm.TinyLM) -> None:
    """The fused path computes the same function as the explicit steps."""
    tokens = lm.make_names(200, seed=4, split="test").prompts
    assert all(not block.attn.fused for block in model.blocks)  # eager is the default
    try:
        with torch.no_grad():
            eager = model(tokens)
            _fused(model, True)
            fused = model(tokens)
    finally:
        _fused(model, False)
    # float32 rounding only: the fused kernel sums in another order (differences of a few
    # 1e-6 on logits up to about 10); a wrong mask or scale moves logits by order 1
    torch.testing.assert_close(fused, eager, rtol=1e-5, atol=1e-4)
    assert torch.equal(fused[:, -1].argmax(-1), eager[:, -1].argmax(-1))


def test_a_wrong_fused_call_would_be_caught(
    model: lm.TinyLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tolerance above is tight enough: the fused call without its causal mask fails it."""
    tokens = lm.make_names(50, seed=4, split="test").prompts
    with torch.no_grad():
        eager = model(tokens)
    original = torch.nn.functional.scaled_dot_product_attention

    def no_mask(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, **kwargs: object
    ) -> torch.Tensor:
        return original(q, k, v)  # is_causal dropped

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", no_mask)
    try:
        _fused(model, True)
        with torch.no_grad():
            unmasked = model(tokens)
    finally:
        _fused(model, False)
    assert (unmasked - eager).abs().max() > 1.0


def test_under_fused_attention_no_module_sees_the_pattern(model: lm.TinyLM) -> None:
    """``softmax`` does not run, the other hook points do, and nothing leaves a [B, h, T, T]."""
    tokens = lm.make_names(3).prompts
    calls: dict[str, int] = {"softmax": 0, "qkv": 0, "out": 0}
    shapes: list[tuple[int, ...]] = []
    attn = model.blocks[0].attn
    handles = [
        attn.softmax.register_forward_hook(lambda m, i, o: calls.__setitem__("softmax", 1)),
        attn.qkv.register_forward_hook(lambda m, i, o: calls.__setitem__("qkv", 1)),
        attn.out.register_forward_pre_hook(lambda m, a: calls.__setitem__("out", 1)),
    ]
    handles += [
        module.register_forward_hook(lambda m, i, o: shapes.append(tuple(o.shape)))
        for module in model.modules()
    ]
    _fused(model, True)
    try:
        with torch.no_grad():
            model(tokens)
    finally:
        _fused(model, False)
        for handle in handles:
            handle.remove()
    assert calls == {"softmax": 0, "qkv": 1, "out": 1}
    assert (3, 4, 15, 15) not in shapes
    assert ht.count_hooks(model).total == 0


def test_attention_takes_fused_as_an_argument() -> None:
    x = torch.randn(2, 6, 8, generator=torch.Generator().manual_seed(1))
    torch.manual_seed(0)
    eager = lm.Attention(8, 2)
    torch.manual_seed(0)
    fused = lm.Attention(8, 2, fused=True)
    assert fused.fused
    assert not eager.fused
    with torch.no_grad():
        torch.testing.assert_close(fused(x), eager(x), rtol=1e-5, atol=1e-5)


def test_zeroing_a_head_removes_its_share_of_the_attention_output(model: lm.TinyLM) -> None:
    """The input of ``attn.out`` holds the heads side by side: head h in columns h*16..h*16+16."""
    attn = model.blocks[0].attn
    x = torch.randn(2, 5, 64, generator=torch.Generator().manual_seed(0))
    heads: list[torch.Tensor] = []
    handle = attn.out.register_forward_pre_hook(lambda m, a: heads.append(a[0]))
    try:
        with torch.no_grad():
            full = attn(x)
    finally:
        handle.remove()
    z = heads[0]
    w = attn.out.weight
    by_head = [z[..., h * 16 : (h + 1) * 16] @ w[:, h * 16 : (h + 1) * 16].T for h in range(4)]
    torch.testing.assert_close(sum(by_head) + attn.out.bias, full)


def test_generate_stops_after_the_stop_token(model: lm.TinyLM) -> None:
    out = lm.generate(model, lm.encode(PROMPT), max_new_tokens=10)
    assert out.shape == (1, 17)
    assert lm.decode(out[0, -1:]) == "."
    assert lm.generate(model, lm.encode(PROMPT), max_new_tokens=1).shape == (1, 16)


@pytest.mark.parametrize(
    ("tokens", "message"),
    [
        (torch.zeros(1, 3), r"int64 tensor \[batch, length\], got a torch.float32 tensor"),
        (torch.zeros(3, dtype=torch.int64), r"got a torch.int64 tensor of shape \[3\]"),
        ([[0, 1]], r"got list; use encode\(text\)"),
        (torch.zeros(1, 40, dtype=torch.int64), r"40 tokens is too long: .* at most 32"),
        (torch.tensor([[0, 99]]), r"token ids must be in 0..41"),
    ],
)
def test_bad_tokens_get_a_clear_error(model: lm.TinyLM, tokens: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        model(tokens)


def test_model_sizes_are_checked() -> None:
    with pytest.raises(ValueError, match=r"d_model \(30\) must be a multiple of n_heads \(4\)"):
        lm.TinyLM(d_model=30)
    with pytest.raises(ValueError, match=r"n_layers must be a positive int"):
        lm.TinyLM(n_layers=0)


def test_a_seed_fixes_the_weights_without_touching_the_global_state() -> None:
    torch.manual_seed(5)
    before = torch.rand(1)
    torch.manual_seed(5)
    first = lm.TinyLM(seed=1)
    after = torch.rand(1)
    assert torch.equal(before, after)
    second = lm.TinyLM(seed=1)
    for p, q in zip(first.parameters(), second.parameters(), strict=True):
        assert torch.equal(p, q)


@pytest.mark.slow
def test_a_short_training_run_learns_and_reports() -> None:
    config = dataclasses.replace(
        lm.DEFAULT_CONFIG, d_model=32, n_layers=1, d_mlp=64, steps=60, n_test=200
    )
    model, metrics = lm.train_lm(config)
    assert not model.training
    assert set(metrics) == {"test_accuracy", "train_seconds", "final_loss"}
    # 60 steps learn the template's fixed words: the loss falls well below log(42) = 3.7
    assert metrics["final_loss"] < 2.0
    assert 0.0 <= metrics["test_accuracy"] <= 1.0
    assert ht.count_hooks(model).total == 0
    assert isinstance(lm.pretrained_lm(config=config), lm.TinyLM)


def test_train_lm_wants_a_config() -> None:
    with pytest.raises(TypeError, match=r"config must be an LMConfig, got dict"):
        lm.train_lm({"steps": 10})  # type: ignore[arg-type]


def test_damaged_weights_say_how_to_repair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "tiny_lm-names.pt"
    bad.write_bytes(b"not weights")
    monkeypatch.setattr(lm, "_SHIPPED", bad)
    with pytest.raises(RuntimeError, match=r"is damaged \(wrong SHA-256\); reinstall"):
        lm.pretrained_lm()
    monkeypatch.setattr(lm, "_SHIPPED", tmp_path / "missing.pt")
    with pytest.raises(RuntimeError, match=r"is missing; reinstall"):
        lm.pretrained_lm()
