"""Right and wrong answers to the checked exercise of page 35b (tests/test_exercises.py)."""

from __future__ import annotations

# -- page 35b: attribution patching ---------------------------------------------------------


def attribution_at(clean, corrupted, grad):
    return ((clean - corrupted) * grad).sum(dim=(0, 2))


def attribution_in_place(clean, corrupted, grad):  # right values, but spoils its inputs
    clean -= corrupted
    return (clean * grad).sum(dim=(0, 2))


RIGHT = {
    "35b.1": attribution_at,
}

WRONG = [
    (
        "35b.1",
        lambda clean, corrupted, grad: ((corrupted - clean) * grad).sum(dim=(0, 2)),
        "wrong_sign",
    ),
    (
        "35b.1",
        lambda clean, corrupted, grad: ((clean - corrupted) * grad).sum(dim=2),
        "per_sentence",
    ),
    (
        "35b.1",
        lambda clean, corrupted, grad: ((clean - corrupted) * grad).sum(dim=0),
        "per_feature",
    ),
    ("35b.1", lambda clean, corrupted, grad: ((clean - corrupted) * grad).sum(), "one_number"),
    ("35b.1", lambda clean, corrupted, grad: (clean - corrupted) * grad, "wrong_shape"),
    (
        "35b.1",
        lambda clean, corrupted, grad: ((clean - corrupted) * grad).sum(2).mean(0),
        "mean_over_sentences",
    ),
    ("35b.1", lambda clean, corrupted, grad: (clean * grad).sum(dim=(0, 2)), "no_difference"),
    (
        "35b.1",
        lambda clean, corrupted, grad: ((clean - corrupted) * grad).sum(dim=(0, 2)).tolist(),
        "not_a_tensor",
    ),
    ("35b.1", lambda clean, corrupted, grad: (clean - corrupted).sum(dim=(0, 2)), "wrong_values"),
    ("35b.1", attribution_in_place, "changed_inputs"),
    ("35b.1", "((clean - corrupted) * grad).sum(dim=(0, 2))", "not_callable"),
]
