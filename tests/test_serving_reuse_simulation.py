"""Prefix reuse, KV-cache tiers and length distributions: closed forms within 10 % of simpy simulations.

The grids and the figures compared are stated in aisize.validation.simulation (its docstring);
``benchmarks/sim_reuse.py`` prints every row. An error is the closed form over the simulation,
minus 1; hit rates below 5 % are held to 0.5 points instead (their sampling noise is that large).
The length grid holds the p95s to the bar (the means are printed, not asserted).
"""

import pytest

from aisize.validation import simulation as grid

pytestmark = pytest.mark.slow
TOLERANCE = 0.10


def _check(rows):
    bad = [r for r in rows if abs(r["error"]) > (0.005 if r["absolute"] else TOLERANCE)]
    assert not bad, bad


@pytest.mark.parametrize("gb", grid.TIER_CAPACITIES_GB)
@pytest.mark.parametrize("case", sorted(grid.TIER_CASES))
def test_tier_hit_rates_match_an_lru_simulation(case, gb):
    _check(grid.tier_rows(case, gb))


@pytest.mark.parametrize("case", sorted(grid.SCHEDULER_CASES))
def test_reuse_inside_the_scheduler_matches_the_estimate(case):
    _check(grid.scheduler_rows(case))


@pytest.mark.parametrize("case", sorted(grid.LENGTH_CASES))
def test_length_distribution_tails_match_the_simulation(case):
    _check([r for r in grid.length_rows(case) if r["figure"].startswith("p95")])
