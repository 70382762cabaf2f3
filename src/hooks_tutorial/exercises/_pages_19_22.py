"""The checks of chapter 4, pages 19 to 22: trust, shortcuts, guided backprop, beyond CNNs."""

from __future__ import annotations

import functools
import warnings
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..cam import GradCAM, token_reshape_transform
from ._guard import watch
from ._helpers import require_callable, returned_type
from ._language import Text
from ._pages_15_18b import _as_share, _tiny_cnn
from ._registry import Problem, Values, exercise

# -- page 19: can we trust the map? ---------------------------------------------------------


@exercise(
    "19.1",
    passed=Text(
        "Your function returned the mean deletion AUC with black pixels, 10 steps, "
        "{mine:.3f} on the check's tiny model (from blurred pixels it is {blurred:.3f}): "
        '`baseline="zeros"` replaces the deleted pixels by black ones.',
        "你的函数返回了用黑色像素、10 步得到的删除 AUC 平均值，在检查所用的小模型上为 {mine:.3f}"
        '（用模糊像素时为 {blurred:.3f}）：`baseline="zeros"` 用黑色像素替换被删除的像素。',
    ),
    not_a_number=Text(
        "`black_deletion(model, images, saliency)` returned a `{got}`; it should return one "
        "number, the deletion AUC averaged over the images: `.mean().item()`.",
        "`black_deletion(model, images, saliency)` 返回了一个 `{got}`；它应当返回一个数，即各图像"
        "删除 AUC 的平均值：`.mean().item()`。",
    ),
    blurred=Text(
        "Your AUC, {mine:.3f}, is the one with blurred pixels; the exercise deletes with "
        'black ones: `baseline="zeros"`.',
        '你的 AUC {mine:.3f} 是用模糊像素得到的；练习要求用黑色像素删除：`baseline="zeros"`。',
    ),
    wrong_auc=Text(
        "Your AUC is {mine:.3f}; the deletion with black pixels in 10 steps gives "
        '{expected:.3f}: `deletion_auc(model, images, saliency, steps=10, baseline="zeros")`.',
        "你的 AUC 是 {mine:.3f}；用黑色像素分 10 步删除得到的是 {expected:.3f}："
        '`deletion_auc(model, images, saliency, steps=10, baseline="zeros")`。',
    ),
)
def _black_deletion(answer: object) -> Values:
    from ..metrics import deletion_auc  # noqa: PLC0415

    black_deletion = require_callable(answer)
    model = _tiny_cnn()
    images = torch.rand(4, 3, 32, 32)
    saliency = GradCAM(model, "relu3")(images)
    options: dict[str, Any] = {"steps": 10}
    expected = deletion_auc(model, images, saliency, baseline="zeros", **options).mean().item()
    blurred = deletion_auc(model, images, saliency, baseline="blur", **options).mean().item()
    mine = _as_share(black_deletion(model, images, saliency))
    if mine is None:
        raise Problem("not_a_number", got=returned_type(black_deletion(model, images, saliency)))
    shown: Values = {"mine": mine, "expected": expected, "blurred": blurred}
    # the same curve summed in another order: float rounding, far below 1e-5
    if abs(mine - expected) < 1e-5:
        return shown
    if abs(mine - blurred) < 1e-5:
        raise Problem("blurred", **shown)
    raise Problem("wrong_auc", **shown)


@exercise(
    "19.2",
    passed=Text(
        "Your function blurred the object's pixels and kept every other pixel as it was: "
        "the blurred image still holds a smeared copy of the object in the same place.",
        "你的函数模糊了物体的像素，其他像素都保持原样。模糊后的图像在同一位置仍留有物体被抹开的副本。",
    ),
    not_images=Text(
        "`blur_object(images, masks)` returned a `{got}`; it should return images of the "
        "same shape, `{shape}`.",
        "`blur_object(images, masks)` 返回了一个 `{got}`；它应当返回形状相同的图像 `{shape}`。",
    ),
    inverted=Text(
        "Your function blurred the background and kept the object: the mask is True on "
        "the object, so take the blurred pixels where it is True, "
        "`torch.where(masks[:, None], blurred, images)`.",
        "你的函数模糊了背景而保留了物体。掩码在物体上为 True，所以应在它为 True 的地方取模糊的像素："
        "`torch.where(masks[:, None], blurred, images)`。",
    ),
    changed_background=Text(
        "Your function changed pixels outside the object: only the object's pixels are "
        "blurred, `torch.where(masks[:, None], blurred, images)`.",
        "你的函数改变了物体之外的像素。只有物体的像素应被模糊："
        "`torch.where(masks[:, None], blurred, images)`。",
    ),
    wrong_blur=Text(
        'The object\'s pixels are not those of the blur that `baseline="blur"` uses: '
        "`gaussian_blur(images, 11, 5.0)`.",
        '物体的像素与 `baseline="blur"` 所用的模糊不同：`gaussian_blur(images, 11, 5.0)`。',
    ),
)
def _blur_object(answer: object) -> Values:
    from torchvision.transforms.functional import gaussian_blur  # noqa: PLC0415

    from ..data import make_shapes  # noqa: PLC0415

    blur_object = require_callable(answer)
    data = make_shapes(4, split="test", seed=19, image_size=32)
    images, masks = data.images, data.masks
    blurred = gaussian_blur(images, [11, 11], [5.0, 5.0])
    expected = torch.where(masks[:, None], blurred, images)
    returned = blur_object(images.clone(), masks.clone())
    if not isinstance(returned, Tensor) or returned.shape != images.shape:
        raise Problem("not_images", got=returned_type(returned), shape=list(images.shape))
    mine = returned.detach()
    outside = ~masks[:, None].expand_as(images)
    # the same blur: equal up to float rounding
    if torch.allclose(mine, expected, atol=1e-5):
        return {}
    if torch.allclose(mine, torch.where(masks[:, None], images, blurred), atol=1e-5):
        raise Problem("inverted")
    if not torch.equal(mine[outside], images[outside]):
        raise Problem("changed_background")
    raise Problem("wrong_blur")


def _input_gradient(model: nn.Module, x: Tensor, target: Tensor) -> Tensor:
    x = x.clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(model(x).gather(1, target[:, None]).sum(), x)
    return grad


