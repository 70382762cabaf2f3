"""The checks of chapter 5, real models (pages 23 to 27b): photos, FX, tuples, ViT, segmentation.

The pages' own models are large (ImageNet weights) or trained on the page;
the checks use small models of the same kind, with random weights: what an
exercise asks for is a mechanism, and a mechanism works the same on them.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..cam import GradCAM, LayerCAM, token_reshape_transform
from ._guard import watch
from ._helpers import require_callable
from ._language import Text
from ._registry import Problem, Values, exercise, prose

prose("24.1", "27.4")


# -- page 23: a pretrained model on real photos ------------------------------------------


class _TinyResNet(nn.Module):
    """A ResNet-shaped toy: ``layer3`` (8x8 for a 32x32 input), ``layer4`` (4x4), 10 classes."""

    def __init__(self) -> None:
        super().__init__()
        self.layer3 = nn.Sequential(nn.Conv2d(3, 8, 3, stride=4, padding=1), nn.ReLU())
        self.layer4 = nn.Sequential(nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU())
        self.fc = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scores: torch.Tensor = self.fc(self.layer4(self.layer3(x)).mean(dim=(2, 3)))
        return scores


@exercise(
    "23.1",
    passed=Text(
        "Your function returned two maps: the first explains the most probable class "
        "({first}), the second the fifth ({fifth}), from one Grad-CAM call on two copies "
        "of the image, one target per copy.",
        "你的函数返回了两张热力图，第一张解释概率最高的类别（{first}），第二张解释第五的类别（{fifth}），"
        "它们来自一次 Grad-CAM 调用，图像复制两份，每份一个目标。",
    ),
    not_two_maps=Text(
        "`first_and_fifth(model, x)` returned `{got}`; it should return the two maps of one "
        "Grad-CAM call, a tensor `[2, H, W]`.",
        "`first_and_fifth(model, x)` 返回了 `{got}`；它应当返回一次 Grad-CAM 调用得到的两张热力图，"
        "即一个 `[2, H, W]` 张量。",
    ),
    class_numbers=Text(
        "Your maps explain classes 0 and 4, the first and the fifth class of the list, not "
        "of the ranking. The model's top-5 is `{top}`: explain `top[0]` and `top[4]`, from "
        "`model(x).topk(5).indices[0]`.",
        "你的热力图解释的是类别 0 和 4，也就是类别列表中的第一个和第五个，而不是排名中的。"
        "模型的前五名是 `{top}`，请解释 `top[0]` 和 `top[4]`，它们来自 "
        "`model(x).topk(5).indices[0]`。",
    ),
    wrong_classes=Text(
        "Your maps explain the classes of rank {ranks} in the model's top-5 (`{top}`, rank 1 "
        "first); the exercise asks for ranks 1 and 5: `target=top[[0, 4]]`.",
        "你的热力图解释的是模型前五名（`{top}`，第 1 名在前）中排第 {ranks} 的类别；"
        "练习要求的是第 1 名和第 5 名，`target=top[[0, 4]]`。",
    ),
    not_grad_cam=Text(
        "Your maps are not the Grad-CAM maps of `layer4` for any class of the top-5: use "
        '`ht.GradCAM(model, "layer4")`, with its default options.',
        "你的热力图不是 `layer4` 对前五名中任何一个类别的 Grad-CAM 热力图，请使用 "
        '`ht.GradCAM(model, "layer4")`，保持它的默认选项。',
    ),
    separate_calls=Text(
        "Your maps are right, but your function ran the model {runs} times: one call "
        "explains both classes when the image is copied, `x.expand(2, -1, -1, -1)`, and "
        "`target` holds one class per copy.",
        "你的热力图是对的，但你的函数运行了模型 {runs} 次。把图像复制两份，"
        "`x.expand(2, -1, -1, -1)`，并让 `target` 为每份各给一个类别，一次调用就能解释两个类别。",
    ),
)
def _first_and_fifth(answer: object) -> Values:
    first_and_fifth = require_callable(answer)
    model = watch(_TinyResNet()).eval()
    x = torch.randn(1, 3, 32, 32)
    with torch.no_grad():
        top = model(x).topk(5).indices[0].tolist()
    cam = GradCAM(model, "layer4")
    every_class = cam(x.expand(10, -1, -1, -1), target=torch.arange(10))
    runs = []
    with model.register_forward_hook(lambda m, args, out: runs.append(1)):
        maps = first_and_fifth(model, x)
    if not (isinstance(maps, torch.Tensor) and maps.dim() == 3 and len(maps) == 2):
        got = f"Tensor{list(maps.shape)}" if isinstance(maps, torch.Tensor) else type(maps).__name__
        raise Problem("not_two_maps", got=got)
    if maps.shape[1:] != every_class.shape[1:]:
        raise Problem("not_two_maps", got=f"Tensor{list(maps.shape)}")
    # allclose: the same maps, computed in batches of other sizes, may round differently
    explained = []
    for one in maps.detach():
        same = [k for k in range(10) if torch.allclose(one, every_class[k], atol=1e-5)]
        if not same:
            raise Problem("not_grad_cam")
        explained.append(same)
    names = {"first": top[0], "fifth": top[4], "top": top}
    if top[0] in explained[0] and top[4] in explained[1]:
        if len(runs) > 2:  # one for the top-5, one for the Grad-CAM call
            raise Problem("separate_calls", runs=len(runs))
        return names
    if 0 in explained[0] and 4 in explained[1]:
        raise Problem("class_numbers", **names)
    ranks = [next((top.index(k) + 1 for k in same if k in top), "?") for same in explained]
    raise Problem("wrong_classes", ranks=f"{ranks[0]}, {ranks[1]}", top=top)


@exercise(
    "23.2",
    passed=Text(
        "`preprocess18` resizes the short side to {resize} pixels (ResNet-50's V2 weights: "
        "232), then crops {crop} x {crop}, with the same mean and standard deviation: the "
        "preprocessing comes with the weights, and changes with them.",
        "`preprocess18` 把短边缩放到 {resize} 像素（ResNet-50 的 V2 权重是 232），"
        "再裁剪出 {crop} x {crop}，均值和标准差不变。预处理随权重一起提供，也随权重而变。",
    ),
    not_transforms=Text(
        "The check needs the preprocessing itself, what `weights18.transforms()` returns; "
        "it got a `{got}`.",
        "检查需要预处理本身，即 `weights18.transforms()` 的返回值；它得到的是一个 `{got}`。",
    ),
    resnet50_preprocessing=Text(
        "This is ResNet-50's preprocessing (the short side resized to 232 pixels). Each "
        "weights object carries the preprocessing its model was trained with: use "
        "`weights18.transforms()`, with "
        "`weights18 = torchvision.models.ResNet18_Weights.IMAGENET1K_V1`.",
        "这是 ResNet-50 的预处理（短边缩放到 232 像素）。每个权重对象都带着其模型训练时所用的预处理，"
        "请使用 `weights18.transforms()`，其中 "
        "`weights18 = torchvision.models.ResNet18_Weights.IMAGENET1K_V1`。",
    ),
    other_preprocessing=Text(
        "This preprocessing (resize {resize}, crop {crop}) is not the one of "
        "`ResNet18_Weights.IMAGENET1K_V1` (resize {expected_resize}, crop "
        "{expected_crop}): use `weights18.transforms()`.",
        "这个预处理（缩放 {resize}，裁剪 {crop}）不是 `ResNet18_Weights.IMAGENET1K_V1` "
        "的预处理（缩放 {expected_resize}，裁剪 {expected_crop}），请使用 `weights18.transforms()`。",
    ),
)
def _preprocess18(answer: object) -> Values:
    import torchvision  # noqa: PLC0415 - torchvision imports slowly

    expected = torchvision.models.ResNet18_Weights.IMAGENET1K_V1.transforms()
    fields = ("resize_size", "crop_size", "mean", "std")
    if not all(hasattr(answer, f) for f in fields):
        raise Problem("not_transforms", got=type(answer).__name__)
    got = {f: getattr(answer, f) for f in fields}
    resnet50 = torchvision.models.ResNet50_Weights.IMAGENET1K_V2.transforms()
    if got == {f: getattr(resnet50, f) for f in fields}:
        raise Problem("resnet50_preprocessing")
    if got != {f: getattr(expected, f) for f in fields}:
        raise Problem(
            "other_preprocessing",
            resize=got["resize_size"],
            crop=got["crop_size"],
            expected_resize=expected.resize_size,
            expected_crop=expected.crop_size,
        )
    return {"resize": expected.resize_size[0], "crop": expected.crop_size[0]}


@exercise(
    "23.3",
    passed=Text(
        "Your `combine_maps` gives the map of one `ht.GradCAM` on both layers: the mean of "
        "the two single maps (each already rescaled to [0, 1]), rescaled to [0, 1] again.",
        "你的 `combine_maps` 得到的正是同时作用于两层的 `ht.GradCAM` 的热力图，两张单层热力图"
        "（各自已缩放到 [0, 1]）的平均，再次缩放到 [0, 1]。",
    ),
    not_a_map=Text(
        "`combine_maps(map3, map4)` returned `{got}`; it should return one map of the same "
        "shape as each of them, `{shape}`.",
        "`combine_maps(map3, map4)` 返回了 `{got}`；它应当返回一张与两张输入热力图形状相同的图，`{shape}`。",
    ),
    not_rescaled=Text(
        "Your map is the mean of the two maps, with values from {low:.2f} to {high:.2f}: the "
        "library rescales that mean to [0, 1] again, `(m - m.min()) / (m.max() - m.min())`.",
        "你的热力图是两张热力图的平均，取值从 {low:.2f} 到 {high:.2f}。库会把这个平均再次缩放到 [0, 1]，"
        "`(m - m.min()) / (m.max() - m.min())`。",
    ),
    wrong_combination=Text(
        "Your map differs from the combined map by up to {difference:.2f}: the library "
        "averages the two single maps (one weight each, not a maximum or a product) and "
        "rescales the mean to [0, 1].",
        "你的热力图与合并后的热力图最多相差 {difference:.2f}。库对两张单层热力图取平均（各占相同的权重，"
        "不是取最大值或乘积），再把平均缩放到 [0, 1]。",
    ),
)
def _combine_maps(answer: object) -> Values:
    combine_maps = require_callable(answer)
    model = watch(_TinyResNet()).eval()
    x = torch.randn(1, 3, 32, 32)
    single = [GradCAM(model, layer)(x, target=0)[0] for layer in ("layer3", "layer4")]
    both = GradCAM(model, ["layer3", "layer4"])(x, target=0)[0]
    combined = combine_maps(single[0].clone(), single[1].clone())
    if not (isinstance(combined, torch.Tensor) and combined.shape == both.shape):
        got = f"Tensor{list(combined.shape)}" if isinstance(combined, torch.Tensor) else None
        raise Problem(
            "not_a_map",
            got=got or type(combined).__name__,
            shape=f"[{', '.join(map(str, both.shape))}]",
        )
    combined = combined.detach().float()
    # float32 maps in [0, 1]: the same formula in another order differs by rounding only
    if torch.allclose(combined, both, atol=1e-5):
        return {}
    mean = (single[0] + single[1]) / 2
    if torch.allclose(combined, mean, atol=1e-5):
        raise Problem("not_rescaled", low=mean.min().item(), high=mean.max().item())
    raise Problem("wrong_combination", difference=(combined - both).abs().max().item())


# -- page 24: feature extraction with FX --------------------------------------------------


class _FlattenNet(nn.Module):
    """A model whose ``forward`` calls a function too: ``torch.flatten`` is a graph node."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.relu = nn.ReLU()
        self.fc = nn.Linear(4 * 6 * 6, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scores: torch.Tensor = self.fc(torch.flatten(self.relu(self.conv(x)), 1))
        return scores


@exercise(
    "24.2",
    passed=Text(
        "Your function found `{simple}` for `ht.SimpleCNN()` (every other node is a module's "
        "output) and `{flatten}` for a model whose `forward` calls `torch.flatten`: a "
        "function called in `forward` is a node of its own.",
        "对 `ht.SimpleCNN()`，你的函数找到了 `{simple}`（其余节点都是模块的输出）；"
        "对一个在 `forward` 中调用 `torch.flatten` 的模型，找到了 `{flatten}`，"
        "`forward` 中调用的函数自成一个节点。",
    ),
    not_names=Text(
        "`non_module_nodes(model)` returned `{got}`; it should return the names of the "
        "nodes (a list of strings).",
        "`non_module_nodes(model)` 返回了 `{got}`；它应当返回节点的名字（一个字符串列表）。",
    ),
    all_nodes=Text(
        "For `{model}` your function returned every graph node, `{got}`; keep only the "
        "nodes whose name is not a module's name (`dict(model.named_modules())`).",
        "对 `{model}`，你的函数返回了全部图节点 `{got}`；只保留名字不是模块名"
        "（`dict(model.named_modules())`）的节点。",
    ),
    wrong_nodes=Text(
        "For `{model}` your function returned `{got}`; the graph nodes that are not module "
        "outputs are `{expected}`: take `get_graph_node_names(model)[1]` and drop the names "
        "of `model.named_modules()`.",
        "对 `{model}`，你的函数返回了 `{got}`；不是模块输出的图节点是 `{expected}`。"
        "请取 `get_graph_node_names(model)[1]`，再去掉 `model.named_modules()` 中的名字。",
    ),
)
def _non_module_nodes(answer: object) -> Values:
    from torchvision.models.feature_extraction import get_graph_node_names  # noqa: PLC0415

    from ..models import SimpleCNN  # noqa: PLC0415 - the package imports this module

    non_module_nodes = require_callable(answer)
    found = {}
    for label, model in (("ht.SimpleCNN()", SimpleCNN(seed=0)), ("flatten model", _FlattenNet())):
        watch(model)
        nodes = get_graph_node_names(model)[1]
        modules = {name for name, _ in model.named_modules()}
        expected = [n for n in nodes if n not in modules]
        got = non_module_nodes(model)
        if not (isinstance(got, (list, tuple, set)) and all(isinstance(n, str) for n in got)):
            raise Problem("not_names", got=type(got).__name__)
        if set(got) == set(expected):
            found[label] = sorted(got, key=nodes.index)
            continue
        shown = {"model": label, "got": sorted(got), "expected": expected}
        raise Problem("all_nodes" if set(got) == set(nodes) else "wrong_nodes", **shown)
    return {"simple": found["ht.SimpleCNN()"], "flatten": found["flatten model"]}


@exercise(
    "24.3",
    passed=Text(
        "`create_feature_extractor` traced your model, and it computes what `GatedNet` "
        "does, when the convolution's mean is positive (the ReLU applies) and when it is "
        "negative (it does not): `torch.where` makes the choice inside the graph.",
        "`create_feature_extractor` 追踪了你的模型，而且无论卷积输出的均值为正（应用 ReLU）"
        "还是为负（不应用），它的计算都与 `GatedNet` 相同。`torch.where` 在图内部做出选择。",
    ),
    not_a_model=Text(
        'The check needs your class itself (`check("24.3", TraceableGatedNet)`), a '
        "`GatedNet` with `conv` and `head` whose `forward` has no Python `if`; it got "
        "`{got}`.",
        '检查需要你的类本身（`check("24.3", TraceableGatedNet)`），一个带有 `conv` 和 `head`、'
        "`forward` 中没有 Python `if` 的 `GatedNet`；它得到的是 `{got}`。",
    ),
    not_traceable=Text(
        "`create_feature_extractor` could not trace your model: `{error}`. FX runs "
        "`forward` once with stand-ins for the tensors, which have no values, so a Python "
        "`if` on a tensor cannot be decided. Compute both branches and pick with "
        "`torch.where(h.mean() > 0, F.relu(h), h)`.",
        "`create_feature_extractor` 无法追踪你的模型：`{error}`。FX 用没有数值的替身代替张量，"
        "把 `forward` 运行一遍，所以基于张量的 Python `if` 无法判断。请把两个分支都算出来，"
        "再用 `torch.where(h.mean() > 0, F.relu(h), h)` 选择。",
    ),
    always_relu=Text(
        "When the convolution's mean is negative, your model still applies the ReLU: "
        "`GatedNet` applies it only when the mean is positive. Keep the condition, as the "
        "first argument of `torch.where`.",
        "当卷积输出的均值为负时，你的模型仍然应用了 ReLU，而 `GatedNet` 只在均值为正时应用它。"
        "请保留这个条件，作为 `torch.where` 的第一个参数。",
    ),
    swapped=Text(
        "Your model applies the ReLU when the convolution's mean is negative, and not when "
        "it is positive: `torch.where(condition, a, b)` gives `a` where the condition holds, "
        "so `torch.where(h.mean() > 0, F.relu(h), h)`.",
        "你的模型在卷积输出的均值为负时应用 ReLU，为正时反而不应用。`torch.where(condition, a, b)` "
        "在条件成立处取 `a`，所以应写 `torch.where(h.mean() > 0, F.relu(h), h)`。",
    ),
    never_relu=Text(
        "When the convolution's mean is positive, your model does not apply the ReLU: "
        "`torch.where(condition, a, b)` gives `a` where the condition holds, so "
        "`torch.where(h.mean() > 0, F.relu(h), h)`.",
        "当卷积输出的均值为正时，你的模型没有应用 ReLU。`torch.where(condition, a, b)` "
        "在条件成立处取 `a`，所以应写 `torch.where(h.mean() > 0, F.relu(h), h)`。",
    ),
    wrong_output=Text(
        "Your model traces, but its output differs from `GatedNet`'s: keep the rest of "
        "`forward` as it was, `self.head(h.mean(dim=(2, 3)))`.",
        "你的模型可以追踪，但它的输出与 `GatedNet` 的不同。`forward` 的其余部分请保持原样，"
        "`self.head(h.mean(dim=(2, 3)))`。",
    ),
)
def _traceable_gated_net(answer: object) -> Values:
    import torch.fx  # noqa: PLC0415
    from torchvision.models.feature_extraction import create_feature_extractor  # noqa: PLC0415

    if not isinstance(answer, type) or not issubclass(answer, nn.Module):
        raise Problem("not_a_model", got=repr(answer)[:60])
    model = watch(answer()).eval()
    conv, head = getattr(model, "conv", None), getattr(model, "head", None)
    if not (isinstance(conv, nn.Conv2d) and isinstance(head, nn.Module)):
        raise Problem("not_a_model", got=type(model).__name__)
    if conv.bias is not None:
        with torch.no_grad():  # no bias: the mean's sign flips with the input's
            conv.bias.zero_()
    try:
        extractor = create_feature_extractor(model, return_nodes=["conv"])
    except torch.fx.proxy.TraceError as error:
        raise Problem("not_traceable", error=str(error).split("\n")[0][:120]) from None
    x = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        if conv(x).mean() < 0:
            x = -x  # now x gives a positive mean, -x a negative one
        matches = {}  # sign -> which GatedNet branch the output matches: "relu", "plain", None
        for sign, inputs in (("positive", x), ("negative", -x)):
            got, h = model(inputs), conv(inputs)
            assert torch.allclose(extractor(inputs)["conv"], h)  # the extractor returns conv
            relu, plain = (head(t.mean(dim=(2, 3))) for t in (F.relu(h), h))
            # allclose: the same float32 operations, in a traced or an eager forward
            matches[sign] = next(
                (
                    name
                    for name, t in (("relu", relu), ("plain", plain))
                    if torch.allclose(got, t, atol=1e-6)
                ),
                None,
            )
    found = (matches["positive"], matches["negative"])
    if found == ("relu", "plain"):
        return {}
    if found == ("relu", "relu"):
        raise Problem("always_relu")
    if found == ("plain", "relu"):
        raise Problem("swapped")
    if found == ("plain", "plain"):
        raise Problem("never_relu")
    raise Problem("wrong_output")


# -- page 25: modules that return tuples or run twice -------------------------------------


@exercise(
    "25.1",
    passed=Text(
        "For LSTMs of 1, 2 and 3 layers, the row your function returned equals "
        "`output[:, -1]`: `h_n` holds one row per layer, the top layer last, and `output` is "
        "the top layer's hidden state at every step.",
        "对 1 层、2 层和 3 层的 LSTM，你的函数返回的那一行都等于 `output[:, -1]`。`h_n` "
        "每层一行，最上层在最后，而 `output` 是最上层在每一步的隐藏状态。",
    ),
    not_a_row=Text(
        "`last_step(h_n)` returned `{got}`; for `h_n` of shape `{shape}` it should return one "
        "row, `[batch, hidden]`.",
        "`last_step(h_n)` 返回了 `{got}`；对形状为 `{shape}` 的 `h_n`，它应当返回一行，"
        "`[batch, hidden]`。",
    ),
    first_layer=Text(
        "For an LSTM of {layers} layers your function returned `h_n[0]`, the first layer's "
        "final state; `output` comes from the top layer, the last row: `h_n[-1]`.",
        "对 {layers} 层的 LSTM，你的函数返回了 `h_n[0]`，即第一层的最终状态；`output` "
        "来自最上层，也就是最后一行，`h_n[-1]`。",
    ),
    fixed_row=Text(
        "For an LSTM of {layers} layers the row your function returned is not the top "
        "layer's: `h_n` has one row per layer, so the top layer's row is `h_n[-1]`, whatever "
        "the number of layers.",
        "对 {layers} 层的 LSTM，你的函数返回的不是最上层的那一行。`h_n` 每层一行，"
        "所以无论有几层，最上层的那一行都是 `h_n[-1]`。",
    ),
)
def _last_step(answer: object) -> Values:
    last_step = require_callable(answer)
    sequences = torch.randn(2, 5, 4)
    for layers in (1, 2, 3):
        lstm = watch(nn.LSTM(input_size=4, hidden_size=8, num_layers=layers, batch_first=True))
        with torch.no_grad():
            output, (h_n, _) = lstm(sequences)
        row = last_step(h_n)
        if not (isinstance(row, torch.Tensor) and row.shape == (2, 8)):
            got = (
                f"Tensor{list(row.shape)}" if isinstance(row, torch.Tensor) else type(row).__name__
            )
            raise Problem("not_a_row", got=got, shape=f"[{layers}, 2, 8]")
        if not torch.equal(row, output[:, -1]):
            raise Problem("first_layer" if torch.equal(row, h_n[0]) else "fixed_row", layers=layers)
    return {}


def _two_blocks() -> nn.Sequential:
    """A stem and two torchvision ``BasicBlock``s (each calls its ``relu`` twice)."""
    from torchvision.models.resnet import BasicBlock  # noqa: PLC0415

    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), BasicBlock(4, 4), BasicBlock(4, 4))


