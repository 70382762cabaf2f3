# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
Steering vectors: add a direction to the residual stream while the model writes
===============================================================================

.. index::
   ! steering vector
   ! 引导向量
   ! activation addition
   ! 激活加法
   ! contrastive activation addition
   ! 对比激活加法
   ! key-value cache
   ! 键值缓存
   residual stream
   残差流

The pages before this one only read a language model, or broke a piece of
it to see what it carried. A *steering vector* changes what the model
says: a forward hook adds a fixed direction to the residual stream at every
forward pass, and the model's answers follow. The direction comes from the
model itself: the difference between its mean residual on two sets of
prompts that differ in the behaviour we want to change. This page builds
one on the name task, adds it with a forward hook while ``lm.generate``
writes, measures how the answers change with the strength of the push,
finds where it breaks, and compares it with random directions of the same
length.

.. rubric:: What you will learn
   :heading-level: 2

- how a *difference of means* of the residual stream gives a direction, and
  why the block you read it after matters;
- how a forward hook that returns ``output + alpha * direction`` steers the
  model, and what the strength ``alpha`` does (a figure);
- what a hook sees during generation without a key-value cache, why a hook
  on "the last position" then edits a different token at each step, and
  what changes with a cache;
- what the direction means on this model, and what random directions of
  the same length do.

**Prerequisites**: :doc:`/auto_examples/02_module_hooks/plot_05_forward_hooks`,
:doc:`/auto_examples/02_module_hooks/plot_08_handles_and_leaks`,
:doc:`plot_35_activation_patching`.
"""

# %%
# Two sets of prompts that differ in one thing
# --------------------------------------------
#
# The model answers the name task: in ``When Mary and John went to the shop ,
# John gave a book to`` the next word is ``Mary``, the name that was not
# repeated. We want to push the model from one answer to the other. So the
# two sets hold the same two names and differ only in the behaviour: in the
# first set the answer is Mary (the subject is John), in the second it is
# John (the subject is Mary). Both orders of the names, every object and
# four of the eight places make the prompts the direction is built from; the
# other four places are kept to test it.

import itertools

import matplotlib.pyplot as plt
import torch

import hooks_tutorial as ht
from hooks_tutorial import count_hooks, lm

print("torch", torch.__version__)
model = lm.pretrained_lm()
NAME_IDS = lm.encode(" ".join(lm.NAMES))[0]  # the 16 names
MARY, JOHN = lm.encode("Mary John")[0]


def name_prompts(first, second, subject, places):
    """Prompts with the names in both orders, for every place and object."""
    texts = [
        f"<bos> When {a} and {b} went to the {place} , {subject} gave a {thing} to"
        for place, thing in itertools.product(places, lm.OBJECTS)
        for a, b in [(first, second), (second, first)]
    ]
    return torch.cat([lm.encode(text) for text in texts])


build_places, test_places = lm.PLACES[:4], lm.PLACES[4:]
to_mary = name_prompts("Mary", "John", "John", build_places)  # answer: Mary
to_john = name_prompts("Mary", "John", "Mary", build_places)  # answer: John
test_to_john = name_prompts("Mary", "John", "Mary", test_places)
print("prompts per set:", len(to_mary), len(to_john), "held out:", len(test_to_john))
print("set 1:", lm.decode(to_mary[0]))
print("set 2:", lm.decode(to_john[0]))
with torch.no_grad():
    for label, prompts, answer in [("set 1", to_mary, MARY), ("set 2", to_john, JOHN)]:
        accuracy = (model(prompts)[:, -1].argmax(-1) == answer).float().mean()
        print(f"{label}: the model answers {lm.VOCAB[answer]} in {accuracy:.2f} of the prompts")

# sphinx_gallery_start_ignore
assert len(to_mary) == len(to_john) == len(test_to_john) == 64  # "the 64 pairs"
with torch.no_grad():
    assert (model(to_mary)[:, -1].argmax(-1) == MARY).all()
    assert (model(to_john)[:, -1].argmax(-1) == JOHN).all()
# "Each prompt of set 1 has a partner in set 2 that differs in one token, the subject"
differ = to_mary != to_john
assert differ.sum(1).tolist() == [1] * 64
assert differ[:, lm.POSITIONS["S"]].all()
# sphinx_gallery_end_ignore

# %%
# A direction from the residual stream: a difference of means
# -----------------------------------------------------------
#
# A forward hook on ``model.blocks[k]`` sees the residual stream after block
# ``k``, ``[batch, 15, 64]``. We keep the last position (the second ``to``,
# where the model predicts the answer) and average it over each set. The
# steering direction is the mean of set 1 minus the mean of set 2: what, on
# average, the model writes differently when the answer is Mary rather than
# John. Each prompt of set 1 has a partner in set 2 that differs in one
# token, the subject, and the difference of the means is the mean of the 64
# pairs' differences: this is the recipe of *contrastive activation
# addition* (CAA, Rimsky et al., 2024), which averages the difference over
# many pairs. In CAA the two prompts of a pair are the same question
# followed by opposite answer letters, and the residual is read at that
# letter; here the pair differ in the subject, which decides the answer,
# and the residual is read where the answer is predicted. Turner et al.
# (2023) introduced *activation addition* (ActAdd) with the difference of
# a single pair of prompts, such as "Love" and "Hate".


def last_residuals(prompts):
    """The residual stream after each block at the last position: ``{k: [n, 64]}``."""
    seen = {}
    handles = []

    def keep(k):
        def hook(module, args, output):
            seen[k] = output[:, -1].detach()

        return hook

    try:
        for k, block in enumerate(model.blocks):
            handles.append(block.register_forward_hook(keep(k)))
        with torch.no_grad():
            model(prompts)
    finally:
        for handle in handles:
            handle.remove()
    return seen


mary_residuals, john_residuals = last_residuals(to_mary), last_residuals(to_john)
directions = {}
for k in range(len(model.blocks)):
    directions[k] = mary_residuals[k].mean(0) - john_residuals[k].mean(0)
    typical = john_residuals[k].norm(dim=-1).mean()
    print(
        f"after block {k}: |direction| = {directions[k].norm():.2f}, "
        f"|residual| = {typical:.2f} on average"
    )

# sphinx_gallery_start_ignore
typical = {k: john_residuals[k].norm(dim=-1).mean() for k in directions}
for k, difference_of_means in directions.items():
    # "the difference of the means is the mean of the 64 pairs' differences"
    pairs = mary_residuals[k] - john_residuals[k]
    torch.testing.assert_close(pairs.mean(0), difference_of_means, atol=1e-5, rtol=1e-5)
# "After block 0 the two means are almost equal: the direction is tiny next to the residual
# itself ... the last position barely depends on which of them is the subject": every pair
pairs = mary_residuals[0] - john_residuals[0]
assert pairs.norm(dim=-1).max() < 0.05 * typical[0], (pairs.norm(dim=-1).max(), typical[0])
# "After blocks 1 and 2 the difference is as long as a typical residual, or longer" (7.06
# against 7.09, and 9.74 against 8.44 so far)
assert abs(directions[1].norm() / typical[1] - 1) < 0.05, (directions[1].norm(), typical[1])
assert directions[2].norm() > typical[2], (directions[2].norm(), typical[2])
# "that reaches the last position only in block 1 (the head that pages 34 and 35 found)":
# block 1, head 3 looks from the last position at the subject
seen_pattern = {}
with (
    model.blocks[1].attn.softmax.register_forward_hook(
        lambda m, args, output: seen_pattern.update(p=output.detach())
    ),
    torch.no_grad(),
):
    model(to_john)
assert seen_pattern["p"][:, 3, lm.POSITIONS["end"], lm.POSITIONS["S"]].mean() > 0.5
# sphinx_gallery_end_ignore

# %%
# After block 0 the two means are almost equal: the direction is tiny next
# to the residual itself. Both sets hold the same two names, and after block
# 0 the last position barely depends on which of them is the subject;
# that reaches the last position only in block 1 (the head that :doc:`plot_34_attention_and_ablation`
# and :doc:`plot_35_activation_patching` found). After blocks 1 and 2 the
# difference is as long as a typical residual, or longer.
#
# Steering with a forward hook
# ----------------------------
#
# A forward hook that returns a tensor replaces the module's output. This one
# adds ``alpha`` times the direction at the last position; everything after
# the block computes on the edited residual. It returns a new tensor and
# leaves the block's own output untouched.


def add_at_last_position(direction, alpha):
    def hook(module, args, output):
        steered = output.clone()
        steered[:, -1] += alpha * direction
        return steered

    return hook


def answers(prompts, block=None, hook=None):
    """The model's next token for each prompt, with ``hook`` on ``block`` if given."""
    with torch.no_grad():
        if hook is None:
            return model(prompts)[:, -1].argmax(-1)
        with block.register_forward_hook(hook):
            return model(prompts)[:, -1].argmax(-1)