@exercise(
    "19.3",
    passed=Text(
        "Both forms match: with `signed=False` the absolute gradient, largest over the "
        "colour channels, scaled to [0, 1]; with `signed=True` the gradient summed over "
        "the channels, scaled so that 0 sits at 0.5 and the sign shows.",
        "两种形式都对：`signed=False` 时是梯度的绝对值在颜色通道上的最大值，缩放到 [0, 1]；"
        "`signed=True` 时是梯度在各通道上的和，缩放后 0 位于 0.5，符号得以显示。",
    ),
    not_a_map=Text(
        "`gradient_map(model, x, target, signed={signed})` returned a `{got}`; it should "
        "return one map per image, `{shape}`.",
        "`gradient_map(model, x, target, signed={signed})` 返回了一个 `{got}`；它应当为每张图像"
        "返回一张热力图 `{shape}`。",
    ),
    absolute=Text(
        "With `signed=True` your map shows the gradient's size, not its sign (no value "
        "stands for a negative gradient). Sum the gradient over the channels, keep its sign, divide by the "
        "largest absolute value and map [-1, 1] to [0, 1]: `(saliency + 1) / 2`.",
        "`signed=True` 时，你的热力图显示的是梯度的大小，而不是符号（没有哪个值代表负的梯度）。"
        "请把梯度在各通道上求和，保留符号，除以最大绝对值，再把 [-1, 1] 映射到 [0, 1]："
        "`(saliency + 1) / 2`。",
    ),
    min_max=Text(
        "With `signed=True` your map is min-max scaled: its zero gradient is not at 0.5, "
        "so the colours no longer say which sign a pixel has. Divide by the largest "
        "absolute value, then `(saliency + 1) / 2`.",
        "`signed=True` 时，你的热力图用了 min-max 缩放：零梯度不在 0.5，颜色就不再表明像素的符号。"
        "请除以最大绝对值，再计算 `(saliency + 1) / 2`。",
    ),
    wrong_absolute=Text(
        "With `signed=False` your map is not the expected one: take the absolute value of "
        "the input's gradient, its largest value over the colour channels, "
        "`grad.abs().amax(dim=1)`, and divide each map by its largest value.",
        "`signed=False` 时，你的热力图与应有的不同。请取输入梯度的绝对值在颜色通道上的最大值 "
        "`grad.abs().amax(dim=1)`，再把每张热力图除以它的最大值。",
    ),
    wrong_signed=Text(
        "With `signed=True` your map is not the expected one: sum the input's gradient over "
        "the channels, `grad.sum(dim=1)`, divide each map by its largest absolute value, "
        "then `(saliency + 1) / 2`.",
        "`signed=True` 时，你的热力图与应有的不同。请把输入梯度在各通道上求和 "
        "`grad.sum(dim=1)`，把每张热力图除以它的最大绝对值，再计算 `(saliency + 1) / 2`。",
    ),
)
def _gradient_map(answer: object) -> Values:
    gradient_map = require_callable(answer)
    model = _tiny_cnn()
    x = torch.rand(3, 3, 32, 32)
    with torch.no_grad():
        target = model(x).argmax(dim=1)
    grad = _input_gradient(model, x, target)
    size = grad.abs().amax(dim=1)
    absolute = size / size.flatten(1).amax(dim=1)[:, None, None]
    total = grad.sum(dim=1)
    signed = (total / total.flatten(1).abs().amax(dim=1)[:, None, None] + 1) / 2
    low = total.flatten(1).amin(dim=1)[:, None, None]
    high = total.flatten(1).amax(dim=1)[:, None, None]
    min_max = (total - low) / (high - low)
    for flag, expected in ((False, absolute), (True, signed)):
        returned = gradient_map(model, x.clone(), target.clone(), signed=flag)
        if not isinstance(returned, Tensor) or returned.shape != expected.shape:
            shape = list(expected.shape)
            raise Problem("not_a_map", signed=flag, got=returned_type(returned), shape=shape)
        mine = returned.detach()
        # the same gradient in another order: float rounding, far below 1e-4 of [0, 1]
        if torch.allclose(mine, expected, atol=1e-4):
            continue
        if flag and (torch.allclose(mine, absolute, atol=1e-4) or mine.min() >= 0.5 - 1e-6):
            raise Problem("absolute")
        if flag and torch.allclose(mine, min_max, atol=1e-4):
            raise Problem("min_max")
        raise Problem("wrong_signed" if flag else "wrong_absolute")
    return {}


# -- page 20: a shortcut ----------------------------------------------------------------------


@exercise(
    "20.1",
    passed=Text(
        "Your function returned the mean energy share of the Grad-CAM maps on the cue and "
        "on the object, {cue:.3f} and {object:.3f} for the check's shortcut model on "
        "training-like images: `energy_pointing_game` with the cue masks, then with the "
        "object masks.",
        "你的函数返回了 Grad-CAM 热力图落在线索上和落在物体上的平均能量占比，对检查所用的捷径模型"
        "在类似训练集的图像上分别为 {cue:.3f} 和 {object:.3f}：先用线索的掩码，再用物体的掩码计算 "
        "`energy_pointing_game`。",
    ),
    not_a_pair=Text(
        "`cue_and_object_shares(model, data)` returned a `{got}`; it should return two "
        "numbers, the share on the cue and the share on the object: `return on_cue, on_object`.",
        "`cue_and_object_shares(model, data)` 返回了一个 `{got}`；它应当返回两个数，即落在线索上"
        "和落在物体上的比例：`return on_cue, on_object`。",
    ),
    swapped=Text(
        "Your function returned the share on the object first ({mine}): return the share "
        "on the cue first, `return on_cue, on_object`.",
        "你的函数先返回了落在物体上的比例（{mine}），请先返回落在线索上的比例："
        "`return on_cue, on_object`。",
    ),
    wrong_shares=Text(
        "Your function returned {mine}; the mean energy shares of `ht.GradCAM(model, "
        '"relu3")` on `data.cue_masks` and on `data.masks` are {expected}.',
        '你的函数返回了 {mine}；`ht.GradCAM(model, "relu3")` 在 `data.cue_masks` 和 `data.masks` '
        "上的平均能量占比是 {expected}。",
    ),
)
def _cue_and_object_shares(answer: object) -> Values:
    from ..data import make_shapes  # noqa: PLC0415
    from ..metrics import energy_pointing_game  # noqa: PLC0415
    from ..zoo import pretrained  # noqa: PLC0415

    cue_and_object_shares = require_callable(answer)
    model = watch(pretrained("simple_cnn-shortcut"))
    data = make_shapes(16, variant="shortcut", split="train", seed=21)
    maps = GradCAM(model, "relu3")(data.images)
    expected = (
        energy_pointing_game(maps, data.cue_masks).mean().item(),
        energy_pointing_game(maps, data.masks).mean().item(),
    )
    returned = cue_and_object_shares(model, data)
    values = (
        [_as_share(v) for v in returned]
        if isinstance(returned, (tuple, list)) and len(returned) == 2
        else [None]
    )
    if None in values:
        raise Problem("not_a_pair", got=returned_type(returned))
    mine = tuple(float(v) for v in values if v is not None)
    shown = {
        "mine": "({:.3f}, {:.3f})".format(*mine),
        "expected": "({:.3f}, {:.3f})".format(*expected),
    }
    # the same maps and sums: float rounding, far below 1e-5
    if all(abs(a - b) < 1e-5 for a, b in zip(mine, expected, strict=True)):
        return {"cue": expected[0], "object": expected[1]}
    if all(abs(a - b) < 1e-5 for a, b in zip(mine, expected[::-1], strict=True)):
        raise Problem("swapped", **shown)
    raise Problem("wrong_shares", **shown)


