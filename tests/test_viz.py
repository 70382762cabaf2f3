"""overlay and plot_cams."""

from __future__ import annotations

import io
import subprocess
import sys

import matplotlib as mpl
import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

from hooks_tutorial.viz import overlay, plot_cams


def jet(values: np.ndarray) -> np.ndarray:
    return np.asarray(mpl.colormaps["jet"](values))[..., :3]


@pytest.fixture
def cam() -> torch.Tensor:
    return torch.linspace(0, 1, 64).reshape(8, 8)


@pytest.mark.parametrize(
    "image",
    [
        torch.rand(3, 8, 8),  # torch CHW
        np.random.default_rng(0).random((8, 8, 3)),  # numpy HWC
        torch.rand(1, 8, 8),  # grey CHW
        np.random.default_rng(0).random((8, 8)),  # grey HW
        (np.random.default_rng(0).random((8, 8, 3)) * 255).astype(np.uint8),
        np.random.default_rng(0).random((8, 8, 4)),  # RGBA
        torch.rand(1, 3, 8, 8),  # a batch of one
    ],
    ids=["torch-chw", "numpy-hwc", "grey-chw", "grey-hw", "uint8", "rgba", "batch-of-one"],
)
def test_overlay_shape_and_range(image: object, cam: torch.Tensor) -> None:
    out = overlay(image, cam)  # type: ignore[arg-type]
    assert out.shape == (8, 8, 3)
    assert out.dtype == np.float64
    assert out.min() >= 0.0
    assert out.max() <= 1.0


def test_overlay_blends_image_and_colormap(cam: torch.Tensor) -> None:
    image = torch.rand(3, 8, 8)
    hwc = image.permute(1, 2, 0).numpy().astype(np.float64)
    np.testing.assert_allclose(overlay(image, cam, alpha=0.0), hwc, atol=1e-7)
    np.testing.assert_allclose(overlay(image, cam, alpha=1.0), jet(cam.numpy()), atol=1e-12)
    np.testing.assert_allclose(
        overlay(image, cam, alpha=0.3), 0.7 * hwc + 0.3 * jet(cam.numpy()), atol=1e-7
    )


def test_overlay_uint8_and_chw_hwc_agree(cam: torch.Tensor) -> None:
    hwc = (np.random.default_rng(1).random((8, 8, 3)) * 255).astype(np.uint8)
    chw = torch.from_numpy(hwc).permute(2, 0, 1)
    np.testing.assert_allclose(overlay(hwc, cam), overlay(chw, cam), atol=0)
    np.testing.assert_allclose(overlay(hwc, cam, alpha=0.0), hwc / 255.0, atol=1e-12)


def test_overlay_rescales_normalised_images_and_maps() -> None:
    image = torch.linspace(-2, 2, 3 * 8 * 8).reshape(3, 8, 8)  # a standardised input
    out = overlay(image, torch.zeros(8, 8), alpha=0.0)
    assert out.min() == 0.0
    assert out.max() == 1.0
    raw_map = torch.linspace(-5, 5, 64).reshape(8, 8)  # a signed, raw map
    np.testing.assert_allclose(
        overlay(torch.zeros(3, 8, 8), raw_map, alpha=1.0),
        jet(np.linspace(0, 1, 64).reshape(8, 8)),
        atol=1e-12,
    )


def test_overlay_resizes_the_map() -> None:
    small = torch.ones(1, 4, 4)
    out = overlay(torch.rand(3, 16, 16), small, alpha=1.0)
    np.testing.assert_allclose(out, np.broadcast_to(jet(np.array(1.0)), (16, 16, 3)), atol=1e-12)


def test_overlay_errors(cam: torch.Tensor) -> None:
    with pytest.raises(ValueError, match=r"alpha must be in \[0, 1\]"):
        overlay(torch.rand(3, 8, 8), cam, alpha=1.5)
    with pytest.raises(ValueError, match="unknown colormap 'nope'"):
        overlay(torch.rand(3, 8, 8), cam, colormap="nope")
    with pytest.raises(ValueError, match="cannot tell the colour channels"):
        overlay(np.zeros((5, 8, 8)), cam)
    with pytest.raises(ValueError, match="for a batch, use plot_cams"):
        overlay(torch.rand(2, 3, 8, 8), cam)
    with pytest.raises(ValueError, match=r"expected one map \[H, W\]"):
        overlay(torch.rand(3, 8, 8), torch.rand(2, 8, 8))
    with pytest.raises(TypeError, match=r"torch\.Tensor or a numpy array"):
        overlay([[0.0]], cam)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="NaN or infinity") as info:
        overlay(torch.rand(3, 8, 8), torch.full((8, 8), float("nan")))
    assert str(info.value) == (
        "the map contains NaN or infinity; check the model's input and weights for NaN or "
        "infinity (torch.isfinite(x).all()), or clean the map with torch.nan_to_num(cam) "
        "(numpy.nan_to_num for an array)"
    )
    image = np.random.default_rng(0).random((8, 8, 3))
    image[0, 0, 0] = np.inf
    with pytest.raises(ValueError, match="NaN or infinity") as info:
        overlay(image, cam)
    assert str(info.value) == (
        "the image contains NaN or infinity; check where it came from, or clean it with "
        "torch.nan_to_num(image) (numpy.nan_to_num for an array)"
    )


