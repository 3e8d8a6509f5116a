"""The serving families: aisize's serving estimates against every public set of measured runs.

Four sets under ``data/validation/`` (copies of ``reference/`` with the catalog ids aisize uses):

- ``serving`` — ``serving_throughput.csv``: 118 TensorRT-LLM 1.0 max-throughput runs
  (perf-overview.md @00f37686: Llama 3.1 8B, Llama 3.3 70B, Llama 4 Scout, Qwen3-30B-A3B on
  H100, H200, B200 and GB200), output tokens/s of one TP group at an unbounded request rate;
- ``serving-load`` — ``serving_load.csv``: 82 closed-loop runs at a fixed concurrency (SemiAnalysis
  InferenceX DeepSeek-R1 on B200, H200 and MI355X with SGLang and TensorRT-LLM; GPUStack's
  Qwen3-8B on H100 with vLLM, SGLang and TensorRT-LLM): tokens/s per GPU and mean TPOT;
- ``serving-specdec`` — ``serving_specdec.csv``: 34 InferenceX runs with MTP speculative decoding;
- ``serving-disagg`` — ``serving_disagg.csv``: 77 disaggregated deployments (Dynamo with TensorRT-LLM
  or SGLang, SGLang PD with MoRI).

Every run goes through :func:`aisize.calibrate.predict` (the public entry points). The same runs fitted
the calibration (:mod:`aisize.serving.calibration`): these tables are the fit's residuals, shown as such;
a row whose status differs from its ``expected_status`` is a change to look at.
"""

from __future__ import annotations

from dataclasses import fields
from functools import lru_cache

import numpy as np
import pandas as pd

from aisize import catalog, checks
from aisize import format as F

TOLERANCE_PCT = 15.0  # the serving issues' bar: 80 % of rows within 15 %, median <= 10 %
TTFT_READING_RATIO = 4.0  # a published mean TTFT this many times aisize's gets a reading (:func:`_ttft_reading`)
SETS = {"serving": "serving_throughput.csv", "serving-load": "serving_load.csv",
        "serving-specdec": "serving_specdec.csv", "serving-disagg": "serving_disagg.csv"}
KIND = {"serving": "serving-throughput", "serving-load": "serving-load", "serving-specdec": "serving-specdec",
        "serving-disagg": "serving-disagg"}
WHAT = {"serving": "output tokens/s per GPU of one TP group at an unbounded request rate",
        "serving-load": "output tokens/s per GPU and mean TPOT under a closed-loop client at a fixed concurrency",
        "serving-specdec": "the same with MTP speculative decoding",
        "serving-disagg": "output tokens/s per GPU over all prefill and decode GPUs, and mean TPOT"}


@lru_cache(maxsize=8)
def runs(family: str = "serving") -> tuple:
    """The published runs of a family as :class:`~aisize.calibrate.Run` records."""
    from aisize.calibrate import read_table

    return tuple(read_table(catalog.data_dir() / "validation" / SETS[family]))


