"""What counts as input sizes that vary: one definition for TD-COMP-019 and tune's compile knob."""

from torchdoctor.estimates.shapes import MIN_STEPS, size_spread


def test_too_few_steps_with_a_size_say_nothing():
    assert size_spread([8, 16, 32, 0, None]) is None  # three sizes, but only three steps recorded one
    assert size_spread([8] * MIN_STEPS) is not None


def test_a_last_partial_batch_is_not_sizes_that_vary():
    spread = size_spread([32] * 9 + [7])
    assert (spread.distinct, spread.steps) == (2, 10) and not spread.varies


def test_many_sizes_none_dominant_vary_and_one_dominant_size_does_not():
    assert size_spread([10, 20, 30, 40, 10, 20]).varies
    assert not size_spread([10] * 8 + [20, 30]).varies  # the commonest covers 80% of the steps
