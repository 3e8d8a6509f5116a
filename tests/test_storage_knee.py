"""The storage knee as the slope at the operating point (issue 49.2, as for a service): a storage knee warning fires
only where a 10 % rise of the blend's IO rate raises its mean IO latency by more than KNEE_ELASTICITY x 10 %."""

from __future__ import annotations

import pytest

from aisize.plan import context as C
from aisize.plan import plan
from aisize.plan.storage import _elasticity
from aisize.queueing import latency_vs_load, storage_station
from aisize.scenario import from_dict, preset, to_dict


def _weka(gpus: int):
    d = to_dict(preset("hpe-weka-resnet"))
    d["workloads"][0].update(gpus=gpus, layout=d["workloads"][0]["layout"] | {"micro_batch": 128})
    return plan(from_dict(d))


def _warned(p) -> bool:
    return any(f.severity == "warning" and f.area == "storage" and "latency knee" in f.text for f in p.findings)


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
            text = next(f.text for f in p.findings if f.area == "storage" and "latency knee" in f.text)
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