@exercise(
    "25.2",
    passed=Text(
        "Over two forward passes, your function named the first call of `block.relu` "
        '`"after_bn1"` (the input of `conv2`) and the second `"after_add"` (the block\'s '
        "output): the pre-hook reset the counter before each run of the block.",
        '在两次前向传播中，你的函数把 `block.relu` 的第一次调用命名为 `"after_bn1"`'
        '（`conv2` 的输入），第二次命名为 `"after_add"`（该块的输出）。预钩子在该块每次运行之前'
        "都重置了计数器。",
    ),
    not_a_dict=Text(
        "`name_relu_calls(model, block, x)` returned `{got}`; it should return a dict with "
        'the keys `"after_bn1"` and `"after_add"`.',
        "`name_relu_calls(model, block, x)` 返回了 `{got}`；它应当返回一个字典，键为 "
        '`"after_bn1"` 和 `"after_add"`。',
    ),
    not_reset=Text(
        "The hook raised `IndexError` on the second forward pass: the counter went on "
        "from 2, past the two names. A forward pre-hook on `block` runs once before each run "
        'of the block: set the counter to 0 there (`counter["calls"] = 0`).',
        "第二次前向传播时钩子抛出了 `IndexError`，计数器从 2 接着往上数，超出了两个名字。"
        "`block` 上的前向预钩子在该块每次运行之前运行一次，请在那里把计数器设为 0"
        '（`counter["calls"] = 0`）。',
    ),
    swapped=Text(
        'Your `"after_bn1"` holds the block\'s output and `"after_add"` the input of '
        "`conv2`: the names are swapped. The first call of `relu` comes after `bn1`, the "
        "second after `out += identity`.",
        '你的 `"after_bn1"` 存的是该块的输出，`"after_add"` 存的是 `conv2` 的输入，名字反了。'
        "`relu` 的第一次调用在 `bn1` 之后，第二次在 `out += identity` 之后。",
    ),
    wrong_value=Text(
        '`"{name}"` does not hold the output of call {number} of `block.relu`: store '
        "`output.detach().clone()` under the name of the call, counted from 0 after the "
        "pre-hook's reset.",
        '`"{name}"` 存的不是 `block.relu` 第 {number} 次调用的输出，请把 '
        "`output.detach().clone()` 存在这次调用的名字下，调用次数在预钩子重置后从 0 开始数。",
    ),
)
def _name_relu_calls(answer: object) -> Values:
    name_relu_calls = require_callable(answer)
    model = watch(_two_blocks()).eval()
    block = model[1]
    x = torch.randn(2, 3, 8, 8)
    calls: list[torch.Tensor] = []
    with (
        block.get_submodule("relu").register_forward_hook(
            lambda m, args, out: calls.append(out.detach().clone())
        ),
        torch.no_grad(),
    ):
        model(x)
    try:
        named = name_relu_calls(model, block, x)
    except IndexError:
        raise Problem("not_reset") from None
    if not (isinstance(named, dict) and {"after_bn1", "after_add"} <= set(named)):
        raise Problem(
            "not_a_dict", got=repr(named)[:60] if not isinstance(named, dict) else sorted(named)
        )
    first, second = (named[k] for k in ("after_bn1", "after_add"))
    # allclose: the same computation, with or without autograd recording it
    same = [
        [isinstance(t, torch.Tensor) and torch.allclose(t.detach(), c) for c in calls]
        for t in (first, second)
    ]
    if same == [[False, True], [True, False]]:
        raise Problem("swapped")
    for number, (name, ok) in enumerate((("after_bn1", same[0][0]), ("after_add", same[1][1])), 1):
        if not ok:
            raise Problem("wrong_value", name=name, number=number)
    return {}


