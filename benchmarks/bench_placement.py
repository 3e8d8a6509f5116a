"""Placement speed: milliseconds to plan clusters packed by aisize.plan.placement. Prints figures; asserts nothing.

* one training job spanning 128 to 8,192 servers (whole-server pieces);
* 150 small inference services (1-GPU replicas) plus 50 fine-tuning jobs sharing one pool, over a
  day split into business hours and night.

Run: OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_placement.py
"""

from __future__ import annotations

import time

from aisize.plan import plan
from aisize.scenario import from_dict, preset, to_dict


def ms(fn) -> float:
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


def big_job(gpus: int):
    d = to_dict(preset("llama3-70b-pretrain"))
    d["workloads"][0].update(gpus=gpus, global_batch=gpus)
    return from_dict(d)


def many_small():
    d = to_dict(preset("xe9680-genai"))
    chat, tune = d["workloads"][2], d["workloads"][1]
    d["phases"] = []
    work = []
    for k in range(150):
        work.append(chat | {"name": f"service {k}", "requests_per_s": 2.0,
                            "when": {"phase": "always", "hours": [8, 20] if k % 2 else None}})
    for k in range(50):
        work.append(tune | {"name": f"fine-tune {k}", "target_days": None, "gpus": 8,
                            "when": {"phase": "always", "hours": [20, 8]}})
    d["workloads"] = work
    return from_dict(d)


def main() -> None:
    plan(preset("xe9680-genai"))  # warm-up
    print(f"{'case':44s} {'servers':>8s} {'ms':>8s}")
    for gpus in (1024, 4096, 16384, 49152):
        s = big_job(gpus)
        p = plan(s)
        print(f"{'one job on ' + format(gpus, ',') + ' GPUs':44s} {p.servers:8d} {ms(lambda: plan(s)):8.1f}")
    s = many_small()
    p = plan(s)
    print(f"{'150 services + 50 nightly fine-tunes':44s} {p.servers:8d} {ms(lambda: plan(s)):8.1f}")


if __name__ == "__main__":
    main()
