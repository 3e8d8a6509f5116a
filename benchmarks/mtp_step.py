"""The MTP set, step by step: each row's modelled decode step with and without MTP (issue 48).

Usage (from the project root): python benchmarks/mtp_step.py ../shared/reference/serving_specdec.csv

Each row is evaluated as ``../shared/tools/check_serving_load.py`` does (a closed loop at the row's concurrency).
For the row, and for the same deployment without speculation at the same concurrency, it prints the decode
iteration at the estimate's batch by kind of work (``iteration_breakdown``, ms; the drafter's k passes are split
out of the overhead) and the step time (TPOT times the acceptance). Where ``serving_load.csv`` (beside the MTP
set) holds a run of the same engine, GPU, weights, lengths and concurrency without MTP, its TPOT over the MTP run's
is printed beside aisize's (aisize's with the MTP row's own EP and DP on both sides), and that run's published and
modelled TPOT at the layout the file labels it with.
"""
from __future__ import annotations

import csv
import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[2] / "shared" / "tools"
sys.path.insert(0, str(TOOLS))
import check_serving_load as C  # noqa: E402

PARTS = (("linear_seconds", "lin"), ("experts_seconds", "moe"), ("head_seconds", "head"),
         ("elementwise_seconds", "elt"), ("decode_attention_seconds", "attn"), ("communication_seconds", "comm"),
         ("overhead_seconds", "ovh"), ("host_seconds", "host"))
KEY = ("engine", "hardware", "weight_precision", "input_tokens", "output_tokens", "concurrency")


def _plain(args):
    extra = {k: v for k, v in args["extra"].items() if k not in ("speculative_method", "speculative_tokens",
                                                                    "acceptance_length")}
    return dict(args, extra=extra)


def _parts(est):
    return {short: 1e3 * est.iteration_breakdown[name] for name, short in PARTS}


def main(path):
    rows = list(csv.DictReader(open(path, newline="")))
    load = Path(path).with_name("serving_load.csv")
    plain_runs = list(csv.DictReader(open(load, newline=""))) if load.exists() else []
    head = " ".join(f"{s:>6s}" for _, s in PARTS)
    print(f"row  engine GPU    w     ISL  C   k  tau  batch | {head} | step ms  TPOT ms (pub) | speed-up pub / aisize")
    for i, row in enumerate(rows, 1):
        args, replicas, _ = C._map(row)
        conc = float(row["concurrency"]) / replicas
        est, _ = C.at_concurrency(args, conc)
        base, _ = C.at_concurrency(_plain(args), conc)
        with_mtp, without = _parts(est), _parts(base)
        draft = with_mtp["ovh"] - without["ovh"]
        k, tau = args["extra"]["speculative_tokens"], est.acceptance_length
        step = est.tpot_s * tau * 1e3
        pairs = [(j, r) for j, r in enumerate(plain_runs, 1) if all(r[f] == row[f] for f in KEY)
                 and r["model_hf_id"].lower() == row["model_hf_id"].lower()]
        pub = "/".join(f"{float(r['tpot_ms']) / float(row['tpot_ms']):.2f}" for _, r in pairs) or "-"
        label = (f"{i:3d}  {row['engine'][:6]:6s} {row['hardware'][:6]:6s} {row['weight_precision']:5s} "
                 f"{row['input_tokens']:>4s} {row['concurrency']:>3s} {k:2d} {tau:4.2f} {est.batch_size:5.1f}")
        vals = " ".join(f"{with_mtp[s]:6.2f}" for _, s in PARTS)
        print(f"{label} | {vals} | {step:6.2f}  {1e3 * est.tpot_s:6.2f} ({float(row['tpot_ms']):6.2f}) | "
              f"{pub} / {base.tpot_s / est.tpot_s:.2f}")
        vals = " ".join(f"{without[s]:6.2f}" for _, s in PARTS)
        print(f"{'':>38s}{base.batch_size:5.1f} | {vals} | {1e3 * base.tpot_s:6.2f}  plain; drafter {draft:5.2f} ms")
        for j, r in pairs:  # the published run without MTP, as serving_load.csv labels its layout
            a, n, _ = C._map(r)
            twin, _ = C.at_concurrency(a, float(r["concurrency"]) / n)
            build = r["engine_version"][:14] or "build unstated"
            lay = f"EP {r['expert_parallel'] or 1}, DP {r['data_parallel'] or 1}"
            print(f"{'':>38s}      load row {j} ({build}, {lay}):"
                  f" TPOT published {float(r['tpot_ms']):.2f} ms, aisize {1e3 * twin.tpot_s:.2f} ms")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(TOOLS.parent / "reference" / "serving_specdec.csv"))
