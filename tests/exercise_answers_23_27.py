"""Right and wrong answers to the exercises of pages 23 to 27b (tests/test_exercises.py runs them)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
import torchvision
from torch import nn
from torchvision.models.feature_extraction import get_graph_node_names

import hooks_tutorial as ht

# -- page 23 ---------------------------------------------------------------------------


def first_and_fifth(model, x):
    with torch.no_grad():
        top = model(x).topk(5).indices[0]
    cam = ht.GradCAM(model, "layer4")
    return cam(x.expand(2, -1, -1, -1), target=top[[0, 4]])


def first_and_fifth_by_number(model, x):
    return ht.GradCAM(model, "layer4")(x.expand(2, -1, -1, -1), target=[0, 4])


def first_and_second(model, x):
    with torch.no_grad():
        top = model(x).topk(5).indices[0]
    return ht.GradCAM(model, "layer4")(x.expand(2, -1, -1, -1), target=top[[0, 1]])


def first_and_fifth_twice(model, x):
    with torch.no_grad():
        top = model(x).topk(5).indices[0].tolist()
    cam = ht.GradCAM(model, "layer4")
    return torch.cat([cam(x, target=top[0]), cam(x, target=top[4])])


def combine_maps(map3, map4):
    mean_map = (map3 + map4) / 2
    return (mean_map - mean_map.min()) / (mean_map.max() - mean_map.min())


# -- page 24 ---------------------------------------------------------------------------


def non_module_nodes(model):
    modules = dict(model.named_modules())
    return [n for n in get_graph_node_names(model)[1] if n not in modules]


class GatedNet(nn.Module):  # page 24's
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, kernel_size=3, padding=1)
        self.head = nn.Linear(8, 5)

    def forward(self, x):
        h = self.conv(x)
        if h.mean() > 0:
            h = F.relu(h)
        return self.head(h.mean(dim=(2, 3)))


class TraceableGatedNet(GatedNet):
    def forward(self, x):
        h = self.conv(x)
        h = torch.where(h.mean() > 0, F.relu(h), h)
        return self.head(h.mean(dim=(2, 3)))


class AlwaysReluGatedNet(GatedNet):
    def forward(self, x):
        return self.head(F.relu(self.conv(x)).mean(dim=(2, 3)))


class SwappedGatedNet(GatedNet):
    def forward(self, x):
        h = self.conv(x)
        h = torch.where(h.mean() > 0, h, F.relu(h))
        return self.head(h.mean(dim=(2, 3)))


# -- page 25 ---------------------------------------------------------------------------


def name_relu_calls(model, block, x):
    named, counter = {}, {"calls": 0}

    def reset(module, args):
        counter["calls"] = 0

    def name_the_call(module, args, output):
        named[("after_bn1", "after_add")[counter["calls"]]] = output.detach().clone()
        counter["calls"] += 1

    with (
        block.register_forward_pre_hook(reset),
        block.relu.register_forward_hook(name_the_call),
        torch.no_grad(),
    ):
        model(x)
        model(x)
    return named


def name_relu_calls_no_reset(model, block, x):
    named, counter = {}, {"calls": 0}

    def name_the_call(module, args, output):
        named[("after_bn1", "after_add")[counter["calls"]]] = output.detach().clone()
        counter["calls"] += 1

    with block.relu.register_forward_hook(name_the_call), torch.no_grad():
        model(x)
        model(x)
    return named


def name_relu_calls_swapped(model, block, x):
    named = name_relu_calls(model, block, x)
    return {"after_bn1": named["after_add"], "after_add": named["after_bn1"]}


def want_weights(module, args, kwargs):
    return args, {**kwargs, "need_weights": True}


# -- page 26 ---------------------------------------------------------------------------


def attention_rollout(attention):  # page 26's, with the identity
    rollout = torch.eye(attention[0].shape[-1])
    for weights in attention:
        mixed = weights.mean(dim=1) + torch.eye(weights.shape[-1])
        mixed = mixed / mixed.sum(dim=-1, keepdim=True)
        rollout = mixed @ rollout
    return rollout


def plain_rollout(attention):
    plain = torch.eye(attention[0].shape[-1])
    for weights in attention:
        plain = weights.mean(dim=1) @ plain
    return plain


def plain_rollout_reversed(attention):
    plain = torch.eye(attention[0].shape[-1])
    for weights in attention:
        plain = plain @ weights.mean(dim=1)
    return plain


def layer_cam_maps(model, layer, images):
    return ht.LayerCAM(model, layer, reshape_transform=ht.token_reshape_transform)(images)


def grad_cam_maps(model, layer, images):
    return ht.GradCAM(model, layer, reshape_transform=ht.token_reshape_transform)(images)


# -- page 27 ---------------------------------------------------------------------------


def score_without(model, layer, image, target):
    handle = layer.register_forward_hook(lambda module, args, output: torch.zeros_like(output))
    try:
        with torch.no_grad():
            return target(model(image)).item()
    finally:
        handle.remove()


def score_without_no_return(model, layer, image, target):
    def zeros(module, args, output):
        torch.zeros_like(output)  # made, not returned

    with layer.register_forward_hook(zeros), torch.no_grad():
        return target(model(image)).item()


def score_without_left(model, layer, image, target):
    layer.register_forward_hook(lambda module, args, output: torch.zeros_like(output))
    with torch.no_grad():
        return target(model(image)).item()


RIGHT = {
    "23.1": first_and_fifth,
    "23.2": torchvision.models.ResNet18_Weights.IMAGENET1K_V1.transforms(),
    "23.3": combine_maps,
    "24.2": non_module_nodes,
    "24.3": TraceableGatedNet,
    "25.1": lambda h_n: h_n[-1],
    "25.2": name_relu_calls,
    "25.3": want_weights,
    "26.1": plain_rollout,
    "26.2": lambda weights: weights[:, :, 0, 1:].reshape(len(weights), -1, 8, 8),
    "26.3": layer_cam_maps,
    "27.1": lambda cam, image: cam(image, target=ht.SegmentationTarget(0))[0],
    "27.2": score_without,
    "27b.1": ht.BoxScoreTarget,
    "27b.2": lambda label, box: ht.BoxScoreTarget(label, box, missing="zero"),
    "27.3": lambda reference: lambda out: F.cosine_similarity(out, reference[None], dim=1),
}

WRONG = [
    ("23.1", first_and_fifth_by_number, "class_numbers"),
    ("23.1", first_and_second, "wrong_classes"),
    ("23.1", first_and_fifth_twice, "separate_calls"),
    ("23.1", lambda model, x: ht.GradCAM(model, "layer3")(x, target=0), "not_two_maps"),
    (
        "23.2",
        torchvision.models.ResNet50_Weights.IMAGENET1K_V2.transforms(),
        "resnet50_preprocessing",
    ),
    ("23.2", torchvision.models.ResNet18_Weights.IMAGENET1K_V1, "not_transforms"),
    ("23.3", lambda map3, map4: (map3 + map4) / 2, "not_rescaled"),
    ("23.3", torch.maximum, "wrong_combination"),
    ("24.2", lambda model: get_graph_node_names(model)[1], "all_nodes"),
    ("24.2", lambda model: ["x"], "wrong_nodes"),
    ("24.3", GatedNet, "not_traceable"),
    ("24.3", AlwaysReluGatedNet, "always_relu"),
    ("24.3", SwappedGatedNet, "swapped"),
    ("25.1", lambda h_n: h_n[0], "first_layer"),
    ("25.1", lambda h_n: h_n[1] if len(h_n) > 1 else h_n[0], "fixed_row"),
    ("25.2", name_relu_calls_no_reset, "not_reset"),
    ("25.2", name_relu_calls_swapped, "swapped"),
    ("25.3", lambda module, args, kwargs: {**kwargs, "need_weights": True}, "not_a_pair"),
    ("25.3", lambda module, args, kwargs: (args, {"need_weights": True}), "dropped_options"),
    ("25.3", lambda module, args, kwargs: None, "no_weights"),
    ("26.1", attention_rollout, "added_identity"),
    ("26.1", plain_rollout_reversed, "wrong_order"),
    ("26.1", lambda attention: attention[-1], "kept_heads"),
    ("26.2", lambda weights: weights[:, :, 1:, 0].reshape(len(weights), -1, 8, 8), "column"),
    (
        "26.2",
        lambda weights: weights[:, :, 0, :64].reshape(len(weights), -1, 8, 8),
        "with_class_token",
    ),
    ("26.2", lambda weights: weights[:, :, 0, 1:].mean(dim=1), "wrong_shape"),
    ("26.3", grad_cam_maps, "grad_cam"),
    ("26.3", lambda model, layer, images: ht.LayerCAM(model, layer)(images), "no_reshape"),
    ("27.1", lambda cam, image: cam(image, target=0)[0], "class_index"),
    ("27.1", lambda cam, image: cam(image, target=ht.SegmentationTarget(1))[0], "wrong_class"),
    ("27.2", score_without_no_return, "returned_none"),
    ("27.2", score_without_left, "hooks_left"),
    ("27.3", lambda reference: lambda out: out @ reference, "dot_product"),
    (
        "27.3",
        lambda reference: lambda out: F.cosine_similarity(out, reference[None]).sum(),
        "wrong_shape",
    ),
    ("27b.1", lambda labels, boxes: ht.BoxScoreTarget(int(labels[0]), boxes[0]), "one_box"),
    (
        "27b.1",
        lambda labels, boxes: [
            ht.BoxScoreTarget(int(k), b) for k, b in zip(labels, boxes, strict=True)
        ],
        "not_one_target",
    ),
    ("27b.2", ht.BoxScoreTarget, "raised_on_missing"),
]
