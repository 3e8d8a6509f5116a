"""Score the held-out MLPerf Training v5.0/v5.1 rows by benchmark: rows within 15 % and median |error| of the time
to train, exactly as ``tests/test_training_mlperf.py`` computes them, without its pins (to judge a source or a
calibration; docs/training-kernels.md).

The rows without a stated layout run :func:`aisize.training.search_layouts`, which reads the GEMM source only from a
``kernel_gemms.using`` block (it does not carry the GPU down), so every row runs inside
``kernel_gemms.using(accelerator, DEFAULT_GEMM_SOURCE)``: with ``DEFAULT_GEMM_SOURCE = "kernels"`` the layout search
and the estimate both read the tables. Run: .venv/bin/python benchmarks/score_training_mlperf.py
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import test_training_mlperf as M  # noqa: E402

from aisize.training import kernel_gemms  # noqa: E402


def errors() -> dict[str, list[float]]:
    """{benchmark: [predicted / measured time to train - 1 of each expressible row]}."""
    out: dict[str, list[float]] = {}
    for r in M.rows():
        if not M.has_server(r["accelerator"]):
            continue
        with kernel_gemms.using(r["accelerator"], kernel_gemms.DEFAULT_GEMM_SOURCE):
            minutes, _ = M.predicted_minutes(r)
        out.setdefault(r["benchmark"], []).append(minutes / float(r["time_to_train_minutes"]) - 1.0)
    return out


if __name__ == "__main__":
    by = errors()
    for name, e in [*sorted(by.items()), ("all", [x for v in by.values() for x in v])]:
        print(f"{name}: {sum(abs(x) <= M.TOLERANCE for x in e)} / {len(e)} within 15 %, "
              f"median |err| {100 * statistics.median(abs(x) for x in e):.1f} %")
