"""Time the queueing functions an app calls on every slider move. Prints figures; asserts nothing.

Run: .venv/bin/python benchmarks/bench_queueing.py
"""

from __future__ import annotations

import time

import numpy as np

import aisize.queueing as q


def best_of(fn, repeat: int = 5) -> float:
    """Fastest of ``repeat`` runs [s] (the least disturbed by other load on the machine)."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    st16 = q.Station(16, 0.01)
    lam16 = np.linspace(1.0, 0.999 * st16.capacity_per_s, 10_000)
    storage = q.storage_station(2.5e6, 100e-6)  # 250 channels
    lam_st = np.linspace(1e3, 0.999 * storage.capacity_per_s, 10_000)
    n = np.arange(1, 10_001)
    rows = [
        ("10,000-point latency-vs-load curve, M/M/16 (mean + p50/p95/p99)",
         lambda: q.latency_vs_load(st16, lam16)),
        ("10,000-point latency-vs-load curve, storage 250 channels",
         lambda: q.latency_vs_load(storage, lam_st)),
        ("10,000-point latency-vs-load curve, G/G/16 cv_s = 2",
         lambda: q.ggc(lam16, 0.01, 16, service_cv=2.0)),
        ("1,000-point latency-vs-load curve, M/M/16", lambda: q.latency_vs_load(st16, lam16[::10])),
        ("10,000-point latency-vs-concurrency curve", lambda: q.latency_vs_concurrency(storage, n)),
        ("Erlang C, c = 10,000, a = 9,900", lambda: q.erlang_c(10_000, 9_900.0)),
        ("M/M/c sizing for p95, answer c = 9,992 (a = 9,990)",
         lambda: q.servers_for_target(9_990.0, 1.0, 4.0, 0.95)),
        ("M/M/c sizing for p99, 100 rates, c up to ~10,000",
         lambda: q.servers_for_target(np.linspace(10.0, 9_990.0, 100), 1.0, 6.0, 0.99)),
        ("knee (2x mean) of the storage station", lambda: q.knee_load(storage, 2.0)),
    ]
    print(f"{'case':<62} {'time':>10}")
    for name, fn in rows:
        print(f"{name:<62} {best_of(fn) * 1e3:>8.2f} ms")
    t = time.perf_counter()
    sim = q.simulate(0.8, 1.0, 4, customers=100_000, seed=0)
    dt = time.perf_counter() - t
    print(f"{'simpy simulation, M/M/4 rho 0.8, 110,000 customers':<62} {dt * 1e3:>8.0f} ms "
          f"({110_000 / dt:,.0f} customers/s; response {sim.response_mean_seconds:.3f} s)")


if __name__ == "__main__":
    main()
