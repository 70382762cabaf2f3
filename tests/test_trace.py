"""trace: a per-layer table gathered by forward (pre-)hooks."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from hooks_tutorial import count_hooks
from hooks_tutorial.tracing import TraceResult, TraceRow, trace


class Pair(nn.Module):
    """Two inputs, one shared layer called twice, a nested block."""

    def __init__(self) -> None:
        super().__init__()
        self.shared = nn.Linear(3, 3)
        self.block = nn.Sequential(nn.Linear(3, 2), nn.Tanh())

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return self.block(self.shared(a) + self.shared(b))


class Explodes(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        msg = "bad input"
        raise ValueError(msg)


def test_rows_of_a_small_mlp(mlp):
    result = trace(mlp, torch.zeros(8, 4))
    assert isinstance(result, TraceResult)
    assert [(r.name, r.type, r.input_shapes, r.output_shapes, r.params) for r in result] == [
        ("0", "Linear", ((8, 4),), ((8, 5),), 25),
        ("1", "ReLU", ((8, 5),), ((8, 5),), 0),
        ("2", "Linear", ((8, 5),), ((8, 2),), 12),
    ]
    assert all(isinstance(r.time_ms, float) for r in result)
    assert result.total_params == 37
    assert count_hooks(mlp) == {}


def test_text_table(mlp):
    result = trace(mlp, torch.zeros(8, 4))
    assert result.to_text(times=False).splitlines() == [
        "name   type    input   output  params",
        "0      Linear  [8, 4]  [8, 5]      25",
        "1      ReLU    [8, 5]  [8, 5]       0",
        "2      Linear  [8, 5]  [8, 2]      12",
        "total                              37",
    ]
    lines = str(result).splitlines()
    assert lines[0].endswith("params  time (ms)")
    assert len(lines) == 5


def test_sequence_protocol(mlp):
    result = trace(mlp, torch.zeros(1, 4))
    assert len(result) == 3
    assert result[-1].name == "2"
    assert [r.name for r in result[:2]] == ["0", "1"]
    assert result.rows[0] is result[0]
    assert result[0]._asdict()["type"] == "Linear"
    assert repr(result) == "TraceResult(3 rows, 37 params)"


def test_all_modules_in_call_order_with_depth():
    model = Pair()
    result = trace(model, (torch.zeros(2, 3), torch.zeros(2, 3)), leaves_only=False)
    assert [(r.name, r.depth) for r in result] == [
        ("", 0),
        ("shared", 1),
        ("shared", 1),
        ("block", 1),
        ("block.0", 2),
        ("block.1", 2),
    ]
    assert result[0].input_shapes == ((2, 3), (2, 3))
    assert result[0].params == 12 + 8
    assert result.total_params == 20
    text = result.to_text(times=False).splitlines()
    assert text[1].startswith("(model)")
    assert text[5].startswith("    block.0")


def test_shared_layer_appears_once_per_call():
    result = trace(Pair(), (torch.zeros(1, 3), torch.zeros(1, 3)))
    assert [r.name for r in result] == ["shared", "shared", "block.0", "block.1"]


def test_resnet18(resnet18):
    result = trace(resnet18, torch.zeros(1, 3, 64, 64))
    assert len(result) == 60  # 4 stem + 8 blocks x 6 calls + 3 x 2 downsample + avgpool + fc
    assert result[0] == TraceRow(
        "conv1", "Conv2d", ((1, 3, 64, 64),), ((1, 64, 32, 32),), 9408, result[0].time_ms, 0
    )
    assert result[-1].output_shapes == ((1, 1000),)
    assert result.total_params == 11_689_512
    assert count_hooks(resnet18) == {}


def test_runs_without_grad_by_default_and_with_grad_on_request(mlp):
    seen: list[bool] = []
    mlp[0].register_forward_hook(lambda m, a, o: seen.append(o.requires_grad))
    trace(mlp, torch.zeros(1, 4))
    trace(mlp, torch.zeros(1, 4), grad=True)
    assert seen == [False, True]


def test_mode_is_left_alone(mlp):
    mlp.train()
    trace(mlp, torch.zeros(1, 4))
    assert mlp.training


def test_hooks_removed_when_forward_raises():
    model = nn.Sequential(nn.Linear(2, 2), Explodes())
    with pytest.raises(ValueError, match="bad input"):
        trace(model, torch.zeros(1, 2))
    assert count_hooks(model) == {}


def test_non_tensor_inputs_are_named_by_type():
    class Scale(nn.Module):
        def forward(self, x: torch.Tensor, factor: float) -> torch.Tensor:
            return x * factor

    model = nn.Sequential()
    model.add_module("scale", Scale())
    result = trace(model.scale, (torch.zeros(2), 3.0))
    assert result[0].input_shapes == ((2,), "float")


def test_model_must_be_a_module():
    with pytest.raises(TypeError, match=r"call trace\(model, example_input\)"):
        trace(torch.zeros(1), torch.zeros(1))  # type: ignore[arg-type]