@exercise(
    "20.2",
    passed=Text(
        "Your function returned the pointing game strictly, within 4 and within 8 pixels: "
        "{mine} on the check's maps. A tolerance counts a maximum near the mask as a hit, "
        "so the shares can only grow with it.",
        "你的函数返回了严格、4 像素以内和 8 像素以内的指向游戏结果：在检查所用的热力图上为 {mine}。"
        "容差把落在掩码附近的最大值也算作命中，所以比例只会随它增大。",
    ),
    not_three=Text(
        "`pointing_shares(maps, masks)` returned a `{got}`; it should return three "
        "numbers, the share of hits strictly, within 4 and within 8 pixels.",
        "`pointing_shares(maps, masks)` 返回了一个 `{got}`；它应当返回三个数，即严格、4 像素以内"
        "和 8 像素以内的命中比例。",
    ),
    counts=Text(
        "Your function returned counts, {mine}; return shares of the {n} maps, between 0 "
        "and 1: `.float().mean()`.",
        "你的函数返回的是次数 {mine}；请返回 {n} 张热力图中的比例，介于 0 和 1 之间：`.float().mean()`。",
    ),
    wrong_shares=Text(
        "Your function returned {mine}; `pointing_game(maps, masks, tolerance=t)` for "
        "t = 0, 4 and 8 gives {expected}.",
        "你的函数返回了 {mine}；对 t = 0、4 和 8，`pointing_game(maps, masks, tolerance=t)` 给出 "
        "{expected}。",
    ),
)
def _pointing_shares(answer: object) -> Values:
    from ..data import make_shapes  # noqa: PLC0415
    from ..metrics import pointing_game  # noqa: PLC0415

    pointing_shares = require_callable(answer)
    data = make_shapes(16, split="test", seed=4, image_size=32)
    maps = torch.rand(16, 32, 32)
    hits = [pointing_game(maps, data.masks, tolerance=t) for t in (0, 4, 8)]
    expected = tuple(h.float().mean().item() for h in hits)
    returned = pointing_shares(maps, data.masks)
    values = (
        [_as_share(v) for v in returned]
        if isinstance(returned, (tuple, list)) and len(returned) == 3
        else [None]
    )
    if None in values:
        raise Problem("not_three", got=returned_type(returned))
    mine = tuple(float(v) for v in values if v is not None)
    shown = {
        "mine": "({:.3f}, {:.3f}, {:.3f})".format(*mine),
        "expected": "({:.3f}, {:.3f}, {:.3f})".format(*expected),
        "n": len(maps),
    }
    # whole counts divided by 16: exact
    if all(abs(a - b) < 1e-6 for a, b in zip(mine, expected, strict=True)):
        return shown
    counts = tuple(float(h.sum()) for h in hits)
    if all(abs(a - b) < 1e-6 for a, b in zip(mine, counts, strict=True)):
        raise Problem("counts", **shown)
    raise Problem("wrong_shares", **shown)


@exercise(
    "20.3",
    passed=Text(
        "Your function painted every cue pixel with a colour of the image's background "
        "and left the other pixels, and the images you were given, as they were.",
        "你的函数用图像背景中的颜色涂掉了每个线索像素，其他像素以及传入的图像都保持原样。",
    ),
    not_images=Text(
        "`paint_over_cue(images, cue_masks)` returned a `{got}`; it should return new "
        "images of the same shape, `{shape}`.",
        "`paint_over_cue(images, cue_masks)` 返回了一个 `{got}`；它应当返回形状相同的新图像 "
        "`{shape}`。",
    ),
    in_place=Text(
        "Your function painted over the cue in the images it was given: the test images "
        "themselves lost their cue. Work on a copy, `images.clone()`.",
        "你的函数在传入的图像上直接涂掉了线索，测试图像本身也丢失了线索。请在副本上操作："
        "`images.clone()`。",
    ),
    cue_left=Text(
        "In image {image}, {count} cue pixels still have their colour: paint every pixel "
        "where `cue_masks[i]` is True.",
        "在第 {image} 张图像中，还有 {count} 个线索像素保留着原来的颜色，请涂掉 `cue_masks[i]` "
        "为 True 的每个像素。",
    ),
    changed_outside=Text(
        "In image {image} your function changed {count} pixels outside the cue: change "
        "only the pixels where `cue_masks[i]` is True.",
        "在第 {image} 张图像中，你的函数改变了线索之外的 {count} 个像素，只改变 `cue_masks[i]` "
        "为 True 的像素。",
    ),
    not_background=Text(
        "In image {image} the cue is painted with a colour found nowhere else in the "
        "image, `{colour}`: take the colour of a background pixel near the cue, such as "
        "the corner next to it.",
        "在第 {image} 张图像中，线索被涂成了图像中其他地方都没有的颜色 `{colour}`，请取线索"
        "附近的一个背景像素的颜色，例如它旁边的角落。",
    ),
)
def _paint_over_cue(answer: object) -> Values:
    from ..data import make_shapes  # noqa: PLC0415

    paint_over_cue = require_callable(answer)
    data = make_shapes(6, variant="shortcut", split="test", seed=20)
    images, cue_masks = data.images.clone(), data.cue_masks.clone()
    returned = paint_over_cue(images, cue_masks)
    if not torch.equal(images, data.images):
        raise Problem("in_place")
    if not isinstance(returned, Tensor) or returned.shape != images.shape:
        raise Problem("not_images", got=returned_type(returned), shape=list(images.shape))
    painted = returned.detach()
    for i in range(len(images)):
        cue = cue_masks[i]
        outside = (painted[i] != images[i]).any(dim=0) & ~cue
        if outside.any():
            raise Problem("changed_outside", image=i, count=int(outside.sum()))
        kept = (painted[i] == images[i]).all(dim=0) & cue
        if kept.any():
            raise Problem("cue_left", image=i, count=int(kept.sum()))
        background = images[i][:, ~cue & ~data.masks[i]].T  # [pixels, 3]
        colours: Tensor = torch.unique(painted[i][:, cue].T, dim=0)
        for colour in colours:
            # a copied pixel has exactly its colour; 1e-6 allows a float round trip
            if not (background - colour).abs().amax(dim=1).lt(1e-6).any():
                shown = [round(c, 3) for c in colour.tolist()]
                raise Problem("not_background", image=i, colour=shown)
    return {}


