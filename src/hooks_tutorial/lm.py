r"""A small language model to look inside with hooks, and the sentences it learned.

Chapter 7 of the tutorial opens a transformer language model with forward
hooks: the logit lens, head ablation, activation patching and steering. It
needs a model small enough to train in seconds and a task with a known
answer that makes information move between positions. This module holds
both, in plain PyTorch:

* **The task** (:func:`make_names`): sentences in the style of the
  indirect-object task of Wang et al. (2022),
  ``When Mary and John went to the shop , John gave a book to Mary .``
  Two names are introduced; one of them (the subject) gives something; the
  next word is the *other* name. Nothing in the last word says which name it
  is: the model must find the name that was not repeated, so information has
  to move from earlier positions to the last one.
* **The model** (:class:`TinyLM`): a decoder-only transformer in the style of
  GPT-2 (pre-LayerNorm blocks with attention and an MLP, learned positions, a
  final LayerNorm and an unembedding). Every part a hook needs is a module
  with a name: ``blocks[i]`` (its output is the residual stream after block
  ``i``), ``blocks[i].attn.softmax`` (its output is the attention pattern),
  ``blocks[i].attn.out`` (its input holds each head's output, side by side).
* **The weights** ship with the package (:func:`pretrained_lm`), trained by
  :func:`train_lm` with :data:`DEFAULT_CONFIG`; nothing is downloaded.

Every sentence has the same 17 tokens, so a position means the same word in
every sentence (:data:`POSITIONS`); the prompt is the first 15, and the model
should answer with token 15, the indirect object.
"""

from __future__ import annotations

import difflib
import hashlib
import math
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._checks import check_model, positive_int

__all__ = [
    "DEFAULT_CONFIG",
    "POSITIONS",
    "VOCAB",
    "Attention",
    "Block",
    "LMConfig",
    "NameSentences",
    "TinyLM",
    "decode",
    "encode",
    "generate",
    "make_names",
    "pretrained_lm",
    "train_lm",
]

NAMES = [
    "Mary",
    "John",
    "Alice",
    "Bob",
    "Emma",
    "James",
    "Sarah",
    "Tom",
    "Anna",
    "Paul",
    "Kate",
    "Mark",
    "Lucy",
    "Sam",
    "Jane",
    "Dan",
]
PLACES = ["shop", "park", "school", "station", "beach", "office", "garden", "library"]
OBJECTS = ["book", "ball", "drink", "key", "letter", "ring", "pen", "bag"]
#: Every token the model knows: ``<bos>`` and the template's words, then the
#: names, places and objects. A token's id is its index here.
VOCAB: tuple[str, ...] = (
    "<bos>",
    "When",
    "and",
    "went",
    "to",
    "the",
    ",",
    "gave",
    "a",
    ".",
    *NAMES,
    *PLACES,
    *OBJECTS,
)
_ID = {word: index for index, word in enumerate(VOCAB)}
_TEMPLATE = "<bos> When {A} and {B} went to the {place} , {S} gave a {object} to {IO} ."
#: Where each part of a sentence sits (the same in every sentence): the two
#: names ``"A"`` and ``"B"``, the subject ``"S"`` (the repeated name), the
#: last prompt token ``"end"`` (the second "to", where the model must predict
#: the answer) and the answer ``"IO"`` (the indirect object).
POSITIONS: dict[str, int] = {"A": 2, "B": 4, "S": 10, "end": 14, "IO": 15}
_LENGTH = 17


