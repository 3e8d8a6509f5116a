"""What each public serving set can show: its runs as deployed, the misses that carry a reading, and the newest
engine build of each recipe (issue 48; docs/accuracy.md).

For each serving validation family (``aisize validate --family ...``: every run of the project's reference tables,
with the expert parallelism, attention DP and balancing its scripts ran), prints:

- ``all runs``: runs, and runs within 15 % on tokens/s per GPU and on TPOT (:func:`serving_summary`, as the app's
  Accuracy tab and the report's appendix count them);
- ``misses with a reading``: of the runs outside 15 %, those the validation reads as something aisize's inputs do
  not carry: a published mean TTFT 4x aisize's or more (a wait before the first token: compilation or warm-up in
  the timed window, a queue), a deployment published again further apart than 15 %, or an engine build the same
  recipe was measured again after (``ttft_read``, ``published_again``, ``superseded``; a run may carry several);
- ``newest build``: the runs no later run of their recipe supersedes (:func:`latest_runs`), scored alike.

Run: ``.venv/bin/python benchmarks/serving_readings.py`` (about 2 s once the families are remembered).
"""

from __future__ import annotations

import argparse

from aisize.validation.serving import TOLERANCE_PCT, family_table, latest_runs, serving_summary

FAMILIES = ("serving", "serving-load", "serving-specdec", "serving-disagg")
READINGS = ("ttft_read", "published_again", "superseded")


def _counts(summary: dict) -> str:
    """'within / runs (share)' on tokens/s and, where the family publishes it, on TPOT."""
    out = f"{summary['within']:3d} / {summary['cases']:3d} ({100 * summary['within'] / summary['cases']:4.1f} %)"
    if "tpot_within" in summary:
        share = 100 * summary["tpot_within"] / summary["tpot_cases"]
        out += f", TPOT {summary['tpot_within']:3d} / {summary['tpot_cases']:3d} ({share:4.1f} %)"
    return out


def readings(family: str) -> dict:
    """The three readings of one family: summaries of all runs and of the newest builds, and of the runs outside
    the tolerance (tokens/s, TPOT) how many carry each reading and any of them."""
    t = family_table(family)
    out_tokens = t["error_pct"].abs() > TOLERANCE_PCT
    out_tpot = t["tpot_error_pct"].abs() > TOLERANCE_PCT  # NaN (no TPOT published) compares False
    read = {name: t[name].astype(bool) for name in READINGS}
    any_read = read["ttft_read"] | read["published_again"] | read["superseded"]
    return {"all": serving_summary(t, family), "newest": serving_summary(latest_runs(t), family),
            "misses": (int(out_tokens.sum()), int(out_tpot.sum())),
            "read": {name: (int((out_tokens & r).sum()), int((out_tpot & r).sum())) for name, r in read.items()},
            "any": (int((out_tokens & any_read).sum()), int((out_tpot & any_read).sum()))}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--family", choices=FAMILIES, action="append", help="one family only (repeatable)")
    a = ap.parse_args(argv)
    for family in a.family or FAMILIES:
        r = readings(family)
        print(f"{family}")
        print(f"  all runs               {_counts(r['all'])}")
        tokens, tpot = r["misses"]
        parts = ", ".join(f"{name} {n} ({m})" for name, (n, m) in r["read"].items())
        print(f"  misses with a reading  {r['any'][0]} of {tokens} on tokens/s ({r['any'][1]} of {tpot} on TPOT): {parts}")
        print(f"  newest build           {_counts(r['newest'])}")


if __name__ == "__main__":
    main()
