"""Claims of page 30 (distributed data parallel), checked against its outputs.

The page's two ranks print what they saw; the claims about that are checked on
the built page. Claims about torch's machinery (the first bucket layout, how
FSDP2 drives its backward work, what keeps a process group alive) and the
exercise answers are checked in this process on a one-rank gloo group, as the
page's solutions run: none of them depends on the number of ranks.
"""

from __future__ import annotations

import contextlib
import gc
import io
import re
import sys
import warnings
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from sitecheck import EXAMPLES, html, number, outputs, quoted_in_both_languages, solutions_code
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.nn.parallel import DistributedDataParallel

PAGE = "30"
FOLDER = EXAMPLES / "06_pytorch_uses_hooks"
sys.path.insert(0, str(FOLDER))  # the page's helpers, as the page imports them

import _ddp_worker as worker
from _launch import run_ranks


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


def test_no_process_left_behind() -> None:
    # "a rank still running after it ... is killed"; summary "always stop the processes"
    assert number(r"processes still running: (\d+)", outputs(PAGE)) == 0


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
    sections = [
        _section(rank, "bucket size limit", "gradients equal on all ranks:") for rank in (0, 1)
    ]
    # "Every rank logged the same buckets, and the gradients agree."
    assert sections[0] == sections[1]
    assert sections[0][-1] == "gradients equal on all ranks: True"
    text = "\n".join(sections[0])
    limit = number(r"bucket size limit: (\d+) bytes", text)
    assert limit == int(0.0003 * 1024 * 1024) == 314  # "314 bytes ... bucket_cap_mb=0.0003"
    step0, step1 = text.split("step 1:")
    buckets0 = re.findall(r"bucket (\d+): (\d+) values \(([^)]*)\)", step0)
    buckets1 = re.findall(r"bucket (\d+): (\d+) values \(([^)]*)\)", step1)
    # "In the first step DDP used one bucket for all 212 values."
    assert 8 * 16 + 16 + 16 * 4 + 4 == 212
    assert [(i, int(n)) for i, n, _ in buckets0] == [("0", 212)]
    assert len(buckets0[0][2].split(", ")) == 4
    # "two buckets, of 84 and 128 values, that is 336 and 512 bytes", in gradient-ready
    # order (last layer first), "each closed as soon as it holds 314 bytes or more"
    assert [int(n) for _, n, _ in buckets1] == [84, 128]
    assert buckets1[0][2] == "2.bias, 2.weight, 0.bias"
    assert buckets1[1][2] == "0.weight"
    assert (84 * 4, 128 * 4) == (336, 512)
    assert 84 * 4 >= limit > (84 - 16) * 4  # the bucket closed with its last tensor, 0.bias
    quoted_in_both_languages(PAGE, "212", "84", "128", "314", "336", "512", "0.0003")


def test_the_first_bucket_layout_is_this_torchs() -> None:
    # "how this torch (2.14, printed at the top) lays out the first step when
    # find_unused_parameters keeps its default, False: ... no size limit (sys.maxsize)"
    printed = re.search(r"^torch (\d+\.\d+)\.", outputs(PAGE), flags=re.MULTILINE)
    assert printed is not None
    assert printed[1] == ".".join(torch.__version__.split(".")[:2])
    quoted_in_both_languages(PAGE, printed[1], "sys.maxsize")

    def first_limits(find_unused_parameters: bool) -> list[int]:
        ddp_model = DistributedDataParallel(worker.make_model(), bucket_cap_mb=0.0003)
        limits, _ = ddp_model._bucket_config.compute_bucket_size_limits(
            static_graph=False, find_unused_parameters=find_unused_parameters
        )
        return limits

    with one_rank_group():
        assert first_limits(find_unused_parameters=False) == [sys.maxsize]
        assert first_limits(find_unused_parameters=True) == [314]


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


def _graph(root: torch.autograd.graph.Node) -> list[torch.autograd.graph.Node]:
    seen, todo = [], [root]
    while todo:
        node = todo.pop()
        if node is not None and node not in seen:
            seen.append(node)
            todo += [next_node for next_node, _ in node.next_functions]
    return seen


