"""Write ``docs/_intersphinx/torch.inv`` for offline builds, from the installed torch.

Usage::

    python docs/tools/make_torch_inventory.py [OUTPUT]

The site links names in example code (``nn.Linear``, ``x.register_hook``,
``torch.no_grad`` ...) to PyTorch's documentation through intersphinx. Builds
run offline, so ``docs/conf.py`` reads a checked-in inventory first.

When the network is available, prefer PyTorch's real inventory, which is
complete::

    nox -s inventories
    # or by hand:
    sphobjinv convert zlib https://docs.pytorch.org/docs/stable/objects.inv docs/_intersphinx/torch.inv

Without the network, this script writes a smaller inventory: the PyTorch names
a tutorial on hooks uses, each kept only when the installed torch has it, with
the URL pattern that docs.pytorch.org/docs/stable uses for it:

- functions and classes with their own page (autosummary):
  ``generated/torch.nn.Linear.html#torch.nn.Linear``,
  ``generated/torch.Tensor.register_hook.html#torch.Tensor.register_hook``;
- ``nn.Module`` methods, documented on the class page:
  ``generated/torch.nn.Module.html#torch.nn.Module.register_forward_hook``;
- objects documented on a module page: ``tensors.html#torch.Tensor``,
  ``autograd.html#torch.autograd.graph.saved_tensors_hooks``,
  ``optim.html#torch.optim.Optimizer``, ``nn.init.html#torch.nn.init.zeros_``,
  ``data.html#torch.utils.data.DataLoader``.

Names PyTorch does not document (``torch.utils.hooks.RemovableHandle``,
``Tensor.grad_fn``) are left out on purpose: a link would lead to a 404.
Only the standard library is needed besides torch.
"""

from __future__ import annotations

import inspect
import sys
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

import torch
from torch import nn

OUTPUT = Path(__file__).parents[1] / "_intersphinx" / "torch.inv"

# -- names, grouped by where docs.pytorch.org documents them ------------------

TORCH_FUNCTIONS = [
    "tensor",
    "as_tensor",
    "from_numpy",
    "zeros",
    "ones",
    "zeros_like",
    "ones_like",
    "empty",
    "full",
    "full_like",
    "arange",
    "linspace",
    "eye",
    "rand",
    "randn",
    "randint",
    "rand_like",
    "randn_like",
    "randint_like",
    "randperm",
    "manual_seed",
    "seed",
    "initial_seed",
    "get_rng_state",
    "set_rng_state",
    "cat",
    "stack",
    "split",
    "chunk",
    "reshape",
    "flatten",
    "squeeze",
    "unsqueeze",
    "permute",
    "transpose",
    "where",
    "gather",
    "index_select",
    "masked_select",
    "narrow",
    "clone",
    "abs",
    "add",
    "sub",
    "mul",
    "div",
    "pow",
    "exp",
    "log",
    "sqrt",
    "sin",
    "cos",
    "tanh",
    "sigmoid",
    "relu",
    "softmax",
    "log_softmax",
    "clamp",
    "clip",
    "maximum",
    "minimum",
    "round",
    "sign",
    "sum",
    "mean",
    "std",
    "var",
    "prod",
    "max",
    "min",
    "argmax",
    "argmin",
    "amax",
    "amin",
    "topk",
    "sort",
    "argsort",
    "cumsum",
    "norm",
    "matmul",
    "mm",
    "bmm",
    "einsum",
    "outer",
    "dot",
    "allclose",
    "isclose",
    "equal",
    "eq",
    "ne",
    "gt",
    "ge",
    "lt",
    "le",
    "isnan",
    "isinf",
    "isfinite",
    "all",
    "any",
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "is_grad_enabled",
    "inference_mode",
    "is_inference_mode_enabled",
    "is_tensor",
    "numel",
    "set_printoptions",
    "set_default_dtype",
    "get_default_dtype",
    "use_deterministic_algorithms",
    "compile",
]

TORCH_CLASSES = ["Generator"]

TENSOR_ATTRIBUTES = [
    "grad",
    "requires_grad",
    "is_leaf",
    "shape",
    "device",
    "ndim",
    "retains_grad",
    "is_cuda",
    "itemsize",
    "nbytes",
]