def encode(text: str) -> Tensor:
    """The token ids of ``text``, whose words are separated by spaces.

    Parameters
    ----------
    text : str
        Words of :data:`VOCAB`, for example
        ``"<bos> When Mary and John went to the shop , John gave a book to"``.

    Returns
    -------
    torch.Tensor
        A ``[1, n]`` int64 tensor: a batch of one sequence, ready for the model.

    Raises
    ------
    ValueError
        For a word the model does not know (with the closest known word).

    Examples
    --------
    >>> encode("<bos> When Mary and John")
    tensor([[ 0,  1, 10,  2, 11]])
    """
    ids = []
    for word in text.split():
        if word not in _ID:
            close = difflib.get_close_matches(word, VOCAB, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            msg = (
                f"the model does not know the word {word!r}{hint} Its words are "
                "hooks_tutorial.lm.VOCAB (separate punctuation with spaces: 'shop ,')"
            )
            raise ValueError(msg)
        ids.append(_ID[word])
    return torch.tensor([ids])


def decode(ids: Tensor | list[int]) -> str:
    """The words of a sequence of token ids, joined by spaces.

    Examples
    --------
    >>> decode(torch.tensor([0, 1, 10, 2, 11]))
    '<bos> When Mary and John'
    """
    values = ids.tolist() if isinstance(ids, Tensor) else list(ids)
    if values and isinstance(values[0], list):
        msg = "decode takes one sequence; for a batch, decode each row: [decode(r) for r in ids]"
        raise ValueError(msg)
    return " ".join(VOCAB[i] for i in values)


@dataclass(frozen=True)
class NameSentences:
    """A batch of sentences of the name task (see :func:`make_names`).

    Attributes
    ----------
    tokens : torch.Tensor
        ``[n, 17]`` int64 token ids of the whole sentences.
    subject_is_a : torch.Tensor
        ``[n]`` bool: the subject (the repeated name) is the first name, so
        the answer is the second one.
    """

    tokens: Tensor
    subject_is_a: Tensor

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def prompts(self) -> Tensor:
        """``[n, 15]``: each sentence up to the second "to"; the model answers next."""
        return self.tokens[:, : POSITIONS["IO"]]

    @property
    def answers(self) -> Tensor:
        """``[n]`` token ids of the right answers (the indirect objects)."""
        return self.tokens[:, POSITIONS["IO"]]

    @property
    def subjects(self) -> Tensor:
        """``[n]`` token ids of the subjects (the repeated name, a wrong answer)."""
        return self.tokens[:, POSITIONS["S"]]

    def with_other_subject(self) -> NameSentences:
        """The same sentences with the other name as the subject, so the answer flips.

        ``When Mary and John ..., John gave a book to`` (answer Mary) becomes
        ``When Mary and John ..., Mary gave a book to`` (answer John): the
        two prompts differ in one token, at ``POSITIONS["S"]``. Activation
        patching runs one and patches in activations from the other.
        """
        tokens = self.tokens.clone()
        tokens[:, POSITIONS["S"]] = self.answers
        tokens[:, POSITIONS["IO"]] = self.subjects
        return NameSentences(tokens, ~self.subject_is_a)

    def text(self, index: int = 0) -> str:
        """Sentence ``index`` as words."""
        return decode(self.tokens[index])


def make_names(n: int, *, seed: int = 0, split: str = "train") -> NameSentences:
    """Generate ``n`` sentences of the name task.

    ``When {A} and {B} went to the {place} , {S} gave a {object} to {IO} .``
    with two different names A and B drawn from 16, a place and an object
    drawn from 8 each, the subject S drawn from A and B with equal chance,
    and IO the other name. Everything is drawn from a
    :class:`torch.Generator` seeded by ``seed`` and ``split``, so the same
    call gives the same sentences on every machine.

    Parameters
    ----------
    n : int
        Number of sentences.
    seed : int, default 0
        Seed of the draw.
    split : {"train", "test"}, default "train"
        ``"test"`` draws from a different stream, so a test set made with
        the same seed is not the training set (the two can still share a
        sentence by chance: there are 30720 different sentences).

    Returns
    -------
    NameSentences

    Raises
    ------
    ValueError
        If ``n`` is not a positive int or ``split`` is unknown.

    Examples
    --------
    >>> make_names(2, seed=0).text(0).split()[:5]
    ['<bos>', 'When', 'Lucy', 'and', 'James']
    """
    n = positive_int(n, "n", meaning="number of sentences")
    if split not in ("train", "test"):
        msg = f"split must be 'train' or 'test', got {split!r}"
        raise ValueError(msg)
    generator = torch.Generator().manual_seed(seed * 2 + (split == "test"))
    names = torch.tensor([_ID[name] for name in NAMES])
    first = torch.randint(len(NAMES), (n,), generator=generator)
    second = (first + torch.randint(1, len(NAMES), (n,), generator=generator)) % len(NAMES)
    a, b = names[first], names[second]
    subject_is_a = torch.randint(2, (n,), generator=generator).bool()
    place = torch.tensor([_ID[p] for p in PLACES])[
        torch.randint(len(PLACES), (n,), generator=generator)
    ]
    thing = torch.tensor([_ID[o] for o in OBJECTS])[
        torch.randint(len(OBJECTS), (n,), generator=generator)
    ]
    parts = {
        "A": a,
        "B": b,
        "place": place,
        "S": torch.where(subject_is_a, a, b),
        "object": thing,
        "IO": torch.where(subject_is_a, b, a),
    }
    columns = [
        parts[word[1:-1]] if word.startswith("{") else torch.full((n,), _ID[word])
        for word in _TEMPLATE.split()
    ]
    return NameSentences(torch.stack(columns, dim=1), subject_is_a)


class Attention(nn.Module):
    r"""Causal multi-head self-attention, with a module for each step a hook needs.

    ``qkv`` projects the input to queries, keys and values; ``softmax`` turns
    the scaled scores into the attention pattern (its output, ``[B, heads,
    T, T]``, row ``i`` says where position ``i`` looks); ``out`` mixes the
    heads' outputs. The input of ``out`` holds each head's output side by
    side (``[B, T, heads * d_head]``, head ``h`` in columns ``h * d_head`` to
    ``(h + 1) * d_head``), so a forward pre-hook on ``out`` can read or edit
    one head.

    With ``fused = True`` the middle steps (scores, mask, softmax, the
    weighted sum of the values) run as one call of
    ``torch.nn.functional.scaled_dot_product_attention`` with
    ``is_causal=True``, as most models do today: the result is the same up to
    float rounding, but ``softmax`` does not run, so no hook sees the
    pattern; ``qkv`` and ``out`` still run and their hooks still fire.

    Parameters
    ----------
    d_model : int
        Width of the input and the output.
    n_heads : int
        Number of heads; ``d_model`` must be a multiple of it.
    fused : bool, default False
        Compute attention with the fused function instead of the explicit
        steps. It is an attribute too: set ``attn.fused`` on a model's blocks
        to switch a loaded model.

    Raises
    ------
    ValueError
        If ``d_model`` is not a multiple of ``n_heads``.
    """

    def __init__(self, d_model: int, n_heads: int, *, fused: bool = False) -> None:
        super().__init__()
        if d_model % n_heads:
            msg = f"d_model ({d_model}) must be a multiple of n_heads ({n_heads})"
            raise ValueError(msg)
        self.n_heads = n_heads
        self.fused = fused
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.softmax = nn.Softmax(dim=-1)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x: Tensor) -> Tensor:
        """Each position's mix of the values it attends to, ``[B, T, d_model]``."""
        batch, length, width = x.shape
        d_head = width // self.n_heads
        # [B, T, 3 * width] -> three [B, heads, T, d_head]
        q, k, v = self.qkv(x).view(batch, length, 3, self.n_heads, d_head).permute(2, 0, 3, 1, 4)
        if self.fused:
            # one call; it returns only the mix of the values, never the pattern
            mix = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = q @ k.transpose(-1, -2) / math.sqrt(d_head)
            future = torch.ones(length, length, dtype=torch.bool, device=x.device).triu(1)
            pattern = self.softmax(scores.masked_fill(future, float("-inf")))
            mix = pattern @ v
        heads = mix.transpose(1, 2).reshape(batch, length, width)
        mixed: Tensor = self.out(heads)
        return mixed


