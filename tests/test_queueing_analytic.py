"""Analytic queueing formulas against published values and exact identities."""

import math

import numpy as np
import pytest

import aisize.queueing as q
from aisize.queueing.curves import STORAGE_PEAK_UTILISATION


def test_erlang_c_textbook_value():
    # Erlang C tables: a = 10 erlangs on c = 11 servers -> P(wait) = 0.6821
    # (Gross, Shortle, Thompson, Harris, Fundamentals of Queueing Theory, 4th ed., 2008,
    # section 2.3 and Erlang C tables; also Kleinrock Vol. 1, eq. 3.40). Tolerance 1e-4.
    assert q.erlang_c(11, 10.0) == pytest.approx(0.6821, abs=1e-4)


def test_erlang_b_table_value():
    # Erlang B table: B(c=10, a=5) = 0.018384 (Gross et al. 2008, section 2.6). Tolerance 1e-6.
    assert q.erlang_b(10, 5.0) == pytest.approx(0.018384, abs=1e-6)


def test_erlang_vectorized_matches_scalar_fast_path():
    c = np.array([1, 4, 11, 300])
    a = np.array([0.5, 3.0, 10.0, 290.0])
    vec = q.erlang_c(c, a)
    assert np.allclose(vec, [q.erlang_c(int(ci), float(ai)) for ci, ai in zip(c, a)], rtol=1e-12)
    assert q.erlang_c(1, 0.7) == pytest.approx(0.7, rel=1e-12)  # M/M/1: P(wait) = rho


def test_mm1_at_rho_09_time_in_system_is_ten_service_times():
    # DESIGN.md section 2 / Kleinrock Vol. 1 eq. 3.26: W = 1/(mu - lambda) = 10 S at rho = 0.9;
    # the response time is exponential with rate mu - lambda, so p95 = ln(20)/(mu - lambda).
    r = q.mm1(450.0, 0.002)  # 450/s on a 2 ms server: rho = 0.9, mu - lambda = 50/s
    assert r.response_mean_seconds == pytest.approx(0.02, rel=1e-12)
    assert r.response_p95_seconds == pytest.approx(math.log(20) / 50.0, rel=1e-9)
    assert r.response_p99_seconds == pytest.approx(math.log(100) / 50.0, rel=1e-9)
    assert r.in_system_mean == pytest.approx(9.0, rel=1e-12)  # rho/(1 - rho)


def test_md1_waits_half_as_long_as_mm1():
    lam = np.array([0.1, 0.5, 0.8, 0.95])
    assert np.allclose(q.md1(lam, 1.0).wait_mean_seconds, 0.5 * q.mm1(lam, 1.0).wait_mean_seconds, rtol=1e-12)


def test_mg1_pollaczek_khinchine():
    # P-K (Kleinrock eq. 5.65): rho = 0.8, c_s = 2: W_q = 0.8 * (1 + 4) / (2 * 0.2) * S = 10 S.
    assert q.mg1(0.4, 2.0, 2.0).wait_mean_seconds == pytest.approx(20.0, rel=1e-12)


def test_mmc_wait_tail_is_erlang_c_exponential():
    # Gross et al. eq. 2.40: P(W_q > t) = C e^{-(c mu - lambda) t}; here the p95 of W_q.
    r = q.mmc(10.0, 1.0, 11)
    assert r.wait_p95_seconds == pytest.approx(math.log(0.6821182 / 0.05) / 1.0, rel=1e-6)
    assert r.prob_wait == pytest.approx(0.6821, abs=1e-4)


def test_response_quantile_solves_tail():
    lam = np.linspace(0.5, 15.5, 50)
    for cv in (0.0, 0.5, 1.0, 3.0):
        r = q.ggc(lam, 1.0, 16, service_cv=cv)
        tail = q.response_tail(r.response_p99_seconds, r.prob_wait, r.wait_mean_seconds, 1.0, cv)
        if cv > 0:  # continuous distribution: tail equals 1 - p at the quantile
            assert np.allclose(tail, 0.01, atol=1e-9)
        else:  # deterministic service has an atom at S: the tail is at most 1 - p
            assert np.all(tail <= 0.01 + 1e-12)


def test_thousands_of_servers_no_overflow():
    r = q.mmc(4950.0, 1.0, 5000)
    vals = [getattr(r, f) for f in r.__dataclass_fields__ if f != "stable"]
    assert r.stable and all(math.isfinite(v) and v >= 0 for v in vals)
    assert 0 < r.prob_wait < 1 and 1.0 < r.response_mean_seconds < 1.1
    assert q.erlang_c(10_000, 9_900.0) < 1.0