TENSOR_METHODS = [
    "backward",
    "detach",
    "detach_",
    "register_hook",
    "register_post_accumulate_grad_hook",
    "retain_grad",
    "requires_grad_",
    "item",
    "tolist",
    "numpy",
    "size",
    "dim",
    "numel",
    "view",
    "view_as",
    "reshape",
    "reshape_as",
    "flatten",
    "squeeze",
    "unsqueeze",
    "permute",
    "transpose",
    "t",
    "contiguous",
    "expand",
    "expand_as",
    "repeat",
    "clone",
    "copy_",
    "zero_",
    "fill_",
    "to",
    "cpu",
    "cuda",
    "float",
    "double",
    "half",
    "long",
    "int",
    "bool",
    "type",
    "type_as",
    "abs",
    "add",
    "add_",
    "sub",
    "sub_",
    "mul",
    "mul_",
    "div",
    "div_",
    "pow",
    "exp",
    "log",
    "sqrt",
    "sigmoid",
    "tanh",
    "relu",
    "softmax",
    "clamp",
    "clamp_",
    "sum",
    "mean",
    "std",
    "var",
    "max",
    "min",
    "argmax",
    "argmin",
    "amax",
    "amin",
    "topk",
    "sort",
    "norm",
    "matmul",
    "mm",
    "allclose",
    "isclose",
    "equal",
    "eq",
    "ne",
    "gt",
    "lt",
    "ge",
    "le",
    "all",
    "any",
    "isnan",
    "isfinite",
    "masked_fill",
    "masked_fill_",
    "gather",
    "index_select",
    "new_zeros",
    "new_ones",
    "new_tensor",
    "normal_",
    "uniform_",
    "chunk",
    "split",
    "unbind",
    "roll",
    "flip",
    "round",
    "sign",
    "square",
]

NN_CLASSES = [
    "Module",
    "Sequential",
    "ModuleList",
    "ModuleDict",
    "ParameterList",
    "ParameterDict",
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "ConvTranspose3d",
    "Unfold",
    "Fold",
    "MaxPool1d",
    "MaxPool2d",
    "MaxPool3d",
    "AvgPool1d",
    "AvgPool2d",
    "AvgPool3d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d",
    "ZeroPad2d",
    "ConstantPad2d",
    "ReflectionPad2d",
    "ReplicationPad2d",
    "ELU",
    "Hardtanh",
    "Hardswish",
    "LeakyReLU",
    "LogSigmoid",
    "MultiheadAttention",
    "PReLU",
    "ReLU",
    "ReLU6",
    "SELU",
    "CELU",
    "GELU",
    "Sigmoid",
    "SiLU",
    "Mish",
    "Softplus",
    "Tanh",
    "Threshold",
    "GLU",
    "Softmax",
    "Softmax2d",
    "LogSoftmax",
    "BatchNorm1d",
    "BatchNorm2d",
    "BatchNorm3d",
    "GroupNorm",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "LayerNorm",
    "LocalResponseNorm",
    "RMSNorm",
    "RNN",
    "LSTM",
    "GRU",
    "RNNCell",
    "LSTMCell",
    "GRUCell",
    "Transformer",
    "TransformerEncoder",
    "TransformerDecoder",
    "TransformerEncoderLayer",
    "TransformerDecoderLayer",
    "Identity",
    "Linear",
    "Bilinear",
    "LazyLinear",
    "Dropout",
    "Dropout1d",
    "Dropout2d",
    "Dropout3d",
    "AlphaDropout",
    "Embedding",
    "EmbeddingBag",
    "CosineSimilarity",
    "PairwiseDistance",
    "L1Loss",
    "MSELoss",
    "CrossEntropyLoss",
    "NLLLoss",
    "KLDivLoss",
    "BCELoss",
    "BCEWithLogitsLoss",
    "HuberLoss",
    "SmoothL1Loss",
    "PixelShuffle",
    "PixelUnshuffle",
    "Upsample",
    "UpsamplingNearest2d",
    "UpsamplingBilinear2d",
    "DataParallel",
]

# classes whose own (documented) methods appear on their page
NN_CLASSES_WITH_METHODS = [
    "Module",
    "Sequential",
    "ModuleList",
    "ModuleDict",
    "ParameterList",
    "ParameterDict",
]

NN_GLOBAL_HOOKS = [
    "register_module_forward_pre_hook",
    "register_module_forward_hook",
    "register_module_backward_hook",
    "register_module_full_backward_pre_hook",
    "register_module_full_backward_hook",
    "register_module_buffer_registration_hook",
    "register_module_module_registration_hook",
    "register_module_parameter_registration_hook",
]