@exercise(
    "25.3",
    passed=Text(
        "With your pre-hook, `attention(q, k, v, need_weights=False)` returned its weights, "
        "`{shape}`, and the caller's other options still applied "
        "(`average_attn_weights=False`: one matrix per head).",
        "有了你的预钩子，`attention(q, k, v, need_weights=False)` 返回了它的权重 `{shape}`，"
        "而且调用者的其他选项仍然生效（`average_attn_weights=False`，每个头一个矩阵）。",
    ),
    no_weights=Text(
        "The attention still returned `None` for its weights: return the arguments with "
        '`need_weights` set to True, `return args, {{**kwargs, "need_weights": True}}`.',
        "注意力仍然返回 `None` 作为权重。请返回参数，并把 `need_weights` 设为 True，"
        '`return args, {{**kwargs, "need_weights": True}}`。',
    ),
    not_a_pair=Text(
        "PyTorch refused what your pre-hook returned: `{error}`. A pre-hook registered "
        "with `with_kwargs=True` returns None or a pair, the positional arguments and the "
        "keyword arguments: `return args, new_kwargs`.",
        "PyTorch 拒绝了你的预钩子的返回值：`{error}`。以 `with_kwargs=True` 注册的预钩子返回 None，"
        "或者返回一对值，即位置参数和关键字参数，`return args, new_kwargs`。",
    ),
    dropped_options=Text(
        "The caller passed `average_attn_weights=False` too, but the weights came back "
        "averaged over the heads, `{shape}`: your pre-hook dropped the caller's other "
        'keyword arguments. Keep them: `{{**kwargs, "need_weights": True}}`.',
        "调用者还传入了 `average_attn_weights=False`，但返回的权重是对各个头平均后的 `{shape}`，"
        '你的预钩子丢掉了调用者的其他关键字参数。请保留它们，`{{**kwargs, "need_weights": True}}`。',
    ),
)
def _want_weights(answer: object) -> Values:
    want_weights = require_callable(answer)
    attention = watch(nn.MultiheadAttention(embed_dim=8, num_heads=2, batch_first=True))
    tokens = torch.randn(2, 5, 8)
    with attention.register_forward_pre_hook(want_weights, with_kwargs=True):
        try:
            _, weights = attention(
                tokens, tokens, tokens, need_weights=False, average_attn_weights=False
            )
        except RuntimeError as error:
            if "pre-hook must return" not in str(error):
                raise
            raise Problem("not_a_pair", error=str(error)[:160]) from None
    if weights is None:
        raise Problem("no_weights")
    shape = f"torch.Size({list(weights.shape)})"
    if weights.shape == (2, 5, 5):
        raise Problem("dropped_options", shape=shape)
    assert weights.shape == (2, 2, 5, 5)
    return {"shape": shape}


