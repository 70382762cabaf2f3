"""Layers by module or dotted name, with helpful errors: every function that takes layers.

The library resolves layers in one place; ``capture_activations`` shows the
result (``acts.layers``), and GradCAM gives the same errors.
"""

from __future__ import annotations

import pytest
from torch import nn

from hooks_tutorial import GradCAM, capture_activations


def resolve_layers(model: nn.Module, layers: object) -> tuple[str, ...]:
    """The dotted names that ``capture_activations`` resolves ``layers`` to."""
    with capture_activations(model, layers) as acts:  # type: ignore[arg-type]
        pass
    return acts.layers


def test_names_modules_and_lists_resolve_in_order(resnet18):
    conv = resnet18.layer4[1].conv2
    assert resolve_layers(resnet18, "layer4.1.conv2") == ("layer4.1.conv2",)
    assert resolve_layers(resnet18, conv) == ("layer4.1.conv2",)
    names = resolve_layers(resnet18, ["fc", resnet18.layer1, "conv1"])
    assert names == ("fc", "layer1", "conv1")


def test_duplicates_are_dropped(mlp):
    assert resolve_layers(mlp, ["0", mlp[0], "2", "0"]) == ("0", "2")


def test_tuple_of_layers_is_accepted(mlp):
    assert resolve_layers(mlp, ("2", "1")) == ("2", "1")


def test_unknown_name_lists_close_matches(resnet18):
    with pytest.raises(ValueError, match=r"no submodule named 'layer5'; did you mean 'layer4'"):
        resolve_layers(resnet18, "layer5")
    with pytest.raises(ValueError, match=r"did you mean 'layer4\.1\.conv2'"):
        resolve_layers(resnet18, "layer4.1.conv3")
    with pytest.raises(ValueError, match=r"no submodule named 'layer5'; did you mean 'layer4'"):
        GradCAM(resnet18, "layer5")


def test_unknown_name_without_close_match_lists_available(mlp):
    with pytest.raises(ValueError, match=r"no submodule named 'encoder'\. Available: 0, 1, 2$"):
        resolve_layers(mlp, "encoder")


def test_empty_name_is_the_model(mlp):
    with pytest.raises(ValueError, match="empty layer name refers to the whole model"):
        resolve_layers(mlp, "")


def test_model_given_as_layer(mlp):
    with pytest.raises(ValueError, match=r"got the model itself \(Sequential\).*for example '0'"):
        resolve_layers(mlp, mlp)


def test_layer_not_in_model(mlp):
    with pytest.raises(ValueError, match=r"the layer Linear is not part of this model"):
        resolve_layers(mlp, nn.Linear(4, 5))


def test_arguments_swapped(mlp):
    with pytest.raises(TypeError, match="pass the model first and the layer"):
        resolve_layers("0", mlp)  # type: ignore[arg-type]
    # a layer given as the model: the real model is then "not part of" it
    with pytest.raises(ValueError, match="not part of this model"):
        resolve_layers(mlp[0], mlp)


def test_wrong_types_and_empty_list(mlp):
    with pytest.raises(TypeError, match="got int"):
        resolve_layers(mlp, 0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got int"):
        resolve_layers(mlp, ["0", 1])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="no layers given"):
        resolve_layers(mlp, [])
