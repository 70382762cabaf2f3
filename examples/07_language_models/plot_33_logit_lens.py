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

# %%
# :func:`hooks_tutorial.lm.generate` writes the rest of the sentence, one
# token at a time, always taking the most likely one.

generated = lm.generate(model, test.prompts[:1], max_new_tokens=4)
print(lm.decode(generated[0]))

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

# %%
# Over the test sentences, the probability of the answer per layer: a thin
# line per sentence (the first 100), the mean in bold, and the mean
# probability of the subject, the wrong name.

layer_names = list(lens)
fig, ax = plt.subplots(figsize=(6, 3.6))
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
ax.set_xticks(steps, layer_names)
ax.set_ylim(0, 1)
ax.set_ylabel("probability at the last position")
ax.set_title(f"Logit lens on {len(test)} test sentences")
ax.legend(loc="center right")
fig.tight_layout()
plt.show()

rises = (answer_probability["block 1"] > answer_probability["block 0"]).sum().item()
print(f"answer probability higher after block 1 than after block 0: {rises} of {len(test)}")

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

# %%
# For the first test sentence, the figure shows the top token of each layer
# at each position of the prompt, coloured by its probability (the words
# under the columns are what the model reads; the words in the cells are what
# the lens predicts next). The same tokens, as text:

words = lm.decode(test.prompts[0]).split()
with torch.no_grad():
    sentence_probabilities = torch.stack([lens[name][0].softmax(-1) for name in layer_names])
top_probability, top_token = sentence_probabilities.max(-1)  # [layers, positions]

for name, tokens in zip(layer_names, top_token, strict=True):
    print(f"{name:10}", " ".join(f"{lm.VOCAB[t]:>7}" for t in tokens))

fig, ax = plt.subplots(figsize=(10, 3.2))
image = ax.imshow(top_probability, cmap="viridis", vmin=0, vmax=1, aspect="auto")
for layer in range(len(layer_names)):
    for position in range(len(words)):
        probability = top_probability[layer, position].item()
        ax.text(
            position,
            layer,
            lm.VOCAB[top_token[layer, position]],
            ha="center",
            va="center",
            fontsize=7,
            color="black" if probability > 0.6 else "white",
        )
ax.set_xticks(range(len(words)), words, rotation=45, ha="right", fontsize=8)
ax.set_yticks(range(len(layer_names)), layer_names)
ax.set_xlabel("input token (the lens predicts the token after it)")
ax.set_title("Logit lens: top next token per layer and position")
fig.colorbar(image, ax=ax, label="probability of the top token")
fig.tight_layout()
plt.show()

