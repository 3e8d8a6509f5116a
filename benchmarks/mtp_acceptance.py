"""The MTP set against acceptance: could one acceptance length per draft depth fix it? (issue 48)

Usage (from the project root): python benchmarks/mtp_acceptance.py ../shared/reference/serving_specdec.csv

Each row is evaluated as ``../shared/tools/check_serving_load.py`` does (a closed loop at the row's concurrency,
the row's draft depth k), but with the acceptance length τ given instead of read from ``data/speculative.csv``.
Two questions:

- per row, the τ at which the estimate's TPOT meets the published one (bisection on τ in [1, k + 1]; the
  estimate's TPOT falls as τ grows). Every run is DeepSeek-R1-0528 under greedy sampling (InferenceX's client
  sends temperature 0) on the same random prompts in R1's chat template, so its acceptance at a given k is one
  figure whatever the GPU, engine build or concurrency; a spread of implied τ at one k is the step's cost, not
  acceptance;
- per draft depth, how many rows come within 15 % (tokens/s per GPU, TPOT) if every row of that depth takes one
  τ from a grid: the most any acceptance curve could gain on this set, fitted to the set itself.
"""
from __future__ import annotations

import csv
import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[2] / "shared" / "tools"
sys.path.insert(0, str(TOOLS))
import check_serving_load as C  # noqa: E402

TOLERANCE = 0.15  # the check tool's
BISECT_STEPS = 18  # τ to about 1e-5 over [1, k + 1]
GRID = {1: (1.6, 1.7, 1.79, 1.9, 2.0), 2: (1.7, 1.8, 1.9, 2.0, 2.1, 2.27, 2.4, 2.6),
        3: (2.0, 2.1, 2.2, 2.3, 2.35, 2.4, 2.49, 2.65, 2.8, 3.0)}  # the catalog's R1 curve: 1.79, 2.27, 2.49


def _at(args, concurrency, tau):
    """(tokens/s per GPU, TPOT ms) of the row's replica at acceptance ``tau``."""
    a = dict(args, extra=dict(args["extra"], acceptance_length=tau))
    est, _ = C.at_concurrency(a, concurrency)
    return est.output_tokens_per_s / est.gpus, 1000.0 * est.tpot_s


def implied_tau(args, concurrency, k, published_tpot_ms):
    """τ at which the estimate's TPOT is the published one, or None where no τ in [1, k + 1] reaches it."""
    lo, hi = 1.0, k + 1.0
    if not _at(args, concurrency, hi)[1] <= published_tpot_ms <= _at(args, concurrency, lo)[1]:
        return None
    for _ in range(BISECT_STEPS):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _at(args, concurrency, mid)[1] > published_tpot_ms else (lo, mid)
    return 0.5 * (lo + hi)


def main(path):
    rows = list(csv.DictReader(open(path, newline="")))
    within = {}
    print("row engine GPU TP DP weights prompt/C k: published TPOT ms, implied acceptance length")
    for i, row in enumerate(rows, 1):
        args, replicas, _ = C._map(row)
        k = args["extra"]["speculative_tokens"]
        conc = float(row["concurrency"]) / replicas
        pub, pub_tpot = float(row["output_tokens_per_s_per_gpu"]), float(row["tpot_ms"])
        tau = implied_tau(args, conc, k, pub_tpot)
        print(f"#{i:02d} {row['engine']:6s} {row['hardware']:6s} TP{args['tensor_parallel']} DP{args['attention_dp']} "
              f"{args['weight_precision']:5s} {args['input_tokens']}/{row['concurrency']} k={k}: {pub_tpot:7.2f}, "
              + (f"{tau:.2f}" if tau is not None else "none in [1, k + 1]"))
        for t in GRID[k]:
            tput, tpot = _at(args, conc, t)
            hit = within.setdefault((k, t), [0, 0, 0])
            hit[0] += 1
            hit[1] += abs(tput / pub - 1.0) <= TOLERANCE
            hit[2] += abs(tpot / pub_tpot - 1.0) <= TOLERANCE
    print("k tau: rows, within 15 % on tokens/s per GPU, on TPOT")
    for (k, t), (n, a, b) in sorted(within.items()):
        print(f"{k} {t:.2f}: {n}, {a}, {b}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "../shared/reference/serving_specdec.csv"))
