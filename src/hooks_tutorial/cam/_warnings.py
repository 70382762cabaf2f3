"""The warning a CAM call gives when a map comes back all zero.

A module of its own: Sphinx's viewcode links a module's source to the pages
of its objects under one module name, and this class is documented as
``hooks_tutorial.ZeroMapWarning``, while ``_base``'s ``BaseCAM`` is documented
as ``hooks_tutorial.cam.BaseCAM``.
"""

from __future__ import annotations

__all__ = ["ZeroMapWarning"]


class ZeroMapWarning(UserWarning):
    """A CAM map is zero at every position: the layer shows nothing for this score.

    Raised as a warning (the map is still returned) when the score's gradient
    with respect to a target layer's output is zero at every position of an
    image, as at a ViT's last block, whose patch tokens the class-token head
    never reads, a pyramid level that the score does not use, or a target
    that selects nothing (an empty segmentation region, a box that matches no
    detection); and, for the methods without gradients, when the map itself
    is zero everywhere.
    The message names the layer, the images and a layer to pick instead.
    Silence it with ``warnings.simplefilter("ignore", ZeroMapWarning)``.
    """