# %%
# Reading the lens
# ----------------
#
# - **Embeddings.** At the last position the stream holds only the word
#   "to" and its position. The lens already predicts a name, the same one
#   for all 500 sentences: the embeddings say that a name comes next, not
#   which one. The accuracy, 0.068, is near chance (one name in
#   16).
# - **After block 0.** The top token is one of the sentence's two names in
#   0.818 of the sentences, but it is the answer in only 0.402: about as
#   often as the subject. The two probabilities are nearly equal (0.272 and
#   0.267) and the mean logit difference is 0.04. The two names can be read
#   at the last position, but nothing has chosen between them yet.
# - **After block 1.** The answer wins in every sentence (accuracy 1.000)
#   with a mean logit difference of 5.18: block 1 chooses. Block 2 adds
#   confidence (6.82), not accuracy.
#
# The figures show the same. The answer's probability rises between block
# 0 and block 1 in every sentence. In the first sentence, the lens after
# block 0 even predicts Kate, the subject, at the last position; after block
# 1 it predicts Tom.
#
# At the other positions, the words of the template are read from block 0
# on (accuracy 0.985, with probability 0.994 after block 1). The words
# drawn at random are no better than chance at any layer (chance 0.095).
# After the comma, the top token is one of the two names from block 0 on,
# the right one about half of the time: the subject is not known before the
# model reads it.
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
# 1. Record the residual stream inside block 1, after its attention and
#    before its MLP: it is the input of ``model.blocks[1].ln2`` (a forward
#    pre-hook). What accuracy and mean logit difference does the lens give
#    there, at the last position? Which part of block 1 chooses the answer?
# 2. Register a forward hook on ``model.blocks[2]`` that records the shape
#    of its output, and generate the rest of the first test sentence with
#    ``lm.generate``. How many times does the hook run, with which shapes,
#    and why?
# 3. Build a cheap tuned lens for block 0: on 2000 training sentences, fit
#    with least squares an affine map from the residual after block 0 to the
#    residual after block 2 (both at the last position), then apply it to the
#    test sentences before the lens. What accuracy and mean logit difference
#    does it reach, against the plain lens of block 0?
#
# .. dropdown:: Solutions
#
#    .. code-block:: python
#
#       # 1. the input of ln2 is the stream between attention and MLP
#       middle = {}
#       handle = model.blocks[1].ln2.register_forward_pre_hook(
#           lambda module, args: middle.update(stream=args[0].detach())
#       )
#       try:
#           with torch.no_grad():
#               model(test.prompts)
#       finally:
#           handle.remove()
#       with torch.no_grad():
#           accuracy, logit_diff = accuracy_and_logit_diff(logit_lens(middle["stream"])[:, -1])
#       print(f"after block 1's attention: accuracy {accuracy:.3f}, logit diff {logit_diff:.2f}")
#       for name in ["block 0", "block 1"]:
#           accuracy, logit_diff = accuracy_and_logit_diff(lens[name][:, -1])
#           print(f"after {name}: accuracy {accuracy:.3f}, logit diff {logit_diff:.2f}")
#
#       # 2. no key-value cache: every step re-runs the whole sequence
#       shapes = []
#       handle = model.blocks[2].register_forward_hook(
#           lambda module, args, output: shapes.append(list(output.shape))
#       )
#       try:
#           sentence = lm.generate(model, test.prompts[:1], max_new_tokens=4)
#       finally:
#           handle.remove()
#       print(lm.decode(sentence[0]))
#       print("calls:", len(shapes), "shapes:", shapes)
#
#       # 3. an affine translator from block 0 to block 2, fitted by least squares
#       train = lm.make_names(2000, seed=2)
#       _, train_residuals = record_residuals(model, train.prompts)
#       ones = torch.ones(len(train), 1)
#       inputs = torch.cat([train_residuals["block 0"][:, -1], ones], dim=1)
#       translator = torch.linalg.lstsq(inputs, train_residuals["block 2"][:, -1]).solution
#       test_inputs = torch.cat([residuals["block 0"][:, -1], torch.ones(len(test), 1)], dim=1)
#       with torch.no_grad():
#           tuned = accuracy_and_logit_diff(logit_lens(test_inputs @ translator))
#           plain = accuracy_and_logit_diff(lens["block 0"][:, -1])
#       print("block 0, plain lens: accuracy {:.3f}, logit diff {:.2f}".format(*plain))
#       print("block 0, tuned lens: accuracy {:.3f}, logit diff {:.2f}".format(*tuned))
#
#    **Answers**
#
#    1. Accuracy 0.964 and a mean logit difference of 3.16 after block 1's
#       attention, against 0.402 and 0.04 before block 1 and 1.000 and 5.18
#       after it: block 1's attention chooses the answer, and its MLP
#       finishes the job. The next page finds which attention head does it.
#    2. Twice, with shapes ``[1, 15, 64]`` and then ``[1, 16, 64]``: the
#       first call reads the prompt and adds "Tom", the second reads the
#       prompt and "Tom" and adds ".", where generation stops. Without a
#       key-value cache each step runs the model on the whole sequence
#       again, so a hook sees every position at every step.
#    3. Accuracy 0.544 and a mean logit difference of 0.20, against 0.402 and
#       0.04 for the plain lens of block 0: better, but still a coin toss
#       between the two names. A trained lens reads what a layer holds
#       better, but not more than it holds: after block 0 the last position
#       holds at most a trace of which name was repeated, which reaches it
#       in block 1 (page 35).
