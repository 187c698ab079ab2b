"""Orders by packed keys (:func:`pair_order`) equal the stable lexicographic order."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_agents.memory._engine import _clamp
from cortex_agents.memory._radix import pair_order

_SPREADS = st.sampled_from([1, 3, 2**16, 2**40, 2**61, 2**62])


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 400),
    st.sampled_from([1, 5, 2**12, 2**40, 2**62]),
    _SPREADS,
    st.integers(0, 40),
    st.integers(0, 2**32),
)
def test_pair_order_is_the_stable_order_of_major_then_minor(n, majors, spread, zeros, seed):
    # narrow keys pack with the position; wide ones go through ranks or radix passes
    rng = np.random.default_rng(seed)
    major = rng.integers(0, majors, n)
    low = -(2**62) + int(rng.integers(0, 2**40))
    minor = (rng.integers(0, max(spread >> zeros, 1), n) << zeros) + low  # repeats and common zeros
    expected = np.lexsort((np.arange(n), minor, major))
    assert pair_order(major, minor).tolist() == expected.tolist()


def test_pair_order_of_labels_and_depths_puts_depth_first_then_id_order():
    depth = np.array([2, 0, 2, 1, 0])
    label = np.array([-(2**62) + 7, 2**61, -(2**62) + 3, 0, -5])
    assert pair_order(depth, label).tolist() == [4, 1, 3, 2, 0]


def test_clamp_sends_nan_to_zero_and_infinities_to_their_end():
    values = np.array([np.nan, np.inf, -np.inf, -0.5, 0.25, 1.5, -0.0, 1.0])
    expected = np.clip(np.nan_to_num(values, nan=0.0, posinf=1.0, neginf=0.0), 0.0, 1.0)
    got = _clamp(values)
    assert got.tolist() == expected.tolist() == [0.0, 1.0, 0.0, 0.0, 0.25, 1.0, 0.0, 1.0]
    assert np.signbit(got).tolist() == np.signbit(expected).tolist()  # -0.0 stays -0.0
