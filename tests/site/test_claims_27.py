"""Page 27 (Grad-CAM beyond classification): the prose against the outputs."""

from __future__ import annotations

import pytest
from sitecheck import match, number, numbers, outputs, run_page

PAGE = "27"
CLASSES = ("circle", "square", "triangle", "star", "cross")


@pytest.fixture(scope="module")
def printed() -> str:
    return outputs(PAGE)


def test_segmentation_target_is_the_hand_computed_sum(printed: str) -> None:
    # "SegmentationTarget computes the same number from the model's output"
    by_hand = number(r"sum of its scores over them, by hand:\s+(-?[\d.]+)", printed)
    library = number(r"the same with ht\.SegmentationTarget\(\d\): (-?[\d.]+)", printed)
    assert by_hand == library


def test_segmentation_maps_point_at_the_explained_object(printed: str) -> None:
    # "the map's peak falls on that object far more often than on the other one"
    own, other = numbers(
        r"segmentation: peak on the explained object ([\d.]+), on the other object ([\d.]+)",
        printed,
    )
    assert own >= 0.8
    assert other <= 0.1


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
    lines = run.solutions.splitlines()
    # 2. "a ground-truth region: the same map, up to rounding"
    scale = run.namespace["maps"][run.namespace["first"]].abs().max().item()
    assert scale > 0
    assert number(r"^tensor\(([\d.e+-]+)\)$", lines[0]) <= 1e-5 * scale
    # 3. "the same target as a lambda": "# True" for torch.allclose(by_lambda, why)
    assert lines[1:] == ["True"]
