"""The hypothesis profile CI runs: derandomized, no example database, a stated example count;
the same examples come out of two runs of the same test."""

from __future__ import annotations

import fuzz_profiles
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

deterministic = pytest.mark.skipif(fuzz_profiles.chosen() != "ci",
                                   reason="only the ci profile is deterministic; nightly draws at random by design")


@deterministic
def test_the_ci_profile_is_derandomized_with_a_stated_count():
    active = settings.default
    assert active.derandomize and active.database is None and active.deadline is None
    assert active.max_examples == fuzz_profiles.CI_EXAMPLES == 100
    assert fuzz_profiles.examples(25) == 25


def _drawn() -> list:
    seen = []

    @settings(max_examples=30)
    @given(st.floats(1e-3, 1e6), st.integers(1, 10**6), st.text(max_size=5))
    def probe(x, n, text):
        seen.append((x, n, text))

    probe()
    return seen


@deterministic
def test_two_runs_draw_the_same_examples():
    first, second = _drawn(), _drawn()
    assert len(first) == 30 and first == second


def test_nightly_scales_every_count():
    try:
        settings.load_profile("nightly")
        assert not settings.default.derandomize
        assert fuzz_profiles.examples(25) == 25 * fuzz_profiles.NIGHTLY_FACTOR
    finally:
        fuzz_profiles.load()
