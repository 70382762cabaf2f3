"""The checks of chapter 6, PyTorch uses hooks (pages 28 to 32): pruning to autograd graph hooks.

Most exercises of these pages run an experiment and ask what happens and why:
they are answered in words. The ones that ask for code are checked here.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.utils import prune

from ..hooks import count_hooks
from ._guard import watch
from ._helpers import require_callable, returned_type
from ._language import Text
from ._registry import Problem, Values, exercise, prose

prose("28.1", "28.3", "29.1", "29.3", "30.2", "30.3", "30.4", "31.2", "31.3", "32.2", "32.3")


# -- page 28: pruning -------------------------------------------------------------------


def _remove_pruning(model: nn.Module) -> None:
    """Make every pruning on ``model`` permanent: its hooks go, the zeros stay."""
    for module in model.modules():
        for hook in list(module._forward_pre_hooks.values()):
            if isinstance(hook, prune.BasePruningMethod):
                remove: Any = prune.remove  # not annotated in torch
                remove(module, hook._tensor_name)


@exercise(
    "28.2",
    passed=Text(
        "Your function registered one forward pre-hook on each linear layer, `0` and `2`, "
        "and none on the ReLU, and zeroed {zeros} of the 48 weights: the smallest ones of "
        "both layers ranked together ({first} of 32 in layer 0, {second} of 16 in layer 2).",
        "你的函数在两个线性层 `0` 和 `2` 上各注册了一个前向预钩子，ReLU 上没有，并把 48 个权重中的 "
        "{zeros} 个置零。这些是两层放在一起排序后最小的权重（层 0 的 32 个中有 {first} 个，"
        "层 2 的 16 个中有 {second} 个）。",
    ),
    not_pruned=Text(
        "After your function, the model holds no pruning hook: call "
        '`prune.global_unstructured([(model[0], "weight"), (model[2], "weight")], '
        "pruning_method=prune.L1Unstructured, amount=0.3)`.",
        "调用你的函数之后，模型上没有剪枝钩子，请调用 "
        '`prune.global_unstructured([(model[0], "weight"), (model[2], "weight")], '
        "pruning_method=prune.L1Unstructured, amount=0.3)`。",
    ),
    wrong_modules=Text(
        "After your function, the pruning hooks sit on `{found}`; prune the `weight` of the "
        "two linear layers, `model[0]` and `model[2]`, one pruning hook each.",
        "调用你的函数之后，剪枝钩子位于 `{found}`；请对两个线性层 `model[0]` 和 `model[2]` 的 "
        "`weight` 剪枝，每层一个剪枝钩子。",
    ),
    pruned_separately=Text(
        "Your function zeroed {first} of the 32 weights of layer 0 and {second} of the 16 of "
        "layer 2: each layer's own smallest weights, the same fraction in each. Global "
        "pruning ranks the 48 weights of both layers together and zeroes the smallest "
        "wherever they are: one call of `prune.global_unstructured` with both layers.",
        "你的函数把层 0 的 32 个权重中的 {first} 个、层 2 的 16 个权重中的 {second} 个置零，"
        "每层剪掉的是它自己最小的权重，两层比例相同。全局剪枝把两层的 48 个权重放在一起排序，"
        "不管最小的在哪一层都把它们置零，请用一次 `prune.global_unstructured` 调用同时处理两层。",
    ),
    wrong_amount=Text(
        "Your function ranked the weights of both layers together, but zeroed {zeros} of the "
        "48; `amount=0.3` zeroes 14 (0.3 of 48, rounded).",
        "你的函数把两层的权重放在一起排序了，但把 48 个中的 {zeros} 个置零；`amount=0.3` "
        "应当置零 14 个（48 乘以 0.3 后取整）。",
    ),
)
def _prune_together(answer: object) -> Values:
    prune_together = require_callable(answer)
    model = watch(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)))
    try:
        prune_together(model)
        pruned = sorted(
            f"{name}.{hook._tensor_name}"
            for name, module in model.named_modules()
            for hook in module._forward_pre_hooks.values()
            if isinstance(hook, prune.BasePruningMethod)
        )
        if not pruned:
            raise Problem("not_pruned")
        if pruned != ["0.weight", "2.weight"]:
            raise Problem("wrong_modules", found=", ".join(pruned))
        layers: tuple[Any, ...] = (model[0], model[2])  # Any: pruning adds weight_orig
        zeros = [int((layer.weight == 0).sum()) for layer in layers]
        shown: dict[str, object] = {"zeros": sum(zeros), "first": zeros[0], "second": zeros[1]}
        originals = torch.cat([layer.weight_orig.detach().abs().flatten() for layer in layers])
        kept = torch.cat([layer.weight_mask.flatten() for layer in layers]) == 1
        # ranked together: every zeroed weight is smaller than every kept one (the random
        # weights of a fresh layer have no ties)
        if originals[~kept].numel() and originals[~kept].max() > originals[kept].min():
            raise Problem("pruned_separately", **shown)
        if sum(zeros) != 14:
            raise Problem("wrong_amount", **shown)
        assert count_hooks(model).total == 2  # one pre-hook each, nothing else
    finally:
        _remove_pruning(model)  # the check's model: its pruning hooks are not left behind
    return shown


# -- page 29: activation checkpointing ------------------------------------------------------


@exercise(
    "29.2",
    passed=Text(
        "In one training step of your model, blocks {recomputed} ran twice (checkpointed: "
        "the backward pass recomputed them) and blocks {plain} once. It kept {tensors} "
        "tensors for the backward pass: two for each plain block (its input and its hidden "
        "activation), one for each checkpointed block (its input).",
        "在你的模型的一个训练步中，块 {recomputed} 运行了两次（使用了激活检查点，反向传播重新计算了它们），"
        "块 {plain} 运行了一次。它为反向传播保留了 {tensors} 个张量，每个普通块两个（它的输入和隐藏激活），"
        "每个使用激活检查点的块一个（它的输入）。",
    ),
    not_a_net=Text(
        "The check builds your model as `HalfCheckpointed(use_checkpoint=True)` and needs "
        "its `blocks`, as in `Net`; it got a `{got}`. Write `HalfCheckpointed` as a "
        "subclass of `Net` that only changes `forward`.",
        "检查用 `HalfCheckpointed(use_checkpoint=True)` 构建你的模型，并且需要它像 `Net` 一样有 "
        "`blocks`，却得到了一个 `{got}`。请把 `HalfCheckpointed` 写成 `Net` 的子类，只改写 "
        "`forward`。",
    ),
    checkpointed_all=Text(
        "In one training step of your model, every block ran twice: all {blocks} are "
        "checkpointed. Checkpoint only every second one, "
        "`checkpoint(block, x, use_reentrant=False) if i % 2 else block(x)`.",
        "在你的模型的一个训练步中，每个块都运行了两次，{blocks} 个块全都使用了激活检查点。请只对每隔一个的块"
        "使用激活检查点：`checkpoint(block, x, use_reentrant=False) if i % 2 else block(x)`。",
    ),
    checkpointed_none=Text(
        "In one training step of your model, every block ran once: none is checkpointed, "
        "so the backward pass recomputed nothing. Call "
        "`checkpoint(block, x, use_reentrant=False)` for every second block.",
        "在你的模型的一个训练步中，每个块都只运行了一次，没有一个使用激活检查点，所以反向传播什么也没有"
        "重新计算。请对每隔一个的块调用 `checkpoint(block, x, use_reentrant=False)`。",
    ),
    wrong_blocks=Text(
        "In one training step of your model, blocks {recomputed} ran twice (checkpointed) "
        "and blocks {plain} once; every second block means 0 and 2, or 1 and 3, of the "
        "{blocks}.",
        "在你的模型的一个训练步中，块 {recomputed} 运行了两次（使用了激活检查点），块 {plain} 运行了一次；"
        "每隔一个块，指的是 {blocks} 个块中的 0 和 2，或者 1 和 3。",
    ),
)
def _half_checkpointed(answer: object) -> Values:
    make = require_callable(answer)
    model = make(use_checkpoint=True)
    blocks = getattr(model, "blocks", None)
    if not isinstance(model, nn.Module) or not isinstance(blocks, nn.ModuleList):
        raise Problem("not_a_net", got=type(model).__name__)
    watch(model)
    # each block's first layer (Any: its in_features is not on nn.Module)
    firsts: list[Any] = [next(block.children(), block) for block in blocks]
    calls = [0] * len(firsts)
    parameters = {p.untyped_storage().data_ptr() for p in model.parameters()}
    storages: set[int] = set()

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        if storage.nbytes() and storage.data_ptr() not in parameters:
            storages.add(storage.data_ptr())
        return tensor

    handles = [
        layer.register_forward_hook(lambda m, args, out, i=i: calls.__setitem__(i, calls[i] + 1))
        for i, layer in enumerate(firsts)
    ]
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
            loss = model(torch.randn(4, firsts[0].in_features))
        loss.sum().backward()
    finally:
        for handle in handles:
            handle.remove()
    recomputed = [i for i, n in enumerate(calls) if n > 1]
    plain = [i for i, n in enumerate(calls) if n == 1]
    shown: dict[str, object] = {
        "recomputed": recomputed,
        "plain": plain,
        "blocks": len(calls),
        "tensors": len(storages),
    }
    if not recomputed:
        raise Problem("checkpointed_none", **shown)
    if not plain:
        raise Problem("checkpointed_all", **shown)
    if recomputed not in (list(range(0, len(calls), 2)), list(range(1, len(calls), 2))):
        raise Problem("wrong_blocks", **shown)
    return shown


# -- page 30: distributed data parallel -------------------------------------------------------


@contextlib.contextmanager
def _world_of_one() -> Iterator[None]:
    """A gloo process group of one process, in memory (no port), destroyed afterwards.

    DDP needs a process group; one rank is enough to see when it communicates.
    A group the learner already made is used as it is, and left alone.
    """
    if dist.is_initialized():
        yield
        return
    store = dist.HashStore()  # type: ignore[attr-defined]  # in memory: one process
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        yield
    finally:
        gc.collect()  # a DDP model in a reference cycle holds the group
        dist.destroy_process_group()


@exercise(
    "30.1",
    passed=Text(
        "Run by your function on one process, step 0 logged no bucket, step 1 logged the "
        "bucket sizes {first} and step 2 {second}: under `no_sync()` DDP neither "
        "communicates nor calls the communication hook, and it rebuilds its buckets only "
        "after a step that communicated.",
        "在一个进程上由你的函数运行时，第 0 步没有记录任何桶，第 1 步记录的桶大小为 {first}，"
        "第 2 步为 {second}。在 `no_sync()` 之下，DDP 既不通信，也不调用通信钩子；"
        "它只在一个通信过的步之后才重建它的桶。",
    ),
    wrong_steps=Text(
        "Your function took {steps} step(s) (forward passes of the model), not three; "
        "run step 0 inside `with ddp_model.no_sync():`.",
        "你的函数走了 {steps} 步（模型的前向传播次数），而不是三步；请把第 0 步放在 "
        "`with ddp_model.no_sync():` 之内。",
    ),
    forward_outside=Text(
        "Step 0 still communicated (bucket sizes {logged}): its backward pass ran "
        "inside `no_sync()`, but its forward pass did not. DDP decides in the forward pass "
        "whether the coming backward pass communicates; put the forward pass inside "
        "`with ddp_model.no_sync():` too.",
        "第 0 步仍然通信了（桶大小 {logged}）。它的反向传播在 `no_sync()` 之内，前向传播却不在。"
        "DDP 在前向传播时就决定接下来的反向传播是否通信，请把前向传播也放进 "
        "`with ddp_model.no_sync():`。",
    ),
    synced_step_0=Text(
        "Step 0 communicated (bucket sizes {logged}): run its forward and backward "
        "passes inside `with ddp_model.no_sync():`.",
        "第 0 步通信了（桶大小 {logged}），请把它的前向传播和反向传播放进 "
        "`with ddp_model.no_sync():`。",
    ),
    never_synced=Text(
        "{count} of the two later steps logged no bucket either: only step 0 runs under "
        "`no_sync()`; the later steps communicate, and they average what step 0 kept too.",
        "之后的两步中，有 {count} 步也没有记录任何桶。只有第 0 步在 `no_sync()` 之下运行；之后的步要通信，"
        "它们也会把第 0 步留下的梯度一起平均。",
    ),
)
def _three_steps(answer: object) -> Values:
    three_steps = require_callable(answer)
    from torch.nn.parallel import DistributedDataParallel  # noqa: PLC0415 - only this check

    with _world_of_one():
        model = watch(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)))
        ddp_model = DistributedDataParallel(model, bucket_cap_mb=0.0003)  # tiny buckets
        ddp = [ddp_model]  # the hooks read it from here: emptied before the group goes
        logged: list[list[int]] = []  # per step: the sizes of the buckets communicated
        syncing: list[list[bool]] = []  # per step: will DDP sync, in forward and in backward

        def log_size(bucket: Any) -> torch.futures.Future[torch.Tensor]:
            logged[-1].append(bucket.buffer().numel())
            done: torch.futures.Future[torch.Tensor] = torch.futures.Future()
            done.set_result(bucket.buffer())  # one process: the average is its own gradient
            return done

        def new_step(module: nn.Module, args: object) -> None:
            logged.append([])
            syncing.append([ddp[0].require_backward_grad_sync])

        def in_backward(grad: torch.Tensor) -> None:
            if syncing:
                syncing[-1].append(ddp[0].require_backward_grad_sync)

        # a lambda: DDP compares a hook's annotations with its own classes, and this
        # module's annotations are strings (from __future__ import annotations)
        ddp_model.register_comm_hook(state=None, hook=lambda state, bucket: log_size(bucket))
        last_layer: Any = model[2]  # Any: nn.Module does not declare bias
        try:
            with (
                model.register_forward_pre_hook(new_step),
                last_layer.bias.register_hook(in_backward),
            ):
                three_steps(ddp_model, torch.randn(4, 8))
        finally:  # nothing may hold DDP when the group is destroyed
            del ddp_model
            ddp.clear()
    if len(logged) != 3:
        raise Problem("wrong_steps", steps=len(logged))
    if logged[0]:
        forward_synced = syncing[0][0] and not all(syncing[0][1:])
        name = "forward_outside" if forward_synced else "synced_step_0"
        raise Problem(name, logged=logged[0])
    silent = [step for step in (1, 2) if not logged[step]]
    if silent:
        raise Problem("never_synced", count=len(silent))
    return {"first": logged[1], "second": logged[2]}


# -- page 31: state-dict hooks -----------------------------------------------------------


class _WithScale(nn.Module):
    """Page 31's ``NewNetWithScale``, small: a layer, and the new buffer ``scale``."""

    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Linear(2, 2)
        self.register_buffer("scale", torch.ones(1))