# -- page 21: guided backpropagation ----------------------------------------------------


def _relu_rule_gradient(model: nn.Module, x: Tensor, target: Tensor, hook: Any) -> Tensor:
    """The input gradient of the targets' scores with ``hook`` as a full backward hook on each ReLU."""
    relus = [m for m in model.modules() if isinstance(m, nn.ReLU)]
    handles = [relu.register_full_backward_hook(hook) for relu in relus]
    try:
        return _input_gradient(model, x, target)
    finally:
        for handle in handles:
            handle.remove()


def _guided_rule(module: nn.Module, grad_input: Any, grad_output: Any) -> tuple[Tensor]:
    return (grad_input[0].clamp(min=0),)


def _deconv_rule(module: nn.Module, grad_input: Any, grad_output: Any) -> tuple[Tensor]:
    return (grad_output[0].clamp(min=0),)


def _same_gradient(a: Tensor, b: Tensor) -> bool:
    # the same backward pass up to float rounding (about 1e-7 of the largest value); the
    # rules this check tells apart differ by far more than 1e-4 of it
    return bool(torch.allclose(a, b, rtol=0.0, atol=1e-4 * float(b.abs().max()) + 1e-12))


@exercise(
    "21.1",
    passed=Text(
        "With your hook on every ReLU of the check's model, the input gradient is the "
        "deconvnet one: each ReLU passes max(g, 0) from above, whatever its input was "
        "(no forward mask [a > 0], unlike guided backpropagation).",
        "把你的钩子注册到检查所用模型的每个 ReLU 上后，输入梯度就是 deconvnet 的梯度。"
        "每个 ReLU 都让上面传来的 max(g, 0) 通过，不管它的输入是什么（没有前向掩码 [a > 0]，"
        "这一点与引导反向传播不同）。",
    ),
    not_a_tuple=Text(
        "PyTorch refused what your hook returned: `{error}`. A full backward hook returns "
        "None or a tuple with one gradient per input of the module; a ReLU has one input, "
        "so return `(grad_output[0].clamp(min=0),)`.",
        "PyTorch 拒绝了你的钩子返回的值：`{error}`。完整反向钩子返回 None，或者一个元组，"
        "模块的每个输入对应其中一个梯度；ReLU 只有一个输入，所以请返回 "
        "`(grad_output[0].clamp(min=0),)`。",
    ),
    guided=Text(
        "Your hook gives the guided gradients: it clamps `grad_input`, which already "
        "carries the ReLU's forward mask [a > 0]. The deconvnet rule ignores the input: "
        "clamp `grad_output[0]` and return it as the new `grad_input`.",
        "你的钩子得到的是引导梯度：它截断的是 `grad_input`，而这个梯度已经带有 ReLU 的"
        "前向掩码 [a > 0]。deconvnet 规则不看输入，请截断 `grad_output[0]`，并把它作为新的 "
        "`grad_input` 返回。",
    ),
    unchanged=Text(
        "With your hook the input gradient is the plain one: the hook changed nothing. A "
        "full backward hook changes the gradient only through what it returns; return "
        "`(grad_output[0].clamp(min=0),)`.",
        "用了你的钩子后，输入梯度仍是普通梯度，钩子什么也没改变。完整反向钩子只能通过它的返回值"
        "改变梯度，请返回 `(grad_output[0].clamp(min=0),)`。",
    ),
    not_clamped=Text(
        "Your hook passes `grad_output` through unchanged, negative gradients included. "
        "The deconvnet rule keeps only the positive ones: `grad_output[0].clamp(min=0)`.",
        "你的钩子原样传递 `grad_output`，负的梯度也一起传了过去。deconvnet 规则只保留正的梯度："
        "`grad_output[0].clamp(min=0)`。",
    ),
    wrong_gradient=Text(
        "With your hook on every ReLU the input gradient is neither the deconvnet one nor "
        "one of the usual mistakes. Return `(grad_output[0].clamp(min=0),)` and nothing else.",
        "把你的钩子注册到每个 ReLU 上后，输入梯度既不是 deconvnet 的梯度，也不是常见错误之一。"
        "请返回 `(grad_output[0].clamp(min=0),)`，不要做别的事。",
    ),
)
def _deconv_hook(answer: object) -> Values:
    deconv_hook = require_callable(answer)
    model = _tiny_cnn()
    x = torch.rand(3, 3, 32, 32)
    with torch.no_grad():
        target = model(x).argmax(dim=1)
    try:
        mine = _relu_rule_gradient(model, x, target, deconv_hook)
    except RuntimeError as error:
        if "Backward hook returned" not in str(error):
            raise
        raise Problem("not_a_tuple", error=str(error).splitlines()[0]) from None
    if _same_gradient(mine, _relu_rule_gradient(model, x, target, _deconv_rule)):
        return {}
    if _same_gradient(mine, _relu_rule_gradient(model, x, target, _guided_rule)):
        raise Problem("guided")
    if _same_gradient(mine, _input_gradient(model, x, target)):
        raise Problem("unchanged")
    if _same_gradient(mine, _relu_rule_gradient(model, x, target, lambda m, gi, go: go)):
        raise Problem("not_clamped")
    raise Problem("wrong_gradient")