def test_fsdp2_drives_its_backward_work_from_autograd() -> None:
    # "a tensor hook on each module's output gathers the parameters again ..., and a
    # custom autograd function on the module's input reduce-scatters the gradients"

    def layer_output_and_its_graph() -> tuple[list[str], list[str]]:
        mesh = init_device_mesh("cpu", (1,))
        model = worker.make_model()
        fully_shard(model[2], mesh=mesh)
        fully_shard(model, mesh=mesh)
        outputs: list[torch.Tensor] = []
        with model[2].register_forward_hook(lambda m, args, out: outputs.append(out)):
            loss = model(worker.local_batch(0)).sum()
        hooks = [hook.__qualname__ for hook in outputs[0]._backward_hooks.values()]
        nodes = [type(node).__name__ for node in _graph(outputs[0].grad_fn)]
        loss.backward()
        worker.release_groups(mesh)
        return hooks, nodes

    with one_rank_group():
        hooks, nodes = layer_output_and_its_graph()
    assert set(hooks) == {"FSDPState._pre_backward"}  # model[2] and the root share it
    assert "RegisterPostBackwardFunctionBackward" in nodes


# -- a clean exit ----------------------------------------------------------------------


@contextlib.contextmanager
def one_rank_group() -> Iterator[None]:
    """A one-rank gloo group in this process, destroyed (and freed) at the end."""
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        yield
    finally:
        assert worker.tear_down(), "the test left the process group alive"


def test_both_ranks_freed_their_group() -> None:
    # "Both ranks freed the group before they exited"
    for rank in (0, 1):
        assert "process group freed by destroy_process_group: True" in _lines(rank)


def test_destroy_process_group_frees_only_an_unreferenced_group() -> None:
    # "the group itself ... lives as long as an object still refers to it: a DDP model ..."
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    group = weakref.ref(dist.group.WORLD)
    ddp_model = DistributedDataParallel(worker.make_model())
    dist.destroy_process_group()
    gc.collect()
    assert group() is not None
    del ddp_model
    gc.collect()
    assert group() is None


def test_dtensor_caches_keep_fsdps_mesh_and_its_group() -> None:
    # "In torch 2.14, DTensor's caches keep that mesh until the process ends, which is
    # why fsdp2_hooks ends with release_groups"
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    group = weakref.ref(dist.group.WORLD)
    # a mesh no other test made: the caches compare meshes by layout and names, and an
    # equal mesh would find the first one's entries instead of adding its own
    mesh = init_device_mesh("cpu", (1,), mesh_dim_names=("kept_by_dtensor_caches",))
    kept = weakref.ref(mesh)
    model = worker.make_model()
    fully_shard(model[0], mesh=mesh)
    fully_shard(model, mesh=mesh)
    model(worker.local_batch(0)).sum().backward()
    del model, mesh
    gc.collect()
    dist.destroy_process_group()
    gc.collect()
    leaked = kept()
    assert leaked is not None, "torch no longer keeps the mesh: update the page"
    assert group() is not None
    assert _gloo_threads() > 0  # "the group, with its gloo threads, lives on"
    worker.release_groups(leaked)
    del leaked
    gc.collect()
    assert group() is None
    assert _gloo_threads() == 0  # "no thread of it was left to run"
    quoted_in_both_languages(PAGE, "2.14")


def _gloo_threads() -> int:
    """The gloo threads (workers and transport loop) of this process, on Linux."""
    tasks = Path("/proc/self/task")
    assert tasks.is_dir(), "this check reads thread names from /proc (Linux)"
    names = [(task / "comm").read_text().strip() for task in tasks.iterdir()]
    return sum(name.startswith(("pt_gloo", "gloo_")) for name in names)


def test_release_groups_is_in_fsdp2_hooks() -> None:
    # "fsdp2_hooks ends with release_groups"
    source = (FOLDER / "_ddp_worker.py").read_text(encoding="utf-8")
    body = source.split("def fsdp2_hooks", 1)[1].split("\ndef ", 1)[0]
    assert body.rstrip().endswith("release_groups(mesh)")


# -- the launcher ----------------------------------------------------------------------


def test_run_ranks_returns_reports_in_rank_order(tmp_path: Path) -> None:
    script = tmp_path / "report.py"
    script.write_text("import json, sys\nprint(json.dumps({'rank': int(sys.argv[1])}))\n")
    reports, processes = run_ranks(str(script), world_size=3)
    assert reports == [{"rank": 0}, {"rank": 1}, {"rank": 2}]
    assert [p.poll() for p in processes] == [0, 0, 0]