# -- page 26: attention maps from a Vision Transformer ------------------------------------


def _random_attention(blocks: int, batch: int, heads: int, tokens: int) -> list[torch.Tensor]:
    """Attention weights as a model makes them: each row a softmax, summing to 1."""
    return [torch.randn(batch, heads, tokens, tokens).softmax(dim=-1) for _ in range(blocks)]


def _shape(value: object) -> str:
    """``Tensor[2, 5, 5]``, or the type's name for anything else."""
    if isinstance(value, torch.Tensor):
        return f"Tensor{list(value.shape)}"
    return type(value).__name__


@exercise(
    "26.1",
    passed=Text(
        "For three blocks of random attention, your rollout is the product of the "
        "head-averaged matrices, the last block's on the left, with no identity added: "
        "each block is taken to replace every token by a mix of the others.",
        "对三个块的随机注意力，你的展开是各块对注意力头取平均后的矩阵之积，最后一个块的矩阵在最左边，"
        "没有加上单位矩阵，即假定每个块都用其他词元的混合替换了每个词元。",
    ),
    not_a_matrix=Text(
        "`plain_rollout(attention)` returned `{got}`; for blocks of weights `{shape}` it "
        "should return one matrix per image, `{expected}`.",
        "`plain_rollout(attention)` 返回了 `{got}`；对于形状为 `{shape}` 的各块权重，"
        "它应当为每张图像返回一个矩阵，`{expected}`。",
    ),
    kept_heads=Text(
        "Your rollout keeps one matrix per head, `{got}`: average the heads of each block "
        "first, `weights.mean(dim=1)`.",
        "你的展开为每个注意力头保留了一个矩阵，`{got}`。请先对每个块的注意力头取平均，"
        "`weights.mean(dim=1)`。",
    ),
    added_identity=Text(
        "Your rollout still adds the identity: that is the page's rollout. The exercise "
        "leaves it out: multiply the head-averaged matrices as they are.",
        "你的展开仍然加上了单位矩阵，那是本页的展开。这个练习去掉了它，请直接把对注意力头取平均后的矩阵相乘。",
    ),
    wrong_order=Text(
        "Your rollout multiplies the blocks in the other order: the tokens pass through the "
        "first block first, so each later block's matrix goes on the left, "
        "`plain = weights.mean(dim=1) @ plain`.",
        "你的展开按相反的顺序把各块相乘。词元先经过第一个块，所以后面每个块的矩阵都应乘在左边，"
        "`plain = weights.mean(dim=1) @ plain`。",
    ),
    wrong_rollout=Text(
        "Your rollout differs from the product of the head-averaged matrices by up to "
        "{difference:.3g}: start from the identity and, for each block from the first to "
        "the last, compute `plain = weights.mean(dim=1) @ plain`.",
        "你的展开与各块对注意力头取平均后的矩阵之积最多相差 {difference:.3g}。请从单位矩阵开始，"
        "从第一个块到最后一个块，依次计算 `plain = weights.mean(dim=1) @ plain`。",
    ),
)
def _plain_rollout(answer: object) -> Values:
    plain_rollout = require_callable(answer)
    attention = _random_attention(blocks=3, batch=2, heads=4, tokens=5)
    got = plain_rollout([w.clone() for w in attention])
    shape = "[2, 4, 5, 5] x 3"
    if isinstance(got, torch.Tensor) and got.shape == (2, 4, 5, 5):
        raise Problem("kept_heads", got=_shape(got))
    if not (isinstance(got, torch.Tensor) and got.shape == (2, 5, 5)):
        raise Problem("not_a_matrix", got=_shape(got), shape=shape, expected="Tensor[2, 5, 5]")
    averaged = [w.mean(dim=1) for w in attention]
    eye = torch.eye(5)
    candidates = {"passed": eye, "wrong_order": eye, "added_identity": eye}
    for mean in averaged:
        candidates["passed"] = mean @ candidates["passed"]
        candidates["wrong_order"] = candidates["wrong_order"] @ mean
        mixed = (mean + eye) / (mean + eye).sum(dim=-1, keepdim=True)
        candidates["added_identity"] = mixed @ candidates["added_identity"]
    got = got.detach()
    # float32 products of 5 x 5 matrices with entries in [0, 1]: rounding stays below 1e-6
    for name, expected in candidates.items():
        if torch.allclose(got, expected, atol=1e-6):
            if name == "passed":
                return {}
            raise Problem(name)
    difference = (got - candidates["passed"]).abs().max().item()
    raise Problem("wrong_rollout", difference=difference)


