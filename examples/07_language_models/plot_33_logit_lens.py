# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
The residual stream and the logit lens
======================================

.. index::
   ! residual stream
   ! 残差流
   ! logit lens
   ! logit 透镜
   ! language model
   ! 语言模型

A language model reads a sentence and, at every position, predicts the next
word. Inside a transformer like GPT-2, every block adds what it computed to
one vector per position, the residual stream, and only its value after the
last block is turned into a prediction. Forward hooks can read that stream after every
block; the logit lens reads each of those vectors with the model's own final
layers, as if the model stopped there. This page opens a small language
model that completes "When Kate and Tom went to the garden , Kate gave a key
to" with "Tom", and asks at which block the answer appears.

.. rubric:: What you will learn
   :heading-level: 2

- the model and the task of this chapter, and how well the model solves it;
- what the residual stream is, checked with hooks: each block adds its
  attention and MLP outputs to it;
- how forward hooks on every block and a forward pre-hook on the first one
  record the residual stream at every layer;
- how the logit lens turns each layer's residual into a prediction, and at
  which block this model finds the answer;
- what the logit lens cannot tell, and what the tuned lens changes.

**Prerequisites**: :doc:`/auto_examples/02_module_hooks/plot_05_forward_hooks`,
:doc:`/auto_examples/02_module_hooks/plot_06_forward_pre_hooks` and
:doc:`/auto_examples/02_module_hooks/plot_08_handles_and_leaks`.
"""

# %%
# The model and the task
# ----------------------
#
# The task comes from the indirect-object identification study of Wang et al.
# (2022) on GPT-2: two names are introduced, one of them (the subject) gives
# something, and the next word is the *other* name, the indirect object.
# Nothing in the last word says which name it is, so the model has to move
# information from earlier positions to the last one. Every sentence has the
# same 17 tokens, so a position means the same word in every sentence: the
# prompt is the first 15 tokens, and the answer is the next one.
#
# The model, :class:`hooks_tutorial.lm.TinyLM`, is a decoder-only transformer
# in the style of GPT-2, small enough for a CPU. Its weights ship with the
# library: nothing is downloaded. Each part a hook needs is a module with a
# name: the printout below lists them.

import matplotlib.pyplot as plt
import torch

import hooks_tutorial as ht
from hooks_tutorial import lm

model = lm.pretrained_lm()
print(model)
print(f"parameters: {sum(p.numel() for p in model.parameters()):,}")

test = lm.make_names(500, seed=1, split="test")
print("a test sentence:", test.text(0))
print("its prompt:     ", lm.decode(test.prompts[0]))
print("its answer:     ", lm.VOCAB[test.answers[0]])

# sphinx_gallery_start_ignore
# the chapter's index: "3 blocks of 4 attention heads, 157,504 parameters"
assert len(model.blocks) == 3
assert all(block.attn.n_heads == 4 for block in model.blocks)
assert sum(p.numel() for p in model.parameters()) == 157_504
# "completes 'When Kate and Tom went to the garden , Kate gave a key to' with 'Tom'"
sentence = "<bos> When Kate and Tom went to the garden , Kate gave a key to Tom ."
assert test.text(0) == sentence, test.text(0)
assert lm.VOCAB[test.answers[0]] == "Tom"
# sphinx_gallery_end_ignore

# %%
# The model predicts a next token at every position; the one after the last
# prompt token is the answer. Besides the accuracy, we measure the **logit
# difference**: the answer's logit minus the subject's logit (the other name
# of the sentence, the wrong answer). It is positive when the model prefers
# the right name, and a difference of :math:`d` makes the answer
# :math:`e^d` times more probable than the subject.

with torch.no_grad():
    logits = model(test.prompts)  # [sentences, positions, vocabulary]
print("logits:", list(logits.shape))

rows = torch.arange(len(test))


def accuracy_and_logit_diff(last_logits):
    """Accuracy and mean logit difference (answer - subject) of [n, vocab] logits."""
    accuracy = (last_logits.argmax(-1) == test.answers).float().mean().item()
    logit_diff = (last_logits[rows, test.answers] - last_logits[rows, test.subjects]).mean()
    return accuracy, logit_diff.item()


accuracy, logit_diff = accuracy_and_logit_diff(logits[:, -1])
print(f"accuracy on {len(test)} test sentences: {accuracy:.3f}")
print(f"mean logit difference (answer - subject): {logit_diff:.2f}")

# sphinx_gallery_start_ignore
# the model solves the task: every test sentence right, a logit difference above 5
assert accuracy == 1.0, accuracy
assert logit_diff > 5, logit_diff
# "a difference of d makes the answer e^d times more probable than the subject"
last_probabilities = logits[:, -1].softmax(-1)
ratio = last_probabilities[rows, test.answers] / last_probabilities[rows, test.subjects]
differences = logits[rows, -1, test.answers] - logits[rows, -1, test.subjects]
torch.testing.assert_close(ratio, differences.exp(), rtol=1e-4, atol=0)
# sphinx_gallery_end_ignore

# %%
# :func:`hooks_tutorial.lm.generate` writes the rest of the sentence, one
# token at a time, always taking the most likely one.

generated = lm.generate(model, test.prompts[:1], max_new_tokens=4)
print(lm.decode(generated[0]))

# sphinx_gallery_start_ignore
assert lm.decode(generated[0]) == sentence  # the generated sentence is the right one
# sphinx_gallery_end_ignore

# %%
# The residual stream
# -------------------
#
# Each block reads the stream through a LayerNorm, computes something and
# adds it back: ``x = x + attn(ln1(x))``, then ``x = x + mlp(ln2(x))``. The
# stream is a running sum: after block ``i`` it holds the token and position
# embeddings plus everything that the attention layers and MLPs of blocks
# ``0`` to ``i`` added. Elhage et al. (2021) call it the **residual stream**:
# every layer reads from it and writes to it, and it is the only path from
# one block to the next.
#
# Four hooks on block 1 check this: a forward pre-hook records the block's
# input, forward hooks record what its attention layer and its MLP return,
# and the block's output.

seen = {}


def save_input(module, args):
    seen["block input"] = args[0].detach()


def save_output(name):
    def hook(module, args, output):
        seen[name] = output.detach()

    return hook


block = model.blocks[1]
handles = [
    block.register_forward_pre_hook(save_input),
    block.attn.register_forward_hook(save_output("attn output")),
    block.mlp.register_forward_hook(save_output("mlp output")),
    block.register_forward_hook(save_output("block output")),
]
try:
    with torch.no_grad():
        model(test.prompts)
finally:
    for handle in handles:
        handle.remove()

for name, tensor in seen.items():
    print(f"{name:13} {list(tensor.shape)}")
rebuilt = seen["block input"] + seen["attn output"] + seen["mlp output"]
print(
    "block output == input + attn output + mlp output:", torch.equal(rebuilt, seen["block output"])
)
reordered = seen["mlp output"] + seen["attn output"] + seen["block input"]
largest = (reordered - seen["block output"]).abs().max().item()
print(f"added in another order, largest difference: {largest:.1e}")
print("hooks left on the model:", ht.count_hooks(model).total)

# sphinx_gallery_start_ignore
assert all(list(tensor.shape) == [500, 15, 64] for tensor in seen.values())
# "The sum is exact"; "in another order ... it differs in the last digits": nonzero, and
# far below the stream's size (9.5e-07 in the builds so far; other CPUs print other digits)
assert torch.equal(rebuilt, seen["block output"])
assert 0 < largest < 1e-4, largest
assert ht.count_hooks(model).total == 0
# sphinx_gallery_end_ignore

# %%
# The sum is exact (``torch.equal``) because it adds the same tensors in the
# same order as the block does. Added in another order, floating-point
# rounding makes it differ in the last digits, so compare with
# ``torch.allclose`` in general.
#
# Record the residual stream at every layer
# -----------------------------------------
#
# A forward hook on every block records the stream after it. The stream
# before the first block, the embeddings (token plus position), is computed
# inside ``TinyLM.forward`` by an addition, not by a module, so no forward
# hook returns it; it is the input of ``blocks[0]``, which a forward pre-hook
# sees. The hooks are removed in ``finally``, even if the forward pass fails.


def record_residuals(model, tokens):
    """The logits and the residual stream before block 0 and after every block."""
    residuals = {}

    def save_embeddings(module, args):
        residuals["embeddings"] = args[0].detach()

    def save_after(name):
        def hook(module, args, output):
            residuals[name] = output.detach()

        return hook

    handles = [model.blocks[0].register_forward_pre_hook(save_embeddings)]
    for i, block in enumerate(model.blocks):
        handles.append(block.register_forward_hook(save_after(f"block {i}")))
    try:
        with torch.no_grad():
            logits = model(tokens)
    finally:
        for handle in handles:
            handle.remove()
    return logits, residuals


logits, residuals = record_residuals(model, test.prompts)
for name, residual in residuals.items():
    print(f"{name:10} {list(residual.shape)}")
print("hooks left on the model:", ht.count_hooks(model).total)

# sphinx_gallery_start_ignore
assert list(residuals) == ["embeddings", "block 0", "block 1", "block 2"]
assert all(list(residual.shape) == [500, 15, 64] for residual in residuals.values())
assert ht.count_hooks(model).total == 0
# "the embeddings (token plus position) ... the input of blocks[0]"
with torch.no_grad():
    embeddings = model.embed(test.prompts) + model.pos_embed(torch.arange(15))
assert torch.equal(residuals["embeddings"], embeddings)
# sphinx_gallery_end_ignore

# %%
# The library's :func:`hooks_tutorial.capture_activations` registers the same
# hooks (``inputs=True`` adds the forward pre-hooks) and removes them when
# the ``with`` block ends; it records the same tensors.

blocks = ["blocks.0", "blocks.1", "blocks.2"]
with ht.capture_activations(model, blocks, inputs=True) as acts, torch.no_grad():
    model(test.prompts)
print("same embeddings:", torch.equal(acts.inputs["blocks.0"][0], residuals["embeddings"]))
print(
    "same residuals after every block:",
    all(torch.equal(acts[f"blocks.{i}"], residuals[f"block {i}"]) for i in range(3)),
)

# sphinx_gallery_start_ignore
# "it records the same tensors"
assert torch.equal(acts.inputs["blocks.0"][0], residuals["embeddings"])
assert all(torch.equal(acts[f"blocks.{i}"], residuals[f"block {i}"]) for i in range(3))
# sphinx_gallery_end_ignore

# %%
# The logit lens
# --------------
#
# The model turns its last residual into logits with two modules:
# ``unembed(ln_final(x))``. Nothing stops us from applying them to an earlier
# residual and asking: what would the model predict if it stopped here? This
# is the **logit lens** (nostalgebraist, 2020, on GPT-2). Applied to the
# residual after the last block, it gives the model's own logits.


def logit_lens(residual):
    """Read a residual with the model's final LayerNorm and unembedding."""
    return model.unembed(model.ln_final(residual))


