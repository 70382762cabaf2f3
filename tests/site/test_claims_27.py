"""Page 27 (Grad-CAM beyond classification): the prose against the outputs."""

from __future__ import annotations

import re

import pytest
from sitecheck import match, number, numbers, outputs, run_page

PAGE = "27"
CLASSES = ("circle", "square", "triangle", "star", "cross")
REGIONS = ("pixels predicted as square", "the circle's mask", "the whole image")


@pytest.fixture(scope="module")
def printed() -> str:
    return outputs(PAGE)


def region_lines(method: str, printed: str) -> list[tuple[str, float, str]]:
    """(region, max |difference| from the first region's map, where the peak is), per region."""
    found = re.findall(
        rf"{method}, (.+?)\s+max \|difference\| ([\d.e+-]+), peak on the (\w+)", printed
    )
    return [(region, float(difference), peak) for region, difference, peak in found]


def test_segmentation_target_is_the_hand_computed_sum(printed: str) -> None:
    # "SegmentationTarget computes the same number from the model's output"
    by_hand = number(r"sum of its scores over them, by hand:\s+(-?[\d.]+)", printed)
    library = number(r"the same with ht\.SegmentationTarget\(\d\): (-?[\d.]+)", printed)
    assert by_hand == library


def test_the_test_image_holds_a_circle_and_a_square(printed: str) -> None:
    # the prose names the two shapes of the first test image: "the square's pixels",
    # "the circle's mask"
    match(r"the image holds: circle and square\n", printed)
    match(r"query holds: \['circle', 'square'\]", printed)


def test_the_square_map_peaks_on_the_circle(printed: str) -> None:
    # "The two maps differ, but the map for the square's pixels peaks on the circle."
    # "The square's map above is one of the misses."
    match(r"peak of the 'circle' map: on the circle\n", printed)
    match(r"peak of the 'square' map: on the circle\n", printed)


def test_the_two_maps_differ() -> None:
    # "The two maps differ, but ..." (the circle's and the square's map of the test image)
    namespace = run_page(PAGE).namespace
    maps, first, second = namespace["maps"], namespace["first"], namespace["second"]
    assert (maps[first] - maps[second]).abs().max().item() > 0.1


def test_segmentation_maps_point_at_the_explained_object(printed: str) -> None:
    # "For most objects, the peak of its class's map falls on that object, rarely on
    # the other one: the maps separate the two classes."
    own, other = numbers(
        r"segmentation: peak on the explained object ([\d.]+), on the other object ([\d.]+)",
        printed,
    )
    assert own >= 0.8
    assert other <= 0.1


def test_gradcam_ignores_the_region(printed: str) -> None:
    # "We explain the square's class three times, over three regions ...
    # The three maps are the same, up to rounding."
    lines = region_lines("Grad-CAM", printed)
    assert [region for region, _, _ in lines] == list(REGIONS)
    assert all(difference <= 1e-6 for _, difference, _ in lines)
    # "That is how the square's map can peak on the circle."
    assert {peak for _, _, peak in lines} == {"circle"}


def test_channel_weights_are_head_weights_times_region_size(printed: str) -> None:
    # alpha_k = w_ck |R| / 64, checked "on the circle's mask"
    assert number(r"region size \|R\|: (\d+) pixels", printed) > 0
    error = number(r"max \|alpha_k - w_ck \|R\| / 64\|: ([\d.e+-]+)", printed)
    largest = number(r"largest \|alpha_k\|:\s+([\d.e+-]+)", printed)
    assert error <= 1e-5 * largest


def test_hirescam_follows_the_region(printed: str) -> None:
    # "HiResCAM's map stays inside the region: for the pixels predicted as square it
    # peaks on the square, for the circle's mask it shows the square-like evidence on
    # the circle"
    lines = region_lines("HiResCAM", printed)
    assert [region for region, _, _ in lines] == list(REGIONS)
    (_, _, predicted_peak), (_, circle_difference, circle_peak), (_, whole_difference, _) = lines
    assert predicted_peak == "square"
    assert circle_peak == "circle"
    # the maps differ (the "max difference 1.0")
    assert circle_difference >= 0.5
    assert whole_difference >= 0.5


def pointing_rows(printed: str) -> dict[tuple[str, str], tuple[float, float]]:
    rows = re.findall(
        r"(Grad-CAM|HiResCAM), region (its own mask|the other's mask)\s+peak on the explained "
        r"object ([\d.]+), on the other object ([\d.]+)",
        printed,
    )
    return {(m, r): (float(own), float(other)) for m, r, own, other in rows}


def test_pointing_game_with_both_regions(printed: str) -> None:
    rows = pointing_rows(printed)
    assert len(rows) == 4
    # "Grad-CAM's numbers do not change with the region."
    assert rows["Grad-CAM", "its own mask"] == rows["Grad-CAM", "the other's mask"]
    # "HiResCAM's peak lands on the object when the region is its mask"
    assert rows["HiResCAM", "its own mask"][0] >= 0.95
    # "with the other object's mask it leaves the object, and lands on the other
    # object when the class has evidence there"
    own, other = rows["HiResCAM", "the other's mask"]
    assert own <= 0.05
    assert other > 4 * own


def test_query_is_most_similar_to_its_own_shapes(printed: str) -> None:
    # "The query is most similar to the references of its own two shapes."
    holds = match(r"query holds: \['(\w+)', '(\w+)'\]", printed).groups()
    values = [float(v) for v in match(r"to each reference: \[([^\]]+)\]", printed)[1].split()]
    top_two = sorted(range(5), key=lambda k: -values[k])[:2]
    assert {CLASSES[k] for k in top_two} == set(holds)


def test_similarity_maps_point_at_the_matching_object(printed: str) -> None:
    # "The similarity maps point at the object that the reference shows more
    # often than at the other one"
    own, other = numbers(
        r"similarity: peak on the matching object ([\d.]+), on the other object ([\d.]+)",
        printed,
    )
    assert own > 2 * other
    # "Not every map is this clean."
    assert own < 1.0
    match(r"hooks left: 0 0", printed)


def test_solutions_state_their_answers() -> None:
    run = run_page(PAGE)
    # 1. "Around them: the map's mean is 0.07 on the objects' pixels and 0.29 on the
    #    background's."
    on_objects, around = numbers(
        r"mean on the objects ([\d.]+), around them ([\d.]+)", run.solutions
    )
    assert on_objects < around / 2
    # 2. "Both are 2306.58": HiResCAM's signed map adds up to relu3's part of the score
    difference, signed_sum = numbers(
        r"score difference (-?[\d.]+), sum of the signed map (-?[\d.]+)", run.solutions
    )
    assert difference == signed_sum
    # 3. "True": the lambda gives the same map as SimilarityTarget
    match(r"\nTrue\n", run.solutions)
    # 4. "the two maps differ by up to 0.39": relu2 is not followed by a linear model
    assert number(r"max \|difference\| at relu2: ([\d.]+)", run.solutions) >= 0.1
