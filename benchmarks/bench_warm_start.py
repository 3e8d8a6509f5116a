"""Would a warm start cut a slider move's Little's-law steps? Counts, for every solve of a few moves, the calls of the
iteration time the solver makes and those a solve started near the root would make (issue 51 item 2).

Builds the app on the default preset, moves the request rate ``--rate-moves`` steps right (20: about 200
requests/s), then moves ``--slider`` (a prefix of its description: "Prompt [", "Output [", "Output length") a few
steps, and for every :func:`~aisize.serving.latency.littles_law_concurrency` call of the last ``--moves`` prints:

- ``cold``: the solver's calls (its scan, one call on 25 concurrencies, and its steps to a step of 1e-6);
- ``exact``: the same from the scan's bracket, one step past settling (the root to the last bits or so, which a
  warm start needs to give a cold solve's figures whatever its path: at 1e-6 two paths differ by up to ~1e-10);
- ``warm e``: from a bracket of [g / (1 + 2e), g (1 + 2e)] around a guess g off the root by ``e`` (the bracket's
  check one call, then its steps, one past settling), for e = 5 %, 1 % and 0.1 %;

and how far each solve's roots moved from the previous move's (as shares of the slots, at the same share of
capacity: the sizing grid's and the latency curve's rates; the n-th solve of a shape of rates against the previous
move's n-th), which bounds what a guess from the last move can be.
No figure of aisize changes (the counting solves are copies).

    (cd /tmp; PYTHONPATH=<tree> /work/main/.venv/bin/python <tree>/benchmarks/bench_warm_start.py --slider "Prompt [")
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from aisize.app import build_app
from aisize.scenario import DEFAULT_PRESET, preset, to_dict
from aisize.serving import latency as L
from aisize.serving import littles_law as R

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_sliders as bs  # noqa: E402 (the benchmarks' own slider steps)

ERRORS = (0.05, 0.01, 0.001)


def _solve(rate, seconds, lo, hi, extra: int):
    """Calls of ``seconds`` the solver's steps make from the bracket (lo, hi), its ends evaluated in one call, until
    every point has taken ``extra`` steps past settling (the loop of littles_law_concurrency, counted)."""
    t = np.asarray(seconds(np.stack([lo, hi])))
    h_lo, h_hi, calls = rate * t[0] - lo, rate * t[1] - hi, 1
    p, h_p, b, h_b = lo, h_lo, hi, h_hi
    side, past = np.zeros(lo.shape), np.zeros(lo.shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        for _ in range(R._MAX_ITERATIONS + extra):
            secant = b - h_b * (b - p) / (h_b - h_p)
            falsi = (lo * h_hi - hi * h_lo) / (h_hi - h_lo)
            x = np.where(h_hi >= 0, hi, np.where((secant > lo) & (secant < hi), secant, falsi))
            x = np.clip(np.nan_to_num(x, nan=1e-9), lo, hi)
            x = np.where(past > extra, b, x)
            h_x, calls = rate * np.asarray(seconds(x)) - x, calls + 1
            past = np.where(np.abs(x - b) <= R._TOLERANCE * x, past + 1, past)
            if np.all(past > extra):
                break
            p, h_p, b, h_b = b, h_b, x, h_x
            right = h_x < 0
            hi, h_hi = np.where(right, x, hi), np.where(right, h_x, h_hi)
            lo, h_lo = np.where(right, lo, x), np.where(right, h_lo, h_x)
            h_lo = np.where(right & (side == -1), h_lo / 2, h_lo)
            h_hi = np.where(~right & (side == 1), h_hi / 2, h_hi)
            side = np.where(right, -1, 1)
    return calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slider", default="Prompt [", help="the Inference slider moved (a prefix of its name)")
    parser.add_argument("--moves", type=int, default=3, help="moves counted (after two not counted)")
    parser.add_argument("--rate-moves", type=int, default=20, help="request-rate steps taken first")
    args = parser.parse_args()
    real, rows = L.littles_law_concurrency, []

    def counted(tokens_per_s, iteration_seconds, slots, bracket=None, scan_seconds=None):
        calls = []
        got = real(tokens_per_s, lambda x: calls.append(1) or iteration_seconds(x), slots, bracket, scan_seconds)
        rate = np.broadcast_to(np.asarray(tokens_per_s, dtype=float), np.shape(got))
        top = np.broadcast_to(np.asarray(slots, dtype=float), np.shape(got))
        root = np.asarray(got, dtype=float)
        lo, _, hi, _ = R._scan(rate, iteration_seconds, slots, rate.shape)
        row = {"shape": np.shape(got), "cold": len(calls) + (bracket is None),
               "bracketed": bracket is not None,
               # the bracket's call stands for the scan's
               "exact": _solve(rate, iteration_seconds, np.asarray(lo, float), np.asarray(hi, float), 1),
               "share": root / top}
        for e in ERRORS:
            g = root * (1 + e)
            row[e] = _solve(rate, iteration_seconds, g / (1 + 2 * e), np.minimum(g * (1 + 2 * e), top), 1)
        rows.append(row)
        return got

    L.littles_law_concurrency = counted
    app = build_app(display=False, data=to_dict(preset(DEFAULT_PRESET)))
    view = app.open_tab("Inference").view
    rate = next(s for s in bs.sliders(view) if s.description.startswith("Request rate"))
    for _ in range(args.rate_moves):
        rate.value = bs.step(rate)
    slider = next(s for s in bs.sliders(app.open_tab("Inference").view) if s.description.startswith(args.slider))
    before = None
    for move in range(args.moves + 2):
        rows.clear()
        slider.value = bs.step(slider)
        if move < 2:
            before = _by_solve(rows)
            continue
        print(f"{slider.description} {slider.value:g}: calls of the iteration time per solve (the cold one's "
              f"scan counted as one call)")
        print("  rates      cold  exact  " + "  ".join(f"warm {e:g}" for e in ERRORS) + "   roots moved (median, 90 %)")
        for key, r in zip(_by_solve(rows), rows):
            old = before.get(key)
            moved = ""
            if old is not None and np.shape(old) == np.shape(r["share"]):
                ok = (old > 1e-6) & (r["share"] > 1e-6)
                if ok.any():
                    ch = np.abs(r["share"][ok] / old[ok] - 1)
                    moved = f"{np.median(ch):.2%}, {np.quantile(ch, 0.9):.2%}"
            print(f"  {str(r['shape']):<10} {r['cold']:4d}{'b' if r['bracketed'] else ' '} {r['exact']:5d}  "
                  + "  ".join(f"{r[e]:9d}" for e in ERRORS) + f"   {moved}")
        before = _by_solve(rows)


def _by_solve(rows) -> dict:
    """{(shape of the rates, how many solves of that shape came before it in the move): shares of the slots}: the
    same solve of the next move (a move makes its solves in the same order)."""
    seen, out = {}, {}
    for r in rows:
        k = seen[r["shape"]] = seen.get(r["shape"], -1) + 1
        out[(r["shape"], k)] = r["share"]
    return out


if __name__ == "__main__":
    main()
