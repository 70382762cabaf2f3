"""The checks of chapter 4, pages 15 to 18b: training, Grad-CAM, the CAM family, measuring maps."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..cam import GradCAM
from ..models import SimpleCNN
from ._guard import watch
from ._helpers import close_to_a_printed_number, printed_by, require_callable, returned_type
from ._language import Text
from ._registry import Problem, Values, exercise


def _tiny_cnn() -> SimpleCNN:
    """A small ``SimpleCNN`` with global max pooling, like the chapter's model, untrained.

    Channels (4, 8, 8) on 32 x 32 images: ``relu3``'s map is 4 x 4, and a whole
    check runs in well under a second. Its weights come from a fixed seed.
    """
    return watch(SimpleCNN(channels=(4, 8, 8), pool="max", seed=0).eval())


def _as_map(value: object, size: tuple[int, int]) -> Tensor | None:
    """A learner's map for one image as ``[H, W]`` at ``size``, scaled to [0, 1]; None if not a map.

    Raw maps (at the feature map's resolution) are upsampled bilinearly, as
    ``grad_cam`` does, so that a raw map and a scaled one compare alike.
    """
    if not isinstance(value, Tensor) or value.dim() < 2 or value.numel() == 0:
        return None
    if value.dim() > 2 and value.shape[:-2].numel() != 1:
        return None
    one = value.detach().float().reshape(1, 1, *value.shape[-2:])
    if tuple(one.shape[-2:]) != size:
        one = F.interpolate(one, size=size, mode="bilinear", align_corners=False)
    one = one[0, 0]
    span = one.max() - one.min()
    return (one - one.min()) / span.clamp(min=1e-12)


# -- page 16: Grad-CAM from scratch ------------------------------------------------------


@exercise(
    "16.1",
    passed=Text(
        "Your function explained class {second}, the second largest logit of the check's "
        "image (the predicted class is {first}): the target is just the index of the score "
        "that `backward()` starts from.",
        "你的函数解释的是类别 {second}，也就是检查所用图像的第二大 logit（预测类别是 {first}）。"
        "目标只是 `backward()` 出发的那个得分的索引。",
    ),
    not_a_map=Text(
        "`second_class_cam(model, layer, image)` returned a `{got}`; it should return the "
        "Grad-CAM map of the image, a tensor `[1, H, W]` like `grad_cam`'s.",
        "`second_class_cam(model, layer, image)` 返回了一个 `{got}`；它应当返回这张图像的 "
        "Grad-CAM 热力图，一个像 `grad_cam` 返回的那样的 `[1, H, W]` 张量。",
    ),
    predicted_class=Text(
        "Your map is the one of class {first}, the predicted class (the largest logit). The "
        "second most likely class is the second largest logit: "
        "`model(image).topk(2).indices[0, 1]`, passed as the target.",
        "你的热力图是类别 {first} 的，也就是预测类别（最大的 logit）。第二可能的类别是第二大的 logit："
        "`model(image).topk(2).indices[0, 1]`，把它作为目标传入。",
    ),
    wrong_class=Text(
        "Your map is the one of class {found}, the logit ranked {rank} of {classes}; the "
        "second most likely class is class {second}, the second largest logit: "
        "`model(image).topk(2).indices[0, 1]`.",
        "你的热力图是类别 {found} 的，它的 logit 在 {classes} 个中排第 {rank}；第二可能的类别是"
        "类别 {second}，也就是第二大的 logit：`model(image).topk(2).indices[0, 1]`。",
    ),
    not_gradcam=Text(
        "Your map is not the Grad-CAM map of any class of the check's model on `layer`: "
        "compute it as `grad_cam(model, layer, image, target=...)` does, with the hooks on "
        "the `layer` passed in.",
        "你的热力图不是检查所用模型在 `layer` 上任何一个类别的 Grad-CAM 热力图，请像 "
        "`grad_cam(model, layer, image, target=...)` 那样计算它，把钩子注册在传入的 `layer` 上。",
    ),
)
def _second_class_cam(answer: object) -> Values:
    second_class_cam = require_callable(answer)
    model = _tiny_cnn()
    image = torch.rand(1, 3, 32, 32)
    with torch.no_grad():
        order = model(image)[0].argsort(descending=True).tolist()
    cam = GradCAM(model, "relu3")
    expected = [cam(image, target=c)[0] for c in range(len(order))]
    returned = second_class_cam(model, model.relu3, image)
    found = _as_map(returned, (32, 32))
    if found is None:
        raise Problem("not_a_map", got=returned_type(returned))
    # two computations of the same map differ by float rounding (about 1e-7 of its range);
    # the maps of two classes differ by more than 0.1 somewhere on this image
    matches = [c for c, m in enumerate(expected) if torch.allclose(found, m, atol=1e-4)]
    shown = {"first": order[0], "second": order[1], "classes": len(order)}
    if order[1] in matches:
        return shown
    if order[0] in matches:
        raise Problem("predicted_class", **shown)
    if matches:
        rank = order.index(matches[0]) + 1
        raise Problem("wrong_class", found=matches[0], rank=rank, **shown)
    raise Problem("not_gradcam")


@exercise(
    "16.2",
    passed=Text(
        "Your raw map equals Grad-CAM of the probability p_c: its largest value is {mine:.2e}, "
        "against {logit:.2e} from the logit, for a probability of {p:.2f} on the check's "
        "model. The closer p_c gets to 1, the smaller the probability's gradient.",
        "你的原始热力图等于以概率 p_c 计算的 Grad-CAM：它的最大值是 {mine:.2e}，而用 logit 计算的是 "
        "{logit:.2e}（检查所用模型上的概率为 {p:.2f}）。p_c 越接近 1，概率的梯度就越小。",
    ),
    not_raw=Text(
        "`probability_cam(model, layer, image, target)` returned a `{got}` of shape "
        "`{shape}`; it should return the raw map `[1, h, w]` at the resolution of `layer`'s "
        "feature map, after the ReLU, before upsampling and scaling: the scaling would hide "
        "how large the map is.",
        "`probability_cam(model, layer, image, target)` 返回了一个形状为 `{shape}` 的 `{got}`；"
        "它应当返回原始热力图 `[1, h, w]`，分辨率与 `layer` 的特征图相同，经过 ReLU，"
        "但未上采样、未缩放。缩放会掩盖热力图的大小。",
    ),
    used_logit=Text(
        "Your map is the logit's map (largest value {mine:.2e}): differentiate the "
        "probability instead, `model(image).softmax(dim=1)[0, target]`, and call "
        "`backward()` on it.",
        "你的热力图是用 logit 计算的（最大值为 {mine:.2e}），请改为对概率求导："
        "`model(image).softmax(dim=1)[0, target]`，并对它调用 `backward()`。",
    ),
    all_zero=Text(
        "Your map is zero everywhere, while the probability's map is not (its largest value "
        "is {expected:.2e}). Is the softmax taken over `dim=0`? For a batch of one image, "
        "each probability over the batch is 1 whatever the logits, and its gradient is "
        "zero. The classes are along `dim=1`.",
        "你的热力图处处为零，而概率的热力图并非如此（它的最大值是 {expected:.2e}）。softmax 是不是沿 "
        "`dim=0` 计算的？对只有一张图像的批次，沿批次维度的每个概率都是 1，与 logit 无关，"
        "它的梯度为零。类别在 `dim=1` 上。",
    ),
    scaled=Text(
        "Your map has the probability map's shape, but it is scaled: its largest value is "
        "{mine:.2e}, and the raw map's is {expected:.2e}. Return the map before min-max "
        "scaling: the exercise compares how large the two maps are.",
        "你的热力图形状与概率的热力图相同，但被缩放过：它的最大值是 {mine:.2e}，而原始热力图的是 "
        "{expected:.2e}。请返回 min-max 缩放之前的图，这道练习要比较两张热力图的大小。",
    ),
    wrong_map=Text(
        "Your map is not Grad-CAM of the probability: its largest value is {mine:.2e}, and "
        "the expected one's is {expected:.2e}. Weigh each channel of `layer`'s output by "
        "the mean gradient of `model(image).softmax(dim=1)[0, target]`, add up, and apply "
        "the ReLU.",
        "你的热力图不是以概率计算的 Grad-CAM：它的最大值是 {mine:.2e}，而应有的热力图的是 {expected:.2e}。"
        "请用 `model(image).softmax(dim=1)[0, target]` 的平均梯度为 `layer` 输出的每个通道加权，"
        "求和，再应用 ReLU。",
    ),
)
def _probability_cam(answer: object) -> Values:
    probability_cam = require_callable(answer)
    model = _tiny_cnn()
    image = torch.rand(1, 3, 32, 32)
    with torch.no_grad():
        probabilities = model(image).softmax(dim=1)[0]
    target = int(probabilities.argmax())
    cam = GradCAM(model, "relu3")
    expected = cam(image, target=lambda out: out.softmax(dim=1)[:, target], raw=True)
    from_logit = cam(image, target=target, raw=True)
    returned = probability_cam(model, model.relu3, image, target)
    if not isinstance(returned, Tensor) or returned.numel() != expected.numel():
        shape = tuple(returned.shape) if isinstance(returned, Tensor) else "-"
        raise Problem("not_raw", got=returned_type(returned), shape=shape)
    mine = returned.detach().float().reshape(expected.shape)
    largest = expected.max().item()
    shown = {"mine": mine.max().item(), "expected": largest}
    # the same map computed in another order differs by float rounding: 1e-4 of its largest
    # value is far above that; the logit's map is several times larger than the probability's
    if torch.allclose(mine, expected, atol=1e-4 * largest, rtol=1e-4):
        p = probabilities[target].item()
        return {"mine": largest, "logit": from_logit.max().item(), "p": p}
    if torch.allclose(mine, from_logit, atol=1e-4 * from_logit.max().item(), rtol=1e-4):
        raise Problem("used_logit", **shown)
    if not mine.any():
        raise Problem("all_zero", **shown)
    if torch.allclose(mine, expected / largest, atol=1e-4, rtol=1e-4):
        raise Problem("scaled", **shown)
    raise Problem("wrong_map", **shown)


def _output_gradient(model: nn.Module, layer: nn.Module, image: Tensor, target: int) -> Tensor:
    """The gradient of ``model(image)[0, target]`` with respect to ``layer``'s output."""
    kept: dict[str, Tensor] = {}

    def keep(module: nn.Module, args: tuple[Any, ...], output: Tensor) -> None:
        kept["output"] = output

    with layer.register_forward_hook(keep):
        score = model(image)[0, target]
    (gradient,) = torch.autograd.grad(score, kept["output"])
    return gradient


@exercise(
    "16.3",
    passed=Text(
        "For `relu2` and `relu3` and a class that is not the predicted one, your function "
        "returned the gradient of that class's logit with respect to the layer's output, "
        "the tensor `∂y^c/∂A` that Grad-CAM averages.",
        "对 `relu2` 和 `relu3`，以及一个不是预测类别的类别，你的函数返回了该类别的 logit 对这一层"
        "输出的梯度，也就是 Grad-CAM 求平均的那个张量 `∂y^c/∂A`。",
    ),
    not_a_gradient=Text(
        "`layer_gradient(model, layer, image, target)` returned a `{got}`; it should "
        "return a tensor shaped like `{layer}`'s output, `{shape}`.",
        "`layer_gradient(model, layer, image, target)` 返回了一个 `{got}`；它应当返回一个与 "
        "`{layer}` 的输出形状相同的张量 `{shape}`。",
    ),
    returned_activation=Text(
        "For `{layer}` your function returned the layer's output, not its gradient: the "
        "forward hook sees the output; register a tensor hook on it "
        "(`output.register_hook(...)`), which receives the gradient during `backward()`.",
        "对 `{layer}`，你的函数返回的是这一层的输出，而不是它的梯度。前向钩子看到的是输出；"
        "请在输出上注册张量钩子（`output.register_hook(...)`），它会在 `backward()` 时收到梯度。",
    ),
    predicted_class=Text(
        "For `{layer}` your function returned the gradient of the predicted class's logit, "
        "but the check asked for class {target}: call `backward()` on "
        "`model(image)[0, target]`.",
        "对 `{layer}`，你的函数返回的是预测类别的 logit 的梯度，但检查要的是类别 {target}，"
        "请对 `model(image)[0, target]` 调用 `backward()`。",
    ),
    wrong_gradient=Text(
        "For `{layer}` and class {target}, your function returned a tensor that is not the "
        "gradient of `model(image)[0, target]` with respect to the layer's output.",
        "对 `{layer}` 和类别 {target}，你的函数返回的张量不是 `model(image)[0, target]` "
        "对这一层输出的梯度。",
    ),
)
def _layer_gradient(answer: object) -> Values:
    layer_gradient = require_callable(answer)
    model = _tiny_cnn()
    image = torch.rand(1, 3, 32, 32)
    with torch.no_grad():
        order = model(image)[0].argsort(descending=True).tolist()
    target = order[1]  # not the predicted class: an answer that uses argmax shows
    for name in ("relu2", "relu3"):
        layer = getattr(model, name)
        expected = _output_gradient(model, layer, image, target)
        returned = layer_gradient(model, layer, image, target)
        shown: dict[str, object] = {"layer": name, "target": target}
        if not isinstance(returned, Tensor) or returned.shape != expected.shape:
            shape = tuple(expected.shape)
            raise Problem("not_a_gradient", got=returned_type(returned), shape=shape, **shown)
        mine = returned.detach()
        # the same chain rule in another order: float rounding, far below 1e-5 of the largest
        scale = 1e-5 * expected.abs().max().item()
        if torch.allclose(mine, expected, atol=scale, rtol=1e-4):
            continue
        kept: list[Tensor] = []
        with (
            torch.no_grad(),
            layer.register_forward_hook(lambda m, a, out, seen=kept: seen.append(out)),
        ):
            model(image)
        if torch.allclose(mine, kept[0]):
            raise Problem("returned_activation", **shown)
        predicted = _output_gradient(model, layer, image, order[0])
        if torch.allclose(mine, predicted, atol=scale, rtol=1e-4):
            raise Problem("predicted_class", **shown)
        raise Problem("wrong_gradient", **shown)
    return {}


# -- page 17: the library's GradCAM ---------------------------------------------------------


def _shapes_model() -> nn.Module:
    """The chapter's trained model (its weights ship with the library: cheap, the same each run)."""
    from ..zoo import pretrained  # noqa: PLC0415 - the zoo imports the data and training modules

    return watch(pretrained("simple_cnn-shapes"))


@exercise(
    "17.1",
    passed=Text(
        "Your function's pointing game matches Grad-CAM's on `relu2` ({relu2:.3f}), on "
        "`relu3` ({relu3:.3f}) and on both, averaged ({both:.3f}), for the check's {n} "
        "images: a list of layers gives one map per layer, scaled and averaged.",
        "你的函数算出的指向游戏得分与 Grad-CAM 在 `relu2` 上（{relu2:.3f}）、在 `relu3` 上"
        "（{relu3:.3f}）以及两层平均（{both:.3f}）的一致（检查用了 {n} 张图像）。"
        "传入层的列表时，每层得到一张热力图，缩放后再求平均。",
    ),
    not_a_share=Text(
        "`pointing_score(model, layers, images, masks)` returned a `{got}`; it should return "
        "one number, the share of the images whose map peaks on the object (between 0 and "
        "1): `pointing_game(maps, masks).float().mean()`.",
        "`pointing_score(model, layers, images, masks)` 返回了一个 `{got}`；它应当返回一个数，"
        "即热力图峰值落在物体上的图像所占的比例（介于 0 和 1 之间）："
        "`pointing_game(maps, masks).float().mean()`。",
    ),
    one_layer=Text(
        "For `{layers}` your function returned {mine:.3f}, the score of `{used}` alone; the "
        "averaged map scores {expected:.3f}. Pass the whole list to `ht.GradCAM`: "
        "`ht.GradCAM(model, layers)`.",
        "对 `{layers}`，你的函数返回了 {mine:.3f}，这是只用 `{used}` 的得分；平均后的热力图得分是 "
        "{expected:.3f}。请把整个列表传给 `ht.GradCAM`：`ht.GradCAM(model, layers)`。",
    ),
    wrong_score=Text(
        "For `{layers}` your function returned {mine:.3f}; Grad-CAM's maps on these layers "
        "peak on the object in a share of {expected:.3f} of the images. Use the maps of "
        "`ht.GradCAM(model, layers)(images)` and `pointing_game(maps, masks)`.",
        "对 `{layers}`，你的函数返回了 {mine:.3f}；而这些层上的 Grad-CAM 热力图有 {expected:.3f} "
        "比例的图像峰值落在物体上。请使用 `ht.GradCAM(model, layers)(images)` 的热力图和 "
        "`pointing_game(maps, masks)`。",
    ),
)
def _pointing_score(answer: object) -> Values:
    from ..data import make_shapes  # noqa: PLC0415
    from ..metrics import pointing_game  # noqa: PLC0415

    pointing_score = require_callable(answer)
    model = _shapes_model()
    test = make_shapes(64, split="test", seed=3)
    cases: list[str | list[str]] = ["relu2", "relu3", ["relu2", "relu3"]]
    expected: dict[str, float] = {}
    for layers in cases:
        maps = GradCAM(model, layers)(test.images)
        expected[str(layers)] = pointing_game(maps, test.masks).float().mean().item()
    shown: dict[str, object] = {"n": len(test)}
    for layers in cases:
        returned = pointing_score(model, layers, test.images, test.masks)
        if isinstance(returned, Tensor) and returned.numel() == 1:
            returned = returned.item()
        if isinstance(returned, bool) or not isinstance(returned, (int, float)):
            raise Problem("not_a_share", got=returned_type(returned))
        key = str(layers)
        # exact (up to the float of a mean): ht.GradCAM computes the same maps for you and
        # for the check; the scores of relu3 and of the average differ by one image here
        if abs(returned - expected[key]) < 1e-6:
            shown[key.replace("['relu2', 'relu3']", "both")] = expected[key]
            continue
        wrong = {"layers": key.replace("'", '"'), "mine": returned, "expected": expected[key]}
        if isinstance(layers, list):
            for used in layers:
                if abs(returned - expected[used]) < 1e-6:
                    raise Problem("one_layer", used=used, **wrong)
        raise Problem("wrong_score", **wrong)
    return shown


@exercise(
    "17.2",
    passed=Text(
        "Your target returned one score per image, `out[:, 0] - out[:, 1]`: the circle's "
        "logit minus the square's. Its gradient is the difference of the two gradients, so "
        "Grad-CAM's signed map of it is the difference of the two signed maps.",
        "你的目标为每张图像返回一个得分 `out[:, 0] - out[:, 1]`，即圆形的 logit 减去正方形的 logit。"
        "它的梯度是两个梯度之差，所以它的 Grad-CAM 带符号热力图就是两张带符号热力图之差。",
    ),
    not_per_image=Text(
        "For an output of shape `{shape}` your target returned `{got}`; `GradCAM` needs one "
        "score per image, a tensor of shape `[{batch}]`: index the columns, "
        "`out[:, 0] - out[:, 1]`, and do not add up the batch.",
        "对形状为 `{shape}` 的输出，你的目标返回了 `{got}`；`GradCAM` 需要每张图像一个得分，"
        "即形状为 `[{batch}]` 的张量。请按列索引 `out[:, 0] - out[:, 1]`，不要对批次求和。",
    ),
    swapped=Text(
        "Your target returned the square's logit minus the circle's: what speaks for "
        '"square" rather than "circle". Class 0 is the circle: `out[:, 0] - out[:, 1]`.',
        "你的目标返回的是正方形的 logit 减去圆形的 logit，也就是支持“正方形”而非“圆形”的证据。"
        "类别 0 是圆形：`out[:, 0] - out[:, 1]`。",
    ),
    probabilities=Text(
        "Your target returned a difference of probabilities, not of logits: Grad-CAM "
        "explains pre-softmax scores (page 16), and a difference of logits is linear, so "
        "its map is the difference of the two maps. Use `out[:, 0] - out[:, 1]`.",
        "你的目标返回的是概率之差，而不是 logit 之差。Grad-CAM 解释的是 softmax 之前的得分"
        "（第 16 页），而 logit 之差是线性的，所以它的热力图就是两张热力图之差。请使用 "
        "`out[:, 0] - out[:, 1]`。",
    ),
    wrong_score=Text(
        "Your target returned scores that are not the circle's logit minus the square's: "
        "`out[:, 0] - out[:, 1]` (class 0 is the circle, class 1 the square).",
        "你的目标返回的得分不是圆形的 logit 减去正方形的 logit：`out[:, 0] - out[:, 1]`"
        "（类别 0 是圆形，类别 1 是正方形）。",
    ),
)
def _circle_minus_square(answer: object) -> Values:
    target = require_callable(answer)
    out = torch.randn(6, 5)
    returned = target(out)
    shown = {"shape": list(out.shape), "batch": len(out)}
    if not isinstance(returned, Tensor) or returned.shape != (len(out),):
        got = f"shape {list(returned.shape)}" if isinstance(returned, Tensor) else None
        raise Problem("not_per_image", got=got or returned_type(returned), **shown)
    expected = out[:, 0] - out[:, 1]
    # the same subtraction: equal up to float rounding
    if torch.allclose(returned, expected, atol=1e-6):
        return {}
    if torch.allclose(returned, -expected, atol=1e-6):
        raise Problem("swapped")
    probabilities = out.softmax(dim=1)
    if torch.allclose(returned, probabilities[:, 0] - probabilities[:, 1], atol=1e-6):
        raise Problem("probabilities")
    raise Problem("wrong_score")


@exercise(
    "17.3",
    passed=Text(
        "On the check's {n} two-object images, the second object's map peaks on the first "
        "object in {count} of them: the target selects the class, and the mask you score it "
        "on is the other object's.",
        "在检查所用的 {n} 张双物体图像上，第二个物体的热力图有 {count} 张峰值落在第一个物体上。"
        "目标选择类别，而你用来计分的掩码是另一个物体的。",
    ),
    not_a_count=Text(
        "`second_on_first(cam, two)` returned a `{got}`; it should return how often the "
        "peak falls on the first object: a count, or a share between 0 and 1.",
        "`second_on_first(cam, two)` 返回了一个 `{got}`；它应当返回峰值落在第一个物体上的频率："
        "一个次数，或者一个介于 0 和 1 之间的比例。",
    ),
    own_object=Text(
        "Your function counted {mine}, how often the second object's map peaks on the "
        "second object itself ({own} of {n}). Score the same maps on the first object's "
        "mask, `two.object_masks[:, 0]`.",
        "你的函数数出了 {mine}，这是第二个物体的热力图峰值落在第二个物体自己身上的次数"
        "（{n} 张中有 {own} 张）。请用第一个物体的掩码 `two.object_masks[:, 0]` 为同样的热力图计分。",
    ),
    other_way=Text(
        "Your function counted {mine}, how often the first object's map peaks on the "
        "second object. The exercise asks the other way round: the maps of "
        "`target=two.object_labels[:, 1]` on the mask `two.object_masks[:, 0]`.",
        "你的函数数出了 {mine}，这是第一个物体的热力图峰值落在第二个物体上的次数。"
        "练习问的是反过来的情况：`target=two.object_labels[:, 1]` 的热力图在掩码 "
        "`two.object_masks[:, 0]` 上的结果。",
    ),
    wrong_count=Text(
        "Your function counted {mine}; on the check's {n} images the second object's map "
        "peaks on the first object in {count} of them ({share:.3f}).",
        "你的函数数出了 {mine}；在检查所用的 {n} 张图像上，第二个物体的热力图有 {count} 张"
        "峰值落在第一个物体上（{share:.3f}）。",
    ),
)
def _second_on_first(answer: object) -> Values:
    from ..data import make_shapes  # noqa: PLC0415
    from ..metrics import pointing_game  # noqa: PLC0415

    second_on_first = require_callable(answer)
    cam = GradCAM(_shapes_model(), "relu3")
    two = make_shapes(32, variant="two", split="test", seed=5)
    first, second = two.object_labels[:, 0], two.object_labels[:, 1]
    first_mask, second_mask = two.object_masks[:, 0], two.object_masks[:, 1]
    maps_second = cam(two.images, target=second)
    counts = {
        "expected": int(pointing_game(maps_second, first_mask).sum()),
        "own": int(pointing_game(maps_second, second_mask).sum()),
        "other_way": int(pointing_game(cam(two.images, target=first), second_mask).sum()),
    }
    returned = second_on_first(cam, two)
    if isinstance(returned, Tensor) and returned.numel() == 1:
        returned = returned.item()
    if isinstance(returned, bool) or not isinstance(returned, (int, float)):
        raise Problem("not_a_count", got=returned_type(returned))
    n = len(two)
    # a share is a count divided by n; either is an answer. Both computations use the same
    # maps (the check's own cam), so the counts agree exactly
    found = {name: (c, c / n) for name, c in counts.items()}
    mine = returned if float(returned).is_integer() else f"{returned:.3f}"
    shown: dict[str, object] = {
        "mine": mine,
        "n": n,
        "count": counts["expected"],
        "own": counts["own"],
    }

    def matches(name: str) -> bool:
        return any(abs(returned - value) < 1e-6 for value in found[name])

    if matches("expected"):
        return shown
    if matches("own"):
        raise Problem("own_object", **shown)
    if matches("other_way"):
        raise Problem("other_way", **shown)
    raise Problem("wrong_count", share=counts["expected"] / n, **shown)


@exercise(
    "17.4",
    passed=Text(
        "Your function returned a new config with `n_train_two=0` and every other field as "
        "it was (`multi_label=True` too), and left the config you passed in unchanged: that "
        "is what `dataclasses.replace` does.",
        "你的函数返回了一个新的配置，其中 `n_train_two=0`，其余字段保持原样（包括 "
        "`multi_label=True`），而且传入的配置没有改变：这正是 `dataclasses.replace` 做的事。",
    ),
    not_a_config=Text(
        "`single_objects_config(config)` returned a `{got}`; it should return a "
        "`PretrainedConfig`, for `ht.pretrained(..., config=...)`.",
        "`single_objects_config(config)` 返回了一个 `{got}`；它应当返回一个 `PretrainedConfig`，"
        "供 `ht.pretrained(..., config=...)` 使用。",
    ),
    still_two=Text(
        "The config your function returned still has `n_train_two={count}`: set it to 0, "
        "so that no two-object image is trained on.",
        "你的函数返回的配置仍然是 `n_train_two={count}`，请把它设为 0，这样训练时就没有双物体图像。",
    ),
    lost_fields=Text(
        "The config your function returned changed other fields too: {fields}. A new "
        "`PretrainedConfig(...)` starts from the defaults (a single-label model); "
        "`dataclasses.replace(config, n_train_two=0)` keeps every other field of `config`.",
        "你的函数返回的配置还改变了其他字段：{fields}。新建的 `PretrainedConfig(...)` 从默认值"
        "开始（一个单标签模型）；`dataclasses.replace(config, n_train_two=0)` 会保留 `config` "
        "的其他所有字段。",
    ),
)
def _single_objects_config(answer: object) -> Values:
    import dataclasses  # noqa: PLC0415

    from ..zoo import PretrainedConfig, pretrained_config  # noqa: PLC0415

    single_objects_config = require_callable(answer)
    config = pretrained_config("simple_cnn-multilabel")
    before = dataclasses.asdict(config)
    returned = single_objects_config(config)
    if not isinstance(returned, PretrainedConfig):
        raise Problem("not_a_config", got=returned_type(returned))
    if returned.n_train_two != 0:
        raise Problem("still_two", count=returned.n_train_two)
    after = dataclasses.asdict(returned)
    changed = [f"`{k}`" for k in before if k != "n_train_two" and after[k] != before[k]]
    if changed:
        raise Problem("lost_fields", fields=", ".join(changed))
    assert dataclasses.asdict(config) == before  # a frozen dataclass: it cannot change
    return {}


# -- page 18: the CAM family ----------------------------------------------------------------

_SIGNED = ("Grad-CAM", "XGrad-CAM", "HiResCAM")


@exercise(
    "18.1",
    passed=Text(
        "Your function returned the raw signed maps of Grad-CAM, XGrad-CAM and HiResCAM "
        "for class 0, negative values kept. On the check's average-pooling model they "
        "agree to {relative:.0e} of their largest value; on its max-pooling twin the "
        "largest difference is {differ:.2f} times Grad-CAM's largest value: the identity "
        "needs the same gradient at every position.",
        "你的函数返回了 Grad-CAM、XGrad-CAM 和 HiResCAM 对类别 0 的原始带符号热力图，保留了负值。"
        "在检查所用的平均池化模型上，它们的差别在最大值的 {relative:.0e} 以内；在对应的最大池化"
        "模型上，最大差别是 Grad-CAM 最大值的 {differ:.2f} 倍，因为这个恒等式要求每个位置的梯度都相同。",
    ),
    not_three=Text(
        "`signed_maps(model, images)` returned a `{got}`; it should return a dictionary with "
        'the keys `"Grad-CAM"`, `"XGrad-CAM"` and `"HiResCAM"`, each a map `[B, h, w]`.',
        "`signed_maps(model, images)` 返回了一个 `{got}`；它应当返回一个字典，键为 "
        '`"Grad-CAM"`、`"XGrad-CAM"` 和 `"HiResCAM"`，每个值是一张 `[B, h, w]` 的热力图。',
    ),
    not_raw=Text(
        "The {method} map has the shape `{shape}`; the raw map has the feature map's "
        "resolution, `{expected}`: pass `raw=True` when you call the method, so that the "
        "maps are neither upsampled nor scaled.",
        "{method} 热力图的形状是 `{shape}`；原始热力图的分辨率与特征图相同，是 `{expected}`。"
        "调用方法时请传入 `raw=True`，这样热力图既不上采样也不缩放。",
    ),
    relu_applied=Text(
        "The {method} map has no negative value, but the signed map has: build the method "
        "with `relu=False`, so that the evidence against the class is kept and the "
        "comparison covers the whole map.",
        "{method} 热力图没有负值，而带符号热力图是有负值的。请用 `relu=False` 构造这个方法，"
        "这样反对该类别的证据也会保留下来，比较覆盖整张热力图。",
    ),
    wrong_map=Text(
        "The {method} map is not the method's raw signed map of class 0 on `relu3`: "
        '`ht.{cls}(model, "relu3", relu=False)(images, target=0, raw=True)`.',
        "{method} 热力图不是该方法在 `relu3` 上对类别 0 的原始带符号热力图："
        '`ht.{cls}(model, "relu3", relu=False)(images, target=0, raw=True)`。',
    ),
)
def _signed_maps(answer: object) -> Values:
    from ..cam import HiResCAM, XGradCAM  # noqa: PLC0415

    signed_maps = require_callable(answer)
    classes = {"Grad-CAM": GradCAM, "XGrad-CAM": XGradCAM, "HiResCAM": HiResCAM}
    average = watch(SimpleCNN(channels=(4, 8, 8), pool="avg", seed=0).eval())
    images = torch.rand(3, 3, 32, 32)
    expected = {
        name: cls(average, "relu3", relu=False)(images, target=0, raw=True)
        for name, cls in classes.items()
    }
    returned = signed_maps(average, images)
    if not isinstance(returned, dict) or not set(_SIGNED) <= set(returned):
        raise Problem("not_three", got=returned_type(returned))
    scale = expected["Grad-CAM"].abs().max().item()
    for name in _SIGNED:
        mine = returned[name]
        shown = {"method": name, "cls": classes[name].__name__}
        if not isinstance(mine, Tensor) or mine.shape != expected[name].shape:
            shape = list(mine.shape) if isinstance(mine, Tensor) else returned_type(mine)
            raise Problem("not_raw", shape=shape, expected=list(expected[name].shape), **shown)
        mine = mine.detach()
        # the same method on the same model: float rounding, far below 1e-4 of the largest value
        if torch.allclose(mine, expected[name], atol=1e-4 * scale, rtol=1e-4):
            continue
        if mine.min() >= 0 and expected[name].min() < 0:
            raise Problem("relu_applied", **shown)
        raise Problem("wrong_map", **shown)
    # what the message says: the three agree here, and not with max pooling
    relative = max(
        ((expected[n] - expected["Grad-CAM"]).abs().max() / scale).item() for n in _SIGNED
    )
    twin = _tiny_cnn()  # the same sizes and seed, with global max pooling
    twin_maps = {
        name: cls(twin, "relu3", relu=False)(images, target=0, raw=True)
        for name, cls in classes.items()
    }
    twin_scale = twin_maps["Grad-CAM"].abs().max()
    differ = max(
        ((twin_maps[n] - twin_maps["Grad-CAM"]).abs().max() / twin_scale).item() for n in _SIGNED
    )
    return {"relative": max(relative, 1e-7), "differ": differ}


@exercise(
    "18.2",
    passed=Text(
        "Your function counted {expected} images for Score-CAM with `top_k={k}` on {n} "
        "images (one pass on them, then {k} masked copies of each), however the method "
        "split them into batches, and {n} for Grad-CAM.",
        "你的函数为 `top_k={k}` 的 Score-CAM 在 {n} 张图像上数出了 {expected} 张图像"
        "（先对它们做一次前向传播，再对每张做 {k} 个遮挡副本），无论该方法怎样把它们分批；"
        "对 Grad-CAM 数出了 {n} 张。",
    ),
    not_a_count=Text(
        "`count_images(model, method, images)` returned a `{got}`; it should return the "
        "number of images that went through `model` while `method(images)` ran.",
        "`count_images(model, method, images)` 返回了一个 `{got}`；它应当返回在 "
        "`method(images)` 运行期间经过 `model` 的图像数量。",
    ),
    counted_calls=Text(
        "Your function counted {mine}, the number of forward calls; {expected} images went "
        "through the model, in batches. A forward pre-hook receives the batch in `args[0]`: "
        "add up `len(args[0])`.",
        "你的函数数出了 {mine}，这是前向调用的次数；而经过模型的图像有 {expected} 张，是分批"
        "送入的。前向预钩子在 `args[0]` 中收到整个批次，请把 `len(args[0])` 累加起来。",
    ),
    wrong_count=Text(
        "For `{method}` on {n} images your function counted {mine}; {expected} images went "
        "through the model. Register a forward pre-hook on `model` that adds up "
        "`len(args[0])`, call `method(images)`, and remove the hook.",
        "对 {n} 张图像上的 `{method}`，你的函数数出了 {mine}；而经过模型的图像有 {expected} 张。"
        "请在 `model` 上注册一个累加 `len(args[0])` 的前向预钩子，调用 `method(images)`，"
        "再移除这个钩子。",
    ),
)
def _count_images(answer: object) -> Values:
    from ..cam import ScoreCAM  # noqa: PLC0415

    count_images = require_callable(answer)
    model = _tiny_cnn()
    images = torch.rand(3, 3, 32, 32)
    k = 4
    cases = (
        ("ScoreCAM(top_k=4, batch_size=5)", ScoreCAM(model, "relu3", top_k=k, batch_size=5)),
        ("GradCAM", GradCAM(model, "relu3")),
    )
    counts: dict[str, int] = {}
    for name, method in cases:
        sizes: list[int] = []
        with model.register_forward_pre_hook(lambda m, args, seen=sizes: seen.append(len(args[0]))):
            method(images)
        counts[name] = sum(sizes)
        returned = count_images(model, method, images)
        if isinstance(returned, Tensor) and returned.numel() == 1:
            returned = returned.item()
        if isinstance(returned, bool) or not isinstance(returned, (int, float)):
            raise Problem("not_a_count", got=returned_type(returned))
        shown = {"mine": returned, "expected": sum(sizes), "n": len(images), "method": name}
        if returned == sum(sizes):
            continue
        if returned == len(sizes):
            raise Problem("counted_calls", **shown)
        raise Problem("wrong_count", **shown)
    return {"expected": counts[cases[0][0]], "n": len(images), "k": k}


@exercise(
    "18.3",
    passed=Text(
        "Your Grad-CAM++ matches `ht.GradCAMPlusPlus` on the check's max-pooling model (to "
        "{relative:.0e} of the map's largest value), with zero over zero taken as zero "
        "where the gradient vanishes: there, each channel's gradient is nonzero at 1 "
        "position at most.",
        "你的 Grad-CAM++ 在检查所用的最大池化模型上与 `ht.GradCAMPlusPlus` 一致（差别在热力图最大值的 "
        "{relative:.0e} 以内），并且在梯度为零的地方把零除以零取为零：在这个模型上，每个通道的梯度"
        "最多只在 1 个位置上非零。",
    ),
    not_raw=Text(
        "`grad_cam_plus_plus(model, layer, x, target)` returned a `{got}` of shape "
        "`{shape}`; it should return the raw map `{expected}`, at the feature map's "
        "resolution, like `ht.GradCAMPlusPlus(model, layer)(x, target=target, raw=True)`.",
        "`grad_cam_plus_plus(model, layer, x, target)` 返回了一个形状为 `{shape}` 的 `{got}`；"
        "它应当返回原始热力图 `{expected}`，分辨率与特征图相同，就像 "
        "`ht.GradCAMPlusPlus(model, layer)(x, target=target, raw=True)` 那样。",
    ),
    nan=Text(
        "Your map has NaN values: where the gradient is zero, the formula's fraction is "
        "zero over zero. Take it as zero, `torch.nan_to_num(...)`, since those positions "
        "add nothing to the weight anyway.",
        "你的热力图中有 NaN：在梯度为零的地方，公式中的分式是零除以零。请把它取为零，"
        "`torch.nan_to_num(...)`，反正这些位置对权重没有贡献。",
    ),
    grad_cam=Text(
        "Your map is Grad-CAM's, the gradients averaged over the positions: Grad-CAM++ "
        "weighs the positive gradients by the coefficients `a` of the formula and adds "
        "them up.",
        "你的热力图是 Grad-CAM 的，也就是对各位置的梯度求平均。Grad-CAM++ 用公式中的系数 `a` "
        "为正的梯度加权，再求和。",
    ),
    wrong_map=Text(
        "Your map differs from `ht.GradCAMPlusPlus`'s by up to {difference:.2e}, on maps "
        "whose largest value is {largest:.2e}. Compare your steps with the formula: the "
        "coefficients `a`, the weights `(a * g.clamp(min=0)).sum(dim=(2, 3))`, the "
        "weighted sum and the ReLU.",
        "你的热力图与 `ht.GradCAMPlusPlus` 的相差最多 {difference:.2e}，而热力图的最大值是 "
        "{largest:.2e}。请对照公式检查你的各个步骤：系数 `a`、权重 "
        "`(a * g.clamp(min=0)).sum(dim=(2, 3))`、加权求和以及 ReLU。",
    ),
)
def _grad_cam_plus_plus(answer: object) -> Values:
    from ..cam import GradCAMPlusPlus  # noqa: PLC0415

    grad_cam_plus_plus = require_callable(answer)
    model = _tiny_cnn()
    x = torch.rand(4, 3, 32, 32)
    with torch.no_grad():
        target = model(x).argmax(dim=1)
    expected = GradCAMPlusPlus(model, "relu3")(x, target=target, raw=True)
    returned = grad_cam_plus_plus(model, "relu3", x, target)
    if not isinstance(returned, Tensor) or returned.shape != expected.shape:
        shape = list(returned.shape) if isinstance(returned, Tensor) else "-"
        raise Problem(
            "not_raw", got=returned_type(returned), shape=shape, expected=list(expected.shape)
        )
    mine = returned.detach()
    largest = expected.max().item()
    if mine.isnan().any():
        raise Problem("nan")
    difference = (mine - expected).abs().max().item()
    # float32 rounding in another order of the same operations: far below 1e-4 of the largest
    if difference <= 1e-4 * largest:
        return {"relative": max(difference / largest, 1e-7)}
    grad_cam = GradCAM(model, "relu3")(x, target=target, raw=True)
    if torch.allclose(mine, grad_cam, atol=1e-4 * grad_cam.max().item(), rtol=1e-4):
        raise Problem("grad_cam")
    raise Problem("wrong_map", difference=difference, largest=largest)


# -- page 15: training the CNN --------------------------------------------------------------


class _BatchSpy:
    """Stand in for the learner's callback: record each ``on_batch_end``'s print, pass the rest."""

    def __init__(self, callback: object) -> None:
        self.callback = callback
        self.calls: list[tuple[int, float, str]] = []  # (batch, loss, printed)

    def on_batch_end(self, batch: int, logs: dict[str, float]) -> None:
        method = getattr(self.callback, "on_batch_end", None)
        printed = ""
        if method is not None:
            printed = printed_by(method, batch, logs)[1]
        self.calls.append((batch, float(logs["loss"]), printed))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.callback, name)