@exercise(
    "26.2",
    passed=Text(
        "Your maps are the class token's rows, one per head, over the 64 patches on their "
        "8 x 8 grid: `weights[:, :, 0, 1:]`, how much the class token reads from each "
        "patch.",
        "你的热力图是类别词元所在的行，每个注意力头一张，覆盖排在 8 x 8 网格上的 64 个小块，"
        "即 `weights[:, :, 0, 1:]`，类别词元从每个小块读取了多少。",
    ),
    wrong_shape=Text(
        "`class_token_maps(weights)` returned `{got}`; for weights `[2, 4, 65, 65]` (2 "
        "images, 4 heads, 65 tokens) it should return `[2, 4, 8, 8]`: one 8 x 8 map per "
        "image and head.",
        "`class_token_maps(weights)` 返回了 `{got}`；对于 `[2, 4, 65, 65]` 的权重"
        "（2 张图像，4 个注意力头，65 个词元），它应当返回 `[2, 4, 8, 8]`，每张图像、每个注意力头一张 8 x 8 的热力图。",
    ),
    column=Text(
        "Your maps are the class token's column, `weights[:, :, 1:, 0]`: how much each "
        "patch reads from the class token. Row *i* says what token *i* reads, so the class "
        "token's attention is its row, `weights[:, :, 0, 1:]`.",
        "你的热力图取的是类别词元所在的列，`weights[:, :, 1:, 0]`，即每个小块从类别词元"
        "读取了多少。第 *i* 行说明词元 *i* 读取了什么，所以类别词元的注意力是它所在的行，"
        "`weights[:, :, 0, 1:]`。",
    ),
    with_class_token=Text(
        "Your maps start at token 0, the class token itself, so every patch sits one place "
        "off on the grid: drop it, `weights[:, :, 0, 1:]`.",
        "你的热力图从第 0 个词元，也就是类别词元本身开始，于是每个小块在网格上都错开了一位。"
        "请去掉它，`weights[:, :, 0, 1:]`。",
    ),
    wrong_maps=Text(
        "Your maps are not the class token's rows over the patches: take "
        "`weights[:, :, 0, 1:]` (row 0, the class token; columns 1 to 64, the patches) and "
        "reshape it to `[B, heads, 8, 8]`.",
        "你的热力图不是类别词元在各小块上的那一行。请取 `weights[:, :, 0, 1:]`"
        "（第 0 行是类别词元，第 1 到 64 列是各小块），再变形为 `[B, heads, 8, 8]`。",
    ),
)
def _class_token_maps(answer: object) -> Values:
    class_token_maps = require_callable(answer)
    (weights,) = _random_attention(blocks=1, batch=2, heads=4, tokens=65)
    got = class_token_maps(weights.clone())
    if not (isinstance(got, torch.Tensor) and got.shape == (2, 4, 8, 8)):
        raise Problem("wrong_shape", got=_shape(got))
    got = got.detach()
    if torch.equal(got, weights[:, :, 0, 1:].reshape(2, 4, 8, 8)):
        return {}
    if torch.equal(got, weights[:, :, 1:, 0].reshape(2, 4, 8, 8)):
        raise Problem("column")
    if torch.equal(got, weights[:, :, 0, :64].reshape(2, 4, 8, 8)):
        raise Problem("with_class_token")
    raise Problem("wrong_maps")


