"""The storage queue against published load curves (issue 49.1; docs/storage.md, "fitted on published load curves").

data/storage_load_curves.csv holds five SPECstorage Solution 2020 Performance tables as published: two fit the
station's two constants (role "fit"), three only check it (role "check"). Every check compares the model with the
published mean latencies, so a constant moved off its fit, or a return to many Little's-law channels (flat to
saturation), fails here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aisize.queueing import (StorageStation, knee_concurrency, knee_load, latency_vs_concurrency, latency_vs_load,
                             storage_station)
from aisize.queueing.analytic import ggc
from aisize.queueing.curves import STORAGE_EFFECTIVE_SERVERS, STORAGE_PEAK_UTILISATION

CURVES = pd.read_csv(Path(__file__).resolve().parents[1] / "data" / "storage_load_curves.csv")


def _model_ms(curve: pd.DataFrame, station_for=storage_station) -> np.ndarray:
    """The station's mean latency [ms] at each published load: rated = the last point, unloaded = the least."""
    rated, unloaded_ms = curve.ops_per_s.max(), curve.latency_mean_ms.min()
    st = station_for(rated, unloaded_ms * 1e-3)
    return np.asarray(latency_vs_load(st, curve.ops_per_s.to_numpy(float)).response_mean_seconds) * 1e3


def _log_errors(curve, station_for=storage_station):
    return np.log(_model_ms(curve, station_for) / curve.latency_mean_ms.to_numpy())


def _rms(errors):
    return float(np.sqrt(np.mean(np.square(errors))))


def test_the_published_tables_are_whole_and_sourced():
    assert set(CURVES.curve) == {"a90-eda", "a900-swbuild", "anf-large-eda", "anf-scale-eda", "anf-breakthrough-eda"}
    for name, c in CURVES.groupby("curve"):
        assert (c.load_point.to_numpy() == np.arange(1, len(c) + 1)).all(), name
        assert (np.diff(c.ops_per_s) > 0).all() and (c.latency_mean_ms > 0).all(), name
        assert c.source.str.contains("storage2020-20").all(), name  # the SPEC result id on every row
    a90 = CURVES[CURVES.curve == "a90-eda"]
    assert (a90.ops_per_s.iloc[-1], a90.latency_mean_ms.iloc[-1]) == (3_644_870, 4.9)  # storage2020-20240708-00080


@pytest.mark.parametrize("name", sorted(set(CURVES.curve)))
def test_the_station_follows_each_published_curve(name):
    c = CURVES[CURVES.curve == name]
    e = _log_errors(c)
    assert _rms(e) < 0.30  # 26-28 % rms where fitted, 11-28 % on the curves not fitted
    assert np.abs(e).max() < np.log(2.4)  # no point off by more than 2.4x (the worst: ANF breakthrough's last)


def test_the_latency_rises_long_before_saturation_as_measured():
    a90 = CURVES[CURVES.curve == "a90-eda"]
    model = _model_ms(a90)
    # published: 0.4 ms unloaded, 0.8 at 60 %, 1.5 at 80 %, 2.6 at 90 %; the model more than doubles by 90 %
    at = dict(zip(a90.load_point, model))
    assert at[1] == pytest.approx(0.40, abs=0.01)
    assert at[8] > 2.0 * 0.4 and at[9] > 3.5 * 0.4
    # many Little's-law channels (M/M/c with c = IOPS x latency) stay flat: 0.40 ms at 90 %
    flat = np.asarray(ggc(a90.ops_per_s.to_numpy(float), 0.4e-3, 1458).response_mean_seconds) * 1e3
    assert flat[8] == pytest.approx(0.40, abs=0.005)
    flat_rms = _rms(np.log(flat / a90.latency_mean_ms.to_numpy()))
    assert flat_rms > 3 * _rms(_log_errors(a90))


def test_the_knee_falls_where_the_published_curves_double():
    # the first published load at which each curve's mean latency reaches twice its least
    doubling = [c.ops_per_s[c.latency_mean_ms >= 2 * c.latency_mean_ms.min()].iloc[0] / c.ops_per_s.max()
                for _, c in CURVES.groupby("curve")]
    assert min(doubling) == pytest.approx(0.6, abs=0.01) and max(doubling) == pytest.approx(0.9, abs=0.01)
    st = storage_station(3_644_870, 400e-6)
    share = knee_load(st, 2.0).arrival_rate_per_s / 3_644_870
    assert min(doubling) <= share <= max(doubling)
    # M/M/2: R/S = 1/(1 - rho^2) = 2 at rho = 0.7071, i.e. at 0.7071 x 0.959 of the rated ops/s
    assert share == pytest.approx(0.5 ** 0.5 / STORAGE_PEAK_UTILISATION, rel=1e-6)


@pytest.mark.parametrize("name", sorted(set(CURVES.curve)))
def test_the_closed_view_is_the_same_curve_and_follows_the_published_points(name):
    """Each published point held N = ops/s x latency IOs in flight (Little): the closed-system view at that N gives
    its latency within 19 % (rms 6-9 %), where Little's flat channels, R = S max(1, N/c), are 18-26 % rms off."""
    c = CURVES[CURVES.curve == name]
    published = c.latency_mean_ms.to_numpy()
    st = storage_station(c.ops_per_s.max(), published.min() * 1e-3)
    n = c.ops_per_s.to_numpy(float) * published * 1e-3
    closed = latency_vs_concurrency(st, n)
    e = np.log(np.asarray(closed.response_mean_seconds) * 1e3 / published)
    flat = np.log(published.min() * np.maximum(1.0, n / st.servers) / published)
    assert _rms(e) < 0.10 and np.abs(e).max() < np.log(1.2) and _rms(flat) > 1.8 * _rms(e)
    # one curve: the closed point at N is the open curve at its throughput, and the knees coincide (Little)
    opened = latency_vs_load(st, closed.throughput_per_s).response_mean_seconds
    assert np.asarray(opened) == pytest.approx(np.asarray(closed.response_mean_seconds), rel=1e-9)
    k = knee_load(st, 2.0)
    assert knee_concurrency(st, 2.0) == int(k.arrival_rate_per_s * k.limit_seconds) < 2 * st.servers


def test_the_constants_are_the_least_squares_fit_on_the_fit_curves():
    fit = CURVES[CURVES.role == "fit"]

    def rms(c, u):
        def station(rated, unloaded):
            return StorageStation(1, unloaded, 1.0, rated_per_s=rated, effective_servers=c, peak_utilisation=u)
        return _rms(np.concatenate([_log_errors(g, station) for _, g in fit.groupby("curve")]))

    best = min(((rms(c, u), c, u) for c in (1, 2, 3, 4, 6, 8, 16) for u in np.arange(0.90, 0.9995, 0.001)))
    assert (best[1], round(best[2], 3)) == (STORAGE_EFFECTIVE_SERVERS, STORAGE_PEAK_UTILISATION)
    assert best[0] == pytest.approx(0.261, abs=0.002)


def test_a_storage_station_refuses_a_bad_figure_by_name():
    with pytest.raises(ValueError, match="rated_per_s"):
        StorageStation(1, 1e-3, 1.0)
    with pytest.raises(ValueError, match="peak_utilisation"):
        StorageStation(1, 1e-3, 1.0, rated_per_s=1e6, peak_utilisation=1.0)
