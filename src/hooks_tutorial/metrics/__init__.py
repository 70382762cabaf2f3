"""How good is a saliency map? Faithfulness, localisation and sanity metrics.

=================================================  ======================================================
:func:`deletion_auc`                               remove the most salient pixels first; lower is better
:func:`insertion_auc`                              insert the most salient pixels first; higher is better
:func:`perturbation_curve`                         the score curves behind both AUCs
:func:`pointing_game`                              is the map's maximum on the object?
:func:`energy_pointing_game`                       share of the map's mass on the object
:func:`average_drop`                               score lost when only the map is kept; lower is better
:func:`increase_in_confidence`                     share of images whose score rises; higher is better
:func:`model_randomization`                        do maps change when the weights are randomised?
:func:`spearman`, :func:`pearson`, :func:`ssim`    similarity of two maps
=================================================  ======================================================

Every function that runs the model does so in eval mode under
``torch.no_grad()`` (except inside the explainer of
:func:`model_randomization`) and restores the model's training flags.
"""

from __future__ import annotations

from ._confidence import average_drop, increase_in_confidence
from ._perturbation import deletion_auc, insertion_auc, perturbation_curve
from ._pointing import energy_pointing_game, pointing_game
from ._randomization import model_randomization
from ._similarity import pearson, spearman, ssim

__all__ = [
    "average_drop",
    "deletion_auc",
    "energy_pointing_game",
    "increase_in_confidence",
    "insertion_auc",
    "model_randomization",
    "pearson",
    "perturbation_curve",
    "pointing_game",
    "spearman",
    "ssim",
]