class _TinyViT(nn.Module):
    """A ViT in miniature: 4x4 patches of a 16x16 image, a class token, one encoder block."""

    def __init__(self) -> None:
        from torchvision.models.vision_transformer import Encoder  # noqa: PLC0415

        super().__init__()
        self.patches = nn.Conv2d(3, 8, kernel_size=4, stride=4)
        self.class_token = nn.Parameter(torch.randn(1, 1, 8))
        self.encoder = Encoder(
            seq_length=17,
            num_layers=1,
            num_heads=2,
            hidden_dim=8,
            mlp_dim=16,
            dropout=0.0,
            attention_dropout=0.0,
        )
        self.head = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self.patches(x).flatten(2).transpose(1, 2)  # [B, 16, 8]
        tokens = torch.cat([self.class_token.expand(len(x), -1, -1), tokens], dim=1)
        scores: torch.Tensor = self.head(self.encoder(tokens)[:, 0])
        return scores


@exercise(
    "26.3",
    passed=Text(
        "On a small ViT, your maps are Layer-CAM's at `{layer}`, with the tokens arranged "
        "on their grid by `ht.token_reshape_transform`: each token weighted by its own "
        "gradient.",
        "在一个小型 ViT 上，你的热力图就是 `{layer}` 处的 Layer-CAM 热力图，词元由 "
        "`ht.token_reshape_transform` 排到它们的网格上，每个词元都由它自己的梯度加权。",
    ),
    no_reshape=Text(
        "Your function raised the library's error: the output of `{layer}` is tokens "
        "`[B, tokens, C]`, not a feature map `[B, C, H, W]`. Pass "
        "`reshape_transform=ht.token_reshape_transform` to `ht.LayerCAM`.",
        "你的函数引发了库的错误：`{layer}` 的输出是词元 `[B, tokens, C]`，而不是特征图 "
        "`[B, C, H, W]`。请把 `reshape_transform=ht.token_reshape_transform` 传给 `ht.LayerCAM`。",
    ),
    grad_cam=Text(
        "Your maps are Grad-CAM's: one weight per channel, the gradient averaged over the "
        "tokens. Layer-CAM weights each token by its own gradient: use `ht.LayerCAM`.",
        "你的热力图是 Grad-CAM 的：每个通道一个权重，即梯度在各词元上的平均。Layer-CAM "
        "用每个词元自己的梯度为它加权，请使用 `ht.LayerCAM`。",
    ),
    wrong_maps=Text(
        "`layer_cam_maps(model, layer, images)` returned `{got}`, not Layer-CAM's maps "
        "`{expected}` at `{layer}`: return "
        "`ht.LayerCAM(model, layer, reshape_transform=ht.token_reshape_transform)(images)`.",
        "`layer_cam_maps(model, layer, images)` 返回了 `{got}`，而不是 `{layer}` 处的 "
        "Layer-CAM 热力图 `{expected}`，请返回 "
        "`ht.LayerCAM(model, layer, reshape_transform=ht.token_reshape_transform)(images)`。",
    ),
)
def _layer_cam_maps(answer: object) -> Values:
    layer_cam_maps = require_callable(answer)
    model = watch(_TinyViT()).eval()
    layer = "encoder.layers.encoder_layer_0.ln_1"
    images = torch.randn(2, 3, 16, 16)
    expected = LayerCAM(model, layer, reshape_transform=token_reshape_transform)(images)
    try:
        got = layer_cam_maps(model, layer, images.clone())
    except ValueError as error:
        if "reshape_transform=token_reshape_transform" in str(error):  # the library's advice
            raise Problem("no_reshape", layer=layer) from None
        raise
    # maps in [0, 1], the same computation: float32 rounding only
    if isinstance(got, torch.Tensor) and got.shape == expected.shape:
        if torch.allclose(got.detach(), expected, atol=1e-5):
            return {"layer": layer}
        grad_cam = GradCAM(model, layer, reshape_transform=token_reshape_transform)(images)
        if torch.allclose(got.detach(), grad_cam, atol=1e-5):
            raise Problem("grad_cam")
    shown = {"got": _shape(got), "expected": _shape(expected), "layer": layer}
    raise Problem("wrong_maps", **shown)


# -- page 27: segmentation and similarity ------------------------------------------------


def _tiny_segmenter() -> nn.Sequential:
    """Features (``"1"``, a ReLU), then a 1 x 1 convolution: 3 classes per pixel, class 0 first.

    Linear after the ReLU, like page 27's ``Segmenter`` after ``encoder.relu3``.
    """
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 3, 1)).eval()


@exercise(
    "27.1",
    passed=Text(
        "Your function explains class 0, the background, over the pixels predicted as "
        "background: `ht.SegmentationTarget(0)` sums that class's logits over its region.",
        "你的函数解释的是类别 0，也就是背景，区域是被预测为背景的像素："
        "`ht.SegmentationTarget(0)` 把这个类别的 logit 在它的区域上求和。",
    ),
    class_index=Text(
        "Your function raised the library's error for `target=0`: a class index picks one "
        "score per image from a classifier's output `[B, classes]`, but a segmentation "
        "output has one score per pixel. Sum the region's scores with "
        "`target=ht.SegmentationTarget(0)`.",
        "你的函数对 `target=0` 引发了库的错误。类别索引从分类器的输出 `[B, classes]` 中"
        "为每张图像取一个得分，而分割模型的输出每个像素都有一个得分。请用 "
        "`target=ht.SegmentationTarget(0)` 对区域内的得分求和。",
    ),
    wrong_class=Text(
        "Your map explains class {category}, not the background: the background is class 0, "
        "`ht.SegmentationTarget(0)`.",
        "你的热力图解释的是类别 {category}，而不是背景。背景是类别 0，`ht.SegmentationTarget(0)`。",
    ),
    wrong_map=Text(
        "`background_map(cam, image)` returned `{got}`, not the map `{expected}` of "
        "`cam(image, target=ht.SegmentationTarget(0))[0]`.",
        "`background_map(cam, image)` 返回了 `{got}`，而不是 "
        "`cam(image, target=ht.SegmentationTarget(0))[0]` 的热力图 `{expected}`。",
    ),
)
def _background_map(answer: object) -> Values:
    from ..targets import SegmentationTarget  # noqa: PLC0415

    background_map = require_callable(answer)
    model = watch(_tiny_segmenter())
    image = torch.randn(1, 3, 8, 8)
    cam = GradCAM(model, "1")
    maps = [cam(image, target=SegmentationTarget(c))[0] for c in range(3)]
    try:
        got = background_map(cam, image.clone())
    except ValueError as error:
        if "class-index target needs" in str(error):  # the library's error for target=0
            raise Problem("class_index") from None
        raise
    if isinstance(got, torch.Tensor) and got.shape == maps[0].shape:
        # maps in [0, 1], the same computation: float32 rounding only
        same = [c for c in range(3) if torch.allclose(got.detach(), maps[c], atol=1e-5)]
        if 0 in same:
            return {}
        if same:
            raise Problem("wrong_class", category=same[0])
    raise Problem("wrong_map", got=_shape(got), expected=_shape(maps[0]))


