"""Claims of page 30 (distributed data parallel), checked against its outputs.

The exercise answers are checked in this process with a one-rank gloo group:
what they state (no bucket under ``no_sync``, bf16 rounds more than fp16,
``reshard_after_forward=False`` keeps the full weight) does not depend on the
number of ranks.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
import torch
import torch.distributed as dist
from sitecheck import number, outputs, quoted_in_both_languages
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor
from torch.nn.parallel import DistributedDataParallel

PAGE = "30"


def _lines(rank: int) -> list[str]:
    prefix = f"rank {rank}: "
    return [line[len(prefix) :] for line in outputs(PAGE).splitlines() if line.startswith(prefix)]


def _section(rank: int, first: str, last: str) -> list[str]:
    lines = _lines(rank)
    start = next(i for i, line in enumerate(lines) if line.startswith(first))
    end = next(i for i, line in enumerate(lines) if i >= start and line.startswith(last))
    return lines[start : end + 1]


def test_both_ranks_reported() -> None:
    printed = outputs(PAGE)
    assert number(r"ranks that reported: (\d+)", printed) == 2
    assert _lines(0)
    assert len(_lines(0)) == len(_lines(1))


def test_module_hooks_fire_on_every_rank() -> None:
    means = []
    for rank in (0, 1):
        lines = _lines(rank)
        # "Wrapping the model in DDP added no module hook of its own"
        assert "hooks on the wrapped model: 0" in lines
        # "The hook fired once on each rank, and each saw a different batch"
        fired = [line for line in lines if line.startswith("forward hook on layer 0")]
        assert len(fired) == 1
        means.append(number(r"mean ([-+\d.]+)", fired[0]))
    assert means[0] != means[1]


def test_tensor_hook_sees_the_local_gradient() -> None:
    seen, final = [], []
    for rank in (0, 1):
        text = "\n".join(_lines(rank))
        seen.append(number(r"tensor hook saw a gradient of norm ([\d.]+)", text))
        final.append(number(r"weight.grad after backward has norm ([\d.]+)", text))
        # "the mean of the two local gradients"; "both ranks hold the same weight.grad"
        assert "weight.grad equals the mean of the local gradients: True" in text
        assert "weight.grad equal on all ranks: True" in text
    # "The two hooks saw different gradients"
    assert seen[0] != seen[1]
    assert final[0] == final[1]
    assert all(s != final[0] for s in seen)


def test_builtin_comm_hook() -> None:
    for rank in (0, 1):
        text = "\n".join(_lines(rank))
        # "differs from the exact one by rounding only"
        change = number(r"largest change made by fp16 compression: ([\d.e+-]+)", text)
        assert 0 < change < 1e-2
        # "all ranks still agree"
        assert "gradients equal on all ranks with fp16_compress_hook: True" in text


def test_logging_comm_hook_buckets() -> None:
    sections = [_section(rank, "step 0:", "gradients equal on all ranks:") for rank in (0, 1)]
    # "Every rank logged the same buckets, and the gradients agree."
    assert sections[0] == sections[1]
    assert sections[0][-1] == "gradients equal on all ranks: True"
    text = "\n".join(sections[0])
    step0, step1 = text.split("step 1:")
    buckets0 = re.findall(r"bucket (\d+): (\d+) values \(([^)]*)\)", step0)
    buckets1 = re.findall(r"bucket (\d+): (\d+) values \(([^)]*)\)", step1)
    n_params = 8 * 16 + 16 + 16 * 4 + 4
    # "In the first step DDP used one bucket for all 212 values."
    assert n_params == 212
    assert [(i, int(n)) for i, n, _ in buckets0] == [("0", 212)]
    assert len(buckets0[0][2].split(", ")) == 4
    # "two buckets, of 84 and 128 values" in gradient-ready order (last layer first)
    assert [int(n) for _, n, _ in buckets1] == [84, 128]
    assert buckets1[0][2].startswith("2.")
    assert buckets1[1][2] == "0.weight"
    quoted_in_both_languages(PAGE, "212", "84", "128")


def test_fsdp2_hooks() -> None:
    for rank in (0, 1):
        lines = _lines(rank)
        text = "\n".join(lines)
        # "Each sharded module got one forward pre-hook ... and one forward hook"
        # and "the backward columns above are 0"
        for name in (r"\(model\)", "0", "2"):
            row = re.search(
                rf"^{name}\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$", text, re.MULTILINE
            )
            assert row is not None, name
            assert [int(v) for v in row.groups()] == [1, 1, 0, 0, 0, 2]
        for name in ("(model)", "0", "2"):
            assert (
                f"{name}: pre-hooks ['FSDPState._pre_forward'], "
                "hooks ['FSDPState._post_forward']" in lines
            )
        sharded = "DTensor, shape (16, 8), this rank holds (8, 8)"
        full = "Parameter, shape (16, 8), this rank holds (16, 8)"
        # "Between them the weight is a full Parameter of shape (16, 8);
        # before and after, each rank holds only its (8, 8) half."
        assert f"before forward: weight is a {sharded}" in lines
        assert f"before FSDP's pre-hook: {sharded}" in lines
        assert f"after FSDP's pre-hook:  {full}" in lines
        assert f"before FSDP's hook:     {full}" in lines
        assert f"after FSDP's hook:      {sharded}" in lines
        # "each rank keeps the (8, 8) half" of the gradient
        assert f"after backward: weight.grad is a {sharded}" in lines
    quoted_in_both_languages(PAGE, "(16, 8)", "(8, 8)")


# -- exercise answers, on a one-rank group in this process -----------------------------


@pytest.fixture
def one_rank() -> Iterator[None]:
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def _model() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


@pytest.mark.usefixtures("one_rank")
def test_exercise_answers() -> None:
    batch = torch.randn(4, 8)
    # 1. "none: under no_sync() DDP skips the communication (and the hook)"
    ddp_model = DistributedDataParallel(_model())
    buckets: list[int] = []

    # no annotations: DDP checks them, and postponed ones are strings
    def log_buckets(state, bucket):  # type: ignore[no-untyped-def]
        buckets.append(bucket.buffer().numel())
        future = dist.all_reduce(bucket.buffer(), async_op=True).get_future()
        return future.then(lambda fut: fut.value()[0])

    ddp_model.register_comm_hook(state=None, hook=log_buckets)
    with ddp_model.no_sync():
        ddp_model(batch).sum().backward()
    assert buckets == []
    ddp_model(batch).sum().backward()
    assert buckets == [212]  # and the next synced step calls it again

    # 2. "larger: bfloat16 ... only 8 bits of precision, against 11 for float16"
    gradients = {}
    for name, hook in [
        ("exact", None),
        ("fp16", default_hooks.fp16_compress_hook),
        ("bf16", default_hooks.bf16_compress_hook),
    ]:
        model = _model()
        wrapped = DistributedDataParallel(model)
        if hook is not None:
            wrapped.register_comm_hook(state=None, hook=hook)
        wrapped(batch).sum().backward()
        gradients[name] = torch.cat([p.grad.flatten() for p in model.parameters()])  # type: ignore[union-attr]
    fp16 = (gradients["fp16"] - gradients["exact"]).abs().max()
    bf16 = (gradients["bf16"] - gradients["exact"]).abs().max()
    assert bf16 > fp16 > 0

    # 3. "a full Parameter of shape (16, 8): the weight stays gathered after forward"
    mesh = init_device_mesh("cpu", (1,))
    for reshard, expected in [(True, DTensor), (False, nn.Parameter)]:
        model = _model()
        fully_shard(model[0], mesh=mesh, reshard_after_forward=reshard)
        fully_shard(model, mesh=mesh)
        seen: list[torch.Tensor] = []

        def after_fsdp(module: nn.Module, args: object, out: object, seen: list = seen) -> None:
            seen.append(module.weight)

        model[0].register_forward_hook(after_fsdp)
        model(batch).sum().backward()
        assert isinstance(seen[0], expected)
        assert tuple(seen[0].shape) == (16, 8)
        assert isinstance(seen[0], DTensor) == reshard


def test_no_process_left_behind() -> None:
    # "always stop the processes" / "without leaving any process behind"
    assert number(r"processes still running: (\d+)", outputs(PAGE)) == 0