def test_run_ranks_stops_the_others_when_a_rank_fails(tmp_path: Path) -> None:
    # "a rank still running ... after another rank failed, is killed, and run_ranks
    # raises an error with that rank's messages"
    script = tmp_path / "fail.py"
    script.write_text(
        "import sys, time\nif sys.argv[1] == '1':\n    sys.exit('rank 1 breaks')\ntime.sleep(60)\n"
    )
    with pytest.raises(RuntimeError, match=r"rank 1 failed with exit code 1:\nrank 1 breaks"):
        run_ranks(str(script), timeout=60)


def test_run_ranks_kills_the_ranks_at_the_deadline(tmp_path: Path) -> None:
    script = tmp_path / "hang.py"
    script.write_text("import time\ntime.sleep(60)\n")
    with pytest.raises(RuntimeError, match="did not finish within 1 s and were stopped"):
        run_ranks(str(script), timeout=1)


def test_run_ranks_names_a_missing_worker() -> None:
    with pytest.raises(FileNotFoundError, match=r"put it next to _launch\.py"):
        run_ranks("_missing_worker.py")


# -- exercise answers ------------------------------------------------------------------

NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:e[-+]\d+)?(?![\w])")


def _answers(language: str) -> list[str]:
    """The items of the **Answers** list, without inline code."""
    page = html(PAGE, language)
    dropdown = page.split('class="sd-sphinx-override sd-dropdown', 1)[1]
    after_code = dropdown.split("</pre></div>", 1)[1]
    items = re.findall(r"<li>(.*?)</li>", after_code.split("</ol>", 1)[0], flags=re.DOTALL)
    texts = []
    for item in items:
        prose = re.sub(r"<code.*?</code>", " ", item, flags=re.DOTALL)
        texts.append(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", prose)).strip())
    return texts


@pytest.fixture(scope="module")
def solutions() -> str:
    """What the page's solution code prints, run in this process."""
    code = solutions_code((FOLDER / "plot_30_distributed_data_parallel.py").read_text("utf-8"))
    printed = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(printed):
        warnings.simplefilter("ignore")  # DDP warns that find_unused_parameters finds none
        exec(compile(code, "page 30 solutions", "exec"), {"__name__": "__main__"})  # noqa: S102
    return printed.getvalue()


def test_the_solutions_print_what_the_answers_state(solutions: str) -> None:
    lines = solutions.splitlines()
    # 1. "No bucket in step 0 ... Step 1 logs the single bucket of 212 values, and only
    #    step 2 the rebuilt ones, of 84 and 128"
    assert "no_sync() in step 0 -> step 0: [], step 1: [212], step 2: [84, 128]" in lines
    # 2. "Larger: ... 10 times as much ... 8 significant bits, against 11 for float16"
    fp16, bf16 = (
        float(v)
        for v in re.search(r"float16 ([\d.e+-]+), bfloat16 ([\d.e+-]+)", solutions).groups()  # type: ignore[union-attr]
    )
    assert bf16 > fp16 > 0
    assert "significant bits: float16 11, bfloat16 8" in lines
    # 3. "A full Parameter of shape (16, 8) instead of a DTensor shard"
    assert "reshard_after_forward=True -> DTensor, shape (16, 8), this rank holds (16, 8)" in lines
    assert (
        "reshard_after_forward=False -> Parameter, shape (16, 8), this rank holds (16, 8)" in lines
    )
    # 4. "Three buckets, of 4, 80 and 128 values, in step 0 and in every step after it"
    assert (
        "find_unused_parameters=True -> step 0: [4, 80, 128], step 1: [4, 80, 128], "
        "step 2: [4, 80, 128]" in lines
    )
    assert "process group freed: True" in lines


def test_every_number_of_an_answer_was_printed(solutions: str) -> None:
    english, chinese = _answers("en"), _answers("zh_CN")
    assert len(english) == len(chinese) == 4  # one answer per exercise
    for en, zh in zip(english, chinese, strict=True):
        numbers = NUMBER.findall(en)
        assert numbers, en
        for value in numbers:
            assert re.search(rf"(?<![\w.]){re.escape(value)}(?![\w])", solutions), value
        assert sorted(NUMBER.findall(zh)) == sorted(numbers), zh
