"""Right and wrong answers to the exercises of pages 15 to 22 (chapter 4, Grad-CAM)."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import warnings

import torch
import torch.nn.functional as F
from torch import nn
from torchvision.transforms.functional import gaussian_blur

import hooks_tutorial as ht
from hooks_tutorial.metrics import (
    deletion_auc,
    energy_pointing_game,
    insertion_auc,
    pointing_game,
    spearman,
)

# -- page 16 ---------------------------------------------------------------------------


def grad_cam(model, layer, images, target=None):  # page 16's grad_cam
    store = {}

    def hook(module, args, output):
        store["A"] = output.detach()
        output.register_hook(lambda grad: store.update(dA=grad.detach()))

    handle = layer.register_forward_hook(hook)
    try:
        logits = model(images)
        if target is None:
            target = logits.argmax(dim=1)
        target = torch.as_tensor(target).expand(len(images))
        model.zero_grad()
        logits.gather(1, target[:, None]).sum().backward()
    finally:
        handle.remove()
    weights = store["dA"].mean(dim=(2, 3))
    cams = F.relu((weights[:, :, None, None] * store["A"]).sum(dim=1))
    cams = F.interpolate(cams[:, None], size=images.shape[-2:], mode="bilinear")[:, 0]
    low = cams.flatten(1).min(dim=1).values[:, None, None]
    high = cams.flatten(1).max(dim=1).values[:, None, None]
    return (cams - low) / (high - low).clamp(min=1e-12)


def second_class_cam(model, layer, image):
    second = int(model(image).topk(2).indices[0, 1])
    return grad_cam(model, layer, image, target=second)


def predicted_class_cam(model, layer, image):
    return grad_cam(model, layer, image)


def last_class_cam(model, layer, image):
    return grad_cam(model, layer, image, target=int(model(image).argmin()))


def _raw_map(model, layer, image, score):
    store = {}

    def keep(module, args, output):
        store["A"] = output.detach()
        output.register_hook(lambda grad: store.update(dA=grad))

    handle = layer.register_forward_hook(keep)
    try:
        score(model(image)).backward()
    finally:
        handle.remove()
    w = store["dA"].mean(dim=(2, 3))
    return F.relu((w[:, :, None, None] * store["A"]).sum(dim=1))


def probability_cam(model, layer, image, target):
    return _raw_map(model, layer, image, lambda logits: logits.softmax(dim=1)[0, target])


def logit_cam(model, layer, image, target):
    return _raw_map(model, layer, image, lambda logits: logits[0, target])


def softmax_over_batch_cam(model, layer, image, target):
    return _raw_map(model, layer, image, lambda logits: logits.softmax(dim=0)[0, target])


def scaled_probability_cam(model, layer, image, target):
    raw = probability_cam(model, layer, image, target)
    return raw / raw.max()


def layer_gradient(model, layer, image, target):
    kept = {}

    def hook(module, args, output):
        output.register_hook(lambda grad: kept.update(grad=grad))

    handle = layer.register_forward_hook(hook)
    try:
        model(image)[0, target].backward()
    finally:
        handle.remove()
    return kept["grad"]


def layer_gradient_backward_hook(model, layer, image, target):
    kept = {}
    with layer.register_full_backward_hook(lambda m, gi, go: kept.update(grad=go[0])):
        model(image)[0, target].backward()
    return kept["grad"]


def layer_activation(model, layer, image, target):
    kept = {}
    with layer.register_forward_hook(lambda m, a, out: kept.update(out=out.detach())):
        model(image)[0, target].backward()
    return kept["out"]


def predicted_gradient(model, layer, image, target):
    kept = {}

    def hook(module, args, output):
        output.register_hook(lambda grad: kept.update(grad=grad))

    with layer.register_forward_hook(hook):
        logits = model(image)
        logits[0, logits.argmax()].backward()
    return kept["grad"]


# -- page 17 ---------------------------------------------------------------------------


def pointing_score(model, layers, images, masks):
    maps = ht.GradCAM(model, layers)(images)
    return pointing_game(maps, masks).float().mean()


def pointing_score_first_layer(model, layers, images, masks):
    first = layers[0] if isinstance(layers, list) else layers
    return pointing_game(ht.GradCAM(model, first)(images), masks).float().mean().item()


def pointing_hits(model, layers, images, masks):
    return pointing_game(ht.GradCAM(model, layers)(images), masks)


def circle_minus_square(out):
    return out[:, 0] - out[:, 1]


def second_on_first(cam, two):
    maps = cam(two.images, target=two.object_labels[:, 1])
    return pointing_game(maps, two.object_masks[:, 0]).float().mean()


def second_on_second(cam, two):
    maps = cam(two.images, target=two.object_labels[:, 1])
    return int(pointing_game(maps, two.object_masks[:, 1]).sum())


def first_on_second(cam, two):
    maps = cam(two.images, target=two.object_labels[:, 0])
    return pointing_game(maps, two.object_masks[:, 1]).float().mean()


def single_objects_config(config):
    return dataclasses.replace(config, n_train_two=0)


# -- page 18 ---------------------------------------------------------------------------


def signed_maps(model, images):
    return {
        name: cls(model, "relu3", relu=False)(images, target=0, raw=True)
        for name, cls in [
            ("Grad-CAM", ht.GradCAM),
            ("XGrad-CAM", ht.XGradCAM),
            ("HiResCAM", ht.HiResCAM),
        ]
    }


def signed_maps_relu(model, images):
    return {
        name: cls(model, "relu3")(images, target=0, raw=True)
        for name, cls in [
            ("Grad-CAM", ht.GradCAM),
            ("XGrad-CAM", ht.XGradCAM),
            ("HiResCAM", ht.HiResCAM),
        ]
    }


def signed_maps_scaled(model, images):
    return {
        name: cls(model, "relu3", relu=False)(images, target=0)
        for name, cls in [
            ("Grad-CAM", ht.GradCAM),
            ("XGrad-CAM", ht.XGradCAM),
            ("HiResCAM", ht.HiResCAM),
        ]
    }


def count_images(model, method, images):
    sizes = []
    with model.register_forward_pre_hook(lambda module, args: sizes.append(len(args[0]))):
        method(images)
    return sum(sizes)


def calls_through(model, method, images):
    sizes = []
    with model.register_forward_pre_hook(lambda module, args: sizes.append(len(args[0]))):
        method(images)
    return len(sizes)


def grad_cam_plus_plus(model, layer, x, target, *, nan_to_num=True):
    with (
        ht.capture_activations(model, layer) as acts,
        ht.capture_gradients(model, layer) as grads,
    ):
        model(x).gather(1, torch.as_tensor(target)[:, None]).sum().backward()
    model.zero_grad(set_to_none=True)
    A, g = acts[layer], grads[layer]
    sums = A.sum(dim=(2, 3), keepdim=True)
    a = g**2 / (2 * g**2 + sums * g**3)
    if nan_to_num:
        a = torch.nan_to_num(a)
    w = (a * g.clamp(min=0)).sum(dim=(2, 3))
    return torch.relu((w[:, :, None, None] * A).sum(dim=1))


def grad_cam_plus_plus_nan(model, layer, x, target):
    return grad_cam_plus_plus(model, layer, x, target, nan_to_num=False)


# -- page 15 ---------------------------------------------------------------------------


class PrintEvery5(ht.Callback):
    def on_batch_end(self, batch, logs):
        if batch % 5 == 0:
            print(f"epoch {logs['epoch']} batch {batch}: loss {logs['loss']:.3f}")


class PrintEvery5FromZero(ht.Callback):
    def on_batch_end(self, batch, logs):
        if (batch + 1) % 5 == 0:
            print(f"batch {batch}: loss {logs['loss']:.3f}")


class PrintEvery5Batch(ht.Callback):
    def on_batch_end(self, batch, logs):
        if batch % 5 == 0:
            print(f"batch {batch}")


class PrintAtEpochEnd(ht.Callback):
    def on_epoch_end(self, epoch, logs):
        print(f"loss {logs['loss']:.3f}")


def early_stopped_fit(net, train, val):
    stopper = ht.EarlyStopping(monitor="val_accuracy", patience=2)
    run = ht.fit(
        net,
        (train.images, train.labels),
        epochs=20,
        val_data=(val.images, val.labels),
        callbacks=[stopper],
    )
    return stopper, run


def early_stopped_fit_no_val(net, train, val):
    stopper = ht.EarlyStopping(monitor="val_accuracy", patience=2)
    run = ht.fit(net, (train.images, train.labels), epochs=20, callbacks=[stopper])
    return stopper, run


def early_stopped_fit_default(net, train, val):
    stopper = ht.EarlyStopping(patience=2)
    run = ht.fit(
        net,
        (train.images, train.labels),
        epochs=20,
        val_data=(val.images, val.labels),
        callbacks=[stopper],
    )
    return stopper, run


def early_stopped_fit_unused(net, train, val):
    stopper = ht.EarlyStopping(monitor="val_accuracy", patience=2)
    run = ht.fit(net, (train.images, train.labels), epochs=2, val_data=(val.images, val.labels))
    return stopper, run


# -- page 18b --------------------------------------------------------------------------


def object_hits(method, two):
    first = method(two.images, target=two.object_labels[:, 0])
    second = method(two.images, target=two.object_labels[:, 1])
    return (
        pointing_game(first, two.object_masks[:, 0]).float().mean(),
        pointing_game(second, two.object_masks[:, 1]).float().mean(),
    )


def object_hits_one_mask(method, two):
    first = method(two.images, target=two.object_labels[:, 0])
    second = method(two.images, target=two.object_labels[:, 1])
    return (
        pointing_game(first, two.object_masks[:, 0]).float().mean(),
        pointing_game(second, two.object_masks[:, 0]).float().mean(),
    )


def object_hits_no_target(method, two):
    maps = method(two.images)
    return (
        pointing_game(maps, two.object_masks[:, 0]).float().mean(),
        pointing_game(maps, two.object_masks[:, 1]).float().mean(),
    )


def energy_column(candidates, masks):
    return {
        name: energy_pointing_game(saliency, masks).mean().item()
        for name, saliency in candidates.items()
    }


def pointing_column(candidates, masks):
    return {
        name: pointing_game(saliency, masks).float().mean().item()
        for name, saliency in candidates.items()
    }


def fine_aucs(model, images, saliency, steps=64, baseline="blur"):
    deletion = deletion_auc(model, images, saliency, steps=steps, baseline=baseline).mean()
    insertion = insertion_auc(model, images, saliency, steps=steps, baseline="blur").mean()
    return deletion, insertion


# -- page 19 ---------------------------------------------------------------------------


def black_deletion(model, images, saliency):
    return deletion_auc(model, images, saliency, steps=10, baseline="zeros").mean().item()


def blurred_deletion(model, images, saliency):
    return deletion_auc(model, images, saliency, steps=10, baseline="blur").mean().item()


def blur_object(images, masks):
    return torch.where(masks[:, None], gaussian_blur(images, 11, 5.0), images)


def blur_background(images, masks):
    return torch.where(masks[:, None], images, gaussian_blur(images, 11, 5.0))


def gradient_map(model, x, target, signed):
    x = x.clone().requires_grad_(True)
    score = model(x).gather(1, target[:, None]).sum()
    (grad,) = torch.autograd.grad(score, x)
    saliency = grad.sum(dim=1) if signed else grad.abs().amax(dim=1)
    saliency = saliency / saliency.flatten(1).abs().amax(dim=1)[:, None, None]
    return (saliency + 1) / 2 if signed else saliency


def gradient_map_unsigned(model, x, target, signed):
    return gradient_map(model, x, target, signed=False)


# -- page 20 ---------------------------------------------------------------------------


def cue_and_object_shares(model, data):
    maps = ht.GradCAM(model, "relu3")(data.images)
    return (
        energy_pointing_game(maps, data.cue_masks).mean().item(),
        energy_pointing_game(maps, data.masks).mean().item(),
    )


def pointing_shares(maps, masks):
    return [pointing_game(maps, masks, tolerance=t).float().mean().item() for t in (0, 4, 8)]


def pointing_counts(maps, masks):
    return [int(pointing_game(maps, masks, tolerance=t).sum()) for t in (0, 4, 8)]


def paint_over_cue(images, cue_masks):
    cleaned = images.clone()
    for i in range(len(images)):
        ys, xs = torch.nonzero(cue_masks[i], as_tuple=True)
        y = 0 if ys.min() < 32 else 63
        x = 0 if xs.min() < 32 else 63
        cleaned[i][:, ys, xs] = images[i][:, y, x][:, None]
    return cleaned


def paint_over_cue_in_place(images, cue_masks):
    for i in range(len(images)):
        ys, xs = torch.nonzero(cue_masks[i], as_tuple=True)
        images[i][:, ys, xs] = images[i][:, 0, 0][:, None]
    return images


def paint_over_cue_grey(images, cue_masks):
    return torch.where(cue_masks[:, None], torch.full_like(images, 0.123), images)


# -- page 21 ---------------------------------------------------------------------------


def guided_relu_hook(module, grad_input, grad_output):  # page 21's rule
    return (grad_input[0].clamp(min=0),)


def deconv_hook(module, grad_input, grad_output):
    return (grad_output[0].clamp(min=0),)


def deconv_hook_unclamped(module, grad_input, grad_output):
    return grad_output


def top_vs_second(model, explain, images):
    with torch.no_grad():
        top_two = model(images).topk(2, dim=1).indices
    return spearman(explain(images, top_two[:, 0]), explain(images, top_two[:, 1]))


def top_vs_top(model, explain, images):
    with torch.no_grad():
        top = model(images).argmax(dim=1)
    return spearman(explain(images, top), explain(images, top))


def top_vs_second_over_batch(model, explain, images):
    with torch.no_grad():
        top_two = model(images).topk(2, dim=0).indices
    return spearman(explain(images, top_two[0]), explain(images, top_two[1]))


def top_vs_second_mean(model, explain, images):
    return top_vs_second(model, explain, images).mean().item()


@contextlib.contextmanager
def guided_relus(model):
    handles = [
        m.register_full_backward_hook(guided_relu_hook)
        for m in model.modules()
        if isinstance(m, nn.ReLU)
    ]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


@contextlib.contextmanager
def guided_relus_no_finally(model):
    handles = [
        m.register_full_backward_hook(guided_relu_hook)
        for m in model.modules()
        if isinstance(m, nn.ReLU)
    ]
    yield
    for handle in handles:
        handle.remove()


@contextlib.contextmanager
def guided_relus_swallowing(model):
    handles = [
        m.register_full_backward_hook(guided_relu_hook)
        for m in model.modules()
        if isinstance(m, nn.ReLU)
    ]
    try:
        yield
    except Exception:  # noqa: BLE001, S110 - the mistake this answer shows
        pass
    finally:
        for handle in handles:
            handle.remove()


@contextlib.contextmanager
def guided_everywhere(model):
    handles = [m.register_full_backward_hook(guided_relu_hook) for m in model.modules()]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def guided_handles(model):
    return [
        m.register_full_backward_hook(guided_relu_hook)
        for m in model.modules()
        if isinstance(m, nn.ReLU)
    ]


# -- page 22 ---------------------------------------------------------------------------


def naive_gradcam(model, layer, x, class_index):  # page 22's
    stored = {}

    def save_activation(module, args, output):
        stored["activation"] = output.detach()

    def save_gradient(module, grad_input, grad_output):
        stored["gradient"] = grad_output[0]

    handles = [
        layer.register_forward_hook(save_activation),
        layer.register_full_backward_hook(save_gradient),
    ]
    try:
        model(x)[:, class_index].sum().backward()
    finally:
        for handle in handles:
            handle.remove()
    weights = stored["gradient"].mean(dim=(2, 3), keepdim=True)
    return torch.relu((weights * stored["activation"]).sum(dim=1))


def failing_modules(model, x):
    failing = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # conv1's input needs no gradient: torch warns
        for name, module in model.named_modules():
            if name == "" or isinstance(module, (nn.Sequential, nn.Linear)):
                continue
            try:
                naive_gradcam(model, module, x, class_index=0)
            except RuntimeError:
                failing.append(name)
    return failing


def failing_batchnorms(model, x):  # guessed: the BatchNorms before an in-place operation
    return [
        name
        for name, module in model.named_modules()
        if isinstance(module, nn.BatchNorm2d) and "downsample" not in name
    ]


def careful_gradcam(model, layer, x, class_index):
    kept = {}

    def keep_output(module, args, output):
        kept["activation"] = output
        return output.clone()

    handle = layer.register_forward_hook(keep_output)
    try:
        score = model(x)[:, class_index].sum()
    finally:
        handle.remove()
    (gradient,) = torch.autograd.grad(score, kept["activation"])
    weights = gradient.mean(dim=(2, 3), keepdim=True)
    return torch.relu((weights * kept["activation"].detach()).sum(dim=1))


def detached_gradcam(model, layer, x, class_index):  # page 22's tensor hook, no clone
    stored = {}

    def save_both(module, args, output):
        stored["activation"] = output.detach()
        output.register_hook(lambda grad: stored.update(gradient=grad))

    handle = layer.register_forward_hook(save_both)
    try:
        model(x)[:, class_index].sum().backward()
    finally:
        handle.remove()
    weights = stored["gradient"].mean(dim=(2, 3), keepdim=True)
    return torch.relu((weights * stored["activation"]).sum(dim=1))


def wide_cam(vit, images):
    grid_8x12 = functools.partial(ht.token_reshape_transform, grid=(8, 12))
    return ht.GradCAM(vit, "blocks.0", reshape_transform=grid_8x12)(images, raw=True)


def wide_cam_no_grid(vit, images):
    return ht.GradCAM(vit, "blocks.0", reshape_transform=ht.token_reshape_transform)(images)


def wide_cam_swapped(vit, images):
    grid_12x8 = functools.partial(ht.token_reshape_transform, grid=(12, 8))
    return ht.GradCAM(vit, "blocks.0", reshape_transform=grid_12x8)(images, raw=True)


def wide_cam_upsampled(vit, images):
    grid_8x12 = functools.partial(ht.token_reshape_transform, grid=(8, 12))
    return ht.GradCAM(vit, "blocks.0", reshape_transform=grid_8x12)(images)


RIGHT = {
    "15.1": PrintEvery5,
    "15.2": early_stopped_fit,
    "15.3": lambda confusion: confusion.diag() / confusion.sum(dim=1),
    "16.1": second_class_cam,
    "16.2": probability_cam,
    "16.3": layer_gradient,
    "17.1": pointing_score,
    "17.2": circle_minus_square,
    "17.3": second_on_first,
    "17.4": single_objects_config,
    "18.1": signed_maps,
    "18.2": count_images,
    "18.3": grad_cam_plus_plus,
    "18b.1": object_hits,
    "18b.2": energy_column,
    "18b.3": fine_aucs,
    "19.1": black_deletion,
    "19.2": blur_object,
    "19.3": gradient_map,
    "20.1": cue_and_object_shares,
    "20.2": pointing_shares,
    "20.3": paint_over_cue,
    "21.1": deconv_hook,
    "21.2": top_vs_second,
    "21.3": guided_relus,
    "22.1": failing_modules,
    "22.2": careful_gradcam,
    "22.3": wide_cam,
}

WRONG = [
    ("15.1", PrintEvery5FromZero, "wrong_batches"),
    ("15.1", PrintEvery5Batch, "no_loss"),
    ("15.1", PrintAtEpochEnd, "no_batch_end"),
    ("15.2", early_stopped_fit_no_val, "no_val_data"),
    ("15.2", early_stopped_fit_default, "wrong_monitor"),
    ("15.2", early_stopped_fit_unused, "not_used"),
    ("15.2", lambda net, train, val: ht.EarlyStopping(), "not_a_pair"),
    ("15.3", lambda confusion: confusion.diag() / confusion.sum(dim=0), "by_column"),
    ("15.3", lambda confusion: confusion.diag() / confusion.sum(), "by_total"),
    ("15.3", lambda confusion: confusion.diag(), "wrong_values"),
    ("16.1", predicted_class_cam, "predicted_class"),
    ("16.1", last_class_cam, "wrong_class"),
    ("16.1", lambda model, layer, image: None, "not_a_map"),
    ("16.2", logit_cam, "used_logit"),
    ("16.2", softmax_over_batch_cam, "all_zero"),
    ("16.2", scaled_probability_cam, "scaled"),
    ("16.2", lambda model, layer, image, target: grad_cam(model, layer, image), "not_raw"),
    ("16.3", layer_activation, "returned_activation"),
    ("16.3", predicted_gradient, "predicted_class"),
    ("17.1", pointing_score_first_layer, "one_layer"),
    ("17.1", pointing_hits, "not_a_share"),
    ("17.2", lambda out: (out[:, 0] - out[:, 1]).sum(), "not_per_image"),
    ("17.2", lambda out: out[:, 1] - out[:, 0], "swapped"),
    ("17.2", lambda out: out.softmax(dim=1)[:, 0] - out.softmax(dim=1)[:, 1], "probabilities"),
    ("17.3", second_on_second, "own_object"),
    ("17.3", first_on_second, "other_way"),
    ("17.4", lambda config: ht.PretrainedConfig(n_train_two=0), "lost_fields"),
    ("17.4", lambda config: config, "still_two"),
    ("18.1", signed_maps_relu, "relu_applied"),
    ("18.1", signed_maps_scaled, "not_raw"),
    ("18.1", lambda model, images: list(signed_maps(model, images).values()), "not_three"),
    ("18.2", calls_through, "counted_calls"),
    ("18.2", lambda model, method, images: len(images), "wrong_count"),
    ("18.3", grad_cam_plus_plus_nan, "nan"),
    ("18b.1", object_hits_one_mask, "one_mask"),
    ("18b.1", object_hits_no_target, "no_target"),
    ("18b.1", lambda method, two: 0.5, "not_a_pair"),
    ("18b.2", pointing_column, "pointing"),
    ("18b.2", lambda candidates, masks: list(candidates), "not_a_column"),
    (
        "18b.3",
        lambda model, images, saliency: fine_aucs(model, images, saliency, 16),
        "wrong_steps",
    ),
    ("18b.3", lambda m, images, s: fine_aucs(m, images, s, baseline="zeros"), "zero_baseline"),
    ("19.1", blurred_deletion, "blurred"),
    ("19.1", lambda model, images, saliency: None, "not_a_number"),
    ("19.2", blur_background, "inverted"),
    ("19.2", lambda images, masks: gaussian_blur(images, 11, 5.0), "changed_background"),
    ("19.2", lambda images, masks: torch.where(masks[:, None], 0.0, images), "wrong_blur"),
    ("19.3", gradient_map_unsigned, "absolute"),
    ("20.1", lambda model, data: cue_and_object_shares(model, data)[::-1], "swapped"),
    ("20.2", pointing_counts, "counts"),
    ("20.2", lambda maps, masks: pointing_shares(maps, masks)[:1] * 3, "wrong_shares"),
    ("20.3", paint_over_cue_in_place, "in_place"),
    ("20.3", paint_over_cue_grey, "not_background"),
    ("20.3", lambda images, cue_masks: images.clone(), "cue_left"),
    ("21.1", guided_relu_hook, "guided"),
    ("21.1", lambda module, grad_input, grad_output: None, "unchanged"),
    ("21.1", deconv_hook_unclamped, "not_clamped"),
    ("21.1", lambda module, grad_input, grad_output: grad_output[0].clamp(min=0), "not_a_tuple"),
    ("21.2", top_vs_top, "same_class"),
    ("21.2", top_vs_second_over_batch, "wrong_classes"),
    ("21.2", top_vs_second_mean, "not_per_image"),
    ("21.3", guided_relus_no_finally, "left_after_error"),
    ("21.3", guided_relus_swallowing, "swallowed"),
    ("21.3", guided_everywhere, "not_guided"),
    ("21.3", guided_handles, "not_a_context_manager"),
    ("22.1", failing_batchnorms, "missed_relus"),
    ("22.1", lambda model, x: failing_modules(model, x)[:2], "missing"),
    ("22.1", lambda model, x: [*failing_modules(model, x), "layer1.0.conv1"], "extra"),
    ("22.1", lambda model, x: len(failing_modules(model, x)), "not_names"),
    ("22.2", naive_gradcam, "backward_hook"),
    ("22.2", detached_gradcam, "changed_in_place"),
    ("22.2", lambda model, layer, x, c: ht.GradCAM(model, layer)(x, c), "not_raw"),
    ("22.2", lambda model, layer, x, c: careful_gradcam(model, layer, x, c - 1), "wrong_map"),
    ("22.3", wide_cam_no_grid, "no_grid"),
    ("22.3", wide_cam_swapped, "swapped"),
    ("22.3", wide_cam_upsampled, "not_raw"),
    (
        "18.3",
        lambda model, layer, x, target: ht.GradCAM(model, layer)(x, target, raw=True),
        "grad_cam",
    ),
    (
        "18.3",
        lambda model, layer, x, target: ht.GradCAMPlusPlus(model, layer)(x, target),
        "not_raw",
    ),
]
