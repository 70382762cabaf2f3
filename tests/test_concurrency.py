"""Threads sharing one model: a call's hooks act only on the passes the call runs.

The overlap tests are deterministic: the model pauses inside the forward pass
of the thread under test (its hooks registered and already fired) while
another thread runs a full pass through the same model, with the hooks
present (counted with ``count_hooks``), so they fail if a hook acts on a pass
that is not its own.
"""

from __future__ import annotations

import contextvars
import random
import threading
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import torch
from torch import nn

from hooks_tutorial import (
    MissingCaptureError,
    capture_activations,
    capture_gradients,
    count_hooks,
    detect_anomalies,
)
from hooks_tutorial.cam import GradCAM


class Pause:
    """Set as a SmallCNN's ``inside``: stops the forward pass that runs in ``thread``.

    It stops right after ``conv2`` (so the call's hooks on ``conv2`` and
    ``relu1`` have fired), sets ``entered`` and waits for ``resume``.
    """

    def __init__(self) -> None:
        self.thread: threading.Thread | None = None
        self.entered = threading.Event()
        self.resume = threading.Event()

    def __call__(self, out: torch.Tensor) -> None:
        if threading.current_thread() is self.thread:
            self.entered.set()
            assert self.resume.wait(timeout=60)


@pytest.fixture
def model(small_cnn: Callable[[], nn.Module]) -> Any:
    """A SmallCNN with a :class:`Pause` inside, as ``model.pause``."""
    net: Any = small_cnn()
    net.pause = net.inside = Pause()
    return net


def images(seed: int, n: int = 2) -> torch.Tensor:
    return torch.randn(n, 3, 8, 8, generator=torch.Generator().manual_seed(seed))


class Worker(threading.Thread):
    """A thread that keeps its result, or the exception it raised, and the warnings."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        super().__init__(daemon=True)
        self.fn = fn
        self.result: Any = None
        self.error: BaseException | None = None
        self.caught: list[warnings.WarningMessage] = []

    def run(self) -> None:
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                self.result = self.fn()
            self.caught = list(caught)
        except BaseException as error:  # noqa: BLE001 - handed to the test thread
            self.error = error

    def value(self) -> Any:
        self.join(timeout=60)
        assert not self.is_alive()
        if self.error is not None:
            raise self.error
        assert self.caught == []
        return self.result


def input_gradient(model: nn.Module, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A plain forward and backward to the input: what another thread would do."""
    xi = x.clone().requires_grad_(True)
    out = model(xi)
    (grad,) = torch.autograd.grad(out[:, 1].sum(), xi)
    return out.detach(), grad


def test_another_threads_pass_during_a_call_is_neither_recorded_nor_changed(
    make_cam: Callable[[nn.Module], Any], model: Any
) -> None:
    method = make_cam(model)
    x, other = images(1), images(2)
    expected_map = method(x)
    expected_out, expected_grad = input_gradient(model, other)

    worker = Worker(lambda: method(x))
    model.pause.thread = worker
    worker.start()
    assert model.pause.entered.wait(timeout=60)
    # The call is inside its forward pass: its hooks are on the model ...
    assert count_hooks(model).total > 0
    # ... and this thread's pass through the same model goes through them.
    out, grad = input_gradient(model, other)
    with torch.no_grad():
        no_grad_out = model(other)
    model.pause.resume.set()
    maps = worker.value()  # no warning, no error

    assert torch.equal(maps, expected_map)
    assert torch.equal(out, expected_out)
    assert torch.equal(grad, expected_grad)  # e.g. not guided by GuidedBackprop's hooks
    assert torch.equal(no_grad_out, expected_out)
    assert count_hooks(model) == {}


def test_a_gradient_call_never_warns_or_fails_because_of_other_threads(model: Any) -> None:
    # The failure of the issue: other threads' forwards recorded by the call gave
    # "ran N times in one forward pass" and "the score does not depend on ...".
    x = images(3)
    expected = GradCAM(model, "conv2")(x)
    worker = Worker(lambda: GradCAM(model, "conv2")(x))
    model.pause.thread = worker
    worker.start()
    assert model.pause.entered.wait(timeout=60)
    with torch.no_grad():
        for _ in range(3):
            model(images(4))
    model.pause.resume.set()
    assert torch.equal(worker.value(), expected)


def test_capture_activations_records_only_its_own_threads_passes(model: Any) -> None:
    x, other = images(5), images(6)
    with capture_activations(model, ["conv2", "fc"]) as acts:
        worker = Worker(lambda: model(other).detach())
        worker.start()
        worker_out = worker.value()
        assert acts.calls == {}  # the other thread's pass is not recorded
        out = model(x)
    assert acts.calls == {"conv2": 1, "fc": 1}
    torch.testing.assert_close(acts["fc"], out.detach(), rtol=0, atol=0)
    torch.testing.assert_close(worker_out, model(other).detach(), rtol=0, atol=0)