@exercise(
    "21.2",
    passed=Text(
        "On the check's images, your function asked for the maps of each image's top class "
        "and of its second class ({second}), and returned their rank correlations, one per "
        "image: {correlations}.",
        "在检查所用的图像上，你的函数请求了每张图像最高类别的热力图和第二类别（{second}）的热力图，"
        "并返回了它们的秩相关系数，每张图像一个：{correlations}。",
    ),
    not_per_image=Text(
        "`top_vs_second(model, explain, images)` returned `{got}`; it should return one rank "
        "correlation per image, a tensor `[{count}]`: `spearman(maps_top, maps_second)`.",
        "`top_vs_second(model, explain, images)` 返回了 `{got}`；它应当为每张图像返回一个秩相关"
        "系数，即一个 `[{count}]` 张量：`spearman(maps_top, maps_second)`。",
    ),
    calls=Text(
        "Your function called `explain` {calls} time(s); it needs the maps of two classes "
        "per image: call `explain(images, top)` and `explain(images, second)`.",
        "你的函数调用了 {calls} 次 `explain`；每张图像需要两个类别的热力图，请分别调用 "
        "`explain(images, top)` 和 `explain(images, second)`。",
    ),
    same_class=Text(
        "Your function compared each image's top class with itself, so every correlation "
        "is 1. The second most likely class is the second largest score: "
        "`model(images).topk(2, dim=1).indices[:, 1]`.",
        "你的函数把每张图像的最高类别和它自己比较，所以每个相关系数都是 1。第二可能的类别是"
        "第二大的得分：`model(images).topk(2, dim=1).indices[:, 1]`。",
    ),
    wrong_classes=Text(
        "Your function asked for the maps of classes {got}; the check's images have top "
        "classes {top} and second classes {second}. Take both from "
        "`model(images).topk(2, dim=1).indices`, one pair per image (`dim=1`: over the "
        "classes, not over the batch).",
        "你的函数请求的是类别 {got} 的热力图；检查所用图像的最高类别是 {top}，第二类别是 "
        "{second}。请从 `model(images).topk(2, dim=1).indices` 中取出这两个类别，每张图像一对"
        "（`dim=1`：在类别上取，而不是在批次上取）。",
    ),
    not_spearman=Text(
        "Your function asked for the right maps, but returned {got} instead of their "
        "rank correlations {expected}: pass the two maps to "
        "`hooks_tutorial.metrics.spearman`.",
        "你的函数请求的热力图是对的，但返回的是 {got}，而不是它们的秩相关系数 {expected}。"
        "请把两组热力图传给 `hooks_tutorial.metrics.spearman`。",
    ),
)
def _top_vs_second(answer: object) -> Values:
    from ..metrics import spearman  # noqa: PLC0415 - the metrics import slowly

    top_vs_second = require_callable(answer)
    generator = torch.Generator().manual_seed(0)
    linear = nn.Linear(3 * 8 * 8, 5)
    with torch.no_grad():
        linear.weight.copy_(torch.randn(5, 3 * 8 * 8, generator=generator) / 8)
        linear.bias.zero_()
    model = watch(nn.Sequential(nn.Flatten(), linear).eval())
    images = torch.randn(4, 3, 8, 8, generator=generator)
    patterns = torch.randn(5, 8, 8, generator=generator)  # each class's own map
    with torch.no_grad():
        top, second = model(images).topk(2, dim=1).indices.T
    asked: list[list[int]] = []

    def explain(x: Tensor, target: Any = None) -> Tensor:
        if target is None:
            target = model(x).argmax(dim=1)
        classes = torch.as_tensor(target).reshape(-1)
        if len(classes) == 1:
            classes = classes.expand(len(x))
        asked.append(classes.tolist())
        if classes.shape != (len(x),):
            raise Problem("wrong_classes", got=asked[-1], top=top.tolist(), second=second.tolist())
        return x.detach().sum(dim=1) + 2 * patterns[classes]

    expected = spearman(explain(images, top), explain(images, second))
    asked.clear()
    returned = top_vs_second(model, explain, images.clone())
    count = len(images)
    if not isinstance(returned, Tensor) or returned.shape != (count,):
        got = f"Tensor{list(returned.shape)}" if isinstance(returned, Tensor) else repr(returned)
        raise Problem("not_per_image", got=got[:60], count=count)
    if len(asked) != 2:
        raise Problem("calls", calls=len(asked))
    pair = sorted(asked)
    if pair == sorted([top.tolist(), second.tolist()]):
        # a rank correlation in [-1, 1]: float rounding moves it by about 1e-7
        if torch.allclose(returned.detach().float(), expected, atol=1e-4):
            shown = ", ".join(f"{v:.2f}" for v in expected.tolist())
            return {"second": second.tolist(), "correlations": shown}
        got = ", ".join(f"{v:.2f}" for v in returned.detach().float().tolist())
        wanted = ", ".join(f"{v:.2f}" for v in expected.tolist())
        raise Problem("not_spearman", got=got, expected=wanted)
    if asked[0] == asked[1]:
        raise Problem("same_class")
    raise Problem("wrong_classes", got=asked, top=top.tolist(), second=second.tolist())


class _CheckError(Exception):
    """The error the check raises inside the learner's ``with`` block."""