with torch.no_grad():
    lens = {name: logit_lens(residual) for name, residual in residuals.items()}
print("lens after the last block == the model's logits:", torch.equal(lens["block 2"], logits))

# sphinx_gallery_start_ignore
assert torch.equal(lens["block 2"], logits)  # "it gives the model's own logits"
# sphinx_gallery_end_ignore

# %%
# At the last position, the lens of each layer gives an accuracy, a mean
# logit difference and the probabilities of the two names. The last column
# counts the sentences whose top token is one of the sentence's two names.

print(
    f"{'layer':10} {'accuracy':>8} {'logit diff':>10} {'p(answer)':>9} {'p(subject)':>10} {'top = A or B':>12}"
)
answer_probability, subject_probability = {}, {}
for name, layer_logits in lens.items():
    last = layer_logits[:, -1]
    probabilities = last.softmax(-1)
    accuracy, logit_diff = accuracy_and_logit_diff(last)
    top = last.argmax(-1)
    top_is_a_name = ((top == test.answers) | (top == test.subjects)).float().mean().item()
    answer_probability[name] = probabilities[rows, test.answers]
    subject_probability[name] = probabilities[rows, test.subjects]
    p_answer = answer_probability[name].mean().item()
    p_subject = subject_probability[name].mean().item()
    print(
        f"{name:10} {accuracy:8.3f} {logit_diff:10.2f} {p_answer:9.3f} {p_subject:10.3f} "
        f"{top_is_a_name:12.3f}"
    )

