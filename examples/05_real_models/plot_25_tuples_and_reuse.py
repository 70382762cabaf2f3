# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
Modules that return tuples or run twice
=======================================

.. index::
   ! tuple outputs
   ! module reuse
   ! nn.LSTM

The hooks so far sat on layers that take one tensor, return one tensor and
run once per forward pass. Many real modules do not. ``nn.LSTM`` returns its
output sequence *and* its hidden state, ``nn.MultiheadAttention`` returns the
attended values and (sometimes) the attention weights, and torchvision's
ResNet blocks call the same ``ReLU`` module twice. A hook written for one
tensor and one call then breaks, or quietly records the wrong thing. This
page shows what each hook receives and how to hook the call and the tensor
you mean.

.. rubric:: What you will learn
   :heading-level: 2

- what a forward hook receives from ``nn.LSTM``, ``nn.GRU`` and
  ``nn.MultiheadAttention``, and how to unpack it;
- why a gradient hook on an LSTM's output sequence may never fire;
- what a forward hook sees when its module runs twice in one forward pass,
  and three ways to get the call you mean;
- what the library does with such modules: the call counts of
  :func:`~hooks_tutorial.capture_activations` and the "ran N times" warning
  of the CAM classes.

**Prerequisites**: :doc:`/auto_examples/02_module_hooks/plot_05_forward_hooks`,
:doc:`/auto_examples/03_tensor_hooks/plot_10_tensor_hooks` and
:doc:`/auto_examples/04_grad_cam/plot_22_beyond_cnns`.
"""

# %%
# What a hook receives
# --------------------
#
# A small function describes any value a hook receives: the shape of each
# tensor, and the structure of the tuples around them.

import warnings

import matplotlib.pyplot as plt
import torch
import torchvision
from torch import nn

import hooks_tutorial as ht


def describe(value):
    if isinstance(value, torch.Tensor):
        return f"Tensor{list(value.shape)}"
    if isinstance(value, tuple):
        return "(" + ", ".join(describe(item) for item in value) + ")"
    return repr(value)


def show_call(module, args, output):
    print(f"  args:   {describe(args)}")
    print(f"  output: {describe(output)}")


# %%
# An LSTM returns a tuple inside a tuple
# --------------------------------------
#
# We run an ``nn.LSTM`` on a batch of 2 sequences of 5 steps with 4 features
# each, first without and then with an initial state ``(h_0, c_0)``.

torch.manual_seed(0)
lstm = nn.LSTM(input_size=4, hidden_size=8, batch_first=True)
sequences = torch.randn(2, 5, 4)
initial_state = (torch.zeros(1, 2, 8), torch.zeros(1, 2, 8))

handle = lstm.register_forward_hook(show_call)
print("lstm(sequences):")
output, (h_n, c_n) = lstm(sequences)
print("lstm(sequences, initial_state):")
lstm(sequences, initial_state)
handle.remove()

# sphinx_gallery_start_ignore
# "args holds whatever was passed positionally, so the initial state shows up as a second,
# nested item. The output is (output, (h_n, c_n))": what a hook receives, recorded
received_calls = []
handle = lstm.register_forward_hook(lambda m, args, out: received_calls.append((args, out)))
lstm(sequences)
lstm(sequences, initial_state)
handle.remove()
(args_plain, out_plain), (args_with_state, _) = received_calls
assert len(args_plain) == 1
assert len(args_with_state) == 2
assert args_with_state[1] is initial_state
assert out_plain[0].shape == (2, 5, 8)
assert [t.shape for t in out_plain[1]] == [(1, 2, 8), (1, 2, 8)]
# sphinx_gallery_end_ignore

# %%
# ``args`` holds whatever was passed positionally, so the initial state shows
# up as a second, nested item. The output is ``(output, (h_n, c_n))``: the
# last layer's hidden state at every step, then the final hidden and cell
# states of every layer. For a one-layer, one-direction LSTM the last step of
# ``output`` holds the same numbers as ``h_n``:

print("output[:, -1] equals h_n[0]?", torch.equal(output[:, -1], h_n[0]))

# sphinx_gallery_start_ignore
# "the last step of output holds the same numbers as h_n"
assert torch.equal(output[:, -1], h_n[0])
# sphinx_gallery_end_ignore

# %%
# A hook written for a tensor fails on the tuple:


def store_detached(module, args, output):
    store_detached.value = output.detach()


handle = lstm.register_forward_hook(store_detached)
try:
    lstm(sequences)
except AttributeError as error:
    print("AttributeError:", error)
finally:
    handle.remove()

# sphinx_gallery_start_ignore
# "A hook written for a tensor fails on the tuple": it never got to store a value
assert not hasattr(store_detached, "value")
# sphinx_gallery_end_ignore

# %%
# Unpack the output in the hook instead, and store the parts you need. An
# ``nn.GRU`` has no cell state: its output is ``(output, h_n)``, one level of
# tuple only.

gru = nn.GRU(input_size=4, hidden_size=8, batch_first=True)
handle = gru.register_forward_hook(show_call)
print("gru(sequences):")
gru(sequences)
handle.remove()

# sphinx_gallery_start_ignore
# "its output is (output, h_n), one level of tuple only"
gru_output = gru(sequences)
assert isinstance(gru_output, tuple)
assert [type(t) for t in gru_output] == [torch.Tensor, torch.Tensor]
assert [t.shape for t in gru_output] == [(2, 5, 8), (1, 2, 8)]
# sphinx_gallery_end_ignore

# %%
# Same numbers, different tensors
# -------------------------------
#
# ``output[:, -1]`` and ``h_n`` hold the same values, but they are two
# different tensors in the autograd graph. Which one gets a gradient depends
# on which one the model uses. Here are two classifiers that differ only in
# that choice.


class LastStepClassifier(nn.Module):
    def __init__(self, read_hidden_state):
        super().__init__()
        self.read_hidden_state = read_hidden_state
        self.lstm = nn.LSTM(input_size=4, hidden_size=8, batch_first=True)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        output, (h_n, _) = self.lstm(x)
        last = h_n[-1] if self.read_hidden_state else output[:, -1]
        return self.head(last)


# %%
# A forward hook on ``lstm`` registers one tensor hook on the output sequence
# and one on ``h_n``; each tensor hook records the gradient it receives.


def gradients_reaching_lstm(model):
    received = {}

    def hook_both(module, args, output):
        sequence, (h_n, _) = output
        sequence.register_hook(lambda grad: received.update(sequence=grad))
        h_n.register_hook(lambda grad: received.update(h_n=grad))

    handle = model.lstm.register_forward_hook(hook_both)
    try:
        model(sequences)[:, 0].sum().backward()
    finally:
        handle.remove()
    return received


for read_hidden_state in (True, False):
    torch.manual_seed(0)
    model = LastStepClassifier(read_hidden_state)
    received = gradients_reaching_lstm(model)
    print(f"model reads {'h_n' if read_hidden_state else 'output[:, -1]'}:")
    print("  gradients received by:", sorted(received))
    if "sequence" in received:
        per_step = received["sequence"].norm(dim=(0, 2))
        print("  gradient norm per step of the output sequence:", per_step.numpy().round(3))

# sphinx_gallery_start_ignore
# "When the model reads h_n, the hook on the output sequence never fires ... When it reads
# output[:, -1], only the last step of the sequence receives a gradient."
torch.manual_seed(0)
assert sorted(gradients_reaching_lstm(LastStepClassifier(True))) == ["h_n"]
assert sorted(received) == ["sequence"]  # the loop's last model reads output[:, -1]
assert (per_step[:-1] == 0).all()
assert per_step[-1] > 0
# sphinx_gallery_end_ignore

# %%
# When the model reads ``h_n``, the hook on the output sequence never fires:
# no gradient flows through a tensor that nothing used. When it reads
# ``output[:, -1]``, only the last step of the sequence receives a gradient.
# A module full backward hook is no help here either: it wraps only the
# tensors at the top level of the output, so ``grad_output`` has a ``None``
# in place of ``(h_n, c_n)``. (The input requires grad so that the hook
# has a ``grad_input`` to report; without it, the hook fires with
# ``grad_input`` ``(None,)`` and a warning.)

torch.manual_seed(0)
model = LastStepClassifier(read_hidden_state=False)
handle = model.lstm.register_full_backward_hook(
    lambda module, grad_input, grad_output: print("grad_output:", describe(grad_output))
)
model(sequences.clone().requires_grad_())[:, 0].sum().backward()
handle.remove()

# sphinx_gallery_start_ignore
# "grad_output has a None in place of (h_n, c_n)"; "without it, the hook fires with
# grad_input (None,) and a warning"
full_backward_calls = []
for needs_grad in (True, False):
    handle = model.lstm.register_full_backward_hook(
        lambda module, grad_input, grad_output: full_backward_calls.append(
            (grad_input, grad_output)
        )
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model(sequences.clone().requires_grad_(needs_grad))[:, 0].sum().backward()
    handle.remove()
    assert any("no inputs require gradients" in str(w.message) for w in caught) != needs_grad
(grad_input_1, grad_output_1), (grad_input_2, _) = full_backward_calls
assert grad_output_1[0].shape == (2, 5, 8)
assert grad_output_1[1] is None
assert grad_input_1[0] is not None
assert grad_input_2 == (None,)
model.zero_grad()
# sphinx_gallery_end_ignore

# %%
# Multi-head attention: three inputs, weights or ``None``
# -------------------------------------------------------
#
# ``nn.MultiheadAttention`` takes ``query, key, value`` (for self-attention,
# the same tensor three times) and options such as ``need_weights`` as keyword
# arguments. With ``with_kwargs=True`` the hook sees those options too. The
# output is ``(attended values, attention weights)``; the weights are
# averaged over the heads unless ``average_attn_weights=False``, and are
# ``None`` when the caller passes ``need_weights=False``.

attention = nn.MultiheadAttention(embed_dim=16, num_heads=4, batch_first=True)
tokens = torch.randn(2, 6, 16)  # 2 sequences of 6 tokens


def show_call_with_kwargs(module, args, kwargs, output):
    print(f"  args:   {describe(args)}   kwargs: {kwargs}")
    print(f"  output: {describe(output)}")


handle = attention.register_forward_hook(show_call_with_kwargs, with_kwargs=True)
for options in ({}, {"average_attn_weights": False}, {"need_weights": False}):
    print(f"attention(tokens, tokens, tokens, **{options}):")
    attention(tokens, tokens, tokens, **options)
handle.remove()

# sphinx_gallery_start_ignore
# "the weights are averaged over the heads unless average_attn_weights=False, and are
# None when the caller passes need_weights=False"
attention_outputs = [
    attention(tokens, tokens, tokens, **options)
    for options in ({}, {"average_attn_weights": False}, {"need_weights": False})
]
assert [values.shape for values, _ in attention_outputs] == [(2, 6, 16)] * 3
assert attention_outputs[0][1].shape == (2, 6, 6)
assert attention_outputs[1][1].shape == (2, 4, 6, 6)
assert attention_outputs[2][1] is None
# sphinx_gallery_end_ignore

# %%
# The transformer layers of PyTorch and torchvision call their attention
# with ``need_weights=False``, so a forward hook on them receives ``None`` for
# the weights. A forward pre-hook with ``with_kwargs=True`` can change that
# argument before the call (exercise 3 below).
#
# A module that runs twice
# ------------------------
#
# torchvision's ``BasicBlock`` owns one ``relu`` module and calls it twice in
# its ``forward``: after ``bn1``, and after ``out += identity``. We count the
# calls with a forward hook on the ``relu`` of the first block of a
# ``resnet18`` (random weights: this is about mechanics, not meaning).

# sphinx_gallery_start_ignore
# "The transformer layers of PyTorch and torchvision call their attention with
# need_weights=False" (the installed sources)
import inspect

assert "need_weights=False" in inspect.getsource(nn.TransformerEncoderLayer._sa_block)
encoder_block = torchvision.models.vision_transformer.EncoderBlock
assert "need_weights=False" in inspect.getsource(encoder_block.forward)
# sphinx_gallery_end_ignore

torch.manual_seed(0)
resnet = torchvision.models.resnet18(weights=None, num_classes=5).eval()
images = ht.make_shapes(2, split="test", seed=25).images  # [2, 3, 64, 64]
block = resnet.layer1[0]

relu_outputs = []
handle = block.relu.register_forward_hook(
    lambda module, args, output: relu_outputs.append(output.detach().clone())
)
with torch.no_grad():
    resnet(images)
handle.remove()
print("calls of layer1[0].relu per forward pass:", len(relu_outputs))
print("shapes:", [tuple(t.shape) for t in relu_outputs])

# sphinx_gallery_start_ignore
# "calls it twice in its forward"; "Both calls return tensors of the same shape"
assert len(relu_outputs) == 2
assert relu_outputs[0].shape == relu_outputs[1].shape
# sphinx_gallery_end_ignore

# %%
# Both calls return tensors of the same shape, so nothing in the hook tells
# them apart; a hook that stores "the" output keeps whichever call came last.
# Three ways to get the call you mean:
#
# 1. keep every call, in order, and pick by position (as above);
# 2. hook a module that runs once, next to the call you want: the *input* of
#    ``conv2`` is the first call's output (a forward pre-hook), and the output
#    of the block is the second call's output;
# 3. let the library count the calls (next section).
#
# We check that ways 1 and 2 agree.

seen = {}
handles = [
    block.conv2.register_forward_pre_hook(
        lambda module, args: seen.update(conv2_input=args[0].detach().clone())
    ),
    block.register_forward_hook(
        lambda module, args, output: seen.update(block_output=output.detach().clone())
    ),
]
with torch.no_grad():
    resnet(images)
for handle in handles:
    handle.remove()
print("first call  == input of conv2: ", torch.equal(relu_outputs[0], seen["conv2_input"]))
print("second call == output of block:", torch.equal(relu_outputs[1], seen["block_output"]))

# sphinx_gallery_start_ignore
# "We check that ways 1 and 2 agree."
assert torch.equal(relu_outputs[0], seen["conv2_input"])
assert torch.equal(relu_outputs[1], seen["block_output"])
# sphinx_gallery_end_ignore

# %%
# The two calls look at different things: the first at the block's own
# convolution, the second at that plus the block's input (``identity``).

fig, axes = plt.subplots(1, 3, figsize=(5.2, 2.6), layout="constrained")
axes[0].imshow(images[0].permute(1, 2, 0).numpy())
axes[0].set_title("input image")
axes[1].imshow(relu_outputs[0][0].mean(dim=0).numpy(), cmap="viridis")
axes[1].set_title("relu, 1st call:\nafter bn1")
axes[2].imshow(relu_outputs[1][0].mean(dim=0).numpy(), cmap="viridis")
axes[2].set_title("relu, 2nd call:\nafter + identity")
for ax in axes:
    ax.axis("off")
fig.suptitle("One ReLU module, two calls\n(mean over channels)")
plt.show()

# %%
# What the library does
# ---------------------
#
# :func:`~hooks_tutorial.capture_activations` keeps the latest value of each
# layer and counts every call in ``calls``, so a module that runs twice is
# visible at once:

with ht.capture_activations(resnet, ["layer1.0.relu", "layer1.0"]) as acts, torch.no_grad():
    resnet(images)
print("calls:", acts.calls)
print("kept value is the last call?", torch.equal(acts["layer1.0.relu"], relu_outputs[1]))

# sphinx_gallery_start_ignore
# "keeps the latest value of each layer and counts every call in calls"
assert acts.calls == {"layer1.0.relu": 2, "layer1.0": 1}
assert torch.equal(acts["layer1.0.relu"], relu_outputs[1])
# sphinx_gallery_end_ignore

# %%
# The CAM classes need exactly one activation per image. When the target
# layer runs more than once they use the last call and say so with a
# warning, which names the fix: a module that runs once, such as the
# enclosing block.

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    relu_map = ht.GradCAM(resnet, "layer4.1.relu")(images, target=0, raw=True)
for warning in caught:
    print(f"{warning.category.__name__}: {warning.message}")

block_map = ht.GradCAM(resnet, "layer4.1")(images, target=0, raw=True)
difference = (relu_map - block_map).abs().max().item()
print(f"max |relu map - block map|: {difference:.1e}")

# sphinx_gallery_start_ignore
# "they use the last call and say so with a warning, which names the fix: a module that
# runs once, such as the enclosing block"; "The map of the last call and the map of the
# block are the same" (exactly: the block returns the second call's output tensor)
(message,) = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
assert "'layer4.1.relu' ran 2 times" in message
assert "uses its last call" in message
assert "enclosing block" in message
assert difference == 0
# sphinx_gallery_end_ignore

# %%
# The map of the last call and the map of the block are the same: the block
# returns what its second ``relu`` call returned.
#
# Capturing from a sequence model with the library
# ------------------------------------------------
#
# :func:`~hooks_tutorial.capture_activations` stores outputs of any structure:
# the LSTM's value keeps its ``(output, (h_n, c_n))`` shape, every tensor
# detached.

torch.manual_seed(0)
model = LastStepClassifier(read_hidden_state=True)
with ht.capture_activations(model, ["lstm", "head"]) as acts:
    model(sequences)
print(acts)
sequence_out, (h_last, c_last) = acts["lstm"]
print("h_n requires grad?", h_last.requires_grad)

# sphinx_gallery_start_ignore
# "the LSTM's value keeps its (output, (h_n, c_n)) shape, every tensor detached"
assert [sequence_out.shape, h_last.shape, c_last.shape] == [(2, 5, 8), (1, 2, 8), (1, 2, 8)]
assert not any(t.requires_grad for t in (sequence_out, h_last, c_last))
# sphinx_gallery_end_ignore

# %%
# :func:`~hooks_tutorial.capture_gradients` works with a single tensor per
# layer, and says so when the layer returns a tuple. For the gradient of an
# LSTM's state, use a tensor hook on the part you need, as in the section
# "Same numbers, different tensors" above.

try:
    with ht.capture_gradients(model, "lstm") as grads:
        model(sequences)[:, 0].sum().backward()
except TypeError as error:
    print("TypeError:", error)
print("hooks left on the models:", ht.count_hooks(model).total, ht.count_hooks(resnet).total)

# sphinx_gallery_start_ignore
# "capture_gradients works with a single tensor per layer, and says so when the layer
# returns a tuple"
capture_error = ""
try:
    with ht.capture_gradients(model, "lstm"):
        model(sequences)[:, 0].sum().backward()
except TypeError as error:
    capture_error = str(error)
assert "needs layers whose output is a single tensor" in capture_error, capture_error
assert ht.count_hooks(model).total == ht.count_hooks(resnet).total == 0
model.zero_grad()
# sphinx_gallery_end_ignore

# %%
# Summary
# -------
#
# - A forward hook receives the module's positional arguments as ``args``
#   (nested tuples included) and its output as the module returns it:
#   ``(output, (h_n, c_n))`` for ``nn.LSTM``, ``(output, h_n)`` for
#   ``nn.GRU``, ``(values, weights or None)`` for ``nn.MultiheadAttention``.
#   Unpack it before calling tensor methods.
# - Equal values are not the same tensor: a gradient hook fires only on the
#   tensor the model actually used (``h_n`` or ``output[:, -1]``).
# - A module can run more than once per forward pass (``BasicBlock.relu``):
#   keep every call, or hook a module that runs once next to the call you
#   mean (a pre-hook on the next layer, a hook on the enclosing block).
# - The library counts the calls (``calls``), keeps the last value, and its
#   CAM classes warn "ran N times" and use the last call.
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
# 1. Give the ``LastStepClassifier`` a two-layer LSTM (``num_layers=2``).
#    What shapes do ``h_n`` and ``c_n`` have now? Write ``last_step(h_n)``,
#    which returns the row of ``h_n`` that equals ``output[:, -1]``, whatever
#    the number of layers. Check: ``ht.exercises.check("25.1", last_step)``.
# 2. Write ``name_relu_calls(model, block, x)``, which runs ``model(x)``
#    twice with a forward hook for ``block.relu`` that stores the first and
#    the second call under the names ``"after_bn1"`` and ``"after_add"``,
#    using a call counter that is reset by a forward pre-hook on the block,
#    and returns the stored tensors by name. Check:
#    ``ht.exercises.check("25.2", name_relu_calls)``.
# 3. Make ``attention`` return its weights even when the caller passes
#    ``need_weights=False``, with a forward pre-hook
#    ``want_weights(module, args, kwargs)`` registered with
#    ``with_kwargs=True``. Check: ``ht.exercises.check("25.3", want_weights)``.

# %%
# .. rst-class:: solution
#
# **Solution 1.** ``h_n`` and ``c_n`` are both ``torch.Size([2, 2, 8])``: one
# row per layer, then the batch and the hidden size. ``output`` is the top
# layer's hidden state at every step, so its last step equals ``h_n[-1]``,
# the top layer's row (``True``); the classifier's ``h_n[-1]`` already reads
# the right row.


def last_step(h_n):
    return h_n[-1]


deep = nn.LSTM(input_size=4, hidden_size=8, num_layers=2, batch_first=True)
output, (h_n, c_n) = deep(sequences)
print(h_n.shape, c_n.shape)
print(torch.equal(output[:, -1], last_step(h_n)))

# sphinx_gallery_start_ignore
# "both torch.Size([2, 2, 8])"; "its last step equals h_n[-1], the top layer's row"
assert h_n.shape == c_n.shape == (2, 2, 8)
assert torch.equal(output[:, -1], h_n[-1])
# sphinx_gallery_end_ignore

ht.exercises.check("25.1", last_step)

# sphinx_gallery_start_ignore
from page_checks import assert_check  # docs/_ext: the build's checks

# h_n[0] is the first layer's final state: output comes from the top layer
assert_check("25.1", last_step, lambda h_n: h_n[0], "first_layer")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 2.** The hook stores both calls under their names, with the
# shapes printed, and they equal the first and the second call recorded on
# the page (``True True``). The pre-hook on the block resets the counter
# before each run of the block, so the names stay right from one forward
# pass to the next.


def name_relu_calls(model, block, x):
    named, counter = {}, {"calls": 0}

    def reset(module, args):
        counter["calls"] = 0

    def name_the_call(module, args, output):
        name = ("after_bn1", "after_add")[counter["calls"]]
        named[name] = output.detach().clone()
        counter["calls"] += 1

    handles = [
        block.register_forward_pre_hook(reset),
        block.relu.register_forward_hook(name_the_call),
    ]
    try:
        with torch.no_grad():
            model(x)
            model(x)  # a second forward pass: the counter starts again at 0
    finally:
        for handle in handles:
            handle.remove()
    return named


named = name_relu_calls(resnet, block, images)
print({name: tuple(t.shape) for name, t in named.items()})
print(
    torch.equal(named["after_bn1"], relu_outputs[0]),
    torch.equal(named["after_add"], relu_outputs[1]),
)

# sphinx_gallery_start_ignore
# "they equal the first and the second call recorded on the page (True True)"; "the names
# stay right from one forward pass to the next" (two passes ran)
assert list(named) == ["after_bn1", "after_add"]
assert torch.equal(named["after_bn1"], relu_outputs[0])
assert torch.equal(named["after_add"], relu_outputs[1])
# sphinx_gallery_end_ignore

ht.exercises.check("25.2", name_relu_calls)

# sphinx_gallery_start_ignore


# without the pre-hook's reset, the second pass's first call is call number 2: no name
def name_relu_calls_no_reset(model, block, x):
    named, counter = {}, {"calls": 0}

    def name_the_call(module, args, output):
        named[("after_bn1", "after_add")[counter["calls"]]] = output.detach().clone()
        counter["calls"] += 1

    with block.relu.register_forward_hook(name_the_call), torch.no_grad():
        model(x)
        model(x)
    return named


assert_check("25.2", name_relu_calls, name_relu_calls_no_reset, "not_reset")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 3.** The pre-hook's keyword arguments replace the caller's
# ``need_weights=False``, so the attention returns its weights,
# ``torch.Size([2, 6, 6])``: averaged over the heads, since
# ``average_attn_weights`` keeps its default ``True``.


def want_weights(module, args, kwargs):
    return args, {**kwargs, "need_weights": True}


handle = attention.register_forward_pre_hook(want_weights, with_kwargs=True)
values, weights = attention(tokens, tokens, tokens, need_weights=False)
handle.remove()
print(weights.shape)

# sphinx_gallery_start_ignore
# "the attention returns its weights, torch.Size([2, 6, 6]): averaged over the heads"
assert weights.shape == (2, 6, 6)
# sphinx_gallery_end_ignore

ht.exercises.check("25.3", want_weights)

# sphinx_gallery_start_ignore


# a pre-hook that keeps only need_weights drops the caller's other options
def want_weights_only(module, args, kwargs):
    return args, {"need_weights": True}


assert_check("25.3", want_weights, want_weights_only, "dropped_options")
from page_checks import assert_exercises_checked, assert_no_hooks_left  # docs/_ext

assert_exercises_checked()
assert_no_hooks_left(globals())
# sphinx_gallery_end_ignore