for k, block in enumerate(model.blocks):
    said = answers(test_to_john, block, add_at_last_position(directions[k], 1.0))
    print(f"steer after block {k} with alpha 1: Mary in {(said == MARY).float().mean():.2f}")

# sphinx_gallery_start_ignore
# "Block 0's direction does nothing ... Block 1 is the first block after which it works"
flips = [
    (answers(test_to_john, b, add_at_last_position(directions[k], 1.0)) == MARY).float().mean()
    for k, b in enumerate(model.blocks)
]
assert flips == [0, 1, 1], flips
# sphinx_gallery_end_ignore

# %%
# At ``alpha`` 1, block 0's direction does nothing. Is it only too short?
# Scaled to the length of block 1's direction, or far beyond, it still
# turns no answer into Mary:

to_block_1 = directions[1].norm() / directions[0].norm()
print(f"|direction after block 1| / |direction after block 0| = {to_block_1:.0f}")
block_0_flips = {}
for scale in [to_block_1.item(), 200.0]:
    said = answers(test_to_john, model.blocks[0], add_at_last_position(directions[0], scale))
    block_0_flips[scale] = int((said == MARY).sum())
    print(f"steer after block 0 with alpha {scale:.0f}: Mary in {block_0_flips[scale]} of 64")

# sphinx_gallery_start_ignore
# "Scaled to the length of block 1's direction, or far beyond, it still turns no answer
# into Mary": exact counts, no tolerance needed (an answer is a token); the ratio itself is
# printed, only its size is claimed ("far beyond": 200 is well above it, 75 so far)
assert 20 < to_block_1 < 150, to_block_1
assert all(count == 0 for count in block_0_flips.values()), block_0_flips
# sphinx_gallery_end_ignore