class Block(nn.Module):
    """One transformer block: ``x + attn(ln1(x))``, then ``+ mlp(ln2(...))``.

    Its output is the residual stream after the block.
    """

    def __init__(self, d_model: int, n_heads: int, d_mlp: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = Attention(d_model, n_heads)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, d_mlp), nn.GELU(), nn.Linear(d_mlp, d_model))

    def forward(self, x: Tensor) -> Tensor:
        """The residual stream ``x`` ``[B, T, d_model]`` after this block."""
        x = x + self.attn(self.ln1(x))
        resid: Tensor = x + self.mlp(self.ln2(x))
        return resid


class TinyLM(nn.Module):
    r"""A decoder-only transformer in the style of GPT-2, small enough for a CPU.

    ====================  ===============================================  ==================
    module                what it does                                     output
    ====================  ===============================================  ==================
    ``embed``             token embedding                                  ``[B, T, d_model]``
    ``pos_embed``         learned position embedding, added to ``embed``   ``[T, d_model]``
    ``blocks[i]``         :class:`Block`: attention, then MLP, each added  ``[B, T, d_model]``
                          to the residual stream
    ``ln_final``          final LayerNorm                                  ``[B, T, d_model]``
    ``unembed``           linear map to one logit per token of the vocab   ``[B, T, vocab]``
    ====================  ===============================================  ==================

    The residual stream is the running sum ``embed + pos_embed + attention
    and MLP outputs``; a forward hook on ``blocks[i]`` sees it after block
    ``i``. ``unembed(ln_final(resid))`` turns any residual into logits: the
    *logit lens* applies it to every block's output.

    Parameters
    ----------
    vocab_size : int, default len(VOCAB)
        Number of tokens.
    d_model, n_layers, n_heads, d_mlp, max_len : int
        Width of the residual stream, number of blocks, attention heads per
        block, hidden width of the MLPs, longest sequence.
    seed : int or None, default None
        If given, initialise the weights from this seed without touching the
        global random state.

    Raises
    ------
    ValueError
        If a size is not a positive int or ``d_model`` is not a multiple of
        ``n_heads``.
    """

    def __init__(
        self,
        vocab_size: int = len(VOCAB),
        *,
        d_model: int = 64,
        n_layers: int = 3,
        n_heads: int = 4,
        d_mlp: int = 256,
        max_len: int = 32,
        seed: int | None = None,
    ) -> None:
        super().__init__()
        for value, name in [
            (vocab_size, "vocab_size"),
            (d_model, "d_model"),
            (n_layers, "n_layers"),
            (n_heads, "n_heads"),
            (d_mlp, "d_mlp"),
            (max_len, "max_len"),
        ]:
            positive_int(value, name)
        with torch.random.fork_rng(enabled=seed is not None):
            if seed is not None:
                torch.manual_seed(seed)
            self.embed = nn.Embedding(vocab_size, d_model)
            self.pos_embed = nn.Embedding(max_len, d_model)
            self.blocks = nn.ModuleList(Block(d_model, n_heads, d_mlp) for _ in range(n_layers))
            self.ln_final = nn.LayerNorm(d_model)
            self.unembed = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, tokens: Tensor) -> Tensor:
        """Logits ``[B, T, vocab]`` for int64 ``tokens`` ``[B, T]``."""
        self._check(tokens)
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.embed(tokens) + self.pos_embed(positions)
        for block in self.blocks:
            x = block(x)
        logits: Tensor = self.unembed(self.ln_final(x))
        return logits

    def _check(self, tokens: object) -> None:
        if not isinstance(tokens, Tensor) or tokens.dtype != torch.int64 or tokens.dim() != 2:
            got = (
                f"a {tokens.dtype} tensor of shape {list(tokens.shape)}"
                if isinstance(tokens, Tensor)
                else type(tokens).__name__
            )
            msg = (
                f"TinyLM takes token ids as an int64 tensor [batch, length], got {got}; "
                "use encode(text) or make_names(...).prompts"
            )
            raise ValueError(msg)
        length, vocab = tokens.shape[1], self.embed.num_embeddings
        if length > self.pos_embed.num_embeddings:
            most = self.pos_embed.num_embeddings
            msg = f"a sequence of {length} tokens is too long: this model reads at most {most}"
            raise ValueError(msg)
        if tokens.numel() and (tokens.min() < 0 or tokens.max() >= vocab):
            msg = f"token ids must be in 0..{vocab - 1} (the vocabulary's size is {vocab})"
            raise ValueError(msg)