top_tokens, counts = lens["embeddings"][:, -1].argmax(-1).unique(return_counts=True)
print(
    "top tokens of the embeddings at the last position:",
    {lm.VOCAB[t]: c for t, c in zip(top_tokens.tolist(), counts.tolist(), strict=True)},
)

# sphinx_gallery_start_ignore
# "Reading the lens" below: the rows of this table, one (accuracy, logit difference,
# p(answer), p(subject), top = A or B) per layer
table = {}
for name, layer_logits in lens.items():
    last = layer_logits[:, -1]
    top = last.argmax(-1)
    table[name] = (
        *accuracy_and_logit_diff(last),
        answer_probability[name].mean().item(),
        subject_probability[name].mean().item(),
        ((top == test.answers) | (top == test.subjects)).float().mean().item(),
    )
# "Embeddings ... the same one for all 500 sentences ... near chance (one name in 16)": the
# accuracy is the share of answers that are that one name, a draw of 500 sentences with
# p = 1/16 (spread 0.011); 0.045 is 4 spreads, for another draw of the test sentences
assert counts.tolist() == [500], counts
assert abs(table["embeddings"][0] - 1 / 16) < 0.045, table["embeddings"]
# "After block 0. ... one of the sentence's two names in most sentences, but it is the
# answer in less than half of them: about as often as the subject. The two probabilities
# are nearly equal and the mean logit difference is close to zero." Float sums move only
# the last digits; the bounds are wide enough for another draw of the 500 test sentences
# (a torch version may draw others): over 100 other draws these statistics spread by
# 0.014 (top = A or B, mean 0.82), 0.021 (accuracy, mean 0.40), 0.020 (p(answer) -
# p(subject), mean -0.008) and 0.14 (logit difference, mean -0.05), and each bound is 4
# spreads from the mean or more; "nearly equal" and "close to zero" are next to block 1's
# 0.93 and above 4. "About as often as the subject": among the sentences whose top token
# is one of the two names (about 410), the answer's share is within 0.1 of one half, about 4
# spreads of as many coin tosses (0.49 in the builds so far).
accuracy_0, logit_diff_0, p_answer_0, p_subject_0, either_0 = table["block 0"]
assert either_0 > 0.75, table["block 0"]
assert accuracy_0 < 0.5, table["block 0"]
assert abs(accuracy_0 / either_0 - 0.5) < 0.1, table["block 0"]
assert abs(p_answer_0 - p_subject_0) < 0.08, table["block 0"]
assert abs(logit_diff_0) < 0.6, table["block 0"]
# "After block 1. The answer wins in every sentence with a mean logit difference above 4
# ... Block 2 adds confidence (a larger logit difference and probability), not accuracy."
# (5.18 and 6.82 in the builds so far; over 100 other draws of the test sentences the
# logit difference after block 1 has mean 5.25 and spread 0.06, so "above 4" holds by
# 20 spreads, where "above 5" held by 3 to 4)
assert table["block 1"][0] == table["block 2"][0] == 1.0, table
assert 4 < table["block 1"][1] < table["block 2"][1], table
assert table["block 1"][2] < table["block 2"][2], table
# sphinx_gallery_end_ignore