# %%
# But these prompts answer John already, so a push towards John would not
# show. The same push on the held-out prompts whose answer is Mary:

test_to_mary = name_prompts("Mary", "John", "John", test_places)  # answer: Mary
block_0_johns = {}
for scale in [to_block_1.item(), 200.0]:
    said = answers(test_to_mary, model.blocks[0], add_at_last_position(directions[0], scale))
    block_0_johns[scale] = int((said == JOHN).sum())
    print(f"answer-Mary prompts, block 0, alpha {scale:.0f}: John in {block_0_johns[scale]} of 64")

# sphinx_gallery_start_ignore
# "every answer becomes John": exact counts (tokens); without the push they are all Mary
assert (answers(test_to_mary) == MARY).all()
assert all(count == 64 for count in block_0_johns.values()), block_0_johns
# and on the answer-John prompts, the push does act: it widens John's lead over Mary
with torch.no_grad():
    logits = model(test_to_john)[:, -1]
    with model.blocks[0].register_forward_hook(
        add_at_last_position(directions[0], to_block_1.item())
    ):
        pushed_logits = model(test_to_john)[:, -1]
lead = (logits[:, JOHN] - logits[:, MARY]).mean()
pushed_lead = (pushed_logits[:, JOHN] - pushed_logits[:, MARY]).mean()
assert pushed_lead > lead + 0.5, (lead, pushed_lead)  # 6.20 -> 7.95 so far
# "read on its own by the logit lens": the final LayerNorm and the unembedding, as at the
# end of the page
with torch.no_grad():
    block_0_lens = model.unembed(model.ln_final(directions[0] * to_block_1))[NAME_IDS]
# "ranks John first among the sixteen names and Mary last"
assert NAME_IDS[block_0_lens.argmax()] == JOHN, lm.VOCAB[NAME_IDS[block_0_lens.argmax()]]
assert NAME_IDS[block_0_lens.argmin()] == MARY, lm.VOCAB[NAME_IDS[block_0_lens.argmin()]]
# "read the same way, it ranks John last": checked where the page shows it (ranked[-1])
# sphinx_gallery_end_ignore

# %%
# Every answer becomes John. Block 0's direction is not too short: it
# points the other way, towards John, the subject of set 1. After block 0
# the last position holds only a faint trace of the subject's own name:
# read on its own by the logit lens (the final LayerNorm and the unembedding
# alone; see :doc:`plot_33_logit_lens`), the direction ranks John first
# among the sixteen names and Mary last, and
# made large, it makes the model say John. Block 1 brings the subject to
# the last position, with the head that
# :doc:`plot_34_attention_and_ablation` and
# :doc:`plot_35_activation_patching` found, and after it the difference
# says Mary rather than John: read the same way, it ranks John last (see
# the end of this page). Block 1 is the first block after which the
# direction works, so we steer there from now on. The prompts tested are
# the held-out ones, whose answer is John.
#
# How the answers change with the strength
# ----------------------------------------
#
# We raise ``alpha`` from 0 to 10 and count, among the 64 held-out prompts,
# the answers that flip to Mary, the answers that stay John, the other names
# and the answers that are not a name at all. The control is ten random
# directions of the same length: if any push of that size flipped the
# answers, the difference of means would have found nothing special. One
# random direction is not a control (by chance it can lie close to a
# direction the model uses), so we give the mean of the ten and count those
# that change no answer. One forward pass does a whole sweep: the batch
# holds the prompts once per ``alpha``, and the same hook adds
# ``row_alphas``, a column with each row's ``alpha``, times the direction
# (broadcasting).

K = 1
block = model.blocks[K]
direction = directions[K]
generator = torch.Generator().manual_seed(0)
random_directions = torch.randn(10, 64, generator=generator)
random_directions *= direction.norm() / random_directions.norm(dim=-1, keepdim=True)
lengths = random_directions.norm(dim=-1)
print(
    f"|direction| = {direction.norm():.2f}, |random directions| = {lengths.min():.2f} to {lengths.max():.2f}"
)

n = len(test_to_john)


def sweep(vector, alphas):
    """Shares of Mary, John, another name, not a name, ``[len(alphas), 4]``."""
    # one batch: the 64 prompts once for each alpha; the hook gives each row its own alpha
    batch = test_to_john.repeat(len(alphas), 1)
    row_alphas = torch.tensor(alphas).repeat_interleave(n)[:, None]
    said = answers(batch, block, add_at_last_position(vector, row_alphas)).view(len(alphas), n)
    is_name = torch.isin(said, NAME_IDS)
    other_name = is_name & (said != MARY) & (said != JOHN)
    return (
        torch.stack([(said == MARY), (said == JOHN), other_name, ~is_name], dim=-1).float().mean(1)
    )


alphas = [a / 2 for a in range(21)]
shown = [0, 0.5, 1, 1.5, 2, 4, 6, 7, 8, 10]
shares = sweep(direction, alphas)
random_shares = torch.stack([sweep(vector, shown) for vector in random_directions])
unchanged = (random_shares[:, :, 1] == 1).sum(0)  # random directions that leave every John

print("alpha | steering: Mary John other-name not-a-name | 10 random (mean): the same | unchanged")
for i, alpha in enumerate(shown):
    steered = " ".join(f"{v:4.2f}" for v in shares[alphas.index(alpha)])
    control = " ".join(f"{v:4.2f}" for v in random_shares[:, i].mean(0))
    print(f"{alpha:5.1f} | {steered} | {control} | {unchanged[i]:2d}")