@exercise(
    "27.2",
    passed=Text(
        "Your function scored the region without the layer's contribution, {without:.3f} "
        "(with it: {full:.3f}), and removed its hook. The difference, {difference:.3f}, is "
        "the sum of HiResCAM's signed map, {signed:.3f}: the model is linear after that "
        "layer.",
        "你的函数算出了去掉这一层贡献后区域的得分 {without:.3f}（有它时为 {full:.3f}），"
        "并且移除了它的钩子。两者之差 {difference:.3f} 等于 HiResCAM 有符号热力图之和 "
        "{signed:.3f}，因为模型在这一层之后是线性的。",
    ),
    not_a_score=Text(
        "`score_without(model, layer, image, target)` returned `{got}`; it should return the "
        "target's score, one number (`target(model(image)).item()`).",
        "`score_without(model, layer, image, target)` 返回了 `{got}`；它应当返回目标的得分，"
        "一个数（`target(model(image)).item()`）。",
    ),
    returned_none=Text(
        "Your function returned the score with the layer's contribution, {full:.3f}: the "
        "hook did not replace the output. A forward hook changes the output only by "
        "returning the new one: `return torch.zeros_like(output)`.",
        "你的函数返回的是包含这一层贡献的得分 {full:.3f}，钩子没有替换输出。前向钩子只有返回新的输出"
        "才能改变输出，`return torch.zeros_like(output)`。",
    ),
    wrong_score=Text(
        "Your function returned {got:.3f}; with the layer's output replaced by zeros the "
        "score is {without:.3f} (and {full:.3f} without the hook).",
        "你的函数返回了 {got:.3f}；把这一层的输出换成零之后，得分应为 {without:.3f}"
        "（不加钩子时为 {full:.3f}）。",
    ),
)
def _score_without(answer: object) -> Values:
    from ..cam import HiResCAM  # noqa: PLC0415
    from ..targets import SegmentationTarget  # noqa: PLC0415

    score_without = require_callable(answer)
    model = watch(_tiny_segmenter())
    image = torch.randn(1, 3, 8, 8)
    with torch.no_grad():
        predicted = model(image).argmax(dim=1)[0]
    category = int(predicted.flatten().mode().values)  # the class of most pixels
    target = SegmentationTarget(category, mask=predicted == category)
    with torch.no_grad():
        full = target(model(image)).item()
        with model[1].register_forward_hook(lambda m, args, out: torch.zeros_like(out)):
            without = target(model(image)).item()
    got = score_without(model, model[1], image.clone(), target)
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        got = got.item()
    if not isinstance(got, (int, float)) or isinstance(got, bool):
        raise Problem("not_a_score", got=_shape(got))
    shown = {"got": float(got), "without": without, "full": full}
    # sums of 64 float32 logits: the same computation may round differently, by far less
    # than 1e-4 of their size
    tolerance = 1e-4 * max(1.0, abs(full))
    if abs(got - full) <= tolerance < abs(without - full):
        raise Problem("returned_none", **shown)
    if abs(got - without) > tolerance:
        raise Problem("wrong_score", **shown)
    signed = HiResCAM(model, "1", relu=False)(image, target=target, raw=True).sum().item()
    return {"without": without, "full": full, "difference": full - without, "signed": signed}


@exercise(
    "27.3",
    passed=Text(
        "Your target gives the same scores as `ht.SimilarityTarget(reference)`, one per "
        "embedding, and so the same map: the cosine similarity of each embedding to the "
        "reference.",
        "你的目标给出的得分与 `ht.SimilarityTarget(reference)` 相同，每个嵌入一个，"
        "因此热力图也相同，它就是每个嵌入与参考嵌入的余弦相似度。",
    ),
    not_a_target=Text(
        "`similarity_target(reference)` returned a `{got}`; it should return a function "
        "of the model's output, `lambda out: ...`.",
        "`similarity_target(reference)` 返回了一个 `{got}`；它应当返回一个以模型输出为参数的函数，"
        "`lambda out: ...`。",
    ),
    wrong_shape=Text(
        "For embeddings `[4, 6]` your target returned `{got}`; a target returns one score per "
        "image, `[4]`: the similarity along the embedding's dimension, "
        "`F.cosine_similarity(out, reference[None], dim=1)`.",
        "对于嵌入 `[4, 6]`，你的目标返回了 `{got}`。目标为每张图像返回一个得分，`[4]`，"
        "即沿嵌入维度计算的相似度，`F.cosine_similarity(out, reference[None], dim=1)`。",
    ),
    dot_product=Text(
        "Your target is the dot product `out @ reference`: it grows with the embedding's "
        "length. The cosine similarity divides by both lengths, "
        "`F.cosine_similarity(out, reference[None], dim=1)`.",
        "你的目标是点积 `out @ reference`，它随嵌入的长度增大。余弦相似度要除以两者的长度，"
        "`F.cosine_similarity(out, reference[None], dim=1)`。",
    ),
    wrong_scores=Text(
        "Your target's scores `{got}` are not the cosine similarities `{expected}`: use "
        "`F.cosine_similarity(out, reference[None], dim=1)`.",
        "你的目标的得分 `{got}` 不是余弦相似度 `{expected}`，请使用 "
        "`F.cosine_similarity(out, reference[None], dim=1)`。",
    ),
)
def _similarity_target(answer: object) -> Values:
    from ..targets import SimilarityTarget  # noqa: PLC0415

    similarity_target = require_callable(answer)
    reference = torch.randn(6)
    embeddings = torch.randn(4, 6) * torch.tensor([[0.5], [1.0], [2.0], [4.0]])
    target = similarity_target(reference.clone())
    if not callable(target):
        raise Problem("not_a_target", got=type(target).__name__)
    got = target(embeddings.clone())
    if not (isinstance(got, torch.Tensor) and got.shape == (4,)):
        raise Problem("wrong_shape", got=_shape(got))
    expected = SimilarityTarget(reference)(embeddings)
    got = got.detach()
    # cosines in [-1, 1], computed in another order: float32 rounding only
    if torch.allclose(got, expected, atol=1e-6):
        return {}
    if torch.allclose(got, embeddings @ reference, atol=1e-5):
        raise Problem("dot_product")
    rounded = {"got": [round(v, 3) for v in got.tolist()]}
    raise Problem("wrong_scores", **rounded, expected=[round(v, 3) for v in expected.tolist()])