NN_FUNCTIONAL = [
    "conv1d",
    "conv2d",
    "conv3d",
    "linear",
    "bilinear",
    "avg_pool2d",
    "max_pool2d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool2d",
    "relu",
    "relu_",
    "leaky_relu",
    "gelu",
    "silu",
    "elu",
    "selu",
    "sigmoid",
    "tanh",
    "softplus",
    "softmax",
    "log_softmax",
    "dropout",
    "batch_norm",
    "layer_norm",
    "group_norm",
    "normalize",
    "embedding",
    "one_hot",
    "pad",
    "interpolate",
    "grid_sample",
    "affine_grid",
    "unfold",
    "fold",
    "cosine_similarity",
    "pairwise_distance",
    "cross_entropy",
    "nll_loss",
    "mse_loss",
    "l1_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "kl_div",
    "smooth_l1_loss",
    "huber_loss",
]

NN_INIT = [
    "calculate_gain",
    "uniform_",
    "normal_",
    "constant_",
    "ones_",
    "zeros_",
    "eye_",
    "dirac_",
    "xavier_uniform_",
    "xavier_normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
    "trunc_normal_",
    "orthogonal_",
    "sparse_",
]

NN_UTILS = [
    "clip_grad_norm_",
    "clip_grad_value_",
    "parameters_to_vector",
    "vector_to_parameters",
    "weight_norm",
]

AUTOGRAD_GENERATED = [
    "backward",
    "grad",
    "functional.jacobian",
    "functional.hessian",
    "functional.vjp",
    "functional.jvp",
    "Function.forward",
    "Function.backward",
    "function.FunctionCtx.mark_dirty",
    "function.FunctionCtx.mark_non_differentiable",
    "function.FunctionCtx.save_for_backward",
    "function.FunctionCtx.set_materialize_grads",
    "graph.Node.name",
    "graph.Node.metadata",
    "graph.Node.next_functions",
    "graph.Node.register_hook",
    "graph.Node.register_prehook",
]

AUTOGRAD_ON_PAGE_CLASSES = [
    "Function",
    "detect_anomaly",
    "set_detect_anomaly",
    "graph.saved_tensors_hooks",
    "graph.save_on_cpu",
    "graph.disable_saved_tensors_hooks",
    "graph.register_multi_grad_hook",
    "graph.allow_mutation_on_saved_tensors",
    "graph.GradientEdge",
]

AUTOGRAD_ON_PAGE_FUNCTIONS = ["graph.get_gradient_edge"]

OPTIMIZER_METHODS = [
    "add_param_group",
    "load_state_dict",
    "register_load_state_dict_pre_hook",
    "register_load_state_dict_post_hook",
    "state_dict",
    "register_state_dict_pre_hook",
    "register_state_dict_post_hook",
    "step",
    "register_step_pre_hook",
    "register_step_post_hook",
    "zero_grad",
]

OPTIMIZERS = (
    "Adadelta Adagrad Adam AdamW SparseAdam Adamax ASGD LBFGS NAdam RAdam RMSprop Rprop SGD"
)

LR_SCHEDULERS = [
    "LambdaLR",
    "MultiplicativeLR",
    "StepLR",
    "MultiStepLR",
    "ConstantLR",
    "LinearLR",
    "ExponentialLR",
    "CosineAnnealingLR",
    "ReduceLROnPlateau",
    "OneCycleLR",
]

DATA_CLASSES = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "DataLoader"]
DATA_FUNCTIONS = ["random_split", "default_collate"]

MODULES = {
    "torch": "torch.html#module-torch",
    "torch.nn": "nn.html#module-torch.nn",
    "torch.nn.functional": "nn.functional.html#module-torch.nn.functional",
    "torch.nn.init": "nn.init.html#module-torch.nn.init",
    "torch.autograd": "autograd.html#module-torch.autograd",
    "torch.optim": "optim.html#module-torch.optim",
    "torch.utils.data": "data.html#module-torch.utils.data",
}

Entry = tuple[str, str, str]  # (name, domain:role, uri)


def _resolve(dotted: str) -> object | None:
    """Return the object named ``dotted`` (``torch.nn.Linear``), or None."""
    parts = dotted.split(".")
    obj: object = torch
    for part in parts[1:]:
        try:
            obj = getattr(obj, part)
        except AttributeError:
            return None
    return obj


