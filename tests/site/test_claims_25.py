"""Page 25 (modules that return tuples or run twice): the prose against the outputs."""

from __future__ import annotations

import inspect
import re

import pytest
import torch
import torchvision
from sitecheck import match, number, outputs, run_page
from torch import nn

PAGE = "25"


@pytest.fixture(scope="module")
def printed() -> str:
    return outputs(PAGE)


def test_lstm_output_structure(printed: str) -> None:
    # "args holds whatever was passed positionally, so the initial state shows up
    # as a second, nested item. The output is (output, (h_n, c_n))"
    match(r"lstm\(sequences\):\n\s+args:\s+\(Tensor\[2, 5, 4\]\)\n", printed)
    match(r"args:\s+\(Tensor\[2, 5, 4\], \(Tensor\[1, 2, 8\], Tensor\[1, 2, 8\]\)\)", printed)
    match(r"output: \(Tensor\[2, 5, 8\], \(Tensor\[1, 2, 8\], Tensor\[1, 2, 8\]\)\)", printed)
    # "the last step of output holds the same numbers as h_n"
    match(r"output\[:, -1\] equals h_n\[0\]\? True", printed)
    # "A hook written for a tensor fails on the tuple"
    match(r"AttributeError: 'tuple' object has no attribute 'detach'", printed)
    # "its output is (output, h_n), one level of tuple only"
    match(r"gru\(sequences\):\n.*\n\s+output: \(Tensor\[2, 5, 8\], Tensor\[1, 2, 8\]\)\n", printed)


def test_which_tensor_gets_the_gradient(printed: str) -> None:
    # "When the model reads h_n, the hook on the output sequence never fires"
    match(r"model reads h_n:\n\s+gradients received by: \['h_n'\]\n", printed)
    # "When it reads output[:, -1], only the last step of the sequence receives a gradient"
    match(r"model reads output\[:, -1\]:\n\s+gradients received by: \['sequence'\]", printed)
    steps = match(r"gradient norm per step of the output sequence: \[([^\]]+)\]", printed)[1]
    values = [float(v) for v in steps.split()]
    assert len(values) == 5
    assert values[:-1] == [0.0] * 4
    assert values[-1] > 0
    # "grad_output has a None in place of (h_n, c_n)"
    match(r"grad_output: \(Tensor\[2, 5, 8\], None\)", printed)


def test_attention_outputs(printed: str) -> None:
    # "the weights are averaged over the heads unless average_attn_weights=False,
    # and are None when the caller passes need_weights=False"
    shapes = re.findall(r"output: \(Tensor\[2, 6, 16\], ([^)]*\]|None)\)", printed)
    assert shapes == ["Tensor[2, 6, 6]", "Tensor[2, 4, 6, 6]", "None"]
    # "the same tensor three times": three positional arguments
    assert printed.count("args:   (Tensor[2, 6, 16], Tensor[2, 6, 16], Tensor[2, 6, 16])") == 3


def test_transformer_layers_call_attention_without_weights() -> None:
    # "The transformer layers of PyTorch and torchvision call their attention
    # with need_weights=False" (a fact about the installed sources)
    assert "need_weights=False" in inspect.getsource(nn.TransformerEncoderLayer._sa_block)
    encoder_block = torchvision.models.vision_transformer.EncoderBlock
    assert "need_weights=False" in inspect.getsource(encoder_block.forward)


def test_relu_runs_twice(printed: str) -> None:
    # "calls the same ReLU module twice"
    assert number(r"calls of layer1\[0\]\.relu per forward pass: (\d+)", printed) == 2
    # "Both calls return tensors of the same shape"
    match(r"shapes: \[\(2, 64, 16, 16\), \(2, 64, 16, 16\)\]", printed)
    # "We check that ways 1 and 2 agree."
    match(r"first call  == input of conv2:  True", printed)
    match(r"second call == output of block: True", printed)


def test_library_counts_and_warns(printed: str) -> None:
    # "keeps the latest value of each layer and counts every call in calls"
    match(r"calls: \{'layer1\.0\.relu': 2, 'layer1\.0': 1\}", printed)
    match(r"kept value is the last call\? True", printed)
    # "they use the last call and say so with a warning, which names the fix"
    warning = match(r"UserWarning: (.*)", printed)[1]
    assert "'layer4.1.relu' ran 2 times" in warning
    assert "uses its last call" in warning
    assert "enclosing block" in warning
    # "The map of the last call and the map of the block are the same"
    assert number(r"max \|relu map - block map\|: ([\d.e+-]+)", printed) == 0.0


def test_sequence_capture(printed: str) -> None:
    # "the LSTM's value keeps its (output, (h_n, c_n)) shape, every tensor detached"
    match(r"'lstm': \(tensor\(2, 5, 8\), \(tensor\(1, 2, 8\), tensor\(1, 2, 8\)\)\)", printed)
    match(r"h_n requires grad\? False", printed)
    # "capture_gradients works with a single tensor per layer, and says so"
    match(r"TypeError: capture_gradients needs layers whose output is a single tensor", printed)
    # no hook left (summary of the page's cleanup)
    match(r"hooks left on the models: 0 0", printed)


def test_solutions_state_their_answers() -> None:
    lines = run_page(PAGE).solutions.splitlines()
    # 1. "one row per layer; the last row is the top layer":
    #    "# torch.Size([2, 2, 8]) twice" and "# True" for output[:, -1] == h_n[-1]
    assert lines[0] == "torch.Size([2, 2, 8]) torch.Size([2, 2, 8])"
    assert lines[1] == "True"
    # 2. both calls of block.relu are stored under their names
    assert lines[2].startswith("{'after_bn1': (")
    assert "'after_add': (" in lines[2]
    # "they equal the first and the second call recorded on the page (True True)"
    assert lines[3] == "True True"
    # 3. "the attention returns its weights, torch.Size([2, 6, 6]): averaged over the heads"
    assert lines[4:] == ["torch.Size([2, 6, 6])"]


def test_full_backward_hook_without_an_input_that_requires_grad() -> None:
    # "without it, the hook fires with grad_input (None,) and a warning"
    torch.manual_seed(0)
    lstm = nn.LSTM(input_size=4, hidden_size=8, batch_first=True)
    seen = []
    handle = lstm.register_full_backward_hook(
        lambda module, grad_input, grad_output: seen.append(grad_input)
    )
    try:
        with pytest.warns(UserWarning, match="no inputs require gradients"):
            lstm(torch.randn(2, 5, 4))[0][:, -1].sum().backward()
    finally:
        handle.remove()
    assert seen == [(None,)]