mary_at_most = random_shares[:, :, 0].amax(1)
print("random directions that ever give Mary:", int((mary_at_most > 0).sum()), "of 10")

fig, axes = plt.subplots(2, 1, figsize=(5.2, 6.4), sharey=True, layout="constrained")
for ax, label, xs, table in [
    (axes[0], "steering direction", alphas, shares),
    (axes[1], "10 random directions (mean)", shown, random_shares.mean(0)),
]:
    ax.plot(xs, table[:, 0], "o-", label="flips to Mary")
    ax.plot(xs, table[:, 1], "s-", label="stays John")
    ax.plot(xs, table[:, 2], "^-", label="another name")
    ax.plot(xs, table[:, 3], "x-", label="not a name")
    ax.set_title(f"{label}, block {K}")
    ax.set_xlabel("alpha")
    ax.set_ylabel("share of the 64\nheld-out answers")
    ax.grid(alpha=0.3)
axes[0].legend(loc="center")
plt.show()

# sphinx_gallery_start_ignore
by_alpha = dict(zip(alphas, shares.tolist(), strict=True))
# "flips most of the answers at alpha 0.5 and all of them from 1 to 6.5" (0.81 at 0.5 so far)
assert 0.5 < by_alpha[0.5][0] < 1, by_alpha[0.5]
assert all(by_alpha[a][0] == 1 for a in alphas if 1 <= a <= 6.5), by_alpha
# "at 7 some answers and from 7.5 on all of them are another name"; "up to 10 it never gives
# a word that is not a name"
assert 0 < by_alpha[7.0][2] < 1, by_alpha[7.0]
assert all(by_alpha[a][2] == 1 for a in alphas if a >= 7.5), by_alpha
assert shares[:, 3].max() == 0
# "None of the ten random directions ... changes a single answer up to alpha 1"
assert (random_shares[:, : shown.index(1) + 1, 1] == 1).all()
# "From 1.5 on, more and more of them break the model, each in its own way": fewer leave
# every answer John at each strength; some give other names, some words that are not names
counts = unchanged[shown.index(1.5) :].tolist()
assert counts[0] < 10, counts
assert counts == sorted(counts, reverse=True), counts
assert random_shares[:, -1, 2].max() > 0
assert random_shares[:, -1, 3].max() > 0
# "at 7 none of them leaves every answer John, and on average nearly half of the answers are
# words that are not names and about a third are other names" (0.46 and 0.35 so far)
at_7 = random_shares[:, shown.index(7)].mean(0)
assert unchanged[shown.index(7)] == 0
assert 0.35 < at_7[3] < 0.55, at_7
assert 0.25 < at_7[2] < 0.45, at_7
# "Mary even comes out of a random direction at large strengths", never up to alpha 1.5
assert (mary_at_most > 0).sum() >= 1
assert random_shares[:, : shown.index(1.5) + 1, 0].max() == 0
# sphinx_gallery_end_ignore

# %%
# The steering direction flips most of the answers at ``alpha`` 0.5 and all
# of them from 1 to 6.5. Past that it breaks: at 7 some answers and from 7.5
# on all of them are another name, neither Mary nor John; up to 10 it never
# gives a word that is not a name. None of the ten random directions of the
# same length changes a single answer up to ``alpha`` 1, where the steering
# direction has flipped them all. From 1.5 on, more and more of them break
# the model, each in its own way: at 7 none of them leaves every answer John, and on average
# nearly half of the answers are words that are not names and about a third
# are other names. Even Mary comes out of a random direction at large
# strengths: where a random push
# lands is chance, which is why a control needs more than one draw. A large
# push takes the model away from the residuals it was trained on, whichever
# way it goes; only the difference of means moves it towards the answer we
# chose, at strengths where random pushes change nothing.
#
# Steering while the model generates
# ----------------------------------
#
# ``lm.generate`` adds one token at a time. It has no *key-value cache*:
# each step runs the model on the whole sequence so far, so a hook sees 15
# positions at the first step, 16 at the second, and so on. A hook that
# prints the shape it sees shows it.


def show_shape(module, args, output):
    print("  the hook on blocks[1] sees", list(output.shape))


prompt = test_to_john[:1]
with block.register_forward_hook(show_shape):
    continuation = lm.generate(model, prompt, max_new_tokens=4)
print("generated:", lm.decode(continuation[0, 15:]))

# sphinx_gallery_start_ignore
# "a hook sees 15 positions at the first step, 16 at the second"; "Generation stopped at
# the full stop, after two steps"
assert lm.decode(continuation[0, 15:]) == "John ."
# sphinx_gallery_end_ignore

# %%
# Generation stopped at the full stop, after two steps. Now the steering
# hook during generation, for a few strengths, and the first random
# direction at ``alpha`` 2, where it breaks. ``lm.decode`` turns the new tokens back into
# words.

for label, vector, alpha in [
    ("steering", direction, 0.0),
    ("steering", direction, 0.5),
    ("steering", direction, 1.0),
    ("steering", direction, 4.0),
    ("steering", direction, 8.0),
    ("random", random_directions[0], 2.0),
]:
    with block.register_forward_hook(add_at_last_position(vector, alpha)):
        out = lm.generate(model, test_to_john[:3], max_new_tokens=4)
    words = " | ".join(lm.decode(row[15:]) for row in out)
    print(f"{label:8s} alpha {alpha:3.1f}: {words}")