def serving_table(family: str = "serving", calibration=None) -> pd.DataFrame:
    """Published vs predicted tokens/s per GPU (and TPOT where published) for every run of a family."""
    from aisize.calibrate import predict

    nan = float("nan")
    rows = []
    family_runs = runs(family)
    repeats = _repeat_readings(family_runs)
    later = superseded_readings(family_runs)
    for r in family_runs:
        try:
            p = predict(r, calibration)
            pred, tpot, ttft, err, terr = p.tokens_per_s_per_gpu, p.tpot_s, p.ttft_s, p.error * 100.0, p.tpot_error
            note, late, again = "", _ttft_reading(r.measured_ttft_s, ttft), repeats.get(r.id, "")
        except ValueError as e:
            pred = tpot = ttft = err = terr = nan
            note, late, again = f"not expressible: {str(e)[:120]}", "", ""
        old = later.get(r.id, "")
        rows.append({"case": r.id, "run": r.label, "published": r.measured_tokens_per_s_per_gpu, "predicted": pred,
                     "unit": "output tokens/s per GPU", "error_pct": err,
                     "within_tolerance": bool(abs(err) <= TOLERANCE_PCT),
                     "published_tpot_ms": 1e3 * r.measured_tpot_s if r.measured_tpot_s else nan,
                     "predicted_tpot_ms": 1e3 * tpot if tpot is not None else nan,
                     "tpot_error_pct": 100.0 * terr if terr is not None else nan,
                     "published_ttft_ms": 1e3 * r.measured_ttft_s if r.measured_ttft_s else nan,
                     "predicted_ttft_ms": 1e3 * ttft if ttft is not None and np.isfinite(ttft) else nan,
                     "expected_status": r.expected_status, "note": note,
                     "reading": "; ".join(x for x in (late, again, old) if x), "ttft_read": bool(late),
                     "published_again": bool(again), "superseded": bool(old), "run_date": r.run_date,
                     "source": r.source})
    return pd.DataFrame(rows)


def _ttft_reading(published_s, predicted_s) -> str:
    """What a published mean TTFT many times aisize's says about the run (empty when it does not).

    Over a closed-loop run, tokens/s per GPU = C x output tokens / (TTFT + output tokens x TPOT) / GPUs:
    a run whose requests waited seconds for their first token that aisize sees no cause for (compilation
    or warm-up inside the timed window, a queue at a worker or router it does not model) has lower tokens/s
    than its TPOT implies, whatever the iteration model."""
    if not published_s or predicted_s is None or not np.isfinite(predicted_s) or predicted_s <= 0:
        return ""
    ratio = published_s / predicted_s
    if ratio < TTFT_READING_RATIO:
        return ""
    return (f"published mean TTFT {F.duration(published_s)} is {ratio:.0f}x aisize's {F.duration(predicted_s)}: "
            "time before the first token aisize sees no cause for (warm-up or compilation in the timed window, a "
            "queue it does not model) lowers the run's tokens/s per GPU")


# what a measurement is, not what was deployed: runs that differ only in these are the same deployment
_MEASURED = frozenset({"label", "measured_tokens_per_s_per_gpu", "measured_tpot_s", "measured_ttft_s", "source", "id",
                      "expected_status", "notes", "run_date"})
# what makes one benchmark recipe: a later run of the same recipe measured a later build of its engine
_RECIPE = ("kind", "model", "accelerator", "engine", "weight_precision", "speculative_method")
SHOWN_IDS = 4  # later runs named in a reading; the rest are counted


def _spread_pct(values) -> float:
    """How far apart published figures are: the largest over the smallest, less one [%] (nan with fewer than 2)."""
    v = [x for x in values if x and np.isfinite(x)]
    return 100.0 * (max(v) / min(v) - 1.0) if len(v) > 1 else float("nan")


def _band(values, figure: str, unit: str) -> str:
    """The estimates within the tolerance of every published value: (1 - t) x the largest to (1 + t) x the
    smallest, or none when the values are more than (1 + t)/(1 - t) apart."""
    t = TOLERANCE_PCT / 100.0
    v = [x for x in values if x and np.isfinite(x)]
    low, high = (1.0 - t) * max(v), (1.0 + t) * min(v)
    if low > high:
        return f"no {figure} estimate is within {TOLERANCE_PCT:g} % of every one"
    return (f"only a {figure} estimate from {F.sig(low)} to {F.sig(high)} {unit} is within {TOLERANCE_PCT:g} % "
            "of every one")


