"""Load through the day and autoscaling: the fluid model against a simpy simulation of the same day.

Grid (each simulation seeded; the day's GPU-hours, mean replicas and cost within 10 %):

1. a diurnal curve (night at a quarter of the afternoon peak), peak 1 request/s, a replica saturating
   at 0.1 request/s (40 s per request, 4 slots), target 70 %, scale-up 2 minutes;
2. the same with a 15-minute scale-up;
3. the diurnal curve at 4 requests/s, replicas of 0.2 request/s (20 s, 4 slots), target 80 %,
   scale-up 5 minutes;
4. a morning step (10 % of the peak until 08:00, the peak until 20:00, then 30 %) every 15 minutes,
   peak 2 requests/s, replicas of 0.2 request/s, target 60 %, scale-up 10 minutes: the ramp
   outruns the loading replicas, and both the model (overloaded hours) and the simulation (late
   requests) show it.

Rates are small so that a simulated day stays near a second (50,000 to 180,000 requests); the
fluid model does not depend on the scale beyond the meter's noise, which it models.
"""

import numpy as np
import pytest

from aisize.fleet import Autoscaler, day_replicas, from_csv, profile, simulate_day
from aisize.fleet.cost import day_cost

HOURS = np.arange(24)
DIURNAL = list(0.25 + 0.75 * (np.sin((HOURS - 6) / 24 * 2 * np.pi) * 0.5 + 0.5) ** 2)
STEP = [0.1] * 32 + [1.0] * 48 + [0.3] * 16
GRID = [(DIURNAL, 1.0, 0.1, 40.0, 0.7, 120.0), (DIURNAL, 1.0, 0.1, 40.0, 0.7, 900.0),
        (DIURNAL, 4.0, 0.2, 20.0, 0.8, 300.0), (STEP, 2.0, 0.2, 20.0, 0.6, 600.0)]


def _case(shape, peak, cap, target, up):
    p = profile(shape, scale=peak / max(shape))
    return p, Autoscaler(target * cap, 1, 200, up)


@pytest.mark.slow
@pytest.mark.parametrize("shape, peak, cap, service, target, up", GRID)
def test_day_matches_simulation_within_10_percent(shape, peak, cap, service, target, up):
    p, pol = _case(shape, peak, cap, target, up)
    day = day_replicas(p, pol, gpus_per_replica=4, capacity_per_replica_per_s=cap)
    sim = simulate_day(p, pol, gpus_per_replica=4, capacity_per_replica_per_s=cap, service_seconds=service, seed=7)
    assert day.gpu_hours == pytest.approx(sim.gpu_hours, rel=0.10)
    assert day.mean_replicas == pytest.approx(sim.mean_replicas, rel=0.10)
    price = 3.0  # $ per GPU-hour
    assert day_cost(day.gpu_hours, price, p.requests_per_day * 256).usd_per_day == pytest.approx(
        day_cost(sim.gpu_hours, price, sim.requests * 256).usd_per_day, rel=0.10)
    assert sim.requests == pytest.approx(p.requests_per_day, rel=0.02)


@pytest.mark.slow
def test_a_ramp_faster_than_scale_up_overloads_in_model_and_simulation():
    shape, peak, cap, service, target, _ = GRID[3]
    slow, fast = (_case(shape, peak, cap, target, up) for up in (600.0, 0.0))
    d_slow = day_replicas(*slow, gpus_per_replica=1, capacity_per_replica_per_s=cap)
    d_fast = day_replicas(*fast, gpus_per_replica=1, capacity_per_replica_per_s=cap)
    s_slow = simulate_day(*slow, gpus_per_replica=1, capacity_per_replica_per_s=cap, service_seconds=service,
                          late_after_seconds=service, seed=8)
    s_fast = simulate_day(*fast, gpus_per_replica=1, capacity_per_replica_per_s=cap, service_seconds=service,
                          late_after_seconds=service, seed=8)
    # without load time only the meter's minute and the scale-up limit (4 replicas per 15 s) lag
    assert d_slow.overloaded_hours > 0.1 and d_fast.overloaded_hours <= 1 / 60
    assert s_slow.late_share > 10 * max(s_fast.late_share, 1e-4)


def test_constant_load_by_hand():
    # 3 requests/s all day, 0.5 request/s per replica at target: 6 replicas. The meter over 60 s
    # (180 arrivals) kept over a 300 s window reads the 0.5^(1/6) = 89 % Poisson quantile, 197
    # arrivals = 3.28/s, within the 10 % tolerance of 6 x 0.5: the fleet stays at 6
    p = profile([3.0] * 24)
    day = day_replicas(p, Autoscaler(0.5, 1, 50, 60.0), gpus_per_replica=2, capacity_per_replica_per_s=0.7)
    assert day.peak_replicas == day.least_replicas == 6
    assert day.gpu_hours == pytest.approx(6 * 2 * 24)
    # without the tolerance the same reading asks for ceil(3.28/0.5) = 7
    day = day_replicas(p, Autoscaler(0.5, 1, 50, 60.0, tolerance=0.0), gpus_per_replica=2,
                       capacity_per_replica_per_s=0.7)
    assert day.peak_replicas == 7
    assert p.requests_per_day == pytest.approx(3.0 * 86400)
    assert day.scale_ups == 0


def test_profile_figures_by_hand():
    p = profile([1.0] * 12 + [3.0] * 12)
    assert (p.peak_per_s, p.mean_per_s, p.peak_to_mean) == (3.0, 2.0, 1.5)
    assert float(p.rate_at(13 * 3600)) == 3.0 and float(p.rate_at(25 * 3600)) == 1.0  # wraps at midnight
    q = from_csv("time,requests_per_s\n00:00,1\n06:30,4\n18,2\n")
    assert q.mean_per_s == pytest.approx((6.5 * 1 + 11.5 * 4 + 6 * 2) / 24)


def test_bad_profiles_and_policies_name_the_field():
    with pytest.raises(ValueError, match=r"load_profile\[5\]=-1"):
        profile([1.0] * 5 + [-1.0] + [1.0] * 18)
    with pytest.raises(ValueError, match="give 24 .* or 96"):
        profile([1.0] * 10)
    with pytest.raises(ValueError, match=r"max_replicas=2 is not allowed: must be at least min_replicas=4"):
        Autoscaler(1.0, 4, 2, 60.0)
    with pytest.raises(ValueError, match="requests_per_s"):
        from_csv("time,requests_per_s\n0,1\n5,-2\n")
    with pytest.raises(ValueError, match="times must increase"):
        from_csv("time,requests_per_s\n0,1\n5,2\n4,2\n")