# sphinx_gallery_start_ignore
# "the first random direction at alpha 2, where it breaks": its answers are not names
assert not torch.isin(out[:, 15], NAME_IDS).any(), words
# sphinx_gallery_end_ignore

# %%
# Last position or every position, with and without a cache
# ---------------------------------------------------------
#
# Without a cache, "the last position" is a different token at each step:
# position 14 (the second ``to``) at the first step, the new name at
# position 15 at the second. At the second step position 14 is computed
# again, *without* the push. A hook that adds to every position instead
# re-steers the whole prompt at every step. A hook that records which
# positions it edited shows the difference.


def recording(direction, alpha, where, edited):
    def hook(module, args, output):
        steered = output.clone()
        length = output.shape[1]
        first = 0 if where == "every" else length - 1
        steered[:, first:] += alpha * direction
        edited.append(f"{first}" if first == length - 1 else f"{first} to {length - 1}")
        return steered

    return hook


results = {}
for where in ["last", "every"]:
    edited = []
    with block.register_forward_hook(recording(direction, 1.0, where, edited)):
        results[where] = lm.generate(model, test_to_john, max_new_tokens=4)
    print(f"{where:5s} position: positions edited at each step: {edited}")
same = torch.equal(results["last"], results["every"])
print("the same tokens generated by both hooks:", same)
print("continuations:", sorted({lm.decode(row[15:]) for row in results["every"]}))
for alpha in [0.5, 7.0]:
    mary = {}
    for where in ["last", "every"]:
        with block.register_forward_hook(recording(direction, alpha, where, [])):
            out = lm.generate(model, test_to_john, max_new_tokens=4)
        mary[where] = (out[:, 15] == MARY).float().mean()
    print(f"alpha {alpha}: Mary in {mary['last']:.2f} (last position), {mary['every']:.2f} (every)")

# sphinx_gallery_start_ignore
mary_by_hook = {}
for alpha in [0.5, 7.0]:
    for where in ["last", "every"]:
        with block.register_forward_hook(recording(direction, alpha, where, [])):
            out = lm.generate(model, test_to_john, max_new_tokens=4)
        mary_by_hook[alpha, where] = (out[:, 15] == MARY).float().mean().item()
# "At alpha 1 both hooks write the same words: the answer is the first generated token, and
# a full stop follows it"
assert same
assert {lm.decode(row[15:]) for row in results["every"]} == {"Mary ."}
# "at alpha 0.5 the hook on every position flips a few more answers than the hook on the
# last position; at 7, the hook on the last position flips about half of them, the hook on
# every position all of them" (0.81 and 0.83; 0.56 and 1.00 so far)
assert mary_by_hook[0.5, "last"] < mary_by_hook[0.5, "every"] < 1, mary_by_hook
assert 0.3 < mary_by_hook[7.0, "last"] < 0.8, mary_by_hook
assert mary_by_hook[7.0, "every"] == 1, mary_by_hook
# "positions 0 to 13, which block 2's attention reads from position 14"
block_2_pattern = {}
with (
    model.blocks[2].attn.softmax.register_forward_hook(
        lambda m, args, output: block_2_pattern.update(p=output.detach())
    ),
    torch.no_grad(),
):
    model(test_to_john)
assert block_2_pattern["p"][:, :, 14, :14].sum(-1).mean() > 0.1
# sphinx_gallery_end_ignore

# %%
# At ``alpha`` 1 both hooks write the same words: the answer is the first
# generated token, and a full stop follows it. They do not make the same
# push, though: the hook on every position also edits positions 0 to 13,
# which block 2's attention reads from position 14. Where the push is on
# the edge, that changes answers: at ``alpha`` 0.5 the hook on every position
# flips a few more answers to Mary than the hook on the last position; at 7,
# the hook on the last position flips about half of them, the hook on every
# position all of them. On a longer text the two can drift further
# apart, because one pushes each position at one step only and the other at
# every step.
#
# Libraries such as Hugging Face ``transformers`` keep a *key-value cache*:
# after the first step they run only the new token, whose attention reads
# the keys and values stored for the earlier positions. A hook on a block
# then sees ``[1, 15, 64]`` at the first step and ``[1, 1, 64]`` at every
# later step. So, with a cache, a hook that edits position ``-1`` pushes
# position 14 at the first step and then each new token once, and the
# stored keys and values keep position 14 as it was pushed (this is how
# CAA steers: its vector is added at every position after the user's
# prompt). Because the
# attention is causal (no position reads a later one), that is what a hook
# that edits every position from 14 on does in this loop without a cache;
# here, the hook on ``-1`` edits position 14 at the first step only. And a
# hook that adds to every position steers, with a cache, the whole prompt
# at the first step and each new token after it. Check the shapes your hook
# sees before you trust "the last position": on a cached model, a hook that
# indexes ``[:, 14]`` fails at the second step, whose tensor has one
# position.
#
# What the direction means
# ------------------------
#
# The direction was built from prompts about Mary and John. Is it "the
# answer is the other name", or "say Mary"? Prompts with two other names
# tell.

# sphinx_gallery_start_ignore
# The paragraph on the key-value cache above: greedy generation with a cache, as Hugging
# Face's ``generate`` does (after the first step only the new token runs; its attention reads
# the stored keys and values), against this page's loop without a cache.