@exercise(
    "15.1",
    passed=Text(
        "During one epoch of {batches} batches, your callback printed the loss of batches "
        "{printed}, every 5th, and nothing else: `fit` counts batches from 1 and hands "
        '`on_batch_end` the batch\'s loss in `logs["loss"]`.',
        "在一个有 {batches} 个批次的轮次中，你的回调函数打印了第 {printed} 个批次的损失，每 5 个一次，"
        '没有打印别的。`fit` 从 1 开始数批次，并通过 `logs["loss"]` 把批次的损失交给 '
        "`on_batch_end`。",
    ),
    no_batch_end=Text(
        "Your callback does not define `on_batch_end` (the one `ht.Callback` gives it does "
        "nothing), so nothing of yours ran after each batch: define "
        "`on_batch_end(self, batch, logs)`.",
        "你的回调函数没有定义 `on_batch_end`（`ht.Callback` 提供的那个什么也不做），所以每个批次之后"
        "没有运行你的代码，请定义 `on_batch_end(self, batch, logs)`。",
    ),
    printed_nothing=Text(
        "During one epoch of {batches} batches your callback printed nothing; it should "
        'print the loss, `logs["loss"]`, at batches {expected}.',
        "在一个有 {batches} 个批次的轮次中，你的回调函数什么也没有打印；它应当在第 {expected} 个批次"
        '打印损失 `logs["loss"]`。',
    ),
    wrong_batches=Text(
        "Your callback printed at batches {printed}; every 5th batch is {expected}. `fit` "
        "counts the batches from 1, so `batch % 5 == 0` is the test.",
        "你的回调函数在第 {printed} 个批次打印了；每 5 个批次一次应是第 {expected} 个。`fit` 从 1 "
        "开始数批次，所以判断条件是 `batch % 5 == 0`。",
    ),
    no_loss=Text(
        "At batch {batch} your callback printed `{text}`, without the batch's loss, "
        '{loss:.4f}: print `logs["loss"]`.',
        "在第 {batch} 个批次，你的回调函数打印了 `{text}`，其中没有这个批次的损失 {loss:.4f}，"
        '请打印 `logs["loss"]`。',
    ),
)
def _print_every_5(answer: object) -> Values:
    # fit's first optimizer step imports torch._dynamo: import it before the learner's code
    # runs, so that the step budget cannot stop the import halfway (a half-imported module
    # breaks every later fit of the session)
    import torch._dynamo  # noqa: PLC0415

    from ..training import fit  # noqa: PLC0415

    make = require_callable(answer)
    callback = make()
    from ..training import Callback  # noqa: PLC0415

    method = getattr(type(callback), "on_batch_end", None)
    if not callable(method) or method is Callback.on_batch_end:  # Callback's does nothing
        raise Problem("no_batch_end")
    spy = _BatchSpy(callback)
    model = watch(nn.Sequential(nn.Flatten(), nn.Linear(12, 3)))
    inputs, labels = torch.randn(48, 3, 2, 2), torch.randint(0, 3, (48,))
    fit(model, (inputs, labels), epochs=1, batch_size=4, callbacks=[spy])
    printed = [batch for batch, _, text in spy.calls if text.strip()]
    expected = [batch for batch, _, _ in spy.calls if batch % 5 == 0]
    shown = {
        "printed": ", ".join(map(str, printed)),
        "expected": ", ".join(map(str, expected)),
        "batches": len(spy.calls),
    }
    if not printed:
        raise Problem("printed_nothing", **shown)
    if printed != expected:
        raise Problem("wrong_batches", **shown)
    for batch, loss, text in spy.calls:
        if text.strip() and not close_to_a_printed_number(loss, text):
            raise Problem("no_loss", batch=batch, text=text.strip(), loss=loss)
    return {"batches": len(spy.calls), "printed": ", ".join(map(str, printed))}


