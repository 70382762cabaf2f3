"""Right and wrong answers to the exercises of pages 10 to 14 (chapter 3, tensor hooks).

tests/test_exercises.py imports this module: ``RIGHT`` maps each exercise to an answer
that passes its check, ``WRONG`` lists (exercise, answer, the problem its check names).
"""

from __future__ import annotations

import contextlib

import torch
from torch import nn
from torch.autograd.graph import saved_tensors_hooks

# -- page 10 -------------------------------------------------------------------------------


def triple(grad):
    return grad * 3


def triple_printed(grad):
    print(grad * 3)


def double(grad):
    return grad * 2


def halve(grad):
    return grad / 2


def add_one(grad):
    return grad + 1


def add_one_not_returned(grad):
    grad + 1  # the mistake: the sum is made and dropped


def pre_relu_gradient(model, inputs):
    grads = {}

    def save_gradient(module, args, output):
        output.register_hook(lambda grad: grads.update(pre_relu=grad))

    with model[0].register_forward_hook(save_gradient):
        model(inputs).sum().backward()
    return grads["pre_relu"]


def post_relu_gradient(model, inputs):
    grads = {}

    def save_gradient(module, args, output):
        output.register_hook(lambda grad: grads.update(post_relu=grad))

    with model[1].register_forward_hook(save_gradient):
        model(inputs).sum().backward()
    return grads["post_relu"]


def pre_relu_activation(model, inputs):
    return model[0](inputs)


def pre_relu_gradient_hook_left(model, inputs):
    grads = {}

    def save_gradient(module, args, output):
        output.register_hook(lambda grad: grads.update(pre_relu=grad))

    model[0].register_forward_hook(save_gradient)
    model(inputs).sum().backward()
    return grads["pre_relu"]


# -- page 11 -------------------------------------------------------------------------------


def clamp_elements(param):
    param.grad.clamp_(-0.5, 0.5)


def clamp_returned(param):
    return param.grad.clamp(-0.5, 0.5)


def clip_norm(param):
    torch.nn.utils.clip_grad_norm_([param], 0.5)


def clamp_too_far(param):
    param.grad.clamp_(-0.1, 0.1)


def clamp_nothing(param):
    pass


def make_halve_every_10():
    calls = 0

    def halve_every_10(optimizer, args, kwargs):
        nonlocal calls
        calls += 1
        if calls % 10 == 0:
            for group in optimizer.param_groups:
                group["lr"] /= 2

    return halve_every_10


def make_halve_first_group():
    calls = 0

    def halve_first_group(optimizer, args, kwargs):
        nonlocal calls
        calls += 1
        if calls % 10 == 0:
            optimizer.param_groups[0]["lr"] /= 2

    return halve_first_group


def make_halve_too_early():
    calls = 0

    def halve_too_early(optimizer, args, kwargs):  # counts after testing: steps 1, 11, 21
        nonlocal calls
        if calls % 10 == 0:
            for group in optimizer.param_groups:
                group["lr"] /= 2
        calls += 1

    return halve_too_early


def never_halve(optimizer, args, kwargs):
    pass


# -- page 12 -------------------------------------------------------------------------------


def _counting_hooks(counts):
    def counting_pack(tensor):
        counts["pack"] += 1
        return tensor

    def counting_unpack(tensor):
        counts["unpack"] += 1
        return tensor

    return saved_tensors_hooks(counting_pack, counting_unpack)


def count_pack_unpack(model, inputs, targets):
    counts = {"pack": 0, "unpack": 0}
    with _counting_hooks(counts):
        loss = nn.functional.cross_entropy(model(inputs), targets)
    loss.backward()
    return counts


def count_forward_only(model, inputs, targets):
    counts = {"pack": 0, "unpack": 0}
    with _counting_hooks(counts):
        nn.functional.cross_entropy(model(inputs), targets)
    return counts


def count_model_only(model, inputs, targets):
    counts = {"pack": 0, "unpack": 0}
    with _counting_hooks(counts):
        outputs = model(inputs)
    nn.functional.cross_entropy(outputs, targets).backward()
    return counts


def count_twice(model, inputs, targets):
    first = count_pack_unpack(model, inputs, targets)
    second = count_pack_unpack(model, inputs, targets)
    return {kind: first[kind] + second[kind] for kind in first}


def low_precision_hooks(dtype):
    def pack(tensor):
        if tensor.dtype != torch.float32:
            return tensor, None
        return tensor.to(dtype), tensor.dtype

    def unpack(stored):
        tensor, original_dtype = stored
        return tensor if original_dtype is None else tensor.to(original_dtype)

    return saved_tensors_hooks(pack, unpack)


def low_precision_kept(dtype):
    return saved_tensors_hooks(lambda tensor: tensor.to(dtype), lambda stored: stored)


def float16_always(dtype):
    return saved_tensors_hooks(lambda tensor: tensor.half(), lambda stored: stored.float())


def full_precision(dtype):
    return saved_tensors_hooks(lambda tensor: tensor, lambda stored: stored)


def low_precision_context(dtype):  # a context manager, but not one the check can look into
    return contextlib.nullcontext()


