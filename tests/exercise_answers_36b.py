"""Right and wrong answers to the checked exercises of page 36b (tests/test_exercises.py)."""

from __future__ import annotations

import torch

# -- page 36b: a sparse autoencoder spliced into the residual stream ---------------------


def without_feature(sae, feature):
    def hook(module, args, output):
        features = sae.encode(output[:, -1])
        features[:, feature] = 0
        replaced = output.clone()
        replaced[:, -1] = sae.decode(features)
        return replaced

    return hook


def plain_reconstruction(sae, feature):  # forgets to switch the feature off
    def hook(module, args, output):
        replaced = output.clone()
        replaced[:, -1] = sae(output[:, -1])
        return replaced

    return hook


def edits_a_copy(sae, feature):  # edits a copy and returns None
    def hook(module, args, output):
        features = sae.encode(output[:, -1])
        features[:, feature] = 0
        replaced = output.clone()
        replaced[:, -1] = sae.decode(features)

    return hook


def every_position(sae, feature):  # replaces every position, not only the last
    def hook(module, args, output):
        features = sae.encode(output)
        features[..., feature] = 0
        return sae.decode(features)

    return hook


def zeroes_every_feature(sae, feature):  # switches all features off
    def hook(module, args, output):
        features = torch.zeros_like(sae.encode(output[:, -1]))
        replaced = output.clone()
        replaced[:, -1] = sae.decode(features)
        return replaced

    return hook


def fraction_recovered(clean, spliced, ablated):
    return (spliced - ablated) / (clean - ablated)


RIGHT = {
    "36b.1": without_feature,
    "36b.2": fraction_recovered,
}

WRONG = [
    ("36b.1", plain_reconstruction, "not_switched_off"),
    ("36b.1", edits_a_copy, "returned_none"),
    ("36b.1", every_position, "other_positions"),
    ("36b.1", zeroes_every_feature, "wrong_values"),
    ("36b.1", lambda sae, feature: lambda module, args, output: output[:, -1], "not_a_tensor"),
    ("36b.2", lambda clean, spliced, ablated: spliced / clean, "ignores_baseline"),
    ("36b.2", lambda clean, spliced, ablated: (clean - spliced) / (clean - ablated), "lost"),
    ("36b.2", lambda clean, spliced, ablated: (spliced - ablated) / clean, "wrong_value"),
    ("36b.2", lambda clean, spliced, ablated: "1.0", "not_a_number"),
]
