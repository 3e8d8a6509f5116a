"""Fit the serving calibration on the public TensorRT-LLM rows and print every row's error.

Usage (from the project root):

    .venv/bin/python benchmarks/fit_serving.py            # the table at today's constants
    .venv/bin/python benchmarks/fit_serving.py --fit      # refit (needs scipy: pip install scipy)

The constants marked "fitted" in :mod:`aisize.serving.calibration` are chosen by
robust least squares (soft-L1 on the log of predicted / published output
tokens/s) over all 118 rows of ``reference/serving_throughput.csv``, through the
public :func:`aisize.serving.estimate`; the sourced ones stay fixed. The fit is
the same for every model: no row or model has a constant of its own.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

from aisize.serving import CALIBRATION, estimate
from aisize.validation.serving import REFERENCE, reference_rows

FITTED = (("gemm_efficiency", "hopper"), ("gemm_efficiency", "blackwell"), ("expert_gemm_efficiency", None),
          ("elementwise_bytes_per_token", None), ("expert_bytes_per_token", None),
          ("layer_overhead_seconds", None), ("moe_layer_overhead_seconds", None),
          ("host_seconds_per_sequence", None), ("grace_host_factor", None))
BOUNDS = ((0.2, 1.0), (0.1, 1.0), (0.05, 1.0), (0.0, 300.0), (0.0, 300.0), (0.0, 1e-3), (0.0, 3e-3),
          (0.0, 2e-4), (0.5, 5.0))


def calibration_from(x):
    gemm = dict(CALIBRATION.gemm_efficiency)
    changes = {}
    for (name, key), value in zip(FITTED, x):
        if key is None:
            changes[name] = float(value)
        else:
            gemm[key] = float(value)
    return CALIBRATION.with_(gemm_efficiency=gemm, **changes)


def vector(cal):
    return np.array([getattr(cal, n)[k] if k else getattr(cal, n) for n, k in FITTED])


def log_errors(cal, rows):
    out = []
    for r in rows:
        pred = estimate(r.model, r.accelerator, tensor_parallel=r.tensor_parallel, weight_precision=r.weight_precision,
                        kv_precision=r.kv_precision, input_tokens=r.input_tokens, output_tokens=r.output_tokens,
                        calibration=cal).output_tokens_per_s
        out.append(math.log(pred / r.published_output_tokens_per_s))
    return np.array(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fit", action="store_true", help="refit the constants (needs scipy)")
    a = ap.parse_args(argv)
    rows = reference_rows()
    cal = CALIBRATION
    if a.fit:
        try:
            from scipy.optimize import least_squares
        except ImportError:
            sys.exit("--fit needs scipy: .venv/bin/pip install scipy")
        lo, hi = zip(*BOUNDS)
        res = least_squares(lambda x: log_errors(calibration_from(x), rows), vector(cal), bounds=(lo, hi),
                            loss="soft_l1", f_scale=0.1, diff_step=1e-3)
        cal = calibration_from(res.x)
        print("fitted constants:")
        for (name, key), value in zip(FITTED, res.x):
            print(f"  {name}{'[' + key + ']' if key else ''} = {value:.6g}")
    errs = np.expm1(log_errors(cal, rows))
    for r, e in zip(rows, errs):
        print(f"{r.label:48s} published {r.published_output_tokens_per_s:8.0f} predicted "
              f"{r.published_output_tokens_per_s * (1 + e):8.0f} {100 * e:+6.1f}%")
    a_ = np.abs(errs)
    print(f"serving fit ({Path(REFERENCE).name}): {len(rows)} rows, {np.sum(a_ <= 0.15)} within 15%, "
          f"median |err| {100 * np.median(a_):.1f}%, max |err| {100 * a_.max():.0f}%")


if __name__ == "__main__":
    main()
