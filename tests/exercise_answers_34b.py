"""Right and wrong answers to the checked exercises of page 34b (tests/test_exercises.py)."""

from __future__ import annotations

import math
from contextlib import contextmanager

import torch

# -- page 34b: attention weights under fused attention --------------------------------------


def _split(qkv_output, n_heads):
    batch, length, width3 = qkv_output.shape
    d_head = width3 // 3 // n_heads
    q, k, _ = qkv_output.view(batch, length, 3, n_heads, d_head).permute(2, 0, 3, 1, 4)
    return q, k, d_head


def last_row(qkv_output, n_heads):
    q, k, d_head = _split(qkv_output, n_heads)
    scores = q[:, :, -1:] @ k.transpose(-1, -2) / math.sqrt(d_head)  # [B, heads, 1, T]
    return torch.softmax(scores[:, :, 0], dim=-1)


def whole_pattern(qkv_output, n_heads):
    q, k, d_head = _split(qkv_output, n_heads)
    length = q.shape[2]
    scores = q @ k.transpose(-1, -2) / math.sqrt(d_head)
    future = torch.ones(length, length, dtype=torch.bool).triu(1)
    return torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)


def first_row(qkv_output, n_heads):
    q, k, d_head = _split(qkv_output, n_heads)
    return torch.softmax(q[:, :, 0:1] @ k.transpose(-1, -2) / math.sqrt(d_head), -1)[:, :, 0]


def unscaled(qkv_output, n_heads):
    q, k, _ = _split(qkv_output, n_heads)
    return torch.softmax(q[:, :, -1:] @ k.transpose(-1, -2), dim=-1)[:, :, 0]


def over_heads(qkv_output, n_heads):
    q, k, d_head = _split(qkv_output, n_heads)
    return torch.softmax(q[:, :, -1:] @ k.transpose(-1, -2) / math.sqrt(d_head), 1)[:, :, 0]


def four_heads(qkv_output, n_heads):  # the page's 4 heads, hard-coded
    return last_row(qkv_output, 4)


def keys_first(qkv_output, n_heads):  # queries and keys swapped
    k, q, d_head = _split(qkv_output, n_heads)
    return torch.softmax(q[:, :, -1:] @ k.transpose(-1, -2) / math.sqrt(d_head), -1)[:, :, 0]


@contextmanager
def eager_attention(model):
    before = [block.attn.fused for block in model.blocks]
    for block in model.blocks:
        block.attn.fused = False
    try:
        yield model
    finally:
        for block, fused in zip(model.blocks, before, strict=True):
            block.attn.fused = fused


class EagerAttention:  # the same as a class
    def __init__(self, model):
        self.model = model

    def __enter__(self):
        self.before = [block.attn.fused for block in self.model.blocks]
        for block in self.model.blocks:
            block.attn.fused = False
        return self.model

    def __exit__(self, *exc_info):
        for block, fused in zip(self.model.blocks, self.before, strict=True):
            block.attn.fused = fused


@contextmanager
def without_finally(model):
    before = [block.attn.fused for block in model.blocks]
    for block in model.blocks:
        block.attn.fused = False
    yield model
    for block, fused in zip(model.blocks, before, strict=True):
        block.attn.fused = fused


@contextmanager
def fused_at_the_end(model):
    for block in model.blocks:
        block.attn.fused = False
    try:
        yield model
    finally:
        for block in model.blocks:
            block.attn.fused = True


@contextmanager
def never_restored(model):
    for block in model.blocks:
        block.attn.fused = False
    yield model


@contextmanager
def first_block_only(model):
    model.blocks[0].attn.fused = False
    try:
        yield model
    finally:
        model.blocks[0].attn.fused = True


@contextmanager
def swallowing(model):
    before = [block.attn.fused for block in model.blocks]
    for block in model.blocks:
        block.attn.fused = False
    try:
        yield model
    except Exception:  # noqa: BLE001, S110 (the mistake this answer makes)
        pass
    finally:
        for block, fused in zip(model.blocks, before, strict=True):
            block.attn.fused = fused


def switch_only(model):  # not a context manager
    for block in model.blocks:
        block.attn.fused = False
    return model


RIGHT = {
    "34b.1": last_row,
    "34b.2": eager_attention,
}

WRONG = [
    ("34b.1", whole_pattern, "whole_pattern"),
    ("34b.1", first_row, "first_row"),
    ("34b.1", unscaled, "no_scale"),
    ("34b.1", over_heads, "not_normalized"),
    ("34b.1", four_heads, "wrong_shape"),
    ("34b.1", keys_first, "wrong_row"),
    ("34b.1", lambda qkv_output, n_heads: [0.5, 0.5], "not_a_tensor"),
    ("34b.2", switch_only, "not_a_context_manager"),
    ("34b.2", first_block_only, "still_fused"),
    ("34b.2", never_restored, "not_restored"),
    ("34b.2", without_finally, "not_restored_after_error"),
    ("34b.2", swallowing, "swallowed"),
    ("34b.2", fused_at_the_end, "forced"),
]
