"""Argument checks shared by the whole package, each written once.

Every public function validates its arguments with these, so that the same
mistake gets the same message wherever it is made.
"""

from __future__ import annotations

import math
from typing import Literal, overload

import torch
from torch import Tensor, nn


@overload
def positive_int(
    value: object, name: str, *, allow_none: Literal[False] = ..., meaning: str = ""
) -> int: ...
@overload
def positive_int(
    value: object, name: str, *, allow_none: bool, meaning: str = ""
) -> int | None: ...
def positive_int(
    value: object, name: str, *, allow_none: bool = False, meaning: str = ""
) -> int | None:
    """Return ``value`` if it is a positive int (or ``None`` when allowed), else raise.

    ``meaning`` says what the number counts, in the message:
    ``"epochs must be a positive int (passes over the data), got 0"``.
    """
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        extra = "None or " if allow_none else ""
        what = f" ({meaning})" if meaning else ""
        msg = f"{name} must be {extra}a positive int{what}, got {value!r}"
        raise ValueError(msg)
    return value


def positive_number(value: object, name: str, *, allow_inf: bool = False) -> float:
    """Return ``value`` as a float if it is a positive number (finite unless ``allow_inf``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        msg = f"{name} must be a number, got {type(value).__name__}"
        raise TypeError(msg)
    number = float(value)
    if math.isnan(number) or number <= 0 or (math.isinf(number) and not allow_inf):
        kind = "positive number (or math.inf)" if allow_inf else "finite positive number"
        msg = f"{name} must be a {kind}, got {value!r}"
        raise ValueError(msg)
    return number


def check_model(
    model: object, hint: str = "", *, what: str = "the model as an nn.Module"
) -> nn.Module:
    """Return ``model`` if it is an ``nn.Module``, else raise ``TypeError``.

    The message reads ``expected {what}, got {type}; {hint}``: ``hint`` says
    how to call the function correctly.
    """
    if not isinstance(model, nn.Module):
        fix = f"; {hint}" if hint else ""
        msg = f"expected {what}, got {type(model).__name__}{fix}"
        raise TypeError(msg)
    return model


def check_input(x: object) -> Tensor:
    """Return ``x`` if it is a batch of images ``[B, C, H, W]``, else raise.

    An inference tensor (made under ``torch.inference_mode()``) is cloned into
    an ordinary one, which autograd can save for backward.
    """
    if not isinstance(x, Tensor):
        msg = f"expected the input as a torch.Tensor [B, C, H, W], got {type(x).__name__}"
        raise TypeError(msg)
    if x.dim() == 3:
        msg = (
            f"expected a batch of images [B, C, H, W], got a 3-D tensor of shape "
            f"{tuple(x.shape)}; add a batch dimension with x.unsqueeze(0)"
        )
        raise ValueError(msg)
    if x.dim() != 4:
        msg = (
            f"expected a batch of images [B, C, H, W] (4-D), got shape {tuple(x.shape)}; "
            "CAM maps are upsampled to the input's height and width"
        )
        raise ValueError(msg)
    if x.shape[0] == 0:
        msg = "got an empty batch (B = 0); pass at least one image"
        raise ValueError(msg)
    if x.is_inference():
        x = x.clone()
    return x


def check_grad_mode(method: str) -> None:
    """Raise if gradients cannot be computed here (inside ``torch.inference_mode()``)."""
    if torch.is_inference_mode_enabled():
        msg = (
            f"{method} needs gradients, which torch.inference_mode() forbids; call it "
            "outside the inference_mode() block (inside torch.no_grad() it works: "
            "gradients are enabled locally)"
        )
        raise RuntimeError(msg)


def check_finite(t: Tensor, what: str) -> None:
    """Raise ``FloatingPointError`` if ``t`` holds NaN or infinity."""
    finite = torch.isfinite(t)
    if not bool(finite.all()):
        bad = int((~finite).sum())
        msg = (
            f"the {what} contain {bad} non-finite value(s) (NaN or inf) out of {t.numel()}; "
            "check the input (torch.isfinite(x).all()) and the model's weights, or pick "
            "another layer"
        )
        raise FloatingPointError(msg)
