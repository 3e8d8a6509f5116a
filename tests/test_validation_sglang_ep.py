"""The SGLang NVFP4 runs of 2025-11-10 on B200 ran expert-parallel over all their GPUs (issue 48).

InferenceX's ``benchmarks/dsr1_fp4_b200_docker.sh`` passed ``--enable-ep-moe`` (SGLang sets ep_size = tp_size) until
d8fe8f73e (2025-11-10), and its results record the sweep's default EP1 for a config that named no ``ep``; the
validation rows carry EP = TP (data/validation/README.md). The reference table keeps EP1 (its owner has the patch).
"""

from __future__ import annotations

import csv
import dataclasses

from aisize import catalog
from aisize.calibrate import predict
from aisize.validation.serving import runs

NOTE = "expert parallelism read from the script the run used"
# the five 1k/1k runs the labels move within 15 % (published tokens/s per GPU, TPOT ms): TP 4 at C = 8, 16 and
# TP 8 at C = 4, 8, 16
MOVED = {"load-034": (147.6, 12.59), "load-036": (227.1, 16.31), "load-056": (55.87, 8.305),
         "load-058": (94.84, 9.882), "load-060": (151.3, 12.30)}


def _relabelled():
    with open(catalog.data_dir() / "validation" / "serving_load.csv", encoding="utf-8") as f:
        notes = {row["id"]: row["source_note"] for row in csv.DictReader(f)}
    return [r for r in runs("serving-load") if NOTE in notes[r.id]]


def test_the_runs_of_2025_11_10_carry_ep_equal_to_tp():
    rows = _relabelled()
    assert sorted(r.id for r in rows) == [f"load-{i:03d}" for i in [*range(32, 41), *range(56, 63)]]
    for r in rows:
        assert (r.engine, r.weight_precision, r.accelerator) == ("sglang", "nvfp4", "b200"), r.id
        assert r.expert_parallel == r.tensor_parallel and r.tensor_parallel in (4, 8), r.id


def test_at_the_scripts_ep_the_1k_runs_at_small_batches_fit_where_ep1_read_them_fast():
    by_id = {r.id: r for r in _relabelled()}
    for case, (tokens, tpot_ms) in MOVED.items():
        run = by_id[case]
        ran = predict(run)
        assert abs(ran.tokens_per_s_per_gpu / tokens - 1.0) <= 0.15, case
        assert abs(ran.tpot_s / (tpot_ms * 1e-3) - 1.0) <= 0.10, case
        labelled = predict(dataclasses.replace(run, expert_parallel=1))
        assert labelled.tokens_per_s_per_gpu > ran.tokens_per_s_per_gpu * 1.05, case  # EP1 costs no imbalance