def _role(dotted: str) -> str:
    """The Sphinx role of an object: class, method, attribute, function or module."""
    obj = _resolve(dotted)
    parent_name, _, last = dotted.rpartition(".")
    parent = _resolve(parent_name) if "." in parent_name else torch
    if inspect.isclass(obj):
        return "py:class"
    if inspect.ismodule(obj):
        return "py:module"
    if inspect.isclass(parent):
        static = inspect.getattr_static(parent, last)
        if isinstance(static, property) or not callable(obj):
            return "py:attribute"
        return "py:method"
    return "py:function"


def _generated(names: Iterable[str], prefix: str) -> Iterator[Entry]:
    """Objects with their own page: ``generated/<name>.html#<name>``."""
    for short in names:
        name = f"{prefix}.{short}"
        if _resolve(name) is not None:
            yield name, _role(name), f"generated/{name}.html#{name}"


def _on_page(names: Iterable[str], prefix: str, page: str) -> Iterator[Entry]:
    """Objects documented on one module page: ``<page>#<name>``."""
    for short in names:
        name = f"{prefix}.{short}"
        if _resolve(name) is not None:
            yield name, _role(name), f"{page}#{name}"


def _class_methods(cls_name: str) -> Iterator[Entry]:
    """Documented public methods defined on an ``nn`` container class's own page."""
    cls = getattr(nn, cls_name)
    page = f"generated/torch.nn.{cls_name}.html"
    for name, member in sorted(vars(cls).items()):
        if name.startswith("_") or not callable(member) or not inspect.getdoc(member):
            continue
        full = f"torch.nn.{cls_name}.{name}"
        yield full, _role(full), f"{page}#{full}"


def entries() -> list[Entry]:
    found: list[Entry] = []
    found += [(name, "py:module", uri) for name, uri in MODULES.items()]
    found += _generated(TORCH_FUNCTIONS, "torch")
    found += _generated(TORCH_CLASSES, "torch")
    found.append(("torch.Tensor", "py:class", "tensors.html#torch.Tensor"))
    found += _generated(TENSOR_METHODS, "torch.Tensor")
    found += _generated(TENSOR_ATTRIBUTES, "torch.Tensor")
    found += _generated(NN_CLASSES, "torch.nn")
    for cls_name in NN_CLASSES_WITH_METHODS:
        found += _class_methods(cls_name)
    found += _generated(["Parameter", "Buffer"], "torch.nn.parameter")
    found += _generated(["Flatten", "Unflatten"], "torch.nn.modules.flatten")
    found += _generated(NN_GLOBAL_HOOKS, "torch.nn.modules.module")
    found += _generated(NN_FUNCTIONAL, "torch.nn.functional")
    found += _on_page(NN_INIT, "torch.nn.init", "nn.init.html")
    found += _generated(NN_UTILS, "torch.nn.utils")
    found += _generated(AUTOGRAD_GENERATED, "torch.autograd")
    found += _on_page(AUTOGRAD_ON_PAGE_CLASSES, "torch.autograd", "autograd.html")
    found += _on_page(AUTOGRAD_ON_PAGE_FUNCTIONS, "torch.autograd", "autograd.html")
    found.append(("torch.optim.Optimizer", "py:class", "optim.html#torch.optim.Optimizer"))
    found += _generated(OPTIMIZER_METHODS, "torch.optim.Optimizer")
    found += _generated(OPTIMIZERS.split(), "torch.optim")
    found += _generated(LR_SCHEDULERS, "torch.optim.lr_scheduler")
    found += _on_page(DATA_CLASSES, "torch.utils.data", "data.html")
    found += _on_page(DATA_FUNCTIONS, "torch.utils.data", "data.html")
    return sorted(set(found))


def inventory_bytes(items: list[Entry]) -> bytes:
    """Serialize entries in Sphinx's inventory format, version 2."""
    version = ".".join(torch.__version__.split("+")[0].split(".")[:2])
    header = (
        "# Sphinx inventory version 2\n"
        "# Project: PyTorch\n"
        f"# Version: {version}\n"
        "# The remainder of this file is compressed using zlib.\n"
    ).encode()
    lines = []
    for name, role, uri in items:
        # "$" in a URI stands for the name, as Sphinx writes it
        anchor_uri = uri[: -len(name)] + "$" if uri.endswith("#" + name) else uri
        lines.append(f"{name} {role} 1 {anchor_uri} -\n")
    return header + zlib.compress("".join(lines).encode(), 9)


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else OUTPUT
    items = entries()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(inventory_bytes(items))
    print(f"wrote {len(items)} PyTorch objects to {out} (torch {torch.__version__})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
