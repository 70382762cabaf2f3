"""Page 24 (feature extraction without hooks): the prose against the outputs."""

from __future__ import annotations

import pytest
from sitecheck import match, number, outputs, run_page

PAGE = "24"


@pytest.fixture(scope="module")
def printed() -> str:
    return outputs(PAGE)


def test_node_names(printed: str) -> None:
    # "layer1.0.add is out += identity ..., layer1.0.relu_1 is the block's second
    # call of its relu module ..., and flatten is torch.flatten"
    first_block = match(r"first block: \[(.*)\]", printed)[1]
    assert "'layer1.0.add'" in first_block
    assert first_block.index("'layer1.0.relu'") < first_block.index("'layer1.0.relu_1'")
    match(r"last nodes:\s+\['avgpool', 'flatten', 'fc'\]", printed)
    # "Here are all the nodes that are not the output of a module"
    not_modules = match(r"\n(\['x', 'layer1\.0\.add'.*\])\n", printed)[1]
    for name in ("layer1.0.add", "layer1.0.relu_1", "layer4.1.add", "flatten"):
        assert f"'{name}'" in not_modules
    assert "conv" not in not_modules
    assert "bn" not in not_modules


def test_same_tensors(printed: str) -> None:
    # "it shares the parameters of resnet"
    match(r"shares resnet's parameters\? True", printed)
    # section "Same tensors, two ways"
    match(r"layer2 equal\? True", printed)
    match(r"layer4 equal\? True", printed)
    # "the flattened features are the input of fc, which a forward pre-hook sees"
    match(r"flatten node == input of fc\? True", printed)


def test_in_place_add(printed: str) -> None:
    # "The tensor FX returns for layer1.0.add is the very tensor that
    # layer1.0.relu_1 returns, so it holds no negative values"
    match(r"add is relu_1\? True", printed)
    assert number(r"smallest value of the add node: (-?[\d.]+)", printed) >= 0
    # "although the sum itself has some"
    assert number(r"smallest value of the sum: (-?[\d.]+)", printed) < 0
    # "or clone the input of the second relu call in a forward pre-hook"
    match(r"sum from FX == input of the 2nd relu call\? True", printed)


def test_what_hooks_do(printed: str) -> None:
    # "A Python if on a tensor's value needs a real number, so tracing stops.
    # A forward hook does not care"
    match(r"TraceError: symbolically traced variables cannot be used as inputs to control", printed)
    match(r"hooks: conv output \(4, 8, 64, 64\)", printed)
    # "switch off half of layer4's channels and see how the scores move"
    assert number(r"largest change of a score: ([\d.]+)", printed) > 0
    # "you get exactly the gradient that capture_gradients records"
    match(r"same gradient\? True", printed)
    # "No hook is left on the models of this page"
    match(r"hooks left: 0 0", printed)


def test_fx_traces_the_addition_out_of_place(printed: str) -> None:
    # "FX records out += identity as the out-of-place operator.add, which makes a new
    # tensor" (ResNet-18 has 8 BasicBlocks, one addition each)
    assert number(r"additions in the graph: (\d+)", printed) == 8
    match(r"all traced as operator\.add\? True", printed)


def test_a_tensor_hook_on_an_extracted_tensor_changes_the_gradient(printed: str) -> None:
    # "Doubling the gradient at layer4 doubles the gradient of every parameter before it"
    match(r"conv1\.weight\.grad doubled\? True", printed)


def test_solutions_state_their_answers() -> None:
    lines = run_page(PAGE).solutions.splitlines()
    # 1. "FX's tensor and the cloned one agree (True), the one recorded without clone
    #    does not (False) ... its smallest value is 0.000 instead of -1.115"
    fx = number(r"^FX: smallest value (-?[\d.]+)$", lines[0])
    plain = match(
        r"^hook, clone=False: smallest value (-?[\d.]+), equal to FX's\? (\w+)$", lines[1]
    )
    cloned = match(
        r"^hook, clone=True: smallest value (-?[\d.]+), equal to FX's\? (\w+)$", lines[2]
    )
    assert fx < 0
    assert (float(plain[1]), plain[2]) == (0.0, "False")
    assert (float(cloned[1]), cloned[2]) == (fx, "True")
    # 2. "Only the input x"
    assert lines[3] == "['x']"
    # 3. "It traces, and the extractor returns conv's output, torch.Size([4, 8, 64, 64])"
    assert lines[4] == "torch.Size([4, 8, 64, 64])"