@torch.no_grad()
def generate(
    model: nn.Module, tokens: Tensor, max_new_tokens: int = 4, *, stop: str = "."
) -> Tensor:
    """Continue ``tokens`` greedily: append the most likely next token, repeat.

    There is no key-value cache: each step runs the model on the whole
    sequence so far, so a hook on the model sees every position again at
    every step (``[1, 15, d]``, then ``[1, 16, d]``, ...). Libraries that
    cache keys and values run only the new token after the first step, and
    their hooks see ``[1, 1, d]``.

    Parameters
    ----------
    model : TinyLM
        The model (any module mapping ``[B, T]`` ids to ``[B, T, vocab]`` logits).
    tokens : torch.Tensor
        ``[B, T]`` int64 prompt(s).
    max_new_tokens : int, default 4
        Most tokens to add.
    stop : str, default "."
        Stop once every sequence has produced this token.

    Returns
    -------
    torch.Tensor
        ``[B, T + k]``: the prompts and the ``k <= max_new_tokens`` tokens added.
    """
    check_model(model, "pass the language model, e.g. pretrained_lm()")
    positive_int(max_new_tokens, "max_new_tokens")
    stop_id = encode(stop)[0, 0]
    finished = torch.zeros(len(tokens), dtype=torch.bool)
    for _ in range(max_new_tokens):
        following = model(tokens)[:, -1].argmax(-1)
        tokens = torch.cat([tokens, following[:, None]], dim=1)
        finished |= following == stop_id
        if bool(finished.all()):
            break
    return tokens


