"""Property tests (hypothesis) of the analytic queues: monotonicity, no NaN/negative output, bad input."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import aisize.queueing as q

FIELDS = [f for f in q.QueueResult.__dataclass_fields__ if f != "stable"]
rho_st = st.floats(0.01, 0.995)
servers_st = st.integers(1, 400)
cv_st = st.floats(0.0, 5.0)
service_st = st.floats(1e-6, 1e3)


@settings(max_examples=60, deadline=None)
@given(r1=rho_st, r2=rho_st, c=servers_st, s=service_st, cv=cv_st)
def test_wait_rises_with_load(r1, r2, c, s, cv):
    lo, hi = sorted((r1, r2))
    a = q.ggc(lo * c / s, s, c, service_cv=cv)
    b = q.ggc(hi * c / s, s, c, service_cv=cv)
    assert b.wait_mean_seconds >= a.wait_mean_seconds * (1 - 1e-9)
    assert b.response_p95_seconds >= a.response_p95_seconds * (1 - 1e-9)


@settings(max_examples=60, deadline=None)
@given(c1=servers_st, c2=servers_st, rho=rho_st, s=service_st, cv=cv_st)
def test_wait_falls_with_servers(c1, c2, rho, s, cv):
    lo, hi = sorted((c1, c2))
    lam = rho * lo / s
    a, b = q.ggc(lam, s, lo, service_cv=cv), q.ggc(lam, s, hi, service_cv=cv)
    assert b.wait_mean_seconds <= a.wait_mean_seconds * (1 + 1e-9)
    assert b.response_p99_seconds <= a.response_p99_seconds * (1 + 1e-9)


@settings(max_examples=80, deadline=None)
@given(lam=st.floats(1e-6, 1e6), s=service_st, c=st.integers(1, 2000), cs=cv_st, ca=cv_st)
def test_no_nan_or_negative_for_any_valid_input(lam, s, c, cs, ca):
    r = q.ggc(lam, s, c, service_cv=cs, arrival_cv=ca)
    for f in FIELDS:
        v = getattr(r, f)
        assert not math.isnan(v) and v >= 0, (f, v)
    if r.stable:
        assert r.response_p50_seconds <= r.response_p95_seconds <= r.response_p99_seconds
        assert r.response_mean_seconds >= s * (1 - 1e-12)
    else:
        assert r.utilisation >= 1 and math.isinf(r.response_p99_seconds) and math.isinf(r.wait_mean_seconds)


@settings(max_examples=40, deadline=None)
@given(rho=st.floats(1.0 + 1e-9, 50.0), c=st.integers(1, 500), s=service_st)
def test_overload_is_unstable_and_infinite(rho, c, s):
    r = q.mmc(np.array([rho * c / s]), s, c)
    assert not r.stable[0]
    for f in FIELDS:
        v = getattr(r, f)[0]
        assert not np.isnan(v) and v >= 0
    assert np.isinf(r.response_mean_seconds[0]) and np.isinf(r.queue_length_mean[0])


@settings(max_examples=40, deadline=None)
@given(bad=st.one_of(st.floats(max_value=0.0), st.just(math.nan), st.just(math.inf)),
       which=st.sampled_from(["arrival_rate_per_s", "service_seconds"]))
def test_invalid_input_names_parameter(bad, which):
    args = {"arrival_rate_per_s": 1.0, "service_seconds": 0.1, which: bad}
    with pytest.raises(ValueError, match=which):
        q.mmc(args["arrival_rate_per_s"], args["service_seconds"], 2)


@settings(max_examples=30, deadline=None)
@given(c=st.one_of(st.integers(max_value=0), st.floats(1.1, 9.9).filter(lambda x: x != int(x))))
def test_invalid_servers(c):
    with pytest.raises(ValueError, match="servers"):
        q.mmc(1.0, 0.1, c)