def cached_generate(tokens, steps, steer, shapes):
    cache, new, start, seen = [None] * len(model.blocks), tokens, 0, []
    with torch.no_grad():
        for _ in range(steps):
            length = new.shape[1]
            x = model.embed(new) + model.pos_embed(torch.arange(start, start + length))
            for i, b in enumerate(model.blocks):
                a = b.attn
                q, k, v = a.qkv(b.ln1(x)).view(len(x), length, 3, 4, 16).permute(2, 0, 3, 1, 4)
                if cache[i] is not None:
                    k, v = torch.cat([cache[i][0], k], 2), torch.cat([cache[i][1], v], 2)
                cache[i] = (k, v)
                future = (
                    torch.arange(k.shape[2])[None] > torch.arange(start, start + length)[:, None]
                )
                scores = (q @ k.transpose(-1, -2) / 4).masked_fill(future, float("-inf"))
                x = x + a.out((scores.softmax(-1) @ v).transpose(1, 2).reshape(len(x), length, 64))
                x = x + b.mlp(b.ln2(x))
                if i == 1:
                    shapes.append(list(x.shape))
                    x = steer(x)
            seen.append(model.unembed(model.ln_final(x))[:, -1])
            tokens = torch.cat([tokens, seen[-1].argmax(-1)[:, None]], dim=1)
            start, new = start + length, tokens[:, -1:]
    return tokens, seen


def uncached_generate(tokens, steps, first, vector):
    """The page's loop with a hook adding ``vector`` from position ``first`` on (None: -1)."""
    seen = []

    def hook(module, args, output):
        steered = output.clone()
        steered[:, output.shape[1] - 1 if first is None else first :] += vector
        return steered

    with block.register_forward_hook(hook), torch.no_grad():
        for _ in range(steps):
            seen.append(model(tokens)[:, -1])
            tokens = torch.cat([tokens, seen[-1].argmax(-1)[:, None]], dim=1)
    return tokens, seen


def push_last(x):
    x = x.clone()
    x[:, -1] += 0.6 * direction
    return x


few, kv_shapes = test_to_john[:8], []
plain, _ = cached_generate(few, 2, lambda x: x, [])
assert torch.equal(plain, lm.generate(model, few, 2, stop="<bos>"))  # the cached loop is right
# "A hook on a block then sees [1, 15, 64] at the first step and [1, 1, 64] at every later step"
cached_generate(few[:1], 3, lambda x: x, kv_shapes)
assert kv_shapes == [[1, 15, 64], [1, 1, 64], [1, 1, 64]], kv_shapes
# "with a cache, a hook that edits position -1 ... is what a hook that edits every position
# from 14 on does in this loop without a cache; here, the hook on -1 edits position 14 at the
# first step only"
cached_tokens, cached_logits = cached_generate(few, 3, push_last, [])
from_14, from_14_logits = uncached_generate(few, 3, 14, 0.6 * direction)
_, on_last_logits = uncached_generate(few, 3, None, 0.6 * direction)
assert torch.equal(cached_tokens, from_14)
for a, b in zip(cached_logits, from_14_logits, strict=True):
    torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)
torch.testing.assert_close(cached_logits[0], on_last_logits[0], atol=1e-4, rtol=1e-4)
assert (cached_logits[1] - on_last_logits[1]).abs().max() > 1e-2
# "a hook that indexes [:, 14] fails at the second step, whose tensor has one position"
try:
    torch.zeros(1, 1, 64)[:, 14]
except IndexError:
    pass
else:
    msg = "indexing position 14 of one position did not fail"
    raise AssertionError(msg)
# sphinx_gallery_end_ignore

alice_bob = name_prompts("Alice", "Bob", "Alice", lm.PLACES)
for alpha in [0.0, 1.0, 2.0]:
    said = answers(alice_bob, block, add_at_last_position(direction, alpha))
    print(
        f"Alice and Bob, alpha {alpha}: Bob {(said == lm.encode('Bob')[0, 0]).float().mean():.2f}, "
        f"Mary {(said == MARY).float().mean():.2f}"
    )
with torch.no_grad():
    lens = model.unembed(model.ln_final(direction))[NAME_IDS]
ranked = [lm.VOCAB[i] for i in NAME_IDS[lens.argsort(descending=True)]]
print(
    "the direction alone, read by ln_final and unembed:", " > ".join(ranked[:3]), "...", ranked[-1]
)
print("hooks left on the model:", count_hooks(model))

# sphinx_gallery_start_ignore
assert not count_hooks(model)
bob = lm.encode("Bob")[0, 0]
sam = lm.encode("Sam")[0, 0]
# "At alpha 1, the strength that flipped every held-out prompt, the model already says Mary
# in every sentence about Alice and Bob" (and Bob without the push)
assert (answers(alice_bob) == bob).all()
assert (answers(alice_bob, block, add_at_last_position(direction, 1.0)) == MARY).all()
# "the direction ranks Sam first among the sixteen names, Mary second and John last"
assert (ranked[0], ranked[1], ranked[-1]) == ("Sam", "Mary", "John"), ranked
# "The two sets differ only in the subject": each pair differs in one token, at S
assert ((to_mary != to_john).sum(1) == 1).all()
assert (to_mary != to_john)[:, lm.POSITIONS["S"]].all()
assert len(ranked) == 16
# "from alpha 7.5 the push outweighs the rest ... and the model says ... Sam"
for alpha in [7.5, 8.0, 10.0]:
    assert (answers(test_to_john, block, add_at_last_position(direction, alpha)) == sam).all()