def test_unstable_is_explicit():
    r = q.mmc(np.array([3.0, 4.0, 5.0]), 1.0, 4)
    assert list(r.stable) == [True, False, False]
    assert np.all(np.isinf(r.response_p95_seconds[1:])) and np.all(np.isinf(r.wait_mean_seconds[1:]))
    assert not np.any(np.isnan(r.response_mean_seconds))


def test_littles_law():
    assert q.little(rate_per_s=100.0, time_seconds=0.5) == pytest.approx(50.0)
    assert q.little(in_system=50.0, time_seconds=0.5) == pytest.approx(100.0)
    assert q.little(in_system=50.0, rate_per_s=100.0) == pytest.approx(0.5)
    assert q.outstanding_ios(2.5e6, 200e-6) == pytest.approx(500.0)
    with pytest.raises(ValueError, match="exactly two"):
        q.little(in_system=1.0)


def test_sizing_is_minimal_and_vectorized():
    lam = np.array([5.0, 50.0, 500.0, 5000.0])
    r = q.servers_for_target(lam, 1.0, 6.0, 0.99)
    assert r.feasible.all()
    assert np.all(q.mmc(lam, 1.0, r.servers).response_p99_seconds <= 6.0)
    assert np.all(q.mmc(lam, 1.0, r.servers - 1).response_p99_seconds > 6.0)
    assert q.servers_for_target(500.0, 1.0, 6.0, 0.99).servers == r.servers[2]


def test_sizing_ten_thousand_servers_and_infeasible():
    r = q.servers_for_target(9990.0, 1.0, 4.0, 0.95)
    assert r.servers > 9990 and r.response_seconds <= 4.0
    assert q.mmc(9990.0, 1.0, r.servers - 1).response_p95_seconds > 4.0
    # p95 of an exponential service alone is ln(20) S = 3.0 S: a 2.9 s target is out of reach
    bad = q.servers_for_target(10.0, 1.0, 2.9, 0.95)
    assert not bad.feasible and bad.servers == 0
    assert q.servers_for_target(9.0, 1.0, 1.2, None).servers == 12  # mean target


def test_storage_curves_and_knee():
    st = q.storage_station(2.5e6, 100e-6)  # 2.5 M IOPS at 100 us: 250 channels (Little)
    assert st.servers == 250
    # a plain 250-channel station, closed: R(N) = S max(1, N/c), knee at 2c
    plain = q.Station(250, 100e-6)
    cc = q.latency_vs_concurrency(plain, np.array([1, 250, 500, 1000]))
    assert np.allclose(cc.throughput_per_s, [1e4, 2.5e6, 2.5e6, 2.5e6])
    assert np.allclose(cc.response_mean_seconds, [1e-4, 1e-4, 2e-4, 4e-4])
    assert q.knee_concurrency(plain, 2.0) == 500
    k = q.knee_load(st, 2.0)
    at = q.latency_vs_load(st, k.arrival_rate_per_s).response_mean_seconds
    assert at == pytest.approx(2e-4, rel=1e-6)
    # the storage station, closed, is its open curve at N = X R(X): M/M/2 at rho = X / (2.5e6 / 0.959),
    # R = S / (1 - rho^2); its knee is Little's law at the open knee, rho = 1/sqrt(2): N = 0.7071 x 2.607e6 x 2e-4
    sat = 2.5e6 / STORAGE_PEAK_UTILISATION
    cs = q.latency_vs_concurrency(st, np.array([1.0, 100.0, 368.0, 1000.0]))
    rho = cs.throughput_per_s / sat
    assert cs.response_mean_seconds == pytest.approx(1e-4 / (1 - rho**2), rel=1e-9)
    assert cs.concurrency == pytest.approx(cs.throughput_per_s * cs.response_mean_seconds, rel=1e-12)
    assert cs.utilisation == pytest.approx(rho, rel=1e-12) and np.all(np.diff(cs.response_mean_seconds) > 0)
    assert q.knee_concurrency(st, 2.0) == int(2**-0.5 * sat * 2e-4) == 368  # not 2c = 500
    assert q.latency_vs_concurrency(st, 368.0).response_mean_seconds <= 2e-4 < q.latency_vs_concurrency(
        st, 369.0).response_mean_seconds
    assert st.capacity_per_s == pytest.approx(sat)
    # a sliver of an IO in flight on a large system is unloaded, not a bracket's rounding (was 0.96 S at 1e-12)
    big = q.storage_station(1e8, 1e-3)
    assert q.latency_vs_concurrency(big, 1e-12).response_mean_seconds == pytest.approx(1e-3, rel=1e-9)
    k95 = q.knee_load(q.inference_station(4, 8, 1.5), 2.0, "p95")
    assert q.latency_vs_load(q.inference_station(4, 8, 1.5), k95.arrival_rate_per_s).response_p95_seconds \
        == pytest.approx(k95.limit_seconds, rel=1e-6)