@exercise(
    "21.3",
    passed=Text(
        "Inside the block the check's model carried {inside} hooks, one per ReLU, and its "
        "input gradient was the guided one; after the block, and after an error raised "
        "inside it (which reached the caller), no hook was left.",
        "在 with 块内，检查所用的模型上有 {inside} 个钩子，每个 ReLU 一个，输入梯度就是引导梯度；"
        "块结束之后，以及块内抛出错误之后（错误传到了调用方），都没有留下钩子。",
    ),
    not_a_context_manager=Text(
        "`guided_relus(model)` returned a `{got}`, which a `with` statement cannot use. "
        "Decorate a generator function with `@contextlib.contextmanager`: register the "
        "hooks, `yield` inside `try`, remove them in `finally`.",
        "`guided_relus(model)` 返回了一个 `{got}`，`with` 语句无法使用它。请用 "
        "`@contextlib.contextmanager` 装饰一个生成器函数：注册钩子，在 `try` 中 `yield`，"
        "在 `finally` 中移除钩子。",
    ),
    not_guided=Text(
        "Inside the block the input gradient is not the guided one ({inside} hooks on the "
        "model, {relus} ReLUs). Register `guided_relu_hook` with "
        "`register_full_backward_hook` on every `nn.ReLU` of the model, and nothing else.",
        "在 with 块内，输入梯度不是引导梯度（模型上有 {inside} 个钩子，共有 {relus} 个 ReLU）。"
        "请用 `register_full_backward_hook` 把 `guided_relu_hook` 注册到模型的每个 `nn.ReLU` "
        "上，不要注册到别处。",
    ),
    left_after_exit=Text(
        "After the `with` block ended normally, {left} hooks were still on the model: "
        "remove every handle when the block exits.",
        "`with` 块正常结束后，模型上仍有 {left} 个钩子。请在块退出时移除每个句柄。",
    ),
    left_after_error=Text(
        "After an error inside the `with` block, {left} hooks were still on the model: "
        "the error is raised at the `yield`, so the code after it never ran. Put the "
        "`yield` inside `try` and remove the hooks in `finally`.",
        "`with` 块内出错之后，模型上仍有 {left} 个钩子：错误是在 `yield` 处抛出的，所以它后面的"
        "代码根本没有运行。请把 `yield` 放进 `try`，并在 `finally` 中移除钩子。",
    ),
    swallowed=Text(
        "The error raised inside the `with` block never reached the caller: your context "
        "manager swallowed it. Remove the hooks in `finally` without `except`, so that "
        "the error goes on after the cleanup.",
        "在 `with` 块内抛出的错误没有传到调用方，被你的上下文管理器吞掉了。请在 `finally` 中移除"
        "钩子，不要用 `except`，这样错误在清理之后会继续向外传递。",
    ),
)
def _guided_relus(answer: object) -> Values:
    from ..hooks import count_hooks  # noqa: PLC0415

    guided_relus = require_callable(answer)
    model = _tiny_cnn()
    relus = sum(isinstance(m, nn.ReLU) for m in model.modules())
    x = torch.rand(3, 3, 32, 32)
    with torch.no_grad():
        target = model(x).argmax(dim=1)
    expected = _relu_rule_gradient(model, x, target, _guided_rule)
    manager = guided_relus(model)
    if not (hasattr(manager, "__enter__") and hasattr(manager, "__exit__")):
        raise Problem("not_a_context_manager", got=returned_type(manager))
    with manager:
        inside = count_hooks(model).total
        mine = _input_gradient(model, x, target)
    if not _same_gradient(mine, expected):
        raise Problem("not_guided", inside=inside, relus=relus)
    if count_hooks(model).total:
        raise Problem("left_after_exit", left=count_hooks(model).total)
    reached = False
    try:
        with guided_relus(model):
            raise _CheckError
    except _CheckError:
        reached = True
    if count_hooks(model).total:
        raise Problem("left_after_error", left=count_hooks(model).total)
    if not reached:
        raise Problem("swallowed")
    return {"inside": inside}


# -- page 22: beyond plain CNNs ---------------------------------------------------------


class _TinyResNet(nn.Module):
    """torchvision's ResNet in miniature: a stem and two stages of one ``BasicBlock`` each.

    The same kinds of module as ``resnet18`` (``bn1`` before an in-place ReLU, ``bn2``
    before ``out += identity``, a downsampling branch), with 4 and 8 channels.
    """

    def __init__(self) -> None:
        from torchvision.models.resnet import BasicBlock  # noqa: PLC0415 - slow import

        super().__init__()
        torch.manual_seed(0)
        self.conv1 = nn.Conv2d(3, 4, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(4)
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = nn.Sequential(BasicBlock(4, 4))
        downsample = nn.Sequential(nn.Conv2d(4, 8, 1, stride=2, bias=False), nn.BatchNorm2d(8))
        self.layer2 = nn.Sequential(BasicBlock(4, 8, stride=2, downsample=downsample))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 5)

    def forward(self, x: Tensor) -> Tensor:
        x = self.layer2(self.layer1(self.relu(self.bn1(self.conv1(x)))))
        scores: Tensor = self.fc(torch.flatten(self.avgpool(x), 1))
        return scores


def _tiny_resnet() -> _TinyResNet:
    return watch(_TinyResNet().eval())  # untrained BatchNorms: outputs of both signs


def _raises_with_backward_hook(model: nn.Module, layer: nn.Module, x: Tensor) -> bool:
    """Whether a full backward hook on ``layer`` makes the forward pass raise."""
    handle = layer.register_full_backward_hook(lambda module, grad_input, grad_output: None)
    try:
        model(x)
    except RuntimeError:
        return True
    finally:
        handle.remove()
    return False


