"""The reward components that the trainer composes (environments/rewards.py)."""

import pytest

from rlclimb.environments.rewards import compose, length_penalty, non_english_words


@pytest.mark.parametrize(
    ("text", "foreign"),
    [
        ("The angle θ is π/2, so sin θ = 1.", 0),  # Greek letters as math symbols
        ("θ π/2", 0),
        ("Let Δx and x_α be small.", 0),
        ("Угол θ равен π/2", 2),  # Russian words count, the symbols do not
        ("και το", 2),  # Greek words do
        ("für alle", 1),
        ("中文 ok", 2),
    ],
)
def test_language_counts_words_not_math_symbols(text, foreign):
    assert non_english_words(text) == foreign


def test_length_penalty_scales_with_the_given_pass_rate():
    assert length_penalty(16, 32, 0.375) == pytest.approx(0.375 * 0.5)
    reward = compose(
        1.0, "The answer is 7.", formatted=True, num_tokens=8, max_tokens=32, pass_rate=0.25
    )
    assert reward.components["length"] == pytest.approx(0.25 * 8 / 32)