# "what block 1 writes at the last position is a name's identity: the subject's, moved there
# by the head ..., so that the model does not say it": block 1's attention output on the
# two sets (subject John minus subject Mary), read by the unembedding, is lowest for John
written = {}
for label, prompts in [("subject John", to_mary), ("subject Mary", to_john)]:
    with (
        model.blocks[1].attn.register_forward_hook(
            lambda m, args, output, label=label: written.update({label: output[:, -1].mean(0)})
        ),
        torch.no_grad(),
    ):
        model(prompts)
with torch.no_grad():
    reading = model.unembed.weight @ (written["subject John"] - written["subject Mary"])
assert NAME_IDS[reading[NAME_IDS].argmin()] == JOHN
assert reading[MARY] > 0
# sphinx_gallery_end_ignore

# %%
# At ``alpha`` 1, the strength that flipped every held-out prompt, the model
# already says Mary in every sentence about Alice and Bob, where Mary does
# not appear: the direction carries "Mary rather than John", not "the other
# person". In this model, what block 1 writes at the last position is a
# name's identity: the subject's, moved there by the head that
# :doc:`plot_34_attention_and_ablation` found, so that the model does not
# say it. A difference of means between two subjects is therefore a
# direction for one name against the other.
#
# Read on its own by the logit lens, as block 0's direction was above, the
# direction ranks Sam first among the sixteen names, Mary second and John
# last. That is where it breaks: from ``alpha`` 7.5 the push
# outweighs the rest of the residual, and the model says the name the
# direction alone says, Sam. The two sets differ only in the subject, so the
# difference of means carries what changing the subject changes at the last
# position. That is more than the contrast we meant, "Mary rather than John":
# read alone, it also favours Sam, and what else it carries shows only when
# it is pushed hard.
#
# What a tiny model can and cannot tell
# -------------------------------------
#
# The recipe is the one used on large models: a difference of means over
# contrastive prompts (Rimsky et al. steer Llama 2 chat models towards or
# away from behaviours such as sycophancy), a strength swept over a range,
# and a control. What carries over: the hook code, the
# pitfalls of generation with and without a cache, the need for a sweep and
# for a random control of more than one draw. What does not: here one layer's direction flips a
# one-word answer perfectly because the task is tiny and its answer sits in
# one token; on large models the effect of a steering vector depends on the
# layer and the behaviour, is often partial, and can hurt other abilities,
# which is why those papers also measure what else the vector changes.
#
# Exercises
# ---------
#
# Exercises that ask for code come with a check that runs offline, in the
# downloaded notebook or script: write your answer, then run the
# ``ht.exercises.check(...)`` call that ends the exercise. The check says what
# is wrong, or what is right, in the language of the download, and leaves no
# hook behind; each solution ends with the same call. Exercises marked *in
# words* ask why: they have no check.
#
# 1. The design that looks natural is to contrast "the answer is the first
#    name" with "the answer is the second name" over random sentences from
#    ``lm.make_names``. Write ``difference_of_means(residuals, in_first)``,
#    the mean of the residuals where ``in_first`` is True minus the mean of
#    the others. Build that direction after block 1 from 500
#    sentences (set 1: the subject is the second name; set 2: the subject
#    is the first) and add it with ``alpha`` 1, 10 and 20 to the prompts of
#    ``lm.make_names(500, seed=1, split="test")`` whose subject is the first
#    name. What share flips to the first name?
#    Check: ``ht.exercises.check("36.1", difference_of_means)``.
# 2. Steer the other way: write ``steered_answers(model, block, prompts,
#    vector)``, which returns the model's next token for each prompt with
#    ``vector`` added to the output of ``block`` at the last position (a
#    forward hook that it removes again). Add ``-1`` times the direction to
#    the held-out prompts whose answer is Mary (subject John). What share
#    answers John? Check: ``ht.exercises.check("36.2", steered_answers)``.
# 3. Steer only the prompt: write ``prompt_only(vector)``, which returns a
#    hook that adds ``vector`` at position 14 only when it sees 15 positions,
#    that is at the first step (ActAdd, too, adds its vector to the prompt
#    only, to its first positions, and not to the generated tokens). Generate
#    with ``alpha`` 1 on the held-out prompts: what share of the answers is
#    Mary, and do the continuations still end with a full stop?
#    Check: ``ht.exercises.check("36.3", prompt_only)``.

# %%
# .. rst-class:: solution
#
# **Solution 1.** Almost none. The first-vs-second direction is much shorter
# than the one for Mary against John. With ``alpha`` 1 no answer flips; with
# 10 and 20 only a few of the answers are the first name, and at 20 most of
# them are another name while some stay with the second. Averaged over all
# the names, their identities cancel and little is left: this model does not
# write "the first name" as one direction at the last position. A difference
# of means finds a direction only where the model has one; the pair of names
# on the page is the contrast the model does write.

train = lm.make_names(500, seed=0)
residual = last_residuals(train.prompts)[1]


def difference_of_means(residuals, in_first):
    return residuals[in_first].mean(0) - residuals[~in_first].mean(0)