@exercise(
    "31.1",
    passed=Text(
        "With your post-hook, a checkpoint without `scale` loaded (`<All keys matched "
        "successfully>`), one without `scale` and `encoder.weight` still failed on "
        "`encoder.weight` alone, and a complete one loaded too: the hook edits "
        "`incompatible_keys.missing_keys` in place, before the strict check.",
        "有了你的后钩子，缺少 `scale` 的检查点可以加载（`<All keys matched successfully>`），"
        "同时缺少 `scale` 和 `encoder.weight` 的检查点仍然只因 `encoder.weight` 而失败，完整的检查点"
        "也能加载。钩子在严格检查之前原地修改了 `incompatible_keys.missing_keys`。",
    ),
    returned_value=Text(
        "Your post-hook returned a `{returned}`. PyTorch does not take a new value from a "
        "`load_state_dict` post-hook (it raises an `AssertionError`): change "
        '`incompatible_keys.missing_keys` in place, with `.remove("scale")`, and return '
        "None.",
        "你的后钩子返回了一个 `{returned}`。PyTorch 不接受 `load_state_dict` 后钩子返回的新值"
        '（它会抛出 `AssertionError`），请用 `.remove("scale")` 原地修改 '
        "`incompatible_keys.missing_keys`，并返回 None。",
    ),
    still_missing=Text(
        "With your post-hook, a checkpoint without `scale` still failed to load, missing "
        '`{missing}`: the hook must remove `"scale"` from the list '
        "`incompatible_keys.missing_keys` itself (in place); a new, filtered list changes "
        "nothing.",
        "有了你的后钩子，缺少 `scale` 的检查点仍然加载失败，缺少 `{missing}`。钩子必须从列表 "
        '`incompatible_keys.missing_keys` 本身（原地）删除 `"scale"`；新建一个过滤后的列表'
        "不会改变任何东西。",
    ),
    accepted_all=Text(
        "With your post-hook, a checkpoint without `scale` and without `encoder.weight` "
        "loaded as if nothing were missing (missing after the hook: `{missing}`): the "
        "hook accepted every missing key, so a real mistake would load silently. Remove "
        'only `"scale"`.',
        "有了你的后钩子，同时缺少 `scale` 和 `encoder.weight` 的检查点也像什么都不缺一样加载了"
        "（钩子之后缺少的键：`{missing}`），钩子接受了所有缺少的键，真正的错误也会悄无声息地被加载。"
        '请只删除 `"scale"`。',
    ),
    removed_absent=Text(
        "A complete checkpoint, with `scale`, no longer loads: your post-hook raised "
        '`{error}`. When nothing is missing, `"scale"` is not in '
        '`incompatible_keys.missing_keys`: remove it only `if "scale" in ...`.',
        "完整的、含有 `scale` 的检查点反而无法加载了，你的后钩子抛出了 `{error}`。什么都不缺时，"
        '`"scale"` 不在 `incompatible_keys.missing_keys` 中，只在 `if "scale" in ...` '
        "时删除它。",
    ),
)
def _accept_missing_scale(answer: object) -> Values:
    hook = require_callable(answer)
    model = watch(_WithScale())
    complete = {key: value.clone() for key, value in model.state_dict().items()}
    returned: list[object] = []

    def spy(module: nn.Module, incompatible_keys: Any) -> None:
        returned.append(hook(module, incompatible_keys))  # torch would assert on a value

    def load(state_dict: dict[str, torch.Tensor]) -> list[str]:
        """The missing keys after the hook (load_state_dict's strict check would raise)."""
        register: Any = model.register_load_state_dict_post_hook  # not annotated in torch
        with register(spy):
            result = model.load_state_dict(state_dict, strict=False)
        found = [value for value in returned if value is not None]
        if found:
            raise Problem("returned_value", returned=returned_type(found[0]))
        return list(result.missing_keys)

    without_scale = {k: v for k, v in complete.items() if k != "scale"}
    missing = load(without_scale)
    if missing:
        raise Problem("still_missing", missing=", ".join(missing))
    missing = load({k: v for k, v in without_scale.items() if k != "encoder.weight"})
    if missing != ["encoder.weight"]:
        raise Problem("accepted_all", missing=missing)
    try:
        load(complete)
    except ValueError as error:  # list.remove of a key that is not there
        raise Problem("removed_absent", error=f"ValueError: {error}") from None
    return {}


