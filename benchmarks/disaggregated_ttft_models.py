"""Mean TTFT of the published disaggregated runs: the estimate's prefill queue against the former sizing screen's.

Usage (from the project root): python benchmarks/disaggregated_ttft_models.py ../shared/reference/serving_disagg.csv

For each row of the reference CSV that publishes a mean TTFT (``ttft_ms``), the pools are evaluated as
``../shared/tools/check_serving_disagg.py`` does (a closed loop at the row's concurrency). Two TTFTs at that
throughput, on the same PoolPair:

- the estimate (:func:`aisize.serving.pool_pair.pools_state`, what ``size_pools`` now searches with): a queue of
  ``replicas x prompts per iteration`` slots, a lone prompt's iteration at low load;
- the former screen (the sizing's own queue until this change): a G/G/c queue of replicas serving at
  ``T / prompts``, plus the running full iteration's mean residual ``T/2`` and a full iteration ``T`` of its own.

Rows where the closed loop saturates a pool (the estimate then adds the overflow wait of the requests beyond its
capacity) or the prefill pool is at 95 % utilisation or more are left out. Prints each row, then the counts within 15 % overall and at a concurrency of 24 or less.
"""
from __future__ import annotations

import csv
import re
import statistics
import sys
from pathlib import Path

from aisize import serving
from aisize.queueing import ggc
from aisize.serving.engine import ENGINES

TOOLS = Path(__file__).resolve().parents[2] / "shared" / "tools"
sys.path.insert(0, str(TOOLS))
import check_serving_disagg as C  # noqa: E402


def _kwargs(row) -> dict:
    fw = row.get("framework", "").split(" ")[0].strip().lower()
    engine = C.FRAMEWORK_ENGINE.get(fw) or C.ENGINE.get(row["engine"].strip().lower(), ("vllm", ""))[0]
    extra = {}
    limit = re.search(r"_batch(\d+)_", row.get("recipe") or "")
    if limit:
        extra["max_batch_size"] = int(limit.group(1))
    method = (row.get("spec_method") or "").strip().lower()
    if method and method != "none":
        extra.update(speculative_method=method, speculative_tokens=int(row["spec_tokens"]))
    return dict(prefill=C._pool(row, "prefill"), decode=C._pool(row, "decode"),
                weight_precision=C.WEIGHTS[row["weight_precision"].strip().lower()],
                kv_precision=C.KVS[row["kv_precision"].strip().lower()], input_tokens=int(row["input_tokens"]),
                output_tokens=int(row["output_tokens"]), concurrency=float(row["concurrency"]),
                engine=engine if engine in ENGINES else "vllm", **extra)


def main(path: str) -> None:
    errors = {"estimate": [], "former screen": []}
    low = []
    for n, row in enumerate(csv.DictReader(open(path, newline="")), 1):
        pub = C._num(row.get("ttft_ms"))
        if pub is None:
            continue
        try:
            est = serving.estimate_disaggregated(C.MODELS[row["model_hf_id"].strip().lower()],
                                                 C.GPUS[" ".join(row["hardware"].upper().split())], **_kwargs(row))
        except (KeyError, ValueError) as e:
            print(f"#{n:03d} not evaluated: {type(e).__name__} {str(e)[:80]}")
            continue
        if est.limited_by or est.prefill_utilisation >= 0.95:  # saturated: the loop's overflow wait, not the queue
            continue
        p = est.pair
        wait = float(ggc(est.requests_per_s, p.prefill_seconds / p.prefill_prompts, est.prefill.replicas,
                         service_cv=0.0).wait_mean_seconds)
        screen = (p.calibration.request_seconds + p.kv_transfer_seconds + wait + 1.5 * p.prefill_seconds) * 1e3
        errors["estimate"].append(est.ttft_s * 1e3 / pub - 1.0)
        errors["former screen"].append(screen / pub - 1.0)
        low.append(float(row["concurrency"]) <= 24)
        print(f"#{n:03d} {row['model_hf_id'][-22:]:22s} {row['hardware'][:6]:6s} C={row['concurrency']:>5} "
              f"prefill utilisation {est.prefill_utilisation:.2f}  mean TTFT ms: published {pub:8.1f}  estimate "
              f"{est.ttft_s * 1e3:8.1f} ({100 * errors['estimate'][-1]:+6.1f}%)  former screen {screen:8.1f} "
              f"({100 * errors['former screen'][-1]:+6.1f}%)")
    for name, e in errors.items():
        lo = [v for v, k in zip(e, low) if k]
        print(f"{name}: {len(e)} rows, {sum(abs(v) <= 0.15 for v in e)} within 15 %, median |err| "
              f"{100 * statistics.median(abs(v) for v in e):.1f} %; concurrency <= 24: {len(lo)} rows, "
              f"{sum(abs(v) <= 0.15 for v in lo)} within 15 %, median |err| "
              f"{100 * statistics.median(abs(v) for v in lo):.1f} %")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(TOOLS.parent / "reference" / "serving_disagg.csv"))