first_vs_second = difference_of_means(residual, ~train.subject_is_a)
test = lm.make_names(500, seed=1, split="test")
prompts = test.prompts[test.subject_is_a]
first_name = prompts[:, lm.POSITIONS["A"]]
second_name = prompts[:, lm.POSITIONS["B"]]
print(f"|first-vs-second direction| = {first_vs_second.norm():.2f}")
print(f"|Mary-vs-John direction| = {direction.norm():.2f}")
pushed = {}  # kept to check the answer: alpha -> (first, second, another, not a name)
for alpha in [1, 10, 20]:
    hook = add_at_last_position(first_vs_second, alpha)
    said = answers(prompts, model.blocks[1], hook)
    is_name = torch.isin(said, NAME_IDS)
    other = is_name & (said != first_name) & (said != second_name)
    pushed[alpha] = [
        share.float().mean().item()
        for share in (said == first_name, said == second_name, other, ~is_name)
    ]
    print(
        f"alpha {alpha}: first name {pushed[alpha][0]:.2f}, "
        f"second name {pushed[alpha][1]:.2f}, "
        f"another name {pushed[alpha][2]:.2f}, "
        f"not a name {pushed[alpha][3]:.2f}"
    )

# sphinx_gallery_start_ignore
# "much shorter" (0.83 against 7.06 so far); "With alpha 1 no answer flips; with 10 and 20
# only a few ... are the first name" (0.08 and 0.10); "at 20 most of them are another name
# while some stay with the second" (0.67 and 0.22)
assert first_vs_second.norm() < 0.2 * direction.norm(), first_vs_second.norm()
assert pushed[1][0] == 0, pushed
assert all(pushed[alpha][0] < 0.15 for alpha in (10, 20)), pushed
assert pushed[20][2] > 0.5, pushed
assert 0.05 < pushed[20][1] < 0.5, pushed
# sphinx_gallery_end_ignore

ht.exercises.check("36.1", difference_of_means)

# sphinx_gallery_start_ignore
from page_checks import assert_check  # docs/_ext: the build's checks

# the second set's mean minus the first's points the other way
assert_check(
    "36.1",
    difference_of_means,
    lambda residuals, in_first: residuals[~in_first].mean(0) - residuals[in_first].mean(0),
    "reversed",
)
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 2.** All of them: every answer is John. The direction works both
# ways: adding it pushes towards Mary, subtracting it towards John.

test_to_mary = name_prompts("Mary", "John", "John", test_places)  # answer: Mary


def steered_answers(model, block, prompts, vector):
    def hook(module, args, output):
        steered = output.clone()
        steered[:, -1] += vector
        return steered

    with block.register_forward_hook(hook), torch.no_grad():
        return model(prompts)[:, -1].argmax(-1)


said = steered_answers(model, block, test_to_mary, -1.0 * direction)
print(f"alpha -1 on answer-Mary prompts: John {(said == JOHN).float().mean():.2f}")

# sphinx_gallery_start_ignore
assert (said == JOHN).all()  # "every answer is John"
# the page's hook gives the same answers
assert torch.equal(said, answers(test_to_mary, block, add_at_last_position(direction, -1.0)))
# sphinx_gallery_end_ignore

ht.exercises.check("36.2", steered_answers)

# sphinx_gallery_start_ignore


# steered[:, -1] -= vector subtracts what the caller already negated: it pushes to Mary
def steered_answers_subtracting(model, block, prompts, vector):
    def hook(module, args, output):
        steered = output.clone()
        steered[:, -1] -= vector
        return steered

    with block.register_forward_hook(hook), torch.no_grad():
        return model(prompts)[:, -1].argmax(-1)


assert_check("36.2", steered_answers, steered_answers_subtracting, "opposite")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 3.** Mary in every answer, and every continuation ends with a
# full stop. The answer is written at the first step, where this hook pushes
# the prompt's last position as the page's hook does; at the second step the
# prompt is computed again without the push, and the model writes the full
# stop after the name it has already written.


def prompt_only(vector):
    """A hook that pushes position 14 at the first step only, when it sees 15 positions."""

    def hook(module, args, output):
        if output.shape[1] != 15:
            return None
        steered = output.clone()
        steered[:, 14] += vector
        return steered

    return hook


with block.register_forward_hook(prompt_only(direction)):
    out = lm.generate(model, test_to_john, max_new_tokens=4)
print(f"prompt only: Mary {(out[:, 15] == MARY).float().mean():.2f}")
full_stop = lm.encode(".")[0, 0]
print("every continuation ends with a full stop:", bool((out[:, -1] == full_stop).all()))

# sphinx_gallery_start_ignore
assert (out[:, 15] == MARY).all()  # "Mary in every answer"
assert (out[:, -1] == full_stop).all()  # "every continuation ends with a full stop"
# sphinx_gallery_end_ignore

ht.exercises.check("36.3", prompt_only)

# sphinx_gallery_start_ignore


# pushing the last position at every step steers the generated tokens too
def every_step(vector):
    def hook(module, args, output):
        steered = output.clone()
        steered[:, -1] += vector
        return steered

    return hook


assert_check("36.3", prompt_only, every_step, "every_step")
from page_checks import assert_exercises_checked, assert_no_hooks_left  # docs/_ext

assert_exercises_checked()
assert_no_hooks_left(globals())
# sphinx_gallery_end_ignore
