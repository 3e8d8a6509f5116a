"""Published disaggregated runs split by pool: is a miss the decode step, or the batch the pools' capacity sets?

Usage (from the project root): python benchmarks/disaggregated_by_pool.py ../shared/reference/serving_disagg.csv

Each row is evaluated as ``../shared/tools/check_serving_disagg.py`` does (a closed loop at the row's
concurrency). The published run gives its own decode batch by Little's law on the decode pool: a request spends
``(O - 1)·TPOT`` there, so a decode worker holds ``b = X·(O - 1)·TPOT / workers`` requests (X the published
requests/s, ``output_tokens_per_s_per_gpu x total_gpus / O``). Two questions per row, each on the row's PoolPair:

- the decode step: the estimate's TPOT at the PUBLISHED batch ``b`` (``PoolPair.decode_seconds(b) / tokens per
  step``) against the published TPOT. This error is the serving model's alone, whatever the pools' capacity;
- the capacity: the published X against the estimate's prefill-pool and decode-pool capacities (requests/s), and
  which of the two the estimate finds binding.

Prints each row, then per group (engine, attention data-parallel decode or not, concurrency >= 512 or below) the
median TPOT error at the published batch and how many rows fall within 15 %.
"""
from __future__ import annotations

import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from aisize import serving

TOOLS = Path(__file__).resolve().parents[2] / "shared" / "tools"
sys.path.insert(0, str(TOOLS))
import check_serving_disagg as C  # noqa: E402
from disaggregated_ttft_models import _kwargs  # noqa: E402  (the check's inputs, as that script builds them)

HIGH_CONCURRENCY = 512  # the "high concurrency" of issue 48's misses (C = 1024 to 16130)


def main(path: str) -> None:
    groups = defaultdict(list)
    for n, row in enumerate(csv.DictReader(open(path, newline="")), 1):
        pub_tpot_s, pub_tok = C._num(row.get("tpot_ms")), C._num(row["output_tokens_per_s_per_gpu"])
        if pub_tpot_s is None or pub_tok is None:
            continue
        pub_tpot_s /= 1e3
        kw = _kwargs(row)
        est = serving.estimate_disaggregated(C.MODELS[row["model_hf_id"].strip().lower()],
                                             C.GPUS[" ".join(row["hardware"].upper().split())], **kw)
        pair, o = est.pair, kw["output_tokens"]
        x_pub = pub_tok * int(row["total_gpus"]) / o  # requests/s
        batch = x_pub * (o - 1) * pub_tpot_s / est.decode.replicas  # Little's law on one decode worker
        tpot_at = float(pair.decode_seconds(batch)) / pair.tokens_per_step
        x_prefill = est.prefill.replicas * pair.prefill_prompts / pair.prefill_seconds
        x_decode = (est.decode.replicas * pair.decode_slots
                    / ((pair.decode_steps - 1.0) * float(pair.decode_seconds(pair.decode_slots))))
        err = tpot_at / pub_tpot_s - 1.0
        dp = est.decode.attention_dp
        key = (est.engine, "attention-DP decode" if dp > 1 else "TP decode",
               f"C >= {HIGH_CONCURRENCY}" if kw["concurrency"] >= HIGH_CONCURRENCY else f"C < {HIGH_CONCURRENCY}")
        groups[key].append(err)
        print(f"#{n:03d} {est.engine:7s} {row['hardware']:6s} {row['weight_precision']:5s} C={kw['concurrency']:<6.0f} "
              f"dp={dp:<2d} batch/worker pub {batch:6.0f} slots {pair.decode_slots:6.0f} | TPOT at pub batch "
              f"{tpot_at * 1e3:6.2f} ms vs pub {pub_tpot_s * 1e3:6.2f} ms {100 * err:+6.1f}% | X pub {x_pub:6.1f}/s, "
              f"estimate's prefill cap {x_prefill:6.1f}/s, decode cap {x_decode:6.1f}/s, at C: {est.requests_per_s:6.1f}/s")
    print("\nTPOT of the decode step at the published batch, by group (median error, rows within 15 %):")
    for key in sorted(groups):
        e = groups[key]
        print(f"  {' / '.join(key):45s} {len(e):3d} rows  median {100 * statistics.median(e):+6.1f}%  "
              f"within 15%: {sum(abs(v) <= 0.15 for v in e)}/{len(e)}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "../shared/reference/serving_disagg.csv")