@exercise(
    "15.2",
    passed=Text(
        'Your function trained with `EarlyStopping(monitor="val_accuracy", patience=2)` '
        "and validation data: on the check's tiny model the run lasted {epochs} epochs, and "
        "the stopper kept epoch {best}, the best validation accuracy ({value:.3f}).",
        '你的函数用 `EarlyStopping(monitor="val_accuracy", patience=2)` 和验证数据进行了训练。'
        "在检查所用的小模型上，训练进行了 {epochs} 个轮次，停止器保留了第 {best} 个轮次，即验证准确率最好的轮次"
        "（{value:.3f}）。",
    ),
    not_a_pair=Text(
        "`early_stopped_fit(net, train, val)` returned a `{got}`; it should return the "
        "`EarlyStopping` callback and the history `fit` returned: `return stopper, run`.",
        "`early_stopped_fit(net, train, val)` 返回了一个 `{got}`；它应当返回 `EarlyStopping` "
        "回调函数和 `fit` 返回的历史记录：`return stopper, run`。",
    ),
    no_val_data=Text(
        "`EarlyStopping` found no `val_accuracy` in the logs: `fit` logs validation values "
        "only when it gets `val_data=(val.images, val.labels)`.",
        "`EarlyStopping` 在日志中找不到 `val_accuracy`：只有传入 "
        "`val_data=(val.images, val.labels)` 时，`fit` 才会记录验证指标。",
    ),
    wrong_monitor=Text(
        "Your `EarlyStopping` watches `{monitor}`; the exercise asks for the validation "
        'accuracy: `EarlyStopping(monitor="val_accuracy", patience=2)`.',
        "你的 `EarlyStopping` 监视的是 `{monitor}`；练习要求的是验证准确率："
        '`EarlyStopping(monitor="val_accuracy", patience=2)`。',
    ),
    wrong_patience=Text(
        "Your `EarlyStopping` waits {patience} epochs without improvement; the exercise asks "
        "for `patience=2`.",
        "你的 `EarlyStopping` 在没有改进时会等待 {patience} 个轮次；练习要求 `patience=2`。",
    ),
    not_used=Text(
        "The `EarlyStopping` your function returned never saw an epoch: pass it to `fit` "
        "among the callbacks, `callbacks=[stopper]`.",
        "你的函数返回的 `EarlyStopping` 从未经历过任何一个轮次，请把它放在回调函数中传给 `fit`："
        "`callbacks=[stopper]`。",
    ),
    wrong_epochs=Text(
        "The run went on for {epochs} epochs without being stopped; train for up to 20, "
        "`epochs=20`.",
        "训练进行了 {epochs} 个轮次而没有被停止；请最多训练 20 个轮次，`epochs=20`。",
    ),
)
def _early_stopped_fit(answer: object) -> Values:
    # fit's first optimizer step imports torch._dynamo: import it before the learner's code
    # runs, so that the step budget cannot stop the import halfway (a half-imported module
    # breaks every later fit of the session)
    import torch._dynamo  # noqa: F401, PLC0415

    from ..data import make_shapes  # noqa: PLC0415
    from ..training import EarlyStopping, History  # noqa: PLC0415

    early_stopped_fit = require_callable(answer)
    net = watch(SimpleCNN(channels=(4, 8, 8), seed=0))
    train = make_shapes(64, split="train", seed=0, image_size=32)
    val = make_shapes(32, split="test", seed=0, image_size=32)
    try:
        returned = early_stopped_fit(net, train, val)
    except ValueError as error:
        if "val_accuracy" in str(error) and "not in the logs" in str(error):
            raise Problem("no_val_data") from None
        raise
    if not (
        isinstance(returned, tuple)
        and len(returned) == 2
        and isinstance(returned[0], EarlyStopping)
        and isinstance(returned[1], History)
    ):
        raise Problem("not_a_pair", got=returned_type(returned))
    stopper, run = returned
    if stopper.monitor != "val_accuracy":
        raise Problem("wrong_monitor", monitor=stopper.monitor)
    if stopper.patience != 2:
        raise Problem("wrong_patience", patience=stopper.patience)
    if not run.epochs or stopper.best_epoch == 0:
        raise Problem("not_used")
    if stopper.stopped_epoch == 0 and len(run.epochs) != 20:
        raise Problem("wrong_epochs", epochs=len(run.epochs))
    return {"epochs": len(run.epochs), "best": stopper.best_epoch, "value": stopper.best}