@exercise(
    "22.1",
    passed=Text(
        "On the check's small ResNet your function found the {count} modules on which "
        "`naive_gradcam` raises: {names}. They are the BatchNorms before an in-place "
        "ReLU or before `out += identity`, and the in-place ReLUs themselves: a full backward hook "
        "wraps a module's inputs as well as its outputs, and an in-place ReLU overwrites "
        "its own input.",
        "在检查所用的小型 ResNet 上，你的函数找到了会让 `naive_gradcam` 报错的 {count} 个模块："
        "{names}。它们是原地 ReLU 或 `out += identity` 之前的 BatchNorm，以及原地 ReLU 本身。"
        "完整反向钩子既包装模块的输出，也包装它的输入，而原地 ReLU 会覆盖它自己的输入。",
    ),
    not_names=Text(
        "`failing_modules(model, x)` returned `{got}`; it should return the names of the "
        "modules (strings such as `'layer1.0.bn2'`, from `model.named_modules()`) on which "
        "`naive_gradcam` raises.",
        "`failing_modules(model, x)` 返回了 `{got}`；它应当返回会让 `naive_gradcam` 报错的"
        "模块的名字（来自 `model.named_modules()` 的字符串，例如 `'layer1.0.bn2'`）。",
    ),
    missed_relus=Text(
        "Your list lacks the ReLUs {missing}. Nothing after a ReLU changes its output, but "
        "a full backward hook also wraps the module's input in a view, and "
        "`ReLU(inplace=True)` overwrites its input: run `naive_gradcam` on every module "
        "and catch the `RuntimeError`, rather than guessing.",
        "你的列表缺少 ReLU：{missing}。ReLU 之后没有什么会改变它的输出，但完整反向钩子也会把"
        "模块的输入包装成一个视图，而 `ReLU(inplace=True)` 会覆盖它的输入。请在每个模块上运行 "
        "`naive_gradcam` 并捕获 `RuntimeError`，而不是靠猜。",
    ),
    missing=Text(
        "Your list lacks {missing}, on which `naive_gradcam` raises too. Run it on every "
        "module of `model.named_modules()` (except the model itself, the `nn.Sequential` "
        "stages and `fc`) and keep the names where it raises `RuntimeError`.",
        "你的列表缺少 {missing}，在这些模块上 `naive_gradcam` 同样会报错。请在 "
        "`model.named_modules()` 的每个模块上运行它（模型本身、各个 `nn.Sequential` 阶段和 "
        "`fc` 除外），保留抛出 `RuntimeError` 的那些名字。",
    ),
    extra=Text(
        "Your list has {extra}, on which `naive_gradcam` works: nothing after them changes "
        "their output, or their input, in place. Keep only the names where the call raises.",
        "你的列表包含 {extra}，而 `naive_gradcam` 在这些模块上能正常工作：它们之后没有任何操作"
        "会原地修改它们的输出或输入。请只保留调用报错的那些名字。",
    ),
)
def _failing_modules(answer: object) -> Values:
    failing_modules = require_callable(answer)
    model = _tiny_resnet()
    x = torch.rand(2, 3, 16, 16)
    candidates = [
        (name, module)
        for name, module in model.named_modules()
        if name and not isinstance(module, (nn.Sequential, nn.Linear))
    ]
    expected = {name for name, m in candidates if _raises_with_backward_hook(model, m, x)}
    with warnings.catch_warnings():  # a hook on conv1: its input needs no gradient
        warnings.filterwarnings("ignore", message="Full backward hook will not fire")
        returned = failing_modules(model, x.clone())
    if isinstance(returned, str) or not isinstance(returned, (list, tuple, set)):
        raise Problem("not_names", got=repr(returned)[:60])
    if not all(isinstance(name, str) for name in returned):
        raise Problem("not_names", got=repr(list(returned))[:60])
    found = set(returned)
    relus = {name for name in expected if isinstance(model.get_submodule(name), nn.ReLU)}
    if relus and not relus & found and expected - relus <= found:
        raise Problem("missed_relus", missing=", ".join(sorted(relus)))
    if expected - found:
        raise Problem("missing", missing=", ".join(sorted(expected - found)))
    if found - expected:
        raise Problem("extra", extra=", ".join(sorted(found - expected)))
    return {"count": len(expected), "names": ", ".join(sorted(expected))}


@exercise(
    "22.2",
    passed=Text(
        "On `{layer}` of the check's small ResNet (followed by `out += identity` and an "
        "in-place ReLU) your map equals the library's raw Grad-CAM map: the model went on "
        "with the clone, so the in-place operations never touched the kept output.",
        "在检查所用的小型 ResNet 的 `{layer}` 上（其后是 `out += identity` 和一个原地 ReLU），"
        "你的热力图与本库的原始 Grad-CAM 热力图相同。模型接着用的是克隆，所以原地操作从未碰到"
        "保存下来的输出。",
    ),
    backward_hook=Text(
        "Your function raised `{error}`: a full backward hook on `{layer}` wraps its output "
        "in a view, and `out += identity` modifies that view in place. Use only a forward "
        "hook that keeps `output` and returns `output.clone()`, then "
        "`torch.autograd.grad(score, kept)`.",
        "你的函数抛出了 `{error}`：`{layer}` 上的完整反向钩子把它的输出包装成一个视图，而 "
        "`out += identity` 原地修改了这个视图。请只用一个前向钩子，保存 `output` 并返回 "
        "`output.clone()`，然后调用 `torch.autograd.grad(score, kept)`。",
    ),
    not_raw=Text(
        "`careful_gradcam(model, layer, x, class_index)` returned a `{got}`; it should "
        "return the raw maps `{shape}`, one per image at the resolution of the layer's "
        "output (after the ReLU, not upsampled), like `naive_gradcam`.",
        "`careful_gradcam(model, layer, x, class_index)` 返回了一个 `{got}`；它应当像 "
        "`naive_gradcam` 那样返回原始热力图 `{shape}`，每张图像一张，分辨率与该层输出相同"
        "（经过 ReLU，未上采样）。",
    ),
    changed_in_place=Text(
        "Your map is computed from activations that the in-place operations after `{layer}` "
        "changed: what you kept shares memory with the output that `out += identity` and "
        "the ReLU overwrote. Return `output.clone()` from the forward hook, so that the "
        "rest of the model changes the clone.",
        "你的热力图所用的激活值已被 `{layer}` 之后的原地操作改变了：你保存的张量与输出共享内存，"
        "而 `out += identity` 和 ReLU 覆盖了这个输出。请让前向钩子返回 `output.clone()`，"
        "这样模型的其余部分改变的是克隆。",
    ),
    wrong_map=Text(
        "Your map differs from Grad-CAM's raw map on `{layer}` by up to {difference:.2e}. "
        "Weight each channel of the kept output by its gradient averaged over the "
        "positions, sum over the channels and apply the ReLU.",
        "你的热力图与 `{layer}` 上 Grad-CAM 的原始热力图最多相差 {difference:.2e}。请用梯度在"
        "各位置上的平均值为保存的输出的每个通道加权，在通道上求和，再应用 ReLU。",
    ),
)
def _careful_gradcam(answer: object) -> Values:
    careful_gradcam = require_callable(answer)
    model = _tiny_resnet()
    x = torch.rand(2, 3, 16, 16)
    name = "layer2.0.bn2"
    layer = model.get_submodule(name)
    expected = GradCAM(model, name)(x, target=1, raw=True)
    kept: dict[str, Tensor] = {}  # the output as stored without a copy: changed in place
    handle = layer.register_forward_hook(lambda m, args, out: kept.update(out=out.detach()))
    try:
        with torch.no_grad():
            model(x)
    finally:
        handle.remove()
    try:
        returned = careful_gradcam(model, layer, x.clone(), 1)
    except RuntimeError as error:
        if "view" not in str(error):
            raise
        raise Problem("backward_hook", error="RuntimeError", layer=name) from None
    if not isinstance(returned, Tensor) or returned.shape != expected.shape:
        got = (
            f"Tensor{list(returned.shape)}"
            if isinstance(returned, Tensor)
            else returned_type(returned)
        )
        raise Problem("not_raw", got=got, shape=list(expected.shape))
    mine = returned.detach()
    # the same sums in another order: float rounding, about 1e-7 of the map's largest value
    tolerance = 1e-4 * float(expected.abs().max()) + 1e-8
    if torch.allclose(mine, expected, rtol=0.0, atol=tolerance):
        return {"layer": name}
    changed = _gradcam_of(model, name, x, kept["out"])
    if torch.allclose(mine, changed, rtol=0.0, atol=tolerance):
        raise Problem("changed_in_place", layer=name)
    raise Problem("wrong_map", layer=name, difference=float((mine - expected).abs().max()))


