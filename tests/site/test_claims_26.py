"""Page 26 (attention maps from a Vision Transformer): the prose against the outputs."""

from __future__ import annotations

import inspect
import re

import pytest
from sitecheck import match, number, numbers, outputs, prose, run_page
from torchvision.models.vision_transformer import EncoderBlock

PAGE = "26"


@pytest.fixture(scope="module")
def printed() -> str:
    return outputs(PAGE)


def pointing(name: str, printed: str) -> float:
    return number(rf"  {re.escape(name)}\s+([\d.]+)", printed)


def test_only_the_encoder_and_head_are_trained(printed: str) -> None:
    # "Only the encoder and the head are trained." (the CNN is frozen)
    trained = number(r"trained parameters: (\d+)", printed)
    frozen = number(r"frozen CNN parameters: (\d+)", printed)
    assert trained > 0
    assert frozen > 0


def test_two_epochs_are_enough(printed: str) -> None:
    # "Two epochs are enough:" (a useful classifier, well above 0.2 for 5 classes)
    assert number(r"test accuracy: ([\d.]+)", printed) >= 0.85


def test_a_plain_forward_hook_sees_no_weights(printed: str) -> None:
    # "So a forward hook on self_attention receives (values, None): the weights
    # are not computed."
    match(r"weights seen by a plain forward hook: None\n", printed)


def test_one_matrix_per_head_for_each_block(printed: str) -> None:
    # "one 65 x 65 matrix per head, for each block"
    shapes = re.findall(r"\((\d+), (\d+), (\d+), (\d+)\)", match(r"recorded: (.*)", printed)[1])
    assert len(shapes) == 2  # two blocks
    for _, heads, rows, columns in shapes:
        assert (heads, rows, columns) == ("4", "65", "65")


def test_the_matrix_size_is_quoted_in_both_languages(printed: str) -> None:
    # the English "65 x 65" and the Chinese "65×65" quote the printed shape
    tokens = match(r"recorded: \[\(\d+, \d+, (\d+), \1\)", printed)[1]
    assert f"{tokens} x {tokens} matrix" in prose(PAGE, "en")
    assert f"{tokens}×{tokens}" in prose(PAGE, "zh_CN")


def test_asking_for_the_weights_does_not_change_the_logits(printed: str) -> None:
    # "Asking for the weights does not change the logits, and no hook is left
    # on the model."
    assert number(r"max \|logits with hooks - logits without\|: ([\d.e+-]+)", printed) <= 1e-5
    match(r"same predictions: True", printed)
    assert re.findall(r"hooks left on the model: (\d+)", printed) == ["0", "0"]


def test_rollout_rows_sum_to_one(printed: str) -> None:
    # "each row of their product does too"
    low, high = numbers(r"row sums between ([\d.]+) and ([\d.]+)", printed)
    assert low == high == 1.0


def test_last_block_output_maps_are_all_zero(printed: str) -> None:
    # "Every map is zero"
    assert number(r"maps at the last block's output: ([\d.]+)", printed) == 0.0
    zero, total = numbers(r"all-zero maps: (\d+) of (\d+)", printed)  # the first count
    assert zero == total == 300


def test_ln_1_maps_are_not_empty(printed: str) -> None:
    # "These maps are not empty."
    assert number(r"maps at the last block's ln_1: ([\d.]+)", printed) == 1.0
    _at_output, ln_1_counts = re.findall(r"all-zero maps: (\d+) of (\d+)", printed)
    assert int(ln_1_counts[0]) <= 0.05 * int(ln_1_counts[1])


def test_pointing_game_uses_enough_images(printed: str) -> None:
    # the issue asks for enough images to mean something
    assert number(r"pointing game on (\d+) test images", printed) >= 200


def test_empty_maps_never_point(printed: str) -> None:
    # "The empty maps never point at the object"
    assert pointing("Grad-CAM, last block's output", printed) == 0.0


def test_rollout_points_as_often_as_the_cnn(printed: str) -> None:
    # "The rollout points at the object for most images, about as often as
    # the CNN's own Grad-CAM."
    rollout = pointing("attention rollout", printed)
    cnn = pointing("CNN Grad-CAM at relu3", printed)
    assert rollout > 0.5
    assert abs(rollout - cnn) <= 0.05


def test_gradcam_at_ln_1_between_random_and_rollout(printed: str) -> None:
    # "Grad-CAM at ln_1 does better than a random pixel but far worse than the
    # rollout." and the summary's "the rollout points at the object far more
    # often than Grad-CAM does"
    share = number(r"share of the image covered by the object: ([\d.]+)", printed)
    gradcam = pointing("Grad-CAM, last block's ln_1", printed)
    rollout = pointing("attention rollout", printed)
    assert gradcam > 1.5 * share
    assert gradcam < rollout - 0.3


def test_the_block_discards_the_weights() -> None:
    # "The block still throws them away (x, _ = self.self_attention(...) in the
    # source above)"
    source = inspect.getsource(EncoderBlock.forward)
    assert "x, _ = self.self_attention(" in source
    assert "need_weights=False" in source


def test_solutions_state_their_answers() -> None:
    solutions = run_page(PAGE).solutions
    # 1. "It points at the object for 0.363 of the test images, against 0.893 with
    #    the identity."
    plain, with_identity = numbers(
        r"rollout without the identity: ([\d.]+), with it: ([\d.]+)", solutions
    )
    assert plain < with_identity - 0.3
    # 2. "The four heads look at different places ... head 2 ..., head 0 ...,
    #    head 3 ... and head 1": listed from the most to the least often
    heads = dict(re.findall(r"head (\d): pointing game ([\d.]+)", solutions))
    assert sorted(heads) == ["0", "1", "2", "3"]
    assert sorted(heads, key=lambda h: -float(heads[h])) == ["2", "0", "3", "1"]
    assert float(heads["2"]) - float(heads["1"]) > 0.3
    # 3. "Layer-CAM points at the object for 0.743 of the test images, against 0.280
    #    for Grad-CAM at the same layer."
    layer_cam, gradcam = numbers(r"Layer-CAM at ln_1: ([\d.]+), Grad-CAM: ([\d.]+)", solutions)
    assert layer_cam > gradcam + 0.3