# -- page 32: autograd graph hooks --------------------------------------------------------


@exercise(
    "32.1",
    passed=Text(
        "Registered on the node of `y = x * 3`, your prehook doubled `x.grad` exactly "
        "(ratio {ratio}): the tuple it returned replaced the gradient flowing into the "
        "node, and every gradient computed from it doubled with it.",
        "注册在 `y = x * 3` 的节点上之后，你的预钩子让 `x.grad` 恰好变为两倍（比值 {ratio}）。"
        "它返回的元组替换了流入这个节点的梯度，由它算出的每个梯度也随之加倍。",
    ),
    returned_none=Text(
        "Your prehook returned None and `x.grad` did not change: a node's prehook changes "
        "the gradient only through what it returns, `tuple(2 * g for g in grad_outputs)`.",
        "你的预钩子返回了 None，`x.grad` 没有变化。节点的预钩子只能通过返回值改变梯度："
        "`tuple(2 * g for g in grad_outputs)`。",
    ),
    not_a_tuple=Text(
        "Your prehook returned a `{returned}`; a node's prehook returns a tuple, one "
        "gradient per output of the node (PyTorch raises a `TypeError` otherwise): "
        "`tuple(2 * g for g in grad_outputs)`.",
        "你的预钩子返回了一个 `{returned}`；节点的预钩子应返回一个元组，节点的每个输出对应一个梯度"
        "（否则 PyTorch 会抛出 `TypeError`）：`tuple(2 * g for g in grad_outputs)`。",
    ),
    wrong_factor=Text(
        "With your prehook, `x.grad` is {ratio} times the plain gradient, not 2: multiply "
        "each gradient in `grad_outputs` by 2.",
        "有了你的预钩子，`x.grad` 是普通梯度的 {ratio} 倍，而不是 2 倍，请把 `grad_outputs` "
        "中的每个梯度乘以 2。",
    ),
)
def _double_grads(answer: object) -> Values:
    double_grads = require_callable(answer)
    x = torch.tensor([0.5, 1.0, -2.0], requires_grad=True)
    returned: list[object] = []

    def spy(grad_outputs: tuple[torch.Tensor, ...]) -> Any:
        returned.append(double_grads(grad_outputs))
        return returned[-1] if isinstance(returned[-1], tuple) else None

    y = x * 3
    handle = y.grad_fn.register_prehook(spy) if y.grad_fn is not None else None
    try:
        loss: Any = y.sin().sum()  # Any: Tensor.backward has no annotations in some torch
        loss.backward()
    finally:
        if handle is not None:
            handle.remove()
    assert x.grad is not None
    plain = 3 * torch.cos(y.detach())
    if returned and returned[0] is not None and not isinstance(returned[0], tuple):
        raise Problem("not_a_tuple", returned=returned_type(returned[0]))
    # the hook's gradient goes through the same operations as the plain one: doubling is
    # exact in floating point, so the ratio is exactly 2 (allclose: another factor may round)
    ratios = (x.grad / plain).tolist()
    if torch.equal(x.grad, plain) and returned and returned[0] is None:
        raise Problem("returned_none")
    if not torch.allclose(x.grad, 2 * plain):
        raise Problem("wrong_factor", ratio=round(ratios[0], 3))
    return {"ratio": round(ratios[0], 3)}
