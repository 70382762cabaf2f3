"""Learn PyTorch hooks by running them, and use them safely.

``hooks_tutorial`` is the small library behind the hooks-tutorial site. It
records activations and gradients with hooks that never outlive the ``with``
block that made them, draws Grad-CAM-family heatmaps, and generates the
offline data, models and training loop that the tutorial pages use.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from . import cam, data, detection, exercises, lm, metrics
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
    ZeroMapWarning,
    channels_last_reshape_transform,
    token_reshape_transform,
)
from .capture import (
    Activations,
    Captures,
    MissingCaptureError,
    capture_activations,
    capture_gradients,
)
from .data import ShapesData, ShapesSpec, make_shapes
from .gradtools import AnomalyError, clip_gradients, detect_anomalies, scale_gradients
from .hooks import HookCounts, HookGroup, HookReport, count_hooks, remove_all_hooks
from .models import SimpleCNN, TinyConvNet
from .targets import BoxScoreTarget, SegmentationTarget, SimilarityTarget
from .tracing import TraceResult, TraceRow, trace
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
from .zoo import PretrainedConfig, pretrained, pretrained_config

try:
    __version__ = version("hooks-tutorial")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0+unknown"

__all__ = [
    "CAM",
    "Activations",
    "AnomalyError",
    "BoxScoreTarget",
    "Callback",
    "Captures",
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
    "PretrainedConfig",
    "ProgressPrinter",
    "ScoreCAM",
    "SegmentationTarget",
    "ShapesData",
    "ShapesSpec",
    "SimilarityTarget",
    "SimpleCNN",
    "StopTraining",
    "TinyConvNet",
    "TraceResult",
    "TraceRow",
    "XGradCAM",
    "ZeroMapWarning",
    "__version__",
    "cam",
    "capture_activations",
    "capture_gradients",
    "channels_last_reshape_transform",
    "clip_gradients",
    "count_hooks",
    "data",
    "detect_anomalies",
    "detection",
    "evaluate",
    "exercises",
    "fit",
    "lm",
    "make_shapes",
    "metrics",
    "overlay",
    "plot_cams",
    "pretrained",
    "pretrained_config",
    "remove_all_hooks",
    "scale_gradients",
    "token_reshape_transform",
    "trace",
]
