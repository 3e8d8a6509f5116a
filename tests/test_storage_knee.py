"""The storage knee as the slope at the operating point (issue 49.2, as for a service): a storage knee warning fires
only where a 10 % rise of the blend's IO rate raises its mean IO latency by more than KNEE_ELASTICITY x 10 %. The
closed curve's knee (the Queueing tab's line) is where that curve bends: its asymptotes R = S and R = N / X_max meet
at N* = X_max x S (Lazowska et al. 1984, section 5.3).

Hand-worked, xe9680-genai: one YanRong F9000X serves 56.3e9 B/s / 1,048,576 B = 53,692 IO/s (53,700 at the blend's
mean IO), saturation 53,700 / 0.959 = 55,996 IO/s, S = 0.3 ms (the default typical of published all-flash file
systems, docs/storage.md), so N* = 55,996 x 0.0003 = 16.8 -> 16 IOs. On the
fitted M/M/2, N = X R = rho X_max S / (1 - rho^2), so at N* rho / (1 - rho^2) = 1: rho = (sqrt 5 - 1) / 2 = 0.618
and R = S / rho = 1.618 S. The former knee, 2 S (rho = 0.707, N = 1.414 N* = 23.8 -> 23 IOs), sat on the straight
part: there the curve's slope dR/dN = 2 rho / (1 + rho^2) / X_max is already 94 % of its asymptote's.
"""

from __future__ import annotations

import pytest

from aisize.plan import context as C
from aisize.plan import plan
from aisize.plan.queues import storage_latency_curve
from aisize.plan.storage import _elasticity
from aisize.present.findings import finding_text  # a finding's one sentence
from aisize.queueing import (Station, bend_concurrency, knee_concurrency, latency_vs_concurrency, latency_vs_load,
                             storage_station)
from aisize.scenario import from_dict, preset, to_dict


def _weka(gpus: int):
    d = to_dict(preset("hpe-weka-resnet"))
    d["workloads"][0].update(gpus=gpus, layout=d["workloads"][0]["layout"] | {"micro_batch": 128})
    return plan(from_dict(d))


def _warned(p) -> bool:
    return any(f.severity == "warning" and f.area == "storage" and "latency knee" in finding_text(f)
               for f in p.findings)


@pytest.mark.parametrize("rho, slope", [(0.3, 0.2121), (0.6, 1.3393), (0.7, 2.5277), (0.8, 5.9574)])
def test_the_slope_of_the_fitted_m_m_2_by_hand(rho, slope):
    # M/M/2 mean R = S / (1 - rho^2); 10 % more load: (R(1.1 rho) / R(rho) - 1) / 0.1, worked by hand at rho = 0.6:
    # R = 1 / 0.64 = 1.5625 S, R' = 1 / (1 - 0.4356) = 1.7718 S, slope (1.7718 / 1.5625 - 1) / 0.1 = 1.339
    st = storage_station(1e6, 2e-4)
    lam = rho * st.saturation_per_s
    r = float(latency_vs_load(st, lam).response_mean_seconds)
    assert r == pytest.approx(2e-4 / (1 - rho**2), rel=1e-9)
    assert _elasticity(st, lam, r) == pytest.approx(slope, abs=5e-4)
    assert _elasticity(st, 0.0, 2e-4) == 0.0 and _elasticity(st, st.saturation_per_s, 1.0) == float("inf")


def test_the_warning_follows_the_slope_not_a_load_threshold():
    seen = set()
    for gpus in (128, 184, 200, 272):  # one 30 GB/s system from 45 % to 94 % of its IO saturation
        p = _weka(gpus)
        s = p.storage
        assert s.io_utilisation < 1
        steep = s.latency_elasticity > C.KNEE_ELASTICITY
        assert _warned(p) == steep, (gpus, s.io_utilisation, s.latency_elasticity)
        seen.add(steep)
        if steep:  # the warning says the slope it fired on
            text = next(t for t in map(finding_text, p.findings) if "latency knee" in t)
            assert "times as fast as the load" in text
    assert seen == {True, False}


@pytest.mark.parametrize("name", ["xe9680-genai", "serving-at-scale", "agentic-coding", "littles-law"])
def test_presets_warn_only_on_a_steep_slope(name):
    p = plan(preset(name))
    s = p.storage
    assert _warned(p) == (s.latency_elasticity > C.KNEE_ELASTICITY)
    if name == "littles-law":  # three 4U chassis at 86 % of saturation: 3.8 x unloaded, steep
        assert s.io_utilisation == pytest.approx(0.857, abs=0.002) and _warned(p)
    else:  # light load: latency rises about as fast as the load or slower
        assert s.latency_elasticity < 1.0 and not _warned(p)


def test_the_closed_knee_is_where_the_curve_bends_not_where_latency_doubles():
    p = plan(preset("xe9680-genai"))
    s = p.storage
    st = s.station
    assert st.service_seconds == 300e-6 and st.saturation_per_s == pytest.approx(55_996, rel=1e-3)
    assert s.knee_concurrency == bend_concurrency(st) == 16  # floor(55,996 x 0.0003 = 16.8)
    assert knee_concurrency(st, 2.0) == 23 > s.knee_concurrency  # the 2x point: the knee drawn before (issue 49)
    golden = (5**0.5 - 1) / 2
    at_bend = latency_vs_concurrency(st, st.saturation_per_s * st.service_seconds)
    assert at_bend.response_mean_seconds == pytest.approx(st.service_seconds / golden, rel=1e-6)  # 1.618 S
    assert at_bend.utilisation == pytest.approx(golden, rel=1e-6)
    # the slope of the curve drawn (dR/dN, in units of its straight part's 1 / X_max): the bend is where it turns,
    # the former knee already on the straight part
    def slope(n):
        r = latency_vs_concurrency(st, [n * 0.999, n * 1.001]).response_mean_seconds
        return (r[1] - r[0]) / (n * 0.002) * st.saturation_per_s
    n_star = st.saturation_per_s * st.service_seconds  # 16.8
    assert slope(n_star) == pytest.approx(2 * golden / (1 + golden**2), abs=2e-3)  # 0.894
    old = slope(2**0.5 * n_star)  # the old knee, 23.8 IOs: rho = 0.707, 2 x 0.707 / 1.5 = 0.943, straight
    assert old == pytest.approx(2 * 0.5**0.5 / 1.5, abs=2e-3) and old > 0.94
    assert slope(3.0) < 0.5  # well before the bend the curve is still flat-ish
    # the tab and the report draw this knee on the plan's own curve, which reaches twice past it
    frame = storage_latency_curve(p)
    assert frame["concurrency"].max() >= 2 * s.knee_concurrency


def test_a_plain_station_bends_at_its_channels():
    # R(N) = S max(1, N / c): flat to c, straight after; the asymptotes meet at N* = c
    assert bend_concurrency(Station(250, 2e-4)) == 250
    assert bend_concurrency(storage_station(2_500_000, 2e-4)) == int(2_500_000 / 0.959 * 2e-4)  # 521


@pytest.mark.parametrize("name", ["xe9680-genai", "serving-at-scale", "agentic-coding", "littles-law"])
def test_every_presets_storage_knee_is_its_bend(name):
    s = plan(preset(name)).storage
    assert s.knee_concurrency == int(s.station.saturation_per_s * s.station.service_seconds * (1 + 1e-12))
