"""Models wrapped by ``torch.compile``: CAMs explain the original module; captures refuse.

``torch.compile(model)`` returns a wrapper whose submodules are ``model``'s,
named ``"_orig_mod.<name>"``. Its compiled code does not run hooks added after
compiling, and a hook traced into the compiled graph records a tensor that the
score cannot be differentiated against. The rule, written once in
``hooks_tutorial._layers``: the CAM and saliency classes run the original
module (in eager mode) and accept names with or without the prefix; the
context managers, whose hooks act on passes that the caller runs, raise an
error that names the fix.

Compiling is lazy: a compiled model that is never called compiles nothing, so
most tests cost no compilation (without the rule, the CAM's own call would
compile the model and fail). Two tests call the compiled model first, as a
user would, once per backend: ``aot_eager`` (about 2 s) and the default,
``inductor`` (about 10 to 30 s on the CPU, with a C compiler).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from hooks_tutorial import (
    GradCAM,
    capture_activations,
    capture_gradients,
    count_hooks,
    detect_anomalies,
)


@pytest.fixture(autouse=True)
def _fresh_compiler() -> Iterator[None]:
    """Forget compiled code after each test, so no test sees another's cache."""
    yield
    torch.compiler.reset()


@pytest.fixture
def x() -> torch.Tensor:
    return torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(5))


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_gradcam_of_a_compiled_and_used_model_equals_the_eager_map(
    tiny_cnn: nn.Sequential,
    x: torch.Tensor,
    backend: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # inductor's own cache folder for this test: the machine's (/tmp/torchinductor_<user>)
    # kept C++ kernels made with AVX-512, and under ATEN_CPU_CAPABILITY=default reusing
    # them failed to compile ("'at::vec' has not been declared")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    eager_map = GradCAM(tiny_cnn, "2")(x)
    compiled = torch.compile(tiny_cnn, backend=backend)
    expected = tiny_cnn(x)
    torch.testing.assert_close(compiled(x), expected)  # compiled and used, as a user would
    for layer in ["_orig_mod.2", "2", tiny_cnn[2]]:
        cam = GradCAM(compiled, layer)
        assert cam.model is tiny_cnn
        assert cam.layers == [("2", tiny_cnn[2])]
        assert torch.equal(cam(x), eager_map), layer
    assert count_hooks(compiled) == {}
    torch.testing.assert_close(compiled(x), expected)  # its compiled code still runs


def test_every_method_on_a_compiled_model_equals_the_eager_map(
    small_cnn: Callable[[], nn.Module],
    make_cam: Callable[[nn.Module], Any],
    x: torch.Tensor,
) -> None:
    expected = make_cam(small_cnn())(x)
    compiled = torch.compile(small_cnn(), backend="aot_eager")
    assert torch.equal(make_cam(compiled)(x), expected)
    assert count_hooks(compiled) == {}


def test_names_with_or_without_the_prefix(tiny_cnn: nn.Sequential) -> None:
    compiled = torch.compile(tiny_cnn, backend="aot_eager")
    assert GradCAM(compiled, ["_orig_mod.2", "2", tiny_cnn[2]]).layers == [("2", tiny_cnn[2])]
    with pytest.raises(ValueError, match=r"no submodule named '9'\. Available: 0, 1, 2, 3"):
        GradCAM(compiled, "_orig_mod.9")
    with pytest.raises(ValueError, match="empty layer name refers to the whole model"):
        GradCAM(compiled, "_orig_mod")
    with pytest.raises(ValueError, match=r"got the model itself \(Sequential\)"):
        GradCAM(compiled, tiny_cnn)


def test_no_hook_left_when_a_call_on_a_compiled_model_fails(
    tiny_cnn: nn.Sequential, x: torch.Tensor
) -> None:
    compiled = torch.compile(tiny_cnn, backend="aot_eager")
    with pytest.raises(IndexError):
        GradCAM(compiled, "_orig_mod.2")(x, target=7)
    assert count_hooks(compiled) == {}


@pytest.mark.parametrize(
    "use",
    [
        lambda model: capture_activations(model, "2"),
        lambda model: capture_gradients(model, "2"),
        detect_anomalies,
    ],
    ids=["capture_activations", "capture_gradients", "detect_anomalies"],
)
def test_hooks_around_passes_the_caller_runs_refuse_the_wrapper(
    tiny_cnn: nn.Sequential, x: torch.Tensor, use: Callable[[nn.Module], Any]
) -> None:
    compiled = torch.compile(tiny_cnn, backend="aot_eager")
    compiled(x)
    refused = r"torch\.compile wrapper.*Use the original module"
    with pytest.raises(ValueError, match=refused), use(compiled):
        compiled(x)
    assert count_hooks(compiled) == {}
    with use(tiny_cnn):  # the fix the message gives
        tiny_cnn(x)


# -- compiled in place: module.compile() leaves no eager module to run --------


def test_every_method_refuses_a_model_compiled_in_place(
    small_cnn: Callable[[], nn.Module],
    make_cam: Callable[[nn.Module], Any],
    x: torch.Tensor,
) -> None:
    model = small_cnn()
    model.compile(backend="aot_eager")
    model(x)  # compiled and used, as a user would
    # with the default backend the map was refused with a wrong cause ("the score does not
    # depend on the output of layer ..."): the compiled code skipped the CAM's hooks
    with pytest.raises(
        ValueError, match=r"the model was compiled in place.*torch\.compile\(model\)"
    ):
        make_cam(model)(x)
    assert count_hooks(model) == {}


def test_a_submodule_compiled_in_place_is_named(tiny_cnn: nn.Sequential, x: torch.Tensor) -> None:
    tiny_cnn[2].compile(backend="aot_eager")
    with pytest.raises(ValueError, match=r"^2 was compiled in place"):
        GradCAM(tiny_cnn, "2")(x)
    with (
        pytest.raises(ValueError, match=r"^2 was compiled in place"),
        capture_activations(tiny_cnn, "0"),
    ):
        tiny_cnn(x)
    assert count_hooks(tiny_cnn) == {}
