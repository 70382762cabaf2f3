"""The public names of ``hooks_tutorial``, listed once: for type checkers and for
``lazy_loader``, which reads this file at import to load each name on first use."""

from . import (
    cam as cam,
    capture as capture,
    data as data,
    gradtools as gradtools,
    hooks as hooks,
    layers as layers,
    metrics as metrics,
    models as models,
    tracing as tracing,
    training as training,
    viz as viz,
    zoo as zoo,
)
from .cam import (
    CAM as CAM,
    EigenCAM as EigenCAM,
    GradCAM as GradCAM,
    GradCAMPlusPlus as GradCAMPlusPlus,
    GuidedBackprop as GuidedBackprop,
    GuidedGradCAM as GuidedGradCAM,
    HiResCAM as HiResCAM,
    LayerCAM as LayerCAM,
    ScoreCAM as ScoreCAM,
    XGradCAM as XGradCAM,
    token_reshape_transform as token_reshape_transform,
)
from .capture import (
    Activations as Activations,
    Captures as Captures,
    MissingCaptureError as MissingCaptureError,
    capture_activations as capture_activations,
    capture_gradients as capture_gradients,
)
from .data import (
    ShapesData as ShapesData,
    ShapesSpec as ShapesSpec,
    make_shapes as make_shapes,
)
from .gradtools import (
    AnomalyError as AnomalyError,
    clip_gradients as clip_gradients,
    detect_anomalies as detect_anomalies,
    scale_gradients as scale_gradients,
)
from .hooks import (
    HookCounts as HookCounts,
    HookGroup as HookGroup,
    HookReport as HookReport,
    count_hooks as count_hooks,
    remove_all_hooks as remove_all_hooks,
)
from .layers import (
    resolve_layers as resolve_layers,
)
from .models import (
    SimpleCNN as SimpleCNN,
    TinyConvNet as TinyConvNet,
)
from .tracing import (
    TraceResult as TraceResult,
    TraceRow as TraceRow,
    trace as trace,
)
from .training import (
    Callback as Callback,
    EarlyStopping as EarlyStopping,
    History as History,
    ProgressPrinter as ProgressPrinter,
    StopTraining as StopTraining,
    evaluate as evaluate,
    fit as fit,
)
from .viz import (
    overlay as overlay,
    plot_cams as plot_cams,
)
from .zoo import (
    PretrainedCacheWarning as PretrainedCacheWarning,
    PretrainedConfig as PretrainedConfig,
    pretrained as pretrained,
    pretrained_config as pretrained_config,
)

__version__: str