def test_capture_in_a_worker_on_purpose_with_the_blocks_context(model: Any) -> None:
    x = images(7)
    with capture_activations(model, "fc") as acts, ThreadPoolExecutor(1) as pool:
        context = contextvars.copy_context()
        out = pool.submit(context.run, model, x).result()
    assert acts.calls == {"fc": 1}
    torch.testing.assert_close(acts["fc"], out.detach(), rtol=0, atol=0)


def test_capture_gradients_leaves_another_threads_no_grad_pass_alone(model: Any) -> None:
    # Without the scope, the hook would raise "ran with autograd disabled" in the
    # other thread's inference pass.
    x, other = images(8), images(9)
    with capture_gradients(model, "conv2") as grads:
        worker = Worker(lambda: _no_grad(model, other))
        worker.start()
        worker_out = worker.value()
        model(x)[:, 0].sum().backward()
    assert grads.calls == {"conv2": 1}
    torch.testing.assert_close(worker_out, _no_grad(model, other), rtol=0, atol=0)


def _no_grad(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model(x)


def test_detect_anomalies_checks_only_its_own_threads_forward_passes(model: Any) -> None:
    bad = images(10)
    bad[0, 0, 0, 0] = float("nan")
    with detect_anomalies(model):
        worker = Worker(lambda: _no_grad(model, bad))
        worker.start()
        out = worker.value()  # not stopped: not this block's pass
        assert bool(torch.isnan(out).any())
        with pytest.raises(RuntimeError, match="forward pass: the input of module"):
            model(bad)
    assert count_hooks(model) == {}


class ThreadedNet(nn.Module):
    """Runs its conv2 in a worker thread, as nn.DataParallel runs replicas on several GPUs."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        m = self.inner
        h = m.relu1(m.bn(m.conv1(x)))
        worker = Worker(lambda: m.conv2(h))
        worker.start()
        out = worker.value() + 0.1
        return m.fc(m.relu2(out).mean(dim=(2, 3)))


def test_a_layer_run_in_another_thread_is_not_seen_and_the_message_says_so(
    small_cnn: Callable[[], nn.Module],
) -> None:
    model = ThreadedNet(small_cnn())
    with pytest.raises(RuntimeError, match=r"did not run .* \(nn\.DataParallel .* model\.module"):
        GradCAM(model, "inner.conv2")(images(11))
    with capture_activations(model, "inner.conv2") as acts:
        model(images(11))
    with pytest.raises(MissingCaptureError, match="in the thread that entered it"):
        acts["inner.conv2"]
    assert count_hooks(model) == {}


def test_data_parallel_on_the_cpu_runs_in_the_calling_thread(model: Any) -> None:
    parallel = nn.DataParallel(model)  # no GPU: calls the module directly
    x = images(12)
    torch.testing.assert_close(
        GradCAM(parallel, "module.conv2")(x), GradCAM(model, "conv2")(x), rtol=0, atol=0
    )
    with capture_activations(parallel, "module.conv2", clone=True) as acts:
        parallel(x)
    with capture_activations(model, "conv2", clone=True) as expected:
        model(x)
    torch.testing.assert_close(acts["module.conv2"], expected["conv2"], rtol=0, atol=0)


# -- stress: many threads, many methods, one model --------------------------------
@pytest.mark.slow
def test_stress_concurrent_calls_equal_sequential_ones(
    model: Any, cam_methods: dict[str, Callable[[nn.Module], Any]]
) -> None:
    model.train()  # the calls switch it to eval mode and back
    methods = {name: make(model) for name, make in cam_methods.items()}  # shared objects
    jobs = [(name, seed, seed % 4) for name in methods for seed in range(6)]
    expected = {(n, s, t): methods[n](images(s), t) for n, s, t in jobs}
    state = {k: v.clone() for k, v in model.state_dict().items()}
    assert all(m.training for m in model.modules())

    def run(order: list[tuple[str, int, int]]) -> list[bool]:
        return [torch.equal(methods[n](images(s), t), expected[n, s, t]) for n, s, t in order]

    threads = 4
    orders = []
    for i in range(threads):
        order = list(jobs)
        random.Random(i).shuffle(order)
        orders.append(order)
    workers = [Worker(lambda order=order: run(order)) for order in orders]
    for worker in workers:
        worker.start()
    results = [worker.value() for worker in workers]
    assert sum(len(r) for r in results) == threads * len(jobs)  # 216 calls
    assert all(all(r) for r in results)
    assert count_hooks(model) == {}
    assert all(m.training for m in model.modules())
    for key, value in model.state_dict().items():
        assert torch.equal(value, state[key])  # BatchNorm statistics untouched