# %%
# Over the test sentences, the probability of the answer per layer: a thin
# line per sentence (the first 100), the mean in bold, and the mean
# probability of the subject, the wrong name.

layer_names = list(lens)
fig, ax = plt.subplots(figsize=(5.2, 3.6), layout="constrained")
steps = range(len(layer_names))
answers = torch.stack([answer_probability[name] for name in layer_names])  # [layers, n]
subjects = torch.stack([subject_probability[name] for name in layer_names])
ax.plot(steps, answers[:, :100], color="tab:blue", alpha=0.15, linewidth=0.8)
ax.plot(steps, answers.mean(1), color="tab:blue", linewidth=2.5, marker="o", label="answer (mean)")
ax.plot(
    steps,
    subjects.mean(1),
    color="tab:red",
    linewidth=2,
    linestyle="--",
    marker="s",
    label="subject (mean)",
)
ax.set_xticks(steps, layer_names, rotation=20)
ax.set_ylim(0, 1)
ax.set_ylabel("probability at the last position")
ax.set_title(f"Logit lens on {len(test)} test sentences")
ax.legend(loc="center right")
plt.show()

rises = (answer_probability["block 1"] > answer_probability["block 0"]).sum().item()
print(f"answer probability higher after block 1 than after block 0: {rises} of {len(test)}")

