"""Published disaggregated runs against the estimate's steady state and its replay of the benchmark's run.

Usage (from the project root): python benchmarks/disaggregated_benchmark_run.py ../shared/reference/serving_disagg.csv

Each row is evaluated as ``../shared/tools/check_serving_disagg.py`` does, twice: the steady state (the default)
and the benchmark's run its source note states (``prompts=10·C``, lengths uniform in [0.8 L, L]: sa-bench and
InferenceX's ``benchmark_lib.sh``; aisize.serving.pools_run). Per row: the decode slots, the share of them the
published run kept decoding (Little's law on its figures: X·(O − 1)·TPOT) and the replayed run's, the mean TTFT
(steady, replayed, published), and the tokens/s and TPOT errors of both. Then the counts within 15 % of each
(docs/calibration-disagg.md, "The decode pool's batch at high concurrency").
"""
from __future__ import annotations

import csv
import sys
from pathlib import Path

from aisize import serving

TOOLS = Path(__file__).resolve().parents[2] / "shared" / "tools"
sys.path.insert(0, str(TOOLS))
import check_serving_disagg as C  # noqa: E402
from disaggregated_ttft_models import _kwargs  # noqa: E402  (the check's inputs, as that script builds them)

PROMPTS_PER_CLIENT, RANGE_RATIO = 10, 0.8  # the client's --num-prompts 10*C and --random-range-ratio 0.8


def main(path: str) -> None:
    within = {"steady": [0, 0], "run": [0, 0]}
    for n, row in enumerate(csv.DictReader(open(path, newline="")), 1):
        pub_tok, pub_tpot, pub_ttft = (C._num(row.get(k)) for k in ("output_tokens_per_s_per_gpu", "tpot_ms",
                                                                     "ttft_ms"))
        if pub_tok is None or pub_tpot is None:
            continue
        kw = _kwargs(row)
        model, gpu = C.MODELS[row["model_hf_id"].strip().lower()], C.GPUS[" ".join(row["hardware"].upper().split())]
        prompts = PROMPTS_PER_CLIENT * int(round(kw["concurrency"]))
        figures = {"steady": serving.estimate_disaggregated(model, gpu, **kw),
                   "run": serving.estimate_disaggregated(model, gpu, prompts=prompts, output_range_ratio=RANGE_RATIO,
                                                         **kw)}
        steady, o = figures["steady"], kw["output_tokens"]
        x_pub = pub_tok * steady.gpus / o  # requests/s
        kept = x_pub * (o - 1) * pub_tpot / 1e3 / steady.decode.replicas / steady.decode_slots
        line = []
        for name, est in figures.items():
            tok, tpot = est.output_tokens_per_s / est.gpus / pub_tok - 1.0, 1e3 * est.tpot_s / pub_tpot - 1.0
            within[name][0] += abs(tok) <= 0.15
            within[name][1] += abs(tpot) <= 0.15
            line.append(f"{name} {100 * tok:+6.1f}% {100 * tpot:+6.1f}% TTFT {est.ttft_s:6.1f} s")
        ttft = f"{pub_ttft / 1e3:6.1f} s" if pub_ttft is not None else "   n/a"
        print(f"#{n:03d} {steady.engine:7s} {row['hardware']:6s} C={kw['concurrency']:<6.0f} slots "
              f"{steady.decode_slots * steady.decode.replicas:7.0f} decoding pub {kept:4.2f} run "
              f"{figures['run'].decode_batch / steady.decode_slots:4.2f} | {' | '.join(line)} | pub TTFT {ttft}")
    for name, (tok, tpot) in within.items():
        print(f"{name}: within 15 % on tokens/s {tok}, on TPOT {tpot}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "../shared/reference/serving_disagg.csv")