def test_multiclass_against_pollaczek_khinchine():
    # c = 1: lambda1 = 0.3, S1 = 1, cv 1; lambda2 = 0.1, S2 = 4, cv 0. E[S^2] = (0.3*2 + 0.1*16)/0.4 = 5.5,
    # rho = 0.7, W_q = lambda E[S^2] / (2 (1 - rho)) = 0.4 * 5.5 / 0.6 = 3.6667 (Kleinrock eq. 5.65).
    r = q.multiclass([q.JobClass("reads", 0.3, 1.0, 1.0), q.JobClass("ckpt", 0.1, 4.0, 0.0)], 1)
    assert r.aggregate.wait_mean_seconds == pytest.approx(0.4 * 5.5 / 0.6, rel=1e-12)
    assert r.by_name("reads").response_mean_seconds == pytest.approx(0.4 * 5.5 / 0.6 + 1.0, rel=1e-12)
    assert r.by_name("ckpt").response_mean_seconds == pytest.approx(0.4 * 5.5 / 0.6 + 4.0, rel=1e-12)
    assert r.aggregate.utilisation == pytest.approx(0.7)


def test_multiclass_identical_classes_equal_single_class():
    r = q.multiclass([q.JobClass("a", 3.0, 1.0), q.JobClass("b", 5.0, 1.0)], 10)
    one = q.mmc(8.0, 1.0, 10)
    assert r.by_name("a").response_p95_seconds == pytest.approx(one.response_p95_seconds, rel=1e-9)
    assert r.aggregate.wait_mean_seconds == pytest.approx(one.wait_mean_seconds, rel=1e-12)


@pytest.mark.parametrize("call, name", [
    (lambda: q.mmc(-1.0, 1.0, 2), "arrival_rate_per_s"),
    (lambda: q.mmc(1.0, 0.0, 2), "service_seconds"),
    (lambda: q.mmc(1.0, 1.0, 2.5), "servers"),
    (lambda: q.mmc(1.0, 1.0, 0), "servers"),
    (lambda: q.ggc(1.0, 1.0, 2, service_cv=-0.1), "service_cv"),
    (lambda: q.erlang_c(4, 5.0), "offered_erlangs"),
    (lambda: q.servers_for_target(1.0, 1.0, 5.0, 1.0), "percentile"),
    (lambda: q.servers_for_target(1.0, 1.0, -5.0), "target_seconds"),
    (lambda: q.knee_load(q.Station(2, 1.0), 1.0), "factor"),
    (lambda: q.knee_load(q.Station(2, 1.0), 2.0, "p90"), "statistic"),
    (lambda: q.storage_station(0.0, 1e-4), "iops_max_per_s"),
    (lambda: q.latency_vs_concurrency(q.Station(2, 1.0), np.array([1.0, -2.0])), "concurrency"),
    (lambda: q.multiclass([q.JobClass("w", 0.0, 1.0)]), "w.arrival_rate_per_s"),
    (lambda: q.little(rate_per_s=0.0, time_seconds=1.0), "rate_per_s"),
])
def test_bad_inputs_name_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_erlang_b_log_sum_agrees_with_the_recursion():
    # The two array evaluations of the same formula (chosen by cost) must agree.
    from aisize.queueing.analytic import _erlang_b_logsum, _erlang_b_recursion

    rng = np.random.default_rng(7)
    c = rng.integers(1, 8000, 400)
    a = c * rng.uniform(0.02, 1.4, 400)
    ref = _erlang_b_recursion(c, a)
    assert np.allclose(_erlang_b_logsum(c, a), ref, rtol=1e-9, atol=1e-14)
    assert _erlang_b_logsum(np.array([11]), np.array([10.0]))[0] == pytest.approx(0.163232, abs=1e-6)


def test_mgc_wait_matches_ggc_mean_and_the_mm_c_tail():
    from aisize.queueing import ggc, mgc_wait

    lam, s, c = np.array([5.0, 9.0, 30.0]), 0.1, np.array([1, 1, 4])
    stable, p_wait, mean, p95 = mgc_wait(lam, s, c, service_cv=1.0)
    g = ggc(lam, s, c, service_cv=1.0)
    assert mean == pytest.approx(g.wait_mean_seconds) and p_wait == pytest.approx(g.prob_wait)
    # M/M/1 at rho 0.9: P(W > t) = 0.9 e^(-(mu - lambda) t): p95 = ln(0.9 / 0.05) / (10 - 9) s
    assert p95[1] == pytest.approx(math.log(0.9 / 0.05))
    assert p95 == pytest.approx(g.wait_p95_seconds, rel=1e-6)
    unstable = mgc_wait(12.0, s, 1)
    assert not unstable[0] and math.isinf(unstable[2])