@dataclass(frozen=True)
class LMConfig:
    """The recipe of a :class:`TinyLM` trained on :func:`make_names` (:func:`train_lm`).

    Attributes
    ----------
    d_model, n_layers, n_heads, d_mlp : int
        The model's sizes (:class:`TinyLM`).
    steps, batch_size : int
        AdamW steps, each on a fresh batch of sentences.
    lr : float
        Peak learning rate of a one-cycle schedule.
    n_test : int
        Test sentences for the reported accuracy.
    seed : int
        Seed of the weights and the sentences.
    """

    d_model: int = 64
    n_layers: int = 3
    n_heads: int = 4
    d_mlp: int = 256
    steps: int = 600
    batch_size: int = 128
    lr: float = 3e-3
    n_test: int = 2000
    seed: int = 0


#: The recipe of the shipped weights (``pretrained_lm()``).
DEFAULT_CONFIG = LMConfig()
_NAME = "tiny_lm-names"
_SHIPPED = Path(__file__).parent / "weights" / f"{_NAME}.pt"
_SHIPPED_SHA256 = "03dd8e1f7d8694c1f01f29a2ede2957b74f3aee7ec3a46a86965c535c760500d"


def train_lm(config: LMConfig = DEFAULT_CONFIG) -> tuple[TinyLM, dict[str, float]]:
    """Train a :class:`TinyLM` on the name task, as ``config`` says.

    The loss is the usual language-model loss: predict every next token of
    the sentence. Most tokens are random (which names, place, object) and
    cannot be predicted; the answer can, which is what the test accuracy
    measures.

    Returns
    -------
    (TinyLM, dict)
        The model in eval mode, and ``{"test_accuracy", "train_seconds",
        "final_loss"}``.
    """
    given: object = config  # checked at run time: a wrong type is a common slip
    if not isinstance(given, LMConfig):
        msg = f"config must be an LMConfig, got {type(given).__name__}"
        raise TypeError(msg)
    model = TinyLM(
        d_model=config.d_model,
        n_layers=config.n_layers,
        n_heads=config.n_heads,
        d_mlp=config.d_mlp,
        seed=config.seed,
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=config.lr, total_steps=config.steps, pct_start=0.1
    )
    data = make_names(config.steps * config.batch_size, seed=config.seed)
    start = time.perf_counter()
    model.train()
    loss = torch.tensor(float("nan"))
    for batch in torch.split(data.tokens, config.batch_size):
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten())
        optimizer.zero_grad()
        torch.autograd.backward(loss)  # what loss.backward() calls (typed)
        optimizer.step()
        scheduler.step()
    seconds = time.perf_counter() - start
    model.eval()
    test = make_names(config.n_test, seed=config.seed, split="test")
    with torch.no_grad():
        predicted = model(test.prompts)[:, -1].argmax(-1)
    accuracy = (predicted == test.answers).float().mean().item()
    return model, {
        "test_accuracy": accuracy,
        "train_seconds": seconds,
        "final_loss": loss.item(),
    }


def pretrained_lm(*, config: LMConfig | None = None) -> TinyLM:
    """The :class:`TinyLM` trained on the name task, from the weights in the package.

    The weights (:data:`DEFAULT_CONFIG`, about 0.6 MB) are loaded with
    ``torch.load(..., weights_only=True)`` after a SHA-256 check: the same
    model on every machine, in milliseconds. With ``config``, a model is
    trained with that recipe instead (seconds on a CPU; nothing is cached).

    Raises
    ------
    RuntimeError
        If the shipped weights are missing or damaged (reinstall the package).

    Examples
    --------
    >>> model = pretrained_lm()
    >>> prompt = encode("<bos> When Mary and John went to the shop , John gave a book to")
    >>> decode(generate(model, prompt)[0, -2:])
    'Mary .'
    """
    if config is not None and config != DEFAULT_CONFIG:
        model, _ = train_lm(config)
        return model
    digest = hashlib.sha256(_SHIPPED.read_bytes()).hexdigest() if _SHIPPED.is_file() else None
    if digest != _SHIPPED_SHA256:
        problem = "is missing" if digest is None else "is damaged (wrong SHA-256)"
        msg = (
            f"the weights file {_SHIPPED} {problem}; reinstall hooks-tutorial "
            "(pip install --force-reinstall hooks-tutorial)"
        )
        raise RuntimeError(msg)
    payload = torch.load(_SHIPPED, map_location="cpu", weights_only=True)
    model = TinyLM(
        d_model=DEFAULT_CONFIG.d_model,
        n_layers=DEFAULT_CONFIG.n_layers,
        n_heads=DEFAULT_CONFIG.n_heads,
        d_mlp=DEFAULT_CONFIG.d_mlp,
    )
    model.load_state_dict(payload["state_dict"])
    return model.eval()