def _repeat_readings(family_runs) -> dict:
    """Run id -> a reading, for runs of one deployment published more than once whose figures lie further
    apart than the tolerance (tokens/s per GPU or TPOT).

    aisize's inputs are the same for such runs (model, GPU, engine, layout, precisions, lengths, load,
    speculation), so one estimate answers them all. An estimate is within ±t of every one only between
    (1 - t) x the largest and (1 + t) x the smallest published figure; runs more than (1 + t)/(1 - t) apart
    (35 % at 15 %) leave no such estimate. What differs is outside the published configuration (another
    engine build or image, another benchmark day), and the reading says so instead of leaving a silent miss."""
    groups: dict = {}
    for r in family_runs:
        key = tuple(repr(getattr(r, f.name)) for f in fields(r) if f.name not in _MEASURED)
        groups.setdefault(key, []).append(r)
    out = {}
    for same in groups.values():
        tokens = [r.measured_tokens_per_s_per_gpu for r in same]
        tpots = [1e3 * r.measured_tpot_s if r.measured_tpot_s else None for r in same]
        apart, tpot_apart = _spread_pct(tokens), _spread_pct(tpots)
        if not (apart > TOLERANCE_PCT or tpot_apart > TOLERANCE_PCT):
            continue
        bands = [_band(v, figure, unit) for v, figure, unit, spread in
                 ((tokens, "tokens/s", "per GPU", apart), (tpots, "TPOT", "ms", tpot_apart)) if spread > TOLERANCE_PCT]
        for r in same:
            others = ", ".join(o.id for o in same if o is not r)
            out[r.id] = (f"the same deployment was published again ({others}) {apart:.0f} % apart on tokens/s per "
                         "GPU" + (f" and {tpot_apart:.0f} % on TPOT" if np.isfinite(tpot_apart) else "")
                         + f": {'; '.join(bands)} (what differs is not in the published configuration)")
    return out


def superseded_readings(family_runs) -> dict:
    """Run id -> a reading, for runs whose recipe (model, GPU, engine, weight format, speculation, aggregated
    or disaggregated) was measured again on a later day in the same set.

    Benchmark suites rerun a recipe with each new engine image, and a later image is often faster on the same
    layout and load (InferenceX's TensorRT-LLM B200 FP8 recipe at 922/922 tokens: TPOT 18.5 ms at C=16 on
    2025-11-02, 11.1 ms at C=8 and 21.5 ms at C=64 on 2026-01-29). aisize's inputs carry no engine build,
    so one estimate answers both builds; the reading says which runs measured an earlier one. Runs without
    a date are left alone."""
    latest: dict = {}
    for r in family_runs:
        if r.run_date:
            key = tuple(getattr(r, name) for name in _RECIPE)
            latest.setdefault(key, []).append(r)
    out = {}
    for same in latest.values():
        last = max(r.run_date for r in same)
        newer = [r.id for r in same if r.run_date == last]
        named = ", ".join(newer[:SHOWN_IDS]) + (f" and {len(newer) - SHOWN_IDS} more" if len(newer) > SHOWN_IDS else "")
        for r in same:
            if r.run_date < last:
                out[r.id] = (f"measured on {r.run_date}; the same model, GPU, engine and weight format were measured "
                             f"again on {last} ({named}): an earlier engine build, which aisize's inputs do not "
                             "tell apart")
    return out


@lru_cache(maxsize=32)
def _table(family: str, calibration) -> pd.DataFrame:
    from aisize.validation.store import remembered

    return remembered(family, lambda: serving_table(family, calibration), key=repr(calibration))


def family_table(family: str = "serving", calibration=None) -> pd.DataFrame:
    """:func:`serving_table` of a family with a :class:`~aisize.serving.Calibration` (None: the default),
    remembered per calibration (a page that shows it again, or another family, does not predict again)."""
    from aisize.serving import CALIBRATION

    checks.choice("family", family, tuple(SETS))
    return _table(family, CALIBRATION if calibration is None else calibration).copy()


def family_summary(family: str = "serving", calibration=None) -> dict:
    """:func:`serving_summary` of :func:`family_table`."""
    return serving_summary(family_table(family, calibration), family)


