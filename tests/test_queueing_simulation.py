"""The analytic queues checked against the simpy discrete-event simulation.

Compared: mean and p95 of the response time (W_q + S) for M/M/c at rho in {0.5, 0.8, 0.9}
and c in {1, 4, 16}, plus the mean wait where it is not tiny (rho >= 0.8). Agreement means
|simulated - analytic| <= max(5 % of analytic, the simulation's 95 % batch-means half-width).
Runs are seeded, so the numbers are the same on every run; ~9 s for the whole file.
"""

import math

import pytest

import aisize.queueing as q


def _agree(sim, ci, analytic):
    return abs(sim - analytic) <= max(0.05 * analytic, ci)


@pytest.mark.parametrize("servers", [1, 4, 16])
@pytest.mark.parametrize("rho, customers", [(0.5, 50_000), (0.8, 100_000), (0.9, 200_000)])
def test_mmc_matches_simulation(servers, rho, customers):
    if servers == 1 and rho == 0.9:
        customers = 400_000  # M/M/1 at 0.9 relaxes slowly (variance ~ 1/(1 - rho)^4)
    lam = rho * servers / 0.01
    sim = q.simulate(lam, 0.01, servers, customers=customers, seed=1)
    ana = q.mmc(lam, 0.01, servers)
    assert _agree(sim.response_mean_seconds, sim.response_mean_ci95_seconds, ana.response_mean_seconds)
    assert _agree(sim.response_p95_seconds, sim.response_p95_ci95_seconds, ana.response_p95_seconds)
    if rho >= 0.8:
        assert _agree(sim.wait_mean_seconds, sim.wait_mean_ci95_seconds, ana.wait_mean_seconds)
    assert sim.utilisation == pytest.approx(rho, rel=0.03)


@pytest.mark.parametrize("service, cv", [("deterministic", 0.0), ("lognormal", 2.0)])
def test_mg1_mean_matches_simulation(service, cv):
    # Pollaczek-Khinchine mean (exact for M/G/1) against simulated M/D/1 and M/LogNormal/1 at rho = 0.8.
    sim = q.simulate(0.8, 1.0, 1, service=service, service_cv=cv, customers=150_000, seed=2)
    ana = q.mg1(0.8, 1.0, cv)
    assert _agree(sim.response_mean_seconds, sim.response_mean_ci95_seconds, ana.response_mean_seconds)


@pytest.mark.parametrize("kwargs", [
    dict(servers=1),
    dict(servers=4, service="pareto", pareto_shape=2.2),
    dict(servers=8, arrival="batch", batch_size=16),
    dict(servers=2, max_in_system=5),
])
def test_littles_law_in_simulation_counts(kwargs):
    servers = kwargs.pop("servers")
    sim = q.simulate(0.85 * servers, 1.0, servers, customers=50_000, seed=3, **kwargs)
    # time-average number in system (from event times) vs throughput x mean response (per customer)
    assert sim.in_system_mean == pytest.approx(sim.throughput_per_s * sim.response_mean_seconds, rel=0.02)


def test_loss_system_rejections_match_erlang_b():
    # M/M/10/10 with a = 5 erlangs rejects B(10, 5) = 0.018384 of arrivals (Erlang B tables,
    # Gross et al. 2008 section 2.6); ~1,800 rejections expected, so 10 % tolerance (~4 sigma).
    sim = q.simulate(5.0, 1.0, 10, max_in_system=10, customers=100_000, seed=4)
    assert sim.rejection_fraction == pytest.approx(0.018384, rel=0.10)
    assert sim.wait_mean_seconds == 0.0


def test_reproducible_and_seed_sensitive():
    a = q.simulate(3.0, 1.0, 4, customers=5_000, seed=7)
    b = q.simulate(3.0, 1.0, 4, customers=5_000, seed=7)
    c = q.simulate(3.0, 1.0, 4, customers=5_000, seed=8)
    assert a == b
    assert a.response_mean_seconds != c.response_mean_seconds


def test_batch_of_one_is_poisson_and_bursts_wait_longer():
    base = q.simulate(3.0, 1.0, 4, customers=20_000, seed=5)
    assert q.simulate(3.0, 1.0, 4, arrival="batch", batch_size=1, customers=20_000, seed=5) == base
    burst = q.simulate(3.0, 1.0, 4, arrival="batch", batch_size=16, customers=20_000, seed=5)
    assert burst.wait_mean_seconds > 3 * base.wait_mean_seconds


def test_simulation_result_is_a_queue_result_with_finite_fields():
    sim = q.simulate(0.5, 1.0, 2, service="pareto", pareto_shape=1.5, customers=5_000, seed=6)
    assert isinstance(sim, q.QueueResult) and sim.stable
    assert all(math.isfinite(getattr(sim, f)) for f in sim.__dataclass_fields__)


@pytest.mark.parametrize("kwargs, name", [
    (dict(service="weibull"), "service"),
    (dict(arrival="mmpp"), "arrival"),
    (dict(pareto_shape=1.0, service="pareto"), "pareto_shape"),
    (dict(customers=10), "customers"),
    (dict(max_in_system=0), "max_in_system"),
    (dict(seed=-1), "seed"),
])
def test_simulate_bad_inputs(kwargs, name):
    with pytest.raises(ValueError, match=name):
        q.simulate(1.0, 0.5, 1, **kwargs)
