"""Hypothesis profiles: deterministic by default (CI and `make test`), deep and random by hand.

- ``ci`` (the default): derandomized (each test's examples come from a seed derived from the test
  itself, so two runs draw the same examples), no example database (nothing replays from an earlier
  run), no deadline (a 2-core CI box is slow and shared), ``max_examples=CI_EXAMPLES`` for tests
  that do not state their own count.
- ``nightly``: random seeds and ``NIGHTLY_FACTOR`` times the examples of every test, with the
  example database on, so a failure found replays on the next run. For deep fuzzing by hand::

      HYPOTHESIS_PROFILE=nightly .venv/bin/pytest tests/test_fuzz_api.py tests/test_fuzz_scenario.py

  (``make fuzz`` runs every property test that way). A failure it finds is added to the test as an
  explicit ``@example`` so that CI replays it for ever.

Tests state their own count through :func:`examples`, which scales it under ``nightly``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

CI_EXAMPLES = 100
NIGHTLY_FACTOR = 40
PROFILE_ENV = "HYPOTHESIS_PROFILE"

settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True,
                          max_examples=CI_EXAMPLES, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("nightly", derandomize=False, deadline=None, print_blob=True,
                          max_examples=CI_EXAMPLES * NIGHTLY_FACTOR,
                          suppress_health_check=[HealthCheck.too_slow])


def chosen() -> str:
    """The profile named by ``$HYPOTHESIS_PROFILE`` (default ``ci``)."""
    return os.environ.get(PROFILE_ENV) or "ci"


def load() -> str:
    """Load the chosen profile; returns its name."""
    name = chosen()
    settings.load_profile(name)  # an unknown name raises InvalidArgument listing the profiles
    return name


def examples(n: int) -> int:
    """A test's example count: ``n`` in CI, scaled up under the nightly profile."""
    return max(n, round(n * settings.default.max_examples / CI_EXAMPLES))
