"""Tests for hooks_tutorial.data: the generated shapes and their ground truth."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch.utils.data import DataLoader

from hooks_tutorial.data import CLASSES, CUE_COLOURS, ShapesData, ShapesSpec, make_shapes

TENSOR_FIELDS = [
    f.name for f in dataclasses.fields(ShapesData) if f.type in ("Tensor", torch.Tensor)
]


@pytest.fixture(scope="module")
def single() -> ShapesData:
    return make_shapes(48, seed=1)


@pytest.fixture(scope="module")
def two() -> ShapesData:
    return make_shapes(48, variant="two", seed=2)


@pytest.fixture(scope="module")
def shortcut_train() -> ShapesData:
    return make_shapes(200, variant="shortcut", split="train", seed=3)


@pytest.fixture(scope="module")
def shortcut_test() -> ShapesData:
    return make_shapes(500, variant="shortcut", split="test", seed=3)


def _object_colours(data: ShapesData, k: int = 0) -> torch.Tensor:
    """The colour of object ``k`` in each image: that of its first mask pixel."""
    colours = []
    for image, mask in zip(data.images, data.object_masks[:, k], strict=True):
        colours.append(image[:, mask][:, 0])
    return torch.stack(colours)


# ----------------------------------------------------------------------- structure


@pytest.mark.parametrize("variant", ["single", "two", "shortcut"])
def test_shapes_dtypes_and_ranges(variant: str) -> None:
    n, size = 12, 48
    data = make_shapes(n, variant=variant, image_size=size, seed=0)  # type: ignore[arg-type]
    k = 2 if variant == "two" else 1
    assert len(data) == n
    assert data.images.shape == (n, 3, size, size)
    assert data.images.dtype == torch.float32
    assert data.images.is_contiguous()
    assert float(data.images.min()) >= 0.0
    assert float(data.images.max()) <= 1.0
    assert data.labels.shape == (n,)
    assert data.labels.dtype == torch.int64
    assert data.masks.shape == (n, size, size)
    assert data.masks.dtype == torch.bool
    assert data.boxes.shape == (n, 4)
    assert data.boxes.dtype == torch.int64
    assert data.object_labels.shape == (n, k)
    assert data.object_masks.shape == (n, k, size, size)
    assert data.object_boxes.shape == (n, k, 4)
    assert data.cue_masks.shape == (n, size, size)
    assert data.cue_labels.shape == (n,)
    assert torch.equal(data.labels, data.object_labels[:, 0])
    assert torch.equal(data.masks, data.object_masks[:, 0])
    assert torch.equal(data.boxes, data.object_boxes[:, 0])
    assert int(data.labels.min()) >= 0
    assert int(data.labels.max()) < len(CLASSES)
    assert data.classes == CLASSES
    assert data.num_classes == 5
    assert (data.variant, data.split, data.seed) == (variant, "train", 0)


def test_empty_set_is_allowed() -> None:
    data = make_shapes(0)
    assert data.images.shape == (0, 3, 64, 64)
    assert data.labels.shape == (0,)
    assert len(data) == 0


def test_num_classes_limits_the_labels() -> None:
    data = make_shapes(200, num_classes=2, seed=0)
    assert set(data.labels.tolist()) == {0, 1}
    assert data.classes == ("circle", "square")


def test_every_class_appears() -> None:
    counts = torch.bincount(make_shapes(300, seed=0).labels, minlength=5)
    # uniform labels: each count ~ Binomial(300, 0.2), mean 60, sd 7; 30 is > 4 sd below
    assert int(counts.min()) > 30


# -------------------------------------------------------------------- determinism


def test_same_seed_same_data() -> None:
    a = make_shapes(24, variant="shortcut", seed=7)
    b = make_shapes(24, variant="shortcut", seed=7)
    for name in TENSOR_FIELDS:
        assert torch.equal(getattr(a, name), getattr(b, name)), name


def test_other_seed_or_split_other_data() -> None:
    base = make_shapes(8, seed=0)
    assert not torch.equal(base.images, make_shapes(8, seed=1).images)
    assert not torch.equal(base.images, make_shapes(8, seed=0, split="test").images)


# --------------------------------------------------------------- masks and boxes


def test_mask_pixels_have_one_colour(single: ShapesData) -> None:
    colours = _object_colours(single)
    for image, mask, colour in zip(single.images, single.masks, colours, strict=True):
        pixels = image[:, mask]
        assert torch.equal(pixels, colour[:, None].expand_as(pixels))


def test_mask_is_exactly_where_the_object_colour_is() -> None:
    # Without clutter nothing else is painted flat, and the noisy background
    # never repeats the object's colour exactly, so colour equality finds the mask.
    data = make_shapes(32, clutter=0, seed=4)
    colours = _object_colours(data)
    drawn = (data.images == colours[:, :, None, None]).all(dim=1)
    assert torch.equal(drawn, data.masks)


def test_objects_are_big_enough(single: ShapesData, two: ShapesData) -> None:
    # the smallest object (diameter 0.35 * 64 = 22 px) still covers > 100 pixels
    assert int(single.masks.sum(dim=(1, 2)).min()) > 100
    assert int(two.object_masks.sum(dim=(2, 3)).min()) > 100


@pytest.mark.parametrize("fixture", ["single", "two", "shortcut_train"])
def test_boxes_enclose_masks_tightly(fixture: str, request: pytest.FixtureRequest) -> None:
    data: ShapesData = request.getfixturevalue(fixture)
    masks = data.object_masks.flatten(0, 1)
    boxes = data.object_boxes.flatten(0, 1)
    for mask, (x0, y0, x1, y1) in zip(masks, boxes.tolist(), strict=True):
        assert 0 <= x0 < x1 <= mask.shape[1]
        assert 0 <= y0 < y1 <= mask.shape[0]
        assert int(mask[y0:y1, x0:x1].sum()) == int(mask.sum())  # encloses
        assert mask[y0, x0:x1].any()  # tight on every side
        assert mask[y1 - 1, x0:x1].any()
        assert mask[y0:y1, x0].any()
        assert mask[y0:y1, x1 - 1].any()


def test_upright_squares_fill_their_boxes() -> None:
    data = make_shapes(200, rotation=0.0, seed=6)
    squares = data.labels == 1
    assert int(squares.sum()) > 10
    for mask, (x0, y0, x1, y1) in zip(
        data.masks[squares], data.boxes[squares].tolist(), strict=True
    ):
        assert int(mask.sum()) == (x1 - x0) * (y1 - y0)


def test_two_objects_are_different_and_apart(two: ShapesData) -> None:
    assert (two.object_labels[:, 0] != two.object_labels[:, 1]).all()
    assert not (two.object_masks[:, 0] & two.object_masks[:, 1]).any()
    colours = [_object_colours(two, k) for k in range(2)]
    for k in range(2):
        for image, mask, colour in zip(two.images, two.object_masks[:, k], colours[k], strict=True):
            pixels = image[:, mask]
            assert torch.equal(pixels, colour[:, None].expand_as(pixels))


def test_multi_hot_names_every_object(single: ShapesData, two: ShapesData) -> None:
    targets = two.multi_hot()
    assert targets.dtype == torch.float32
    assert targets.shape == (len(two), two.num_classes)
    for row, (a, b) in zip(targets, two.object_labels.tolist(), strict=True):
        expected = torch.zeros(two.num_classes)
        expected[[a, b]] = 1.0
        assert torch.equal(row, expected)
    assert torch.equal(single.multi_hot().argmax(dim=1), single.labels)
    assert single.multi_hot().sum().item() == len(single)


def test_single_variant_has_no_cue(single: ShapesData) -> None:
    assert not single.cue_masks.any()
    assert (single.cue_labels == -1).all()


# ----------------------------------------------------------------------- shortcut


def test_cue_tells_the_label_in_train(shortcut_train: ShapesData) -> None:
    assert torch.equal(shortcut_train.cue_labels, shortcut_train.labels)


def test_cue_is_independent_of_the_label_in_test(shortcut_test: ShapesData) -> None:
    agree = float((shortcut_test.cue_labels == shortcut_test.labels).float().mean())
    # a random cue agrees with probability 1/5; sd over 500 images is 0.018
    assert agree == pytest.approx(0.2, abs=0.08)
    assert set(shortcut_test.cue_labels.tolist()) == set(range(5))


def test_cue_agreement_can_be_set() -> None:
    data = make_shapes(400, variant="shortcut", split="test", cue_agreement=1.0, seed=0)
    assert torch.equal(data.cue_labels, data.labels)


def test_cue_is_a_coloured_corner_square(shortcut_train: ShapesData) -> None:
    side = round(0.1 * 64)
    palette = torch.tensor(CUE_COLOURS)
    for image, cue, label in zip(
        shortcut_train.images, shortcut_train.cue_masks, shortcut_train.cue_labels, strict=True
    ):
        ys, xs = torch.nonzero(cue, as_tuple=True)
        assert len(ys) == side * side
        assert int(ys.max() - ys.min()) == side - 1
        assert int(xs.max() - xs.min()) == side - 1
        assert int(min(xs.min(), 63 - xs.max())) == 2  # 2 px from a corner
        assert int(min(ys.min(), 63 - ys.max())) == 2
        pixels = image[:, cue]
        assert torch.equal(pixels, palette[label][:, None].expand_as(pixels))
    assert not (shortcut_train.cue_masks & shortcut_train.masks).any()


# ------------------------------------------------------------------------ dataset


def test_shapes_data_is_a_dataset_of_image_label_pairs() -> None:
    data = make_shapes(20, seed=5, image_size=32)
    image, label = data[3]
    assert torch.equal(image, data.images[3])
    assert label.dtype == torch.int64
    assert int(label) == int(data.labels[3])
    images, labels = next(iter(DataLoader(data, batch_size=8)))
    assert images.shape == (8, 3, 32, 32)
    assert torch.equal(labels, data.labels[:8])


def test_spec_and_keywords_give_the_same_data() -> None:
    spec = ShapesSpec(variant="shortcut", image_size=32, clutter=1)
    by_spec = make_shapes(10, spec, split="test", seed=4)
    by_keywords = make_shapes(
        10, variant="shortcut", image_size=32, clutter=1, split="test", seed=4
    )
    assert torch.equal(by_spec.images, by_keywords.images)
    assert torch.equal(by_spec.cue_masks, by_keywords.cue_masks)
    # keywords replace the spec's fields
    assert make_shapes(2, spec, variant="single").variant == "single"


def test_spec_is_frozen_and_rejects_unknown_options() -> None:
    spec = ShapesSpec()
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.noise = 0.0  # type: ignore[misc]
    with pytest.raises(TypeError) as info:
        make_shapes(2, colour="red")
    # no suggestion: 'clutter' is not close enough to mean the same
    assert str(info.value) == (
        "make_shapes() got an unknown option 'colour'; the options are the fields of "
        "ShapesSpec: variant, image_size, num_classes, object_size, clutter, noise, "
        "rotation, cue_agreement"
    )


def test_misspelt_option_suggests_the_closest() -> None:
    with pytest.raises(TypeError) as info:
        make_shapes(4, variant="single", varient="two")
    assert str(info.value) == (
        "make_shapes() got an unknown option 'varient'; did you mean 'variant'? the "
        "options are the fields of ShapesSpec: variant, image_size, num_classes, "
        "object_size, clutter, noise, rotation, cue_agreement"
    )
    with pytest.raises(TypeError, match=r"unknown option 'imagesize'; did you mean 'image_size'\?"):
        make_shapes(4, spec=ShapesSpec(), imagesize=32)
    with pytest.raises(TypeError, match=r"unknown option 'rotate'; did you mean 'rotation'\?"):
        make_shapes(4, rotate=0.0)


# ------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n": -1}, "n must be a non-negative int"),
        ({"n": 2.5}, "n must be a non-negative int"),
        ({"num_classes": 0}, "num_classes must be an int from 1 to 5"),
        ({"num_classes": 6}, "num_classes must be an int from 1 to 5"),
        ({"variant": "two", "num_classes": 1}, "use num_classes >= 2"),
        ({"variant": "three"}, "unknown variant 'three'"),
        ({"split": "val"}, "unknown split 'val'"),
        ({"clutter": -1}, "clutter must be a non-negative int"),
        ({"noise": -0.1}, "noise must be a finite number >= 0"),
        ({"cue_agreement": 1.5}, "cue_agreement must be a probability"),
        ({"rotation": 200.0}, "rotation must be an angle in degrees from 0 to 180"),
        ({"object_size": (0.5, 0.2)}, "object_size must be"),
        ({"image_size": 16}, r"image too small for the objects.*use image_size >= 29"),
        ({"image_size": 64.0}, "image_size must be an int"),
        ({"variant": "two", "object_size": (0.6, 0.7)}, "objects too large for the 'two' variant"),
    ],
)
def test_impossible_parameters_are_rejected(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_shapes(**{"n": 4, **kwargs})  # type: ignore[arg-type]
