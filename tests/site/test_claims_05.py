"""Claims of page 5 (forward hooks), checked against what the page printed."""

from __future__ import annotations

import pytest
import torch
from sitecheck import match, number, outputs, quoted_in_both_languages, run_page
from torch import nn

import hooks_tutorial as ht

PAGE = "05"


def test_course_notes_hook_runs_once() -> None:
    # the notes' 1x1x4x4 input; conv gives 2 channels of 3x3;
    # "a second call prints nothing and stores nothing: still one stored output"
    printed = outputs(PAGE)
    assert printed.count("hook called!") == 1
    assert "input shape: torch.Size([1, 1, 4, 4])" in printed
    assert "stored outputs: 1 (1, 2, 3, 3)" in printed
    assert "stored outputs: 1\n" in printed
    assert match(r"hooks left on the model: (\d+)", printed)[1] == "0"


def test_input_is_a_tuple_of_positional_arguments() -> None:
    # "``input`` is the tuple of *positional arguments* ... an inner layer's
    # input is simply the previous layer's output"
    printed = outputs(PAGE)
    for name, shape in [("conv", "(8, 1, 4, 4)"), ("relu", "(8, 2, 3, 3)"), ("fc", "(8, 18)")]:
        assert match(rf"{name}\s+input: (\w+) of length (\d), shape (.*)", printed).groups() == (
            "tuple",
            "1",
            shape,
        )
    # "so ``torch.equal`` prints ``True``"
    lines = [line for line in printed.splitlines() if line]
    assert lines[lines.index(next(l for l in lines if l.startswith("fc    input"))) + 1] == "True"


def test_keyword_arguments_need_with_kwargs() -> None:
    # "Arguments passed by keyword do not appear in ``args``"
    printed = outputs(PAGE)
    assert "without kwargs: len(args) = 1" in printed
    assert "kwargs = {'factor': 2.0}" in printed


def test_detach_shares_memory() -> None:
    # "``detach()`` returns a tensor with the same values but no link to the graph";
    # "The last line shows that ``detach()`` does not copy"
    printed = outputs(PAGE)
    assert "detached: requires_grad = False  grad_fn = None" in printed
    assert "output:   requires_grad = True  grad_fn = ConvolutionBackward0" in printed
    assert "same memory: True" in printed
    # "the detached copy has lost its negative values, the cloned copy still has them"
    assert number(r"detach          smallest value: (-?[\d.]+)", printed) >= 0
    assert number(r"detach \+ clone  smallest value: (-?[\d.]+)", printed) < 0


def test_feature_maps_by_name() -> None:
    printed = outputs(PAGE)
    assert "fc    (1, 3)" in printed
    # the four kernels of the figure, on a 64x64 image
    assert "(4, 64, 64)" in printed


def test_forward_skips_the_modules_own_hooks() -> None:
    # "Calling ``forward`` directly skips the hooks of that module. Its sub-layers ... still run"
    printed = outputs(PAGE)
    assert "model(x):          ['conv', 'model']" in printed
    assert "model.forward(x):  ['conv']" in printed


def test_solution_extra_argument() -> None:
    # Solution 2: "the hooks ran on 0 layers: the error comes before any layer runs"
    # (the model's own forward pre-hooks have run by then; its forward hook has not)

    class TinyConvNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(1, 2, kernel_size=2)
            self.relu = nn.ReLU()
            self.fc = nn.Linear(2 * 3 * 3, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(self.relu(self.conv(x)).flatten(1))

    model = TinyConvNet()
    events: list[str] = []
    model.register_forward_pre_hook(lambda _m, args: events.append(f"pre-hook, {len(args)} args"))
    model.register_forward_hook(lambda _m, _a, _o: events.append("forward hook"))
    model.conv.register_forward_pre_hook(lambda _m, _a: events.append("conv"))
    with pytest.raises(TypeError, match=r"takes 2 positional arguments but 3 were given"):
        model(torch.randn(8, 1, 4, 4), torch.randint(0, 3, (8,)))
    assert events == ["pre-hook, 2 args"]
    quoted_in_both_languages(PAGE, "takes 2 positional arguments but 3 were given")


def test_solutions_state_their_answers() -> None:
    run = run_page(PAGE)
    lines = run.solutions.splitlines()
    # 1. "One line per layer: ``Conv2d`` (mean 0.070, std 0.487), ``ReLU`` (mean 0.241,
    #    std 0.297) and ``Linear`` (mean -0.002, std 0.234). The ReLU's mean is higher
    #    than the convolution's because it sets the negative values to zero."
    model, images = run.namespace["model"], run.namespace["images"]
    names = [name for name, _ in model.named_children()]
    with ht.capture_activations(model, names, clone=True) as acts, torch.no_grad():
        model(images)
    assert len(names) == 3
    stats = []
    for line, name in zip(lines[:3], names, strict=True):
        kind, mean, std = numbers_of(line)
        assert kind == type(getattr(model, name)).__name__
        assert mean == f"{acts[name].mean().item():.3f}"
        assert std == f"{acts[name].std().item():.3f}"
        stats.append((float(mean), float(std)))
    assert [line.split()[0] for line in lines[:3]] == ["Conv2d", "ReLU", "Linear"]
    assert stats[1][0] > stats[0][0]
    # 2. "The call raises ``TypeError: TinyConvNet.forward() takes 2 positional arguments
    #    but 3 were given``, and the hooks ran on 0 layers"
    assert (
        lines[3] == "TypeError: TinyConvNet.forward() takes 2 positional arguments but 3 were given"
    )
    assert lines[4] == "layers whose hook ran: 0"
    # 3. "It prints ``True``: the ReLU's output is the convolution's output clamped at zero"
    assert lines[5:] == ["True"]


def numbers_of(line: str) -> tuple[str, str, str]:
    found = match(r"^(\w+)\s+mean (-?[\d.]+)  std ([\d.]+)$", line)
    return found[1], found[2], found[3]
