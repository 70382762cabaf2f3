"""Learn PyTorch hooks by running them, and use them safely.

``hooks_tutorial`` is the small library behind the hooks-tutorial site. It
records activations and gradients with hooks that never outlive the ``with``
block that made them, draws Grad-CAM-family heatmaps, and generates the
offline data, models and training loop that the tutorial pages use.

Importing the package is cheap: every public name is loaded on first use.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

try:
    __version__ = version("hooks-tutorial")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0+unknown"

# Public name -> submodule that defines it. Keep sorted within each group.
_LAZY: dict[str, str] = {
    # hook toolkit
    "HookCounts": "hooks",
    "HookGroup": "hooks",
    "HookReport": "hooks",
    "count_hooks": "hooks",
    "remove_all_hooks": "hooks",
    "resolve_layers": "_layers",
    "Activations": "capture",
    "Captures": "capture",
    "MissingCaptureError": "capture",
    "capture_activations": "capture",
    "capture_gradients": "capture",
    "TraceResult": "_trace",
    "TraceRow": "_trace",
    "trace": "_trace",
    "clip_gradients": "gradtools",
    "scale_gradients": "gradtools",
    "detect_anomalies": "gradtools",
    "AnomalyError": "gradtools",
    # CAM engine
    "CAM": "cam",
    "GradCAM": "cam",
    "GradCAMPlusPlus": "cam",
    "XGradCAM": "cam",
    "LayerCAM": "cam",
    "HiResCAM": "cam",
    "ScoreCAM": "cam",
    "EigenCAM": "cam",
    "GuidedBackprop": "cam",
    "GuidedGradCAM": "cam",
    "token_reshape_transform": "cam",
    "ClassTarget": "targets",
    "SegmentationTarget": "targets",
    "SimilarityTarget": "targets",
    "overlay": "viz",
    "plot_cams": "viz",
    # data, models, training
    "ShapesData": "data",
    "ShapesDataset": "data",
    "make_shapes": "data",
    "SimpleCNN": "models",
    "TinyConvNet": "models",
    "fit": "training",
    "Callback": "training",
    "ProgressPrinter": "training",
    "History": "training",
    "EarlyStopping": "training",
    "StopTraining": "training",
    "evaluate": "training",
    "PretrainedCacheWarning": "_pretrained",
    "PretrainedConfig": "_pretrained",
    "pretrained": "_pretrained",
    "pretrained_config": "_pretrained",
}

__all__ = [
    "CAM",
    "Activations",
    "AnomalyError",
    "Callback",
    "Captures",
    "ClassTarget",
    "EarlyStopping",
    "EigenCAM",
    "GradCAM",
    "GradCAMPlusPlus",
    "GuidedBackprop",
    "GuidedGradCAM",
    "HiResCAM",
    "History",
    "HookCounts",
    "HookGroup",
    "HookReport",
    "LayerCAM",
    "MissingCaptureError",
    "PretrainedCacheWarning",
    "PretrainedConfig",
    "ProgressPrinter",
    "ScoreCAM",
    "SegmentationTarget",
    "ShapesData",
    "ShapesDataset",
    "SimilarityTarget",
    "SimpleCNN",
    "StopTraining",
    "TinyConvNet",
    "TraceResult",
    "TraceRow",
    "XGradCAM",
    "__version__",
    "capture_activations",
    "capture_gradients",
    "clip_gradients",
    "count_hooks",
    "detect_anomalies",
    "evaluate",
    "fit",
    "make_shapes",
    "overlay",
    "plot_cams",
    "pretrained",
    "pretrained_config",
    "remove_all_hooks",
    "resolve_layers",
    "scale_gradients",
    "token_reshape_transform",
    "trace",
]


# Public submodules, also loaded on first use (``ht.metrics.pointing_game``).
_SUBMODULES = frozenset({"cam", "data", "metrics", "models", "targets", "training", "viz"})


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    module_name = _LAZY.get(name)
    if module_name is None:
        msg = f"module 'hooks_tutorial' has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(importlib.import_module(f"{__name__}.{module_name}"), name)
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # pragma: no cover
    from ._layers import resolve_layers
    from ._pretrained import (
        PretrainedCacheWarning,
        PretrainedConfig,
        pretrained,
        pretrained_config,
    )
    from ._trace import TraceResult, TraceRow, trace
    from .cam import (
        CAM,
        EigenCAM,
        GradCAM,
        GradCAMPlusPlus,
        GuidedBackprop,
        GuidedGradCAM,
        HiResCAM,
        LayerCAM,
        ScoreCAM,
        XGradCAM,
        token_reshape_transform,
    )
    from .capture import (
        Activations,
        Captures,
        MissingCaptureError,
        capture_activations,
        capture_gradients,
    )
    from .data import ShapesData, ShapesDataset, make_shapes
    from .gradtools import AnomalyError, clip_gradients, detect_anomalies, scale_gradients
    from .hooks import HookCounts, HookGroup, HookReport, count_hooks, remove_all_hooks
    from .models import SimpleCNN, TinyConvNet
    from .targets import ClassTarget, SegmentationTarget, SimilarityTarget
    from .training import (
        Callback,
        EarlyStopping,
        History,
        ProgressPrinter,
        StopTraining,
        evaluate,
        fit,
    )
    from .viz import overlay, plot_cams