# sphinx_gallery_start_ignore
assert rises == len(test)  # "rises between block 0 and block 1 in every sentence"
# sphinx_gallery_end_ignore

# %%
# The lens at every position
# --------------------------
#
# The lens reads every position, not only the last: at position ``t`` it
# predicts token ``t + 1``. Over all test sentences, the positions fall into
# three kinds: those where the next word is fixed by the template ("When",
# "and", "went", "to", "the", ",", "gave", "a", "to"), those where it is
# drawn at random (the two names, the place, the object), and the comma,
# after which comes the subject, one of the two names already seen.

next_tokens = test.tokens[:, 1:16]  # what each prompt position should predict
template = [0, 2, 4, 5, 6, 8, 10, 11, 13]
random_words = [1, 3, 7, 12]
comma = 9
chance = sum([1 / 16, 1 / 15, 1 / 8, 1 / 8]) / 4  # 16 names (B is not A), 8 places, 8 objects
print(f"chance accuracy on the random words: {chance:.3f}")
print(
    f"{'layer':10} {'template: accuracy':>18} {'p(right)':>8} {'random: accuracy':>16} {'after comma: accuracy':>21} {'top = A or B':>12}"
)
for name in layer_names:
    predicted = lens[name].argmax(-1)
    right = predicted == next_tokens
    p_right = lens[name].softmax(-1).gather(-1, next_tokens[..., None])[..., 0]
    after_comma = predicted[:, comma]
    comma_is_a_name = ((after_comma == test.answers) | (after_comma == test.subjects)).float()
    print(
        f"{name:10} {right[:, template].float().mean():18.3f} {p_right[:, template].mean():8.3f} "
        f"{right[:, random_words].float().mean():16.3f} {right[:, comma].float().mean():21.3f} "
        f"{comma_is_a_name.mean():12.3f}"
    )

# sphinx_gallery_start_ignore
assert f"{chance:.3f}" == "0.095"  # "(chance 0.095)": 16, 15, 8 and 8 choices
for name in layer_names:
    predicted = lens[name].argmax(-1)
    right = (predicted == next_tokens).float()
    p_right = lens[name].softmax(-1).gather(-1, next_tokens[..., None])[..., 0]
    after_comma = predicted[:, comma]
    comma_is_a_name = ((after_comma == test.answers) | (after_comma == test.subjects)).float()
    # "The words drawn at random are no better than chance at any layer" (0.03: 2000
    # draws of a fraction near 0.095 spread by about 0.007, and 0.03 is 4 of those; 0.01
    # failed on some other draws of the test sentences)
    assert right[:, random_words].mean() <= chance + 0.03, (name, right[:, random_words].mean())
    if name == "embeddings":
        continue
    # "the words of the template are read from block 0 on (accuracy above 0.95 ...)"
    assert right[:, template].mean() > 0.95, (name, right[:, template].mean())
    # "After the comma, from block 0 on, the top token is one of the two names in almost
    # every sentence" (0.956 after block 0 in the builds so far, 0.938 to 0.956 on other
    # draws of the test sentences, where 0.95 failed; 0.9 is about 5 spreads of 500
    # sentences away), "and the right one about half of the time": the subject is either
    # name by a fair coin, drawn apart from the names, so the right share is a draw of 500
    # coin tosses around half the "top = A or B" share (0.48 to 0.5), spread 0.022; 0.38
    # and 0.62 are 4 spreads away or more (0.45 and 0.55 failed on some other draws)
    assert comma_is_a_name.mean() > 0.9, (name, comma_is_a_name.mean())
    assert 0.38 < right[:, comma].mean() < 0.62, (name, right[:, comma].mean())
    if name != "block 0":
        # "... with a probability above 0.99 for the right word after block 1)"
        assert right[:, template].mean() == 1.0, name
        assert p_right[:, template].mean() > 0.99, (name, p_right[:, template].mean())
# sphinx_gallery_end_ignore

# %%
# For the first test sentence, the figure shows the top token of each layer
# at each position of the prompt, coloured by its probability (the words
# beside the rows are what the model reads; the words in the cells are what
# the lens predicts next). The same tokens, as text:

words = lm.decode(test.prompts[0]).split()
with torch.no_grad():
    sentence_probabilities = torch.stack([lens[name][0].softmax(-1) for name in layer_names])