def _gradcam_of(model: nn.Module, name: str, x: Tensor, activation: Tensor) -> Tensor:
    """Grad-CAM's raw map at ``name`` for class 1, with ``activation`` in place of the output."""
    kept: dict[str, Tensor] = {}

    def keep(module: nn.Module, args: Any, output: Tensor) -> Tensor:
        kept["out"] = output
        return output.clone()

    handle = model.get_submodule(name).register_forward_hook(keep)
    try:
        score = model(x)[:, 1].sum()
    finally:
        handle.remove()
    (grad,) = torch.autograd.grad(score, kept["out"])
    weights = grad.mean(dim=(2, 3), keepdim=True)
    return F.relu((weights * activation).sum(dim=1))


class _WideViT(nn.Module):
    """A vision transformer in miniature for 64 x 96 images: 8 x 8 patches, an 8 x 12 grid."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.patch_embed = nn.Conv2d(3, 8, kernel_size=8, stride=8)
        self.prefix = nn.Parameter(torch.randn(1, 1, 8) * 0.02)  # the class token
        self.position = nn.Parameter(torch.randn(1, 1 + 8 * 12, 8) * 0.02)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(
                8, nhead=2, dim_feedforward=16, dropout=0.0, batch_first=True
            )
            for _ in range(2)
        )
        self.head = nn.Linear(8, 5)

    def forward(self, x: Tensor) -> Tensor:
        tokens = self.patch_embed(x).flatten(2).transpose(1, 2)
        tokens = torch.cat([self.prefix.expand(len(x), -1, -1), tokens], dim=1) + self.position
        for block in self.blocks:
            tokens = block(tokens)
        scores: Tensor = self.head(tokens[:, 0])
        return scores


@exercise(
    "22.3",
    passed=Text(
        "Your maps are Grad-CAM's raw maps at `blocks.0` of the check's ViT, 8 x 12 per "
        "image: `grid=(8, 12)` tells `ht.token_reshape_transform` how to lay the 96 patch "
        "tokens out, row by row, after the class token.",
        "你的热力图就是检查所用 ViT 在 `blocks.0` 处的 Grad-CAM 原始热力图，每张图像 8×12。"
        "`grid=(8, 12)` 告诉 `ht.token_reshape_transform` 如何在类别词元之后逐行排列这 96 个"
        "图块词元。",
    ),
    no_grid=Text(
        "Your function raised the library's error: 97 tokens (a class token and 96 patches) "
        "do not form a square grid, so the transform cannot guess it. Pass it: "
        "`functools.partial(ht.token_reshape_transform, grid=(8, 12))`.",
        "你的函数引发了库的错误：97 个词元（一个类别词元和 96 个图块词元）排不成正方形网格，"
        "变换猜不出网格的形状。请把它传进去："
        "`functools.partial(ht.token_reshape_transform, grid=(8, 12))`。",
    ),
    swapped=Text(
        "Your maps are 12 x 8: `grid` is (rows, columns), (height, width), like a tensor's "
        "last two sizes. A 64 x 96 image gives 8 rows of 12 patches: `grid=(8, 12)`.",
        "你的热力图是 12×8 的：`grid` 的顺序是（行, 列），即（高, 宽），和张量的最后两个维度一样。"
        "64×96 的图像给出 8 行、每行 12 个图块：`grid=(8, 12)`。",
    ),
    not_raw=Text(
        "`wide_cam(vit, images)` returned a `{got}`; it should return the raw maps "
        "`{shape}` (`raw=True`), one value per patch.",
        "`wide_cam(vit, images)` 返回了一个 `{got}`；它应当返回原始热力图 `{shape}`"
        "（`raw=True`），每个图块一个值。",
    ),
    wrong_map=Text(
        "Your maps have the right shape but not Grad-CAM's values at `blocks.0` for the "
        'predicted classes: use `ht.GradCAM(vit, "blocks.0", reshape_transform=...)` with '
        "`raw=True`.",
        "你的热力图形状对了，但数值不是预测类别在 `blocks.0` 处的 Grad-CAM 数值。请使用 "
        '`ht.GradCAM(vit, "blocks.0", reshape_transform=...)`，并传入 `raw=True`。',
    ),
)
def _wide_cam(answer: object) -> Values:
    wide_cam = require_callable(answer)
    vit = watch(_WideViT().eval())
    images = torch.rand(2, 3, 64, 96)
    grid = functools.partial(token_reshape_transform, grid=(8, 12))
    expected = GradCAM(vit, "blocks.0", reshape_transform=grid)(images, raw=True)
    try:
        returned = wide_cam(vit, images.clone())
    except ValueError as error:
        if "square grid" not in str(error):
            raise
        raise Problem("no_grid") from None
    if isinstance(returned, Tensor) and returned.shape == (2, 12, 8):
        raise Problem("swapped")
    if not isinstance(returned, Tensor) or returned.shape != expected.shape:
        got = (
            f"Tensor{list(returned.shape)}"
            if isinstance(returned, Tensor)
            else returned_type(returned)
        )
        raise Problem("not_raw", got=got, shape=list(expected.shape))
    # the same computation up to float rounding, about 1e-7 of the map's largest value
    tolerance = 1e-4 * float(expected.abs().max()) + 1e-8
    if not torch.allclose(returned.detach(), expected, rtol=0.0, atol=tolerance):
        raise Problem("wrong_map")
    return {}