# -- page 13 -------------------------------------------------------------------------------


class SafeLog(nn.Module):
    def forward(self, x):
        return torch.log(x.abs() + 1e-6)


class LogOfAbs(nn.Module):  # finite for negative inputs, -inf at 0
    def forward(self, x):
        return torch.log(x.abs())


class LogPlusEpsilon(nn.Module):  # NaN for negative inputs
    def forward(self, x):
        return torch.log(x + 1e-6)


class LogTenths(nn.Module):  # finite, but another function
    def forward(self, x):
        return torch.log10(x.abs() + 1e-6)


def make_safe_log():  # a function, not a module class
    return torch.log


def dead_units(model, inputs):
    dead = {}

    def record(name):
        def hook(module, args, output):
            dead[name] = (output == 0).all(dim=0).float().mean().item()

        return hook

    relus = [(n, m) for n, m in model.named_modules() if isinstance(m, nn.ReLU)]
    handles = [m.register_forward_hook(record(f"ReLU {n}")) for n, m in relus]
    try:
        with torch.no_grad():
            model(inputs)
    finally:
        for handle in handles:
            handle.remove()
    return dead


def zero_fractions(model, inputs):
    found = {}
    relus = [(n, m) for n, m in model.named_modules() if isinstance(m, nn.ReLU)]
    handles = [
        m.register_forward_hook(
            lambda module, args, output, n=n: found.update({n: (output == 0).float().mean().item()})
        )
        for n, m in relus
    ]
    with torch.no_grad():
        model(inputs)
    for handle in handles:
        handle.remove()
    return found


def dead_per_input(model, inputs):  # zero for every unit of one input: all(dim=1)
    found = {}
    relus = [(n, m) for n, m in model.named_modules() if isinstance(m, nn.ReLU)]
    handles = [
        m.register_forward_hook(
            lambda module, args, output, n=n: found.update(
                {n: (output == 0).all(dim=1).float().mean().item()}
            )
        )
        for n, m in relus
    ]
    with torch.no_grad():
        model(inputs)
    for handle in handles:
        handle.remove()
    return found


# -- page 14 -------------------------------------------------------------------------------


def make_model():
    return nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2))


def make_model_in_place():
    return nn.Sequential(nn.Linear(4, 6), nn.ReLU(inplace=True), nn.Linear(6, 2))


def make_model_without_relu():
    return nn.Sequential(nn.Linear(4, 6), nn.Identity(), nn.Linear(6, 2))


def make_model_not_called():
    return make_model


RIGHT: dict[str, object] = {
    "10.1": triple,
    "10.2": (halve, add_one),
    "10.3": pre_relu_gradient,
    "11.1": clamp_elements,
    "11.3": make_halve_every_10(),
    "12.1": count_pack_unpack,
    "12.2": low_precision_hooks,
    "13.1": SafeLog,
    "13.3": dead_units,
    "14.1": make_model,
}

WRONG: list[tuple[str, object, str]] = [
    ("10.1", triple_printed, "returned_none"),
    ("10.1", double, "wrong_factor"),
    ("10.1", triple(3), "not_callable"),
    ("10.2", halve, "not_a_pair"),
    ("10.2", (halve, add_one_not_returned), "returned_none"),
    ("10.2", (add_one, halve), "wrong_halve"),
    ("10.2", (halve, double), "wrong_add_one"),
    ("10.3", post_relu_gradient, "after_relu"),
    ("10.3", pre_relu_activation, "wrong_gradient"),
    ("10.3", lambda model, inputs: None, "not_a_tensor"),
    ("10.3", pre_relu_gradient_hook_left, "hooks_left"),
    ("11.1", clamp_returned, "returned_clipped"),
    ("11.1", clamp_nothing, "unchanged"),
    ("11.1", clip_norm, "norm_clipped"),
    ("11.1", clamp_too_far, "wrong_values"),
    ("11.3", make_halve_first_group(), "one_group"),
    ("11.3", make_halve_too_early(), "wrong_steps"),
    ("11.3", never_halve, "never_halved"),
    ("12.1", count_forward_only, "no_backward"),
    ("12.1", count_model_only, "loss_outside"),
    ("12.1", count_twice, "wrong_counts"),
    ("12.1", lambda model, inputs, targets: 8, "not_counts"),
    ("12.2", low_precision_kept, "unpacked_dtype"),
    ("12.2", float16_always, "ignored_dtype"),
    ("12.2", full_precision, "not_compressed"),
    ("12.2", low_precision_context, "not_hooks"),
    ("13.1", LogOfAbs, "inf_at_zero"),
    ("13.1", LogPlusEpsilon, "still_nan"),
    ("13.1", LogTenths, "wrong_values"),
    ("13.1", make_safe_log, "not_a_module"),
    ("13.3", zero_fractions, "zero_fraction"),
    ("13.3", dead_per_input, "wrong_fractions"),
    ("13.3", lambda model, inputs: 0.5, "not_fractions"),
    ("14.1", make_model_in_place, "still_in_place"),
    ("14.1", make_model_without_relu, "changed_function"),
    ("14.1", make_model_not_called, "not_a_model"),
]