def _missed(table: pd.DataFrame) -> pd.Series:
    """Rows outside the tolerance on tokens/s per GPU or on TPOT."""
    return (table["error_pct"].abs() > TOLERANCE_PCT) | (table["tpot_error_pct"].abs() > TOLERANCE_PCT)


def misses(table: pd.DataFrame) -> int:
    """Runs of a :func:`serving_table` outside the tolerance on tokens/s per GPU or on TPOT."""
    return int(_missed(table).sum())


def ttft_read_misses(table: pd.DataFrame) -> int:
    """Of :func:`misses`, the runs whose published TTFT has a reading (:func:`_ttft_reading`)."""
    return int((_missed(table) & table["ttft_read"]).sum())


def repeat_read_misses(table: pd.DataFrame) -> int:
    """Of :func:`misses`, the runs of a deployment published again further apart than the tolerance
    (:func:`_repeat_readings`)."""
    return int((_missed(table) & table["published_again"]).sum())


def superseded_misses(table: pd.DataFrame) -> int:
    """Of :func:`misses`, the runs of a recipe measured again on a later day (:func:`superseded_readings`)."""
    return int((_missed(table) & table["superseded"]).sum())


def latest_runs(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of a :func:`serving_table` that no later run of their recipe supersedes."""
    return table[~table["superseded"]]


def serving_summary(table: pd.DataFrame | None = None, family: str = "serving") -> dict:
    """Runs, runs within tolerance (count and share) and the median / max |error| [%], TPOT alike."""
    t = serving_table(family) if table is None else table
    a = t["error_pct"].abs().dropna().to_numpy()
    tp = t["tpot_error_pct"].abs().dropna().to_numpy()
    out = {"family": family, "cases": len(t), "within": int(np.sum(a <= TOLERANCE_PCT)),
           "share_within": float(np.mean(a <= TOLERANCE_PCT)) if len(a) else float("nan"),
           "median_abs_error_pct": float(np.median(a)) if len(a) else float("nan"),
           "max_abs_error_pct": float(a.max()) if len(a) else float("nan")}
    if len(tp):
        out.update(tpot_cases=len(tp), tpot_within=int(np.sum(tp <= TOLERANCE_PCT)),
                   tpot_median_abs_error_pct=float(np.median(tp)))
    return out


def serving_results(family: str = "serving") -> pd.DataFrame:
    """A family's rows in :func:`aisize.validation.validate`'s columns."""
    t = family_table(family)
    status = ["ok" if w else ("not expressible" if n else "outside") for w, n in zip(t["within_tolerance"], t["note"])]
    tpot = [f"; TPOT published {p:.3g} ms, aisize {q:.3g} ms ({e:+.1f} %)" if np.isfinite(p) and np.isfinite(q)
            else "" for p, q, e in zip(t["published_tpot_ms"], t["predicted_tpot_ms"], t["tpot_error_pct"])]
    tpot = [text + (f"; TTFT published {F.duration(p / 1e3)}, aisize {F.duration(q / 1e3)}"
                    if np.isfinite(p) and np.isfinite(q) else "")
            for text, p, q in zip(tpot, t["published_ttft_ms"], t["predicted_ttft_ms"])]
    return pd.DataFrame({
        "case": t["case"], "family": family, "kind": KIND[family], "published": t["published"],
        "predicted": t["predicted"], "unit": t["unit"], "error_pct": t["error_pct"], "tolerance_pct": TOLERANCE_PCT,
        "within_tolerance": t["within_tolerance"], "status": status, "expected_status": t["expected_status"],
        "implied": "", "implied_mfu": float("nan"),
        "assumptions": [f"{run}{extra}" + "".join(f"; {x}" for x in (n, why) if x)
                        for run, extra, n, why in zip(t["run"], tpot, t["note"], t["reading"])],
        "tolerance_basis": "the serving issues' bar: 80 % of runs within 15 %, median <= 10 %",
        "description": [f"{run}: {WHAT[family]}" for run in t["run"]], "source": t["source"]})