# -- page 27b: object detection ----------------------------------------------------------


def _two_detections() -> tuple[nn.Module, torch.Tensor, list[dict[str, torch.Tensor]]]:
    """A random ``TinyDetector`` (every cell a detection), an image and its detections."""
    from ..detection import TinyDetector  # noqa: PLC0415

    detector = watch(TinyDetector(score_threshold=0.0, seed=0)).eval()
    image = torch.rand(1, 3, 64, 64)
    with torch.no_grad():
        detections = detector(image)
    return detector, image, detections


@exercise(
    "27b.1",
    passed=Text(
        "Your target scores {total:.4f}, the two detections' scores added ({first:.4f} + "
        "{second:.4f}), and Grad-CAM's signed map for it is the sum of the two single "
        "maps (largest difference {difference:.1e}, rounding): the gradient of a sum is "
        "the sum of the gradients.",
        "你的目标得分为 {total:.4f}，即两个检测的得分之和（{first:.4f} + {second:.4f}），"
        "它的 Grad-CAM 带符号热力图等于两张单独的热力图之和（最大相差 {difference:.1e}，"
        "只是舍入误差）。和的梯度等于梯度的和。",
    ),
    not_one_target=Text(
        "`both_shapes_target(labels, boxes)` returned a `{got}`; a CAM call takes one "
        "target: one `ht.BoxScoreTarget(labels, boxes)` holds both labels `[2]` and both "
        "boxes `[2, 4]`.",
        "`both_shapes_target(labels, boxes)` 返回了一个 `{got}`；一次 CAM 调用只接受一个目标。"
        "一个 `ht.BoxScoreTarget(labels, boxes)` 就能同时容纳两个标签 `[2]` 和两个边界框 `[2, 4]`。",
    ),
    one_box=Text(
        "Your target scores {total:.4f}, the score of one detection only; the two scores "
        "are {first:.4f} and {second:.4f}. Pass all the labels and all the boxes: "
        "`ht.BoxScoreTarget(labels, boxes)`.",
        "你的目标得分为 {total:.4f}，只是一个检测的得分；两个得分分别是 {first:.4f} 和 "
        "{second:.4f}。请传入全部标签和全部边界框，`ht.BoxScoreTarget(labels, boxes)`。",
    ),
    wrong_score=Text(
        "Your target scores {total:.4f}; the sum of the two detections' scores is "
        "{expected:.4f}: use `ht.BoxScoreTarget(labels, boxes)`.",
        "你的目标得分为 {total:.4f}；两个检测的得分之和是 {expected:.4f}，"
        "请使用 `ht.BoxScoreTarget(labels, boxes)`。",
    ),
)
def _both_shapes_target(answer: object) -> Values:
    from ..targets import BoxScoreTarget  # noqa: PLC0415

    both_shapes_target = require_callable(answer)
    detector, image, detections = _two_detections()
    found = detections[0]
    labels, boxes, scores = found["labels"][:2], found["boxes"][:2], found["scores"][:2]
    target = both_shapes_target(labels.clone(), boxes.clone())
    if not callable(target):
        raise Problem("not_one_target", got=type(target).__name__)
    with torch.no_grad():
        total = target(detector(image))
    if isinstance(total, torch.Tensor) and total.numel() == 1:
        total = total.item()
    if not isinstance(total, float):
        raise Problem("not_one_target", got=type(target).__name__)
    first, second = scores.tolist()
    shown = {"total": total, "first": first, "second": second, "expected": first + second}
    # sums of two float32 scores in [0, 1]: rounding stays far below 1e-5
    if abs(total - (first + second)) > 1e-5:
        single = min(abs(total - first), abs(total - second)) <= 1e-5
        raise Problem("one_box" if single else "wrong_score", **shown)
    cam = GradCAM(detector, "relu3", relu=False)
    together = cam(image, target=target, raw=True)
    apart = sum(
        cam(image, target=BoxScoreTarget(int(k), b), raw=True)
        for k, b in zip(labels, boxes, strict=True)
    )
    assert isinstance(apart, torch.Tensor)
    difference = (together - apart).abs().max().item()
    return {"total": total, "first": first, "second": second, "difference": difference}


@exercise(
    "27b.2",
    passed=Text(
        "Your target gives the detection's score, {score:.4f}, on the image, and 0 on a "
        "copy where the detection is gone: ScoreCAM's masked copies lose the detection "
        'often, and `missing="zero"` lets them score 0 instead of stopping the call.',
        "你的目标在原图上给出该检测的得分 {score:.4f}，在检测消失的副本上给出 0。ScoreCAM "
        '的掩码副本经常丢失这个检测，`missing="zero"` 让它们得 0 分，而不是让调用中止。',
    ),
    not_a_target=Text(
        "`score_cam_target(label, box)` returned a `{got}`; it should return a target, "
        "`ht.BoxScoreTarget(...)`.",
        "`score_cam_target(label, box)` 返回了一个 `{got}`；它应当返回一个目标，"
        "`ht.BoxScoreTarget(...)`。",
    ),
    raised_on_missing=Text(
        "On a copy of the image where the detection is gone, your target raised "
        "`ValueError`: by default a box that matches no detection stops the call. ScoreCAM "
        "scores many masked copies, and on most of them the detection vanishes: pass "
        '`missing="zero"`, so that they score 0.',
        "在检测消失的图像副本上，你的目标抛出了 `ValueError`，默认情况下，"
        "没有匹配到任何检测的边界框会中止调用。ScoreCAM 要为许多掩码副本打分，"
        '其中大多数副本上检测都消失了，请传入 `missing="zero"`，让它们得 0 分。',
    ),
    wrong_score=Text(
        "Your target gives {got:.4f} on the image; the detection's score is {score:.4f}: "
        'use `ht.BoxScoreTarget(label, box, missing="zero")`.',
        "你的目标在原图上给出 {got:.4f}；该检测的得分是 {score:.4f}，"
        '请使用 `ht.BoxScoreTarget(label, box, missing="zero")`。',
    ),
)
def _score_cam_target(answer: object) -> Values:
    score_cam_target = require_callable(answer)
    _, _, detections = _two_detections()
    found = detections[0]
    label, box, score = int(found["labels"][0]), found["boxes"][0], found["scores"][0].item()
    target = score_cam_target(label, box.clone())
    if not callable(target):
        raise Problem("not_a_target", got=type(target).__name__)
    gone = [{"boxes": torch.zeros(0, 4), "labels": torch.zeros(0, dtype=torch.long)}]
    gone[0]["scores"] = torch.zeros(0)
    got = target(detections)
    got = got.item() if isinstance(got, torch.Tensor) and got.numel() == 1 else got
    # the same float32 score, read back: equal up to rounding
    if not isinstance(got, float) or abs(got - score) > 1e-5:
        if not isinstance(got, float):
            raise Problem("not_a_target", got=type(target).__name__)
        raise Problem("wrong_score", got=got, score=score)
    try:
        vanished = target(gone)
    except ValueError:
        raise Problem("raised_on_missing") from None
    if float(vanished) != 0.0:
        raise Problem("wrong_score", got=float(vanished), score=0.0)
    return {"score": score}