def test_plot_cams_layout() -> None:
    images = torch.rand(3, 3, 16, 16)
    maps = {
        "Grad-CAM": torch.rand(3, 16, 16),
        "Score-CAM": np.random.default_rng(0).random((3, 4, 4)),
    }
    fig = plot_cams(images, maps, labels=["cat", "dog", "car"])
    assert isinstance(fig, Figure)
    assert len(fig.axes) == 3 * 3 + 1  # panels + colorbar
    assert [ax.get_title() for ax in fig.axes[:3]] == ["image", "Grad-CAM", "Score-CAM"]
    assert [fig.axes[3 * r].get_ylabel() for r in range(3)] == ["cat", "dog", "car"]
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")  # works without pyplot, with any backend
    assert buffer.getvalue().startswith(b"\x89PNG")


def test_plot_cams_options_and_list_of_images() -> None:
    images = [torch.rand(3, 8, 8), np.random.default_rng(0).random((8, 8, 3))]
    fig = plot_cams(images, {"A": torch.rand(2, 8, 8)}, show_images=False, colorbar=False)
    assert len(fig.axes) == 2
    assert fig.axes[0].get_title() == "A"
    one = plot_cams(torch.rand(3, 8, 8), {"A": torch.rand(8, 8)})
    assert len(one.axes) == 3


def test_plot_cams_wraps_each_images_panels_into_rows_of_max_columns() -> None:
    maps = {f"m{k}": torch.rand(2, 8, 8) for k in range(4)}  # image + 4 maps: 5 panels
    fig = plot_cams(torch.rand(2, 3, 8, 8), maps, labels=["a", "b"], max_columns=3)
    panels = fig.axes[:-1]  # the colorbar last
    assert len(panels) == 2 * 2 * 3  # two images, two rows of three each
    width, height = fig.get_size_inches()
    # labels at the left, four rows of titles, the colorbar below
    assert (width, height) == pytest.approx((2.0 * 3 + 0.3, 2.0 * 4 + 0.3 * 4 + 0.7))
    titles = [ax.get_title() for ax in panels]
    # every panel is titled (a wrapped row has no column header); one spare cell per image
    assert titles[:6] == ["image", "m0", "m1", "m2", "m3", ""]
    assert titles[6:] == titles[:6]
    assert [panels[0].get_ylabel(), panels[6].get_ylabel()] == ["a", "b"]
    assert not panels[5].axison
    assert not panels[11].axison
    assert all(len(ax.images) == 1 for ax in panels if ax.axison)
    wide = plot_cams(torch.rand(1, 3, 8, 8), {"m": torch.rand(1, 8, 8)}, max_columns=3)
    assert len(wide.axes) == 2 + 1  # fewer panels than max_columns: one row, as before
    with pytest.raises(ValueError, match="max_columns must be at least 1, got 0"):
        plot_cams(torch.rand(1, 3, 8, 8), {"m": torch.rand(1, 8, 8)}, max_columns=0)


def test_plot_cams_errors() -> None:
    with pytest.raises(ValueError, match="cams_by_method is empty"):
        plot_cams(torch.rand(2, 3, 8, 8), {})
    with pytest.raises(
        ValueError, match=r"'A' has maps of shape \(3, 8, 8\), expected \[2, H, W\]"
    ):
        plot_cams(torch.rand(2, 3, 8, 8), {"A": torch.rand(3, 8, 8)})
    with pytest.raises(ValueError, match="got 1 labels for 2 images"):
        plot_cams(torch.rand(2, 3, 8, 8), {"A": torch.rand(2, 8, 8)}, labels=["x"])


@pytest.mark.slow
def test_importing_the_package_or_viz_does_not_import_matplotlib_or_dynamo() -> None:
    # pages import torch first; matplotlib loads only when a figure is drawn, and torch's
    # compiler (torch._dynamo, 1.3 s of a 3.2 s `import hooks_tutorial`) only when page
    # 32c's exercise is checked or a model is compiled or trained
    code = (
        "import sys, torch, hooks_tutorial; package = 'matplotlib' in sys.modules; "
        "dynamo = 'torch._dynamo' in sys.modules; "
        "import hooks_tutorial.viz; print(package, 'matplotlib' in sys.modules, dynamo)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == ["False", "False", "False"]