top_probability, top_token = sentence_probabilities.max(-1)  # [layers, positions]

for name, tokens in zip(layer_names, top_token, strict=True):
    print(f"{name:10}", " ".join(f"{lm.VOCAB[t]:>7}" for t in tokens))

# sphinx_gallery_start_ignore
# "the lens after block 0 even predicts Kate, the subject, at the last position; after
# block 1 it predicts Tom"
assert [lm.VOCAB[t] for t in top_token[1:, -1]] == ["Kate", "Tom", "Tom"], top_token[:, -1]
# sphinx_gallery_end_ignore

fig, ax = plt.subplots(figsize=(5.2, 6.4), layout="constrained")
image = ax.imshow(top_probability.T, cmap="viridis", vmin=0, vmax=1, aspect="auto")
for layer in range(len(layer_names)):
    for position in range(len(words)):
        probability = top_probability[layer, position].item()
        ax.text(
            layer,
            position,
            lm.VOCAB[top_token[layer, position]],
            ha="center",
            va="center",
            color="black" if probability > 0.6 else "white",
        )
ax.set_yticks(range(len(words)), words)
ax.set_xticks(range(len(layer_names)), layer_names, rotation=20)
ax.set_ylabel("input token (the lens predicts\nthe token after it)")
ax.set_title("Logit lens: top next token\nper position and layer")
fig.colorbar(image, ax=ax, label="probability of the top token")
plt.show()

# %%
# Reading the lens
# ----------------
#
# - **Embeddings.** At the last position the stream holds only the word
#   "to" and its position. The lens already predicts a name, the same one
#   for all 500 sentences: the embeddings say that a name comes next, not
#   which one. The accuracy is near chance (one name in 16).
# - **After block 0.** The top token is one of the sentence's two names in
#   most sentences, but it is the answer in less than half of them: about as
#   often as the subject. The two probabilities are nearly equal and the
#   mean logit difference is close to zero. The two names can be read at the
#   last position, but nothing has chosen between them yet.
# - **After block 1.** The answer wins in every sentence (accuracy 1) with a
#   mean logit difference above 4: block 1 chooses. Block 2 adds confidence
#   (a larger logit difference), not accuracy.
#
# The figures show the same. The answer's probability rises between block
# 0 and block 1 in every sentence. In the first sentence, the lens after
# block 0 even predicts Kate, the subject, at the last position; after block
# 1 it predicts Tom.
#
# At the other positions, the words of the template are read from block 0
# on (accuracy above 0.95, and after block 1 every one, with a probability
# above 0.99). The words
# drawn at random are no better than chance at any layer (chance 0.095).
# After the comma, from block 0 on, the top token is one of the two names
# in almost every sentence, and the right one about half of the time: the
# subject is not known before the model reads it.
#
# What the logit lens can and cannot tell
# ---------------------------------------
#
# - **The lens uses a readout made for the last layer.** ``ln_final`` and
#   ``unembed`` were trained only on the residual after the last block. An
#   earlier residual may hold the answer in a form they cannot read, and
#   the lens then says "not yet" when the information is there. In this
#   three-block model the readout already works after block 0 (the template
#   words); in larger models the logit lens often gives poor predictions for
#   the early layers (Belrose et al., 2023).
# - **The tuned lens** (Belrose et al., 2023) trains, for each layer, an
#   affine map (a *translator*) applied before the same readout, so that the
#   lens's prediction matches the model's final prediction. It reads earlier
#   layers better, but it is trained, so part of what it shows is what it
#   learned to show. Exercise 3 builds a cheap one, fitted by least squares
#   to the last residual instead.
# - **Reading is not using.** The lens shows what can be read from a layer,
#   not what the next blocks use, nor where the information came from. To
#   find out which parts of the model make the answer, change them and
#   watch the output: ablation and activation patching, the next pages.
# - **A tiny model is not a large one.** The same hooks and lens work on
#   GPT-2, where the logit lens was first used. But this model learned one
#   task, on sentences where each position always holds the same kind of
#   word; a large model learned many, and its residual stream carries them
#   all at once, so what its lens shows is harder to read.
#
# Summary
# -------
#
# - The residual stream is a running sum: every block adds its attention
#   and MLP outputs to it, and a hook on a block's output sees the sum so far.
# - Forward hooks on every block, plus a forward pre-hook on the first one
#   for the embeddings, record the stream at every layer; remove them in
#   ``finally`` (or let :func:`hooks_tutorial.capture_activations` do it).
# - The logit lens applies the final LayerNorm and the unembedding to each
#   layer's residual. In this model the lens reads the two names at the last
#   position after block 0, and the answer after block 1.
# - The lens is a reading, with a readout made for the last layer; what the
#   layers *do* is measured by changing them.
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
# 1. Write ``middle_stream(model, tokens)``, which returns the residual stream
#    inside block 1, after its attention and before its MLP: it is the input
#    of ``model.blocks[1].ln2`` (a forward pre-hook). What accuracy and mean
#    logit difference does the lens give there, at the last position? Which
#    part of block 1 chooses the answer?
#    Check: ``ht.exercises.check("33.1", middle_stream)``.
# 2. Write ``generation_shapes(model, tokens)``, which registers a forward hook
#    on ``model.blocks[2]`` that records the shape of its output, generates
#    the rest of ``tokens`` with ``lm.generate`` and returns the shapes. For
#    the first test sentence, how many times does the hook run, with which
#    shapes, and why? Check: ``ht.exercises.check("33.2", generation_shapes)``.
# 3. Build a cheap tuned lens for block 0: write ``fit_affine(x, y)``, which
#    fits with least squares an affine map from the rows of ``x`` to those of
#    ``y`` and returns a function that applies it to new rows. On 2000
#    training sentences, fit it from the residual after block 0 to the
#    residual after block 2 (both at the last position), then apply it to the
#    test sentences before the lens. What accuracy and mean logit difference
#    does it reach, against the plain lens of block 0?
#    Check: ``ht.exercises.check("33.3", fit_affine)``.