@exercise(
    "15.3",
    passed=Text(
        "For the confusion matrix `{matrix}` your function returned `{accuracy}`: each "
        "diagonal entry divided by its row's sum, the images of that class.",
        "对混淆矩阵 `{matrix}`，你的函数返回了 `{accuracy}`：每个对角元素除以它所在行的和，"
        "也就是该类别的图像数。",
    ),
    not_per_class=Text(
        "`per_class_accuracy(confusion)` returned a `{got}`; it should return one accuracy "
        "per class, a tensor of {classes} values.",
        "`per_class_accuracy(confusion)` 返回了一个 `{got}`；它应当为每个类别返回一个准确率，"
        "即一个包含 {classes} 个值的张量。",
    ),
    by_column=Text(
        "For `{matrix}` your function returned `{mine}`: the diagonal divided by the "
        "columns' sums, the images *called* each class (the precision). Row i counts the "
        "images of class i: divide by `confusion.sum(dim=1)`.",
        "对 `{matrix}`，你的函数返回了 `{mine}`：对角线除以各列的和，也就是被判为各类别的图像数"
        "（精确率）。第 i 行统计的是类别 i 的图像，请除以 `confusion.sum(dim=1)`。",
    ),
    by_total=Text(
        "For `{matrix}` your function returned `{mine}`: the diagonal divided by all the "
        "images. Each class's accuracy counts the images of that class only: divide by "
        "`confusion.sum(dim=1)`.",
        "对 `{matrix}`，你的函数返回了 `{mine}`：对角线除以全部图像数。每个类别的准确率只统计"
        "该类别的图像，请除以 `confusion.sum(dim=1)`。",
    ),
    wrong_values=Text(
        "For `{matrix}` your function returned `{mine}`; the accuracies of the classes are "
        "`{accuracy}`.",
        "对 `{matrix}`，你的函数返回了 `{mine}`；各类别的准确率是 `{accuracy}`。",
    ),
)
def _per_class_accuracy(answer: object) -> Values:
    per_class_accuracy = require_callable(answer)
    confusion = torch.tensor([[8, 1, 1], [2, 6, 0], [0, 4, 16]])
    expected = confusion.diag() / confusion.sum(dim=1)
    returned = per_class_accuracy(confusion.clone())
    if not isinstance(returned, Tensor) or returned.numel() != len(confusion):
        raise Problem("not_per_class", got=returned_type(returned), classes=len(confusion))
    mine = returned.detach().flatten().double()

    def rounded(values: Tensor) -> list[float]:
        return [round(v, 3) for v in values.tolist()]

    shown: Values = {
        "matrix": confusion.tolist(),
        "mine": rounded(mine),
        "accuracy": rounded(expected),
    }
    # divisions of small whole numbers: the same float whichever order they are done in
    if torch.allclose(mine, expected.double(), atol=1e-6):
        return shown
    if torch.allclose(mine, (confusion.diag() / confusion.sum(dim=0)).double(), atol=1e-6):
        raise Problem("by_column", **shown)
    if torch.allclose(mine, (confusion.diag() / confusion.sum()).double(), atol=1e-6):
        raise Problem("by_total", **shown)
    raise Problem("wrong_values", **shown)


