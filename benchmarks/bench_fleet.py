"""Time the fleet-through-the-day pieces: a day of autoscaling, priority classes, and the preset's plan.
Prints figures; asserts nothing.

Run: .venv/bin/python benchmarks/bench_fleet.py
"""

from __future__ import annotations

from aisize.fleet import Autoscaler, day_replicas, profile
from aisize.plan import clear_caches, plan
from aisize.queueing import PriorityClass, priority_queue
from aisize.scenario import preset
from bench_queueing import best_of  # benchmarks/ is on the path when a benchmark runs

DIURNAL = [0.30, 0.24, 0.2, 0.18, 0.17, 0.19, 0.26, 0.4, 0.58, 0.75, 0.87, 0.95, 1.0, 0.98, 0.96, 0.93, 0.88, 0.8,
           0.72, 0.64, 0.56, 0.48, 0.41, 0.35]


def main() -> None:
    p = profile(DIURNAL, scale=30.0)
    policy = Autoscaler(2.5, 2, 1000, 70.0)
    classes = [PriorityClass("paid", 3.0, 20.0), PriorityClass("free", 7.0, 20.0)]
    scenario = preset("fleet-over-the-day")

    def cold_plan():
        clear_caches()
        plan(scenario)

    rows = [("a day of the autoscaler (5,760 periods of 15 s)",
             lambda: day_replicas(p, policy, gpus_per_replica=2, capacity_per_replica_per_s=3.6)),
            ("two priority classes on 3,000 servers", lambda: priority_queue(classes, 3000, preemptive=True)),
            ("plan of fleet-over-the-day, cold (the serving search for the heterogeneous pools included)",
             cold_plan),
            ("plan of fleet-over-the-day, cached", lambda: plan(scenario))]
    for label, fn in rows:
        print(f"{best_of(fn, 3) * 1e3:9.1f} ms  {label}")


if __name__ == "__main__":
    main()
