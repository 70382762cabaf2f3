"""Right and wrong answers to the exercises of pages 10 to 14 (chapter 3, tensor hooks).

tests/test_exercises.py imports this module: ``RIGHT`` maps each exercise to an answer
that passes its check, ``WRONG`` lists (exercise, answer, the problem its check names).
"""

from __future__ import annotations

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


RIGHT: dict[str, object] = {
    "10.1": triple,
    "10.2": (halve, add_one),
    "10.3": pre_relu_gradient,
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
]