# -- page 18b: measuring CAMs ---------------------------------------------------------------


def _as_share(value: object) -> float | None:
    """A learner's number (a float, an int or a one-value tensor) as a float; None if not one."""
    if isinstance(value, Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


@exercise(
    "18b.1",
    passed=Text(
        "For Grad-CAM your function returned {gradcam}: each object's class explained and "
        "scored on that object's mask. For Eigen-CAM it returned {eigencam}, which add up "
        "to no more than 1: its map is the same whatever the target.",
        "对 Grad-CAM，你的函数返回了 {gradcam}：每个物体的类别各自解释，并在该物体的掩码上计分。"
        "对 Eigen-CAM，它返回了 {eigencam}，两者之和不超过 1，因为它的热力图与目标无关。",
    ),
    not_a_pair=Text(
        "`object_hits(method, two)` returned a `{got}`; it should return two numbers, the "
        "pointing game of the first object and of the second: `return first, second`.",
        "`object_hits(method, two)` 返回了一个 `{got}`；它应当返回两个数，即第一个物体和第二个物体"
        "的指向游戏得分：`return first, second`。",
    ),
    one_mask=Text(
        "For {method} your function returned {mine}; the second number scores the second "
        "object's map on the first object's mask. Score each map on its own object's mask, "
        "`two.object_masks[:, 1]` for the second.",
        "对 {method}，你的函数返回了 {mine}；第二个数是把第二个物体的热力图放在第一个物体的掩码上"
        "计分的。请把每张热力图放在它自己物体的掩码上计分，第二个物体用 `two.object_masks[:, 1]`。",
    ),
    no_target=Text(
        "For {method} your function returned {mine}, the scores of the predicted class's "
        "map: pass each object's class as the target, "
        "`method(two.images, target=two.object_labels[:, k])`.",
        "对 {method}，你的函数返回了 {mine}，这是预测类别的热力图的得分。请把每个物体的类别作为目标"
        "传入：`method(two.images, target=two.object_labels[:, k])`。",
    ),
    wrong_hits=Text(
        "For {method} your function returned {mine}; the pointing game of each object's "
        "class map on that object's mask gives {expected}.",
        "对 {method}，你的函数返回了 {mine}；每个物体类别的热力图在该物体掩码上的指向游戏得分是 "
        "{expected}。",
    ),
)
def _object_hits(answer: object) -> Values:
    from ..cam import EigenCAM  # noqa: PLC0415
    from ..data import make_shapes  # noqa: PLC0415
    from ..metrics import pointing_game  # noqa: PLC0415

    object_hits = require_callable(answer)
    model = _shapes_model()
    two = make_shapes(32, variant="two", split="test", seed=5)
    labels, masks = two.object_labels, two.object_masks

    def pair(a: Tensor, b: Tensor) -> tuple[float, float]:
        return (a.float().mean().item(), b.float().mean().item())

    shown: dict[str, object] = {}
    for name, method in (
        ("Grad-CAM", GradCAM(model, "relu3")),
        ("Eigen-CAM", EigenCAM(model, "relu3")),
    ):
        first, second = (method(two.images, target=labels[:, k]) for k in range(2))
        predicted = method(two.images)
        candidates = {
            "expected": pair(pointing_game(first, masks[:, 0]), pointing_game(second, masks[:, 1])),
            "one_mask": pair(pointing_game(first, masks[:, 0]), pointing_game(second, masks[:, 0])),
            "no_target": pair(
                pointing_game(predicted, masks[:, 0]), pointing_game(predicted, masks[:, 1])
            ),
        }
        returned = object_hits(method, two)
        values = (
            [_as_share(v) for v in returned]
            if isinstance(returned, (tuple, list)) and len(returned) == 2
            else [None]
        )
        if None in values:
            raise Problem("not_a_pair", got=returned_type(returned))
        mine = tuple(float(v) for v in values if v is not None)
        text = {
            "method": name,
            "mine": f"({mine[0]:.3f}, {mine[1]:.3f})",
            "expected": "({:.3f}, {:.3f})".format(*candidates["expected"]),
        }
        # counts over the same 32 maps, from the same method: the shares agree exactly
        found = [
            k
            for k, v in candidates.items()
            if all(abs(a - b) < 1e-6 for a, b in zip(mine, v, strict=True))
        ]
        if "expected" in found:
            shown[name.replace("-", "").lower()] = text["mine"]
            continue
        raise Problem(found[0] if found else "wrong_hits", **text)
    return shown


@exercise(
    "18b.2",
    passed=Text(
        "Your column matches `energy_pointing_game` for every map of the check ({names}), "
        "the random map included: the mean share of each map's mass on the object.",
        "你的这一列对检查中的每张热力图（{names}）都与 `energy_pointing_game` 一致，随机热力图也"
        "不例外：它是每张热力图总量中落在物体上的比例的平均值。",
    ),
    not_a_column=Text(
        "`energy_column(candidates, masks)` returned a `{got}`; it should return a "
        "dictionary with one number per map: `{{name: energy_pointing_game(saliency, "
        "masks).mean().item() ...}}`.",
        "`energy_column(candidates, masks)` 返回了一个 `{got}`；它应当返回一个字典，每张热力图"
        "一个数：`{{name: energy_pointing_game(saliency, masks).mean().item() ...}}`。",
    ),
    pointing=Text(
        "For `{name}` your column says {mine:.3f}, the pointing game (is the peak on the "
        "object?), not the energy: `energy_pointing_game(saliency, masks).mean()` measures "
        "the share of the map's mass on the object, {expected:.3f}.",
        "对 `{name}`，你的这一列给出的是 {mine:.3f}，这是指向游戏的结果（峰值是否落在物体上），"
        "而不是能量：`energy_pointing_game(saliency, masks).mean()` 衡量的是热力图总量中落在物体"
        "上的比例，为 {expected:.3f}。",
    ),
    wrong_value=Text(
        "For `{name}` your column says {mine:.3f}; the mean share of the map's mass on the "
        "object is {expected:.3f}: `energy_pointing_game(saliency, masks).mean()`.",
        "对 `{name}`，你的这一列给出的是 {mine:.3f}；热力图总量中落在物体上的平均比例是 "
        "{expected:.3f}：`energy_pointing_game(saliency, masks).mean()`。",
    ),
)
def _energy_column(answer: object) -> Values:
    from ..data import make_shapes  # noqa: PLC0415
    from ..metrics import energy_pointing_game, pointing_game  # noqa: PLC0415

    energy_column = require_callable(answer)
    test = make_shapes(8, split="test", seed=2, image_size=32)
    model = _tiny_cnn()
    candidates = {
        "Grad-CAM": GradCAM(model, "relu3")(test.images),
        "random map": torch.rand(8, 32, 32),
    }
    returned = energy_column(dict(candidates), test.masks)
    if not isinstance(returned, dict) or set(returned) != set(candidates):
        raise Problem("not_a_column", got=returned_type(returned))
    for name, saliency in candidates.items():
        mine = _as_share(returned[name])
        if mine is None:
            raise Problem("not_a_column", got=f"dict of {returned_type(returned[name])}")
        expected = energy_pointing_game(saliency, test.masks).mean().item()
        shown = {"name": name, "mine": mine, "expected": expected}
        # the same sums in another order: float rounding, far below 1e-5
        if abs(mine - expected) < 1e-5:
            continue
        if abs(mine - pointing_game(saliency, test.masks).float().mean().item()) < 1e-6:
            raise Problem("pointing", **shown)
        raise Problem("wrong_value", **shown)
    return {"names": ", ".join(candidates)}


@exercise(
    "18b.3",
    passed=Text(
        "Your function computed the deletion and insertion AUCs with 64 steps from the "
        "blurred image, like the table's with 16: on the check's tiny model, {deletion:.3f} "
        "and {insertion:.3f}.",
        "你的函数以模糊图像为基线、用 64 步计算了删除和插入 AUC，与表格中用 16 步的做法相同。"
        "在检查所用的小模型上，结果是 {deletion:.3f} 和 {insertion:.3f}。",
    ),
    not_a_pair=Text(
        "`fine_aucs(model, images, saliency)` returned a `{got}`; it should return two "
        "numbers, the mean deletion AUC and the mean insertion AUC: "
        "`return deletion, insertion`.",
        "`fine_aucs(model, images, saliency)` 返回了一个 `{got}`；它应当返回两个数，即删除 AUC "
        "和插入 AUC 的平均值：`return deletion, insertion`。",
    ),
    wrong_steps=Text(
        "Your AUCs are {mine}, the ones with {steps} steps; the exercise asks for 64: `steps=64`.",
        "你的 AUC 是 {mine}，这是用 {steps} 步得到的；练习要求 64 步：`steps=64`。",
    ),
    zero_baseline=Text(
        "Your deletion AUC, {mine:.3f}, starts from black pixels, the default of "
        "`deletion_auc`; the table removes pixels by blurring them: pass "
        '`baseline="blur"` to both, as the table does.',
        "你的删除 AUC {mine:.3f} 是从黑色像素出发的，这是 `deletion_auc` 的默认做法；表格是通过模糊"
        '来移除像素的，请像表格那样给两者都传入 `baseline="blur"`。',
    ),
    wrong_aucs=Text(
        "Your AUCs are {mine}; with 64 steps and the blurred baseline they are {expected}.",
        "你的 AUC 是 {mine}；用 64 步和模糊基线得到的是 {expected}。",
    ),
)
def _fine_aucs(answer: object) -> Values:
    from ..metrics import deletion_auc, insertion_auc  # noqa: PLC0415

    fine_aucs = require_callable(answer)
    model = _tiny_cnn()
    images = torch.rand(4, 3, 32, 32)
    saliency = GradCAM(model, "relu3")(images)

    def aucs(steps: int, baseline: str = "blur") -> tuple[float, float]:
        options: Any = {"steps": steps, "baseline": baseline}
        deletion = deletion_auc(model, images, saliency, **options).mean().item()
        return deletion, insertion_auc(model, images, saliency, steps=steps).mean().item()

    returned = fine_aucs(model, images, saliency)
    values = (
        [_as_share(v) for v in returned]
        if isinstance(returned, (tuple, list)) and len(returned) == 2
        else [None]
    )
    if None in values:
        raise Problem("not_a_pair", got=returned_type(returned))
    mine = tuple(float(v) for v in values if v is not None)
    expected = aucs(64)

    def near(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
        # the same curves summed in another order: float rounding, far below 1e-5
        return all(abs(x - y) < 1e-5 for x, y in zip(a, b, strict=True))

    text = {
        "mine": "({:.4f}, {:.4f})".format(*mine),
        "expected": "({:.4f}, {:.4f})".format(*expected),
    }
    if near(mine, expected):
        return {"deletion": expected[0], "insertion": expected[1]}
    for steps in (16, 32):
        if near(mine, aucs(steps)):
            raise Problem("wrong_steps", steps=steps, **text)
    if abs(mine[0] - aucs(64, "zeros")[0]) < 1e-5:
        raise Problem("zero_baseline", mine=mine[0])
    raise Problem("wrong_aucs", **text)