# %%
# .. rst-class:: solution
#
# **Solution 1.** After block 1's attention the lens already picks the answer
# in almost every sentence, with a mean logit difference between the one
# before block 1 (close to zero) and the one after it: block 1's attention
# chooses the answer, and its MLP finishes the job. The next page finds which
# attention head does it.


def middle_stream(model, tokens):
    middle = {}  # the input of ln2 is the stream between attention and MLP
    handle = model.blocks[1].ln2.register_forward_pre_hook(
        lambda module, args: middle.update(stream=args[0].detach())
    )
    try:
        with torch.no_grad():
            model(tokens)
    finally:
        handle.remove()
    return middle["stream"]


with torch.no_grad():
    stream = middle_stream(model, test.prompts)
    accuracy, logit_diff = accuracy_and_logit_diff(logit_lens(stream)[:, -1])
print(f"after block 1's attention: accuracy {accuracy:.3f}, logit diff {logit_diff:.2f}")
for name in ["block 0", "block 1"]:
    around = accuracy_and_logit_diff(lens[name][:, -1])
    print(f"after {name}: accuracy {around[0]:.3f}, logit diff {around[1]:.2f}")

# sphinx_gallery_start_ignore
# "in almost every sentence": above 0.9 (0.964 in the builds so far); "between the one
# before block 1 and the one after it" (3.16 between 0.04 and 5.18 so far)
assert 0.9 < accuracy <= table["block 1"][0], accuracy
assert table["block 0"][1] < logit_diff < table["block 1"][1], logit_diff
# sphinx_gallery_end_ignore

ht.exercises.check("33.1", middle_stream)

# sphinx_gallery_start_ignore
from page_checks import assert_check  # docs/_ext: the build's checks


# a forward hook on ln2 keeps its output: the stream after the LayerNorm normalised it
def middle_stream_normalised(model, tokens):
    middle = {}
    with model.blocks[1].ln2.register_forward_hook(
        lambda module, args, output: middle.update(stream=output.detach())
    ):
        model(tokens)
    return middle["stream"]


assert_check("33.1", middle_stream, middle_stream_normalised, "normalised")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 2.** Twice, with shapes ``[1, 15, 64]`` and then ``[1, 16, 64]``:
# the first call reads the prompt and adds "Tom", the second reads the prompt
# and "Tom" and adds ".", where generation stops. Without a key-value cache
# each step runs the model on the whole sequence again, so a hook sees every
# position at every step.


def generation_shapes(model, tokens):
    shapes = []  # no key-value cache: every step re-runs the whole sequence
    handle = model.blocks[2].register_forward_hook(
        lambda module, args, output: shapes.append(list(output.shape))
    )
    try:
        lm.generate(model, tokens, max_new_tokens=4)
    finally:
        handle.remove()
    return shapes


shapes = generation_shapes(model, test.prompts[:1])
generated = lm.generate(model, test.prompts[:1], max_new_tokens=4)
print(lm.decode(generated[0]))
print("calls:", len(shapes), "shapes:", shapes)

# sphinx_gallery_start_ignore
assert shapes == [[1, 15, 64], [1, 16, 64]], shapes
assert lm.decode(generated[0]).endswith("gave a key to Tom .")
# sphinx_gallery_end_ignore

ht.exercises.check("33.2", generation_shapes)

# sphinx_gallery_start_ignore


# running the model once, instead of generating, makes one call
def generation_shapes_one_run(model, tokens):
    shapes = []
    with model.blocks[2].register_forward_hook(
        lambda module, args, output: shapes.append(list(output.shape))
    ):
        model(tokens)
    return shapes


assert_check("33.2", generation_shapes, generation_shapes_one_run, "one_call")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 3.** The cheap tuned lens picks the answer more often than the
# plain lens of block 0, but it is still close to a coin toss between the two
# names, with a mean logit difference far below block 1's. A trained lens reads what a layer holds better, but not more than it
# holds: after block 0 the last position holds at most a trace of which name
# was repeated, which reaches it only in the next block (page 35).


def fit_affine(x, y):
    """Least squares for ``y ~ x @ W + b``: a column of ones carries the bias ``b``."""
    weights = torch.linalg.lstsq(torch.cat([x, torch.ones(len(x), 1)], dim=1), y).solution
    return lambda new: torch.cat([new, torch.ones(len(new), 1)], dim=1) @ weights


train = lm.make_names(2000, seed=2)  # an affine translator, fitted by least squares
_, train_residuals = record_residuals(model, train.prompts)
translate = fit_affine(train_residuals["block 0"][:, -1], train_residuals["block 2"][:, -1])
with torch.no_grad():
    tuned = accuracy_and_logit_diff(logit_lens(translate(residuals["block 0"][:, -1])))
    plain = accuracy_and_logit_diff(lens["block 0"][:, -1])
    after_1 = accuracy_and_logit_diff(lens["block 1"][:, -1])
print("block 0, plain lens: accuracy {:.3f}, logit diff {:.2f}".format(*plain))
print("block 0, tuned lens: accuracy {:.3f}, logit diff {:.2f}".format(*tuned))
print("block 1, plain lens: accuracy {:.3f}, logit diff {:.2f}".format(*after_1))

# sphinx_gallery_start_ignore
# "picks the answer more often than the plain lens ..., but still close to a coin toss
# ..., with a mean logit difference far below block 1's": accuracy above the plain
# lens's and below 0.7, a logit difference below 1 (0.544 and 0.20 in the builds so far,
# against 0.402 and 0.04). Over 100 other draws of the training and test sentences: the
# accuracy 0.557 (spread 0.023), 0.15 above the plain lens (spread 0.026); the logit
# difference 0.29 (spread 0.11), 0.33 above the plain lens's but with a spread of 0.13, so
# "better on both counts" and the former bounds 0.6 and 0.5 failed on some draws.
assert plain[0] < tuned[0] < 0.7, (plain, tuned)
assert tuned[1] < 1 < after_1[1], (tuned, after_1)
# "which reaches it in block 1 (page 35)": page 35 checks that the clean and corrupted
# residuals at the last position differ far less after block 0 than after block 1
# sphinx_gallery_end_ignore

ht.exercises.check("33.3", fit_affine)

# sphinx_gallery_start_ignore


# a linear map without a bias misses the offset of the residual after block 2
def fit_linear(x, y):
    weights = torch.linalg.lstsq(x, y).solution
    return lambda new: new @ weights


assert_check("33.3", fit_affine, fit_linear, "no_bias")
from page_checks import assert_exercises_checked, assert_no_hooks_left  # docs/_ext

assert_exercises_checked()
assert_no_hooks_left(globals())
# sphinx_gallery_end_ignore
