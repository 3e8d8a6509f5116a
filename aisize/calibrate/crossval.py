"""Cross-validated scores of the serving calibration: leave one model out, leave one GPU out.

A constant fitted on the runs it is then scored on flatters the model: the in-sample score says how
well the constants reproduce those runs, not how well they predict a deployment nobody measured. So
each group of runs (one model, or one GPU) is held out in turn: the constants are refitted on the other
runs, from the same starting calibration and with the same solver as :func:`aisize.calibrate.fit`, and
the held-out runs are predicted with them. Their errors, pooled over the groups, are the
cross-validated score, reported beside the in-sample one.

Held out with its GPU, a generation may lose every run that identified its own constants (one GPU of
its generation in the set): those constants then come from the calibration's fallback generation as
refitted, as they would for a GPU nobody calibrated, never from the values fitted with the held-out runs.

The refits start from the shipped calibration, whose fit saw every run, and the solver's prior pulls
gently toward that start (:data:`aisize.calibrate.fitting.PRIOR_WEIGHT`); the held-out score is therefore
an optimistic bound where a constant is weakly identified by the remaining runs. A constant the remaining
runs do not identify at all (:data:`aisize.calibrate.fitting.DECODE_IDENTIFIED`: no MoE run with a measured
TPOT is left, as when DeepSeek-R1 is held out) is not left at the start's value, which the held-out runs
fitted, but set to its physical default: routed-expert weight reads at the generation's dense HBM share, no
fixed MoE-layer time beyond a dense layer's. One generation's MoE-layer time alone unidentified (its only MoE runs
with a TPOT held out with their GPU, as H200's) takes the mean of the other generations' refitted times, as a GPU
of an uncalibrated generation takes the fallback's. The number of solver steps is kept small
(``max_evaluations``) so that a whole cross-validation runs in minutes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from aisize import checks
from aisize.calibrate.fitting import PER_GENERATION, fit, fitted_constants, summary
from aisize.calibrate.runs import Prediction, Run, predict
from aisize.serving.hardware import generation

GROUPINGS = ("model", "gpu")


def group_of(run: Run, by: str) -> str:
    """The group a run is held out with: its model id (``by="model"``) or its accelerator id (``"gpu"``)."""
    checks.choice("by", by, GROUPINGS)
    return str(run.model if by == "model" else run.accelerator)


@dataclass(frozen=True)
class CrossValidation:
    """In-sample and held-out predictions of one grouping, with their summaries."""

    by: str  # model | gpu
    groups: tuple  # the group ids, in the order they were held out
    in_sample: tuple  # Prediction per run with the calibration as given
    held_out: tuple  # Prediction per run with constants refitted without its group
    skipped: tuple  # (group, why) for groups that could not be held out (too few runs left)
    refits: tuple = ()  # (group, the calibration its runs were predicted with), in the order held out

    @property
    def in_sample_summary(self) -> dict:
        return summary(list(self.in_sample))

    @property
    def held_out_summary(self) -> dict:
        return summary(list(self.held_out))


def _fallback_generations(cal, train: Sequence[Run], held: Sequence[Run]):
    """``cal`` with the per-generation constants of generations no training run covers set to the fallback's."""
    covered = {generation(r.accelerator) or cal.fallback_generation for r in train}
    lost = {generation(r.accelerator) for r in held} - covered - {None, cal.fallback_generation}
    if not lost:
        return cal
    changes = {}
    for name in PER_GENERATION:
        v = getattr(cal, name)
        if isinstance(v, MappingProxyType):
            d = dict(v)
            for g in lost:
                if g in d:
                    d[g] = d[cal.fallback_generation]
            changes[name] = d
    return cal.with_(**changes)


def _unidentified_defaults(cal, constants, train: Sequence[Run], held: Sequence[Run]):
    """``cal`` (a refit on ``train`` of ``constants``) with the lost generations' constants set to the fallback's
    (:func:`_fallback_generations`) and the :data:`DECODE_IDENTIFIED` constants that ``constants`` leave out
    set to values no held-out run fitted: a generation's MoE-layer time the mean of those the fold identifies (none
    when it identifies none), expert weight reads at each generation's HBM share."""
    fitted = set(constants)
    v = cal.moe_layer_seconds
    if isinstance(v, MappingProxyType):
        # a generation whose own MoE runs with a TPOT were held out takes the mean of the generations the fold still
        # identifies, as a GPU of an uncalibrated generation takes the fallback's; zero only where none is identified
        known = [x for g, x in v.items() if ("moe_layer_seconds", g) in fitted]
        other = sum(known) / len(known) if known else 0.0
        cal = cal.with_(moe_layer_seconds={g: x if ("moe_layer_seconds", g) in fitted else other for g, x in v.items()})
    elif not any(c == "moe_layer_seconds" for c, _ in fitted):
        cal = cal.with_(moe_layer_seconds=0.0)
    cal = _fallback_generations(cal, train, held)
    if ("expert_memory_efficiency", None) not in fitted:
        m = cal.memory_efficiency
        cal = cal.with_(expert_memory_efficiency=dict(m) if isinstance(m, MappingProxyType) else m)
    return cal


def cross_validate(runs: Sequence[Run], calibration, *, by: str = "model", max_evaluations: int = 5,
                   min_train_runs: int = 10, progress: Callable[[str, int, int], None] | None = None,
                   only: Sequence[str] | None = None) -> CrossValidation:
    """Hold each group of ``runs`` out in turn, refit on the rest, predict the held-out runs.

    Parameters
    ----------
    runs : measured runs (:func:`aisize.calibrate.read_runs`)
    calibration : the :class:`~aisize.serving.Calibration` scored in sample, and every refit's start
    by : ``"model"`` (leave one model out) or ``"gpu"`` (leave one GPU out)
    max_evaluations : the solver's budget per refit (as for :func:`~aisize.calibrate.fit`)
    min_train_runs : a group whose removal leaves fewer runs is not held out (listed in ``skipped``)
    progress : called with (group, index, count) before each refit
    only : hold out these groups alone (None: every group); the others are neither refitted nor scored, so one
        fold's figures cost one refit
    """
    checks.choice("by", by, GROUPINGS)
    n = int(checks.scalar("max_evaluations", checks.integer("max_evaluations", max_evaluations, low=1, high=10_000)))
    runs = list(runs)
    if not runs:
        raise ValueError("runs is empty: give at least one measured run")
    expressible = []
    for r in runs:  # a run the model cannot express (ValueError) is neither fitted on nor scored
        try:
            expressible.append((r, predict(r, calibration)))
        except ValueError:
            continue
    runs = [r for r, _ in expressible]
    in_sample = tuple(p for _, p in expressible)
    groups = list(dict.fromkeys(group_of(r, by) for r in runs))
    if only is not None:
        unknown = sorted(set(only) - set(groups))
        if unknown:
            raise ValueError(f"only={unknown[:5]!r} names no {by} of the runs; they have: {', '.join(groups)}")
        groups = [g for g in groups if g in set(only)]
    held: dict[int, Prediction] = {}
    skipped, refits = [], []
    for k, g in enumerate(groups):
        test = [i for i, r in enumerate(runs) if group_of(r, by) == g]
        train = [r for r in runs if group_of(r, by) != g]
        if len(train) < min_train_runs:
            skipped.append((g, f"{len(train)} runs left to fit on (fewer than {min_train_runs})"))
            continue
        if progress is not None:
            progress(g, k, len(groups))
        constants = fitted_constants(train, calibration)
        refit = fit(train, calibration, constants=constants, max_evaluations=n).calibration
        refit = _unidentified_defaults(refit, constants, train, [runs[i] for i in test])
        refits.append((g, refit))
        for i in test:
            try:
                held[i] = predict(runs[i], refit)
            except ValueError:  # the refit cannot express it (e.g. it no longer fits): a miss, said as such
                held[i] = _missed(in_sample[i])
    order = [i for i in range(len(runs)) if i in held]
    return CrossValidation(by, tuple(groups), tuple(in_sample[i] for i in order), tuple(held[i] for i in order),
                           tuple(skipped), tuple(refits))


def _missed(p: Prediction) -> Prediction:
    """A held-out run the refitted model could not express: scored as a total miss (error -100 %)."""
    return Prediction(p.run, 0.0, None, None, -1.0, None if p.tpot_error is None else -1.0, p.uncalibrated)


def moved_constants(base, refit, most: int = 6) -> list[tuple[str, float, float]]:
    """The ``most`` constants a fold's ``refit`` moved furthest from ``base`` (by |log ratio|; a value set to or
    from 0 first), as (label, base value, fold value); unmoved ones are left out."""
    from aisize.serving.calibration import CONSTANTS

    out = []
    for name in CONSTANTS:
        a, b = getattr(base, name), getattr(refit, name)
        keyed = [set(v) for v in (a, b) if isinstance(v, MappingProxyType)]
        gens = sorted(set().union(*keyed)) if keyed else [None]
        for g in gens:
            x, y = (base.value(name, g), refit.value(name, g)) if g else (a, b)
            if x == y:
                continue
            far = abs(math.log(y / x)) if x > 0 and y > 0 else math.inf
            out.append((far, f"{name}[{g}]" if g else name, x, y))
    out.sort(key=lambda t: -t[0])
    return [(label, x, y) for _, label, x, y in out[:most]]


def restored(base, refit, label: str):
    """``refit`` with the one constant ``label`` (``name`` or ``name[generation]``) back at ``base``'s value."""
    name, _, gen = label.partition("[")
    gen = gen.rstrip("]")
    if not gen:
        return refit.with_(**{name: getattr(base, name)})
    v = getattr(refit, name)
    d = dict(v) if isinstance(v, MappingProxyType) else {g: v for g in base.gemm_efficiency}
    d[gen] = base.value(name, gen)
    return refit.with_(**{name: d})


def _within(preds) -> tuple[int, int]:
    s = summary(list(preds))
    return s["within"], s["tpot_within"]


def _score(runs, cal) -> tuple[int, int]:
    preds = []
    for r in runs:
        try:
            preds.append(predict(r, cal))
        except ValueError:
            continue
    return _within(preds)


def _wrapped(first: str, items: list[str], indent: str = "        ", width: int = 119) -> list[str]:
    """``first`` then ``items`` joined by "; ", wrapped to lines of at most ``width`` characters."""
    lines, line = [], first
    for k, item in enumerate(items):
        piece = item + (";" if k < len(items) - 1 else "")
        if line.strip() and len(line) + 1 + len(piece) > width:
            lines.append(line)
            line = indent + piece
        else:
            line = f"{line} {piece}" if line.strip() else line + piece
    return lines + [line]


def fold_lines(cv: CrossValidation, base, most: int = 6, detail: bool = False) -> list[str]:
    """Per held-out group: its runs within 15 % in sample and held out (tokens/s per GPU, TPOT), then the
    constants its refit moved furthest from ``base`` (:func:`moved_constants`); with ``detail``, its runs by the
    other grouping (GPU for a model, model for a GPU: in sample -> held out) and the held-out counts with each
    moved constant alone put back at ``base``'s value, those that change them (which constant's move costs the
    runs; putting it back leaks the held-out runs, so this attributes the loss, it is no score). Every line is
    under 120 characters."""
    out = [f"  {'held out':18s} {'runs':>4s} {'in sample':>9s} {'held out':>8s} {'lost':>4s}   "
           f"{'TPOT runs':>9s} {'in sample':>9s} {'held out':>8s} {'lost':>4s}"]
    refits = dict(cv.refits)
    other = "gpu" if cv.by == "model" else "model"
    for g in cv.groups:
        pairs = [(i, h) for i, h in zip(cv.in_sample, cv.held_out) if group_of(i.run, cv.by) == g]
        if not pairs:
            continue
        a, b = summary([i for i, _ in pairs]), summary([h for _, h in pairs])
        out.append(f"  {g[:18]:18s} {a['runs']:4d} {a['within']:9d} {b['within']:8d} {a['within'] - b['within']:4d}   "
                   f"{a['tpot_runs']:9d} {a['tpot_within']:9d} {b['tpot_within']:8d} "
                   f"{a['tpot_within'] - b['tpot_within']:4d}")
        moved = moved_constants(base, refits[g], most) if g in refits else []
        if moved:
            out += _wrapped("      ", [f"{label} {x:.3g} -> {y:.3g}" for label, x, y in moved], "      ")
        if not detail:
            continue
        parts = []
        for o in dict.fromkeys(group_of(i.run, other) for i, _ in pairs):
            sub = [(i, h) for i, h in pairs if group_of(i.run, other) == o]
            (w0, t0), (w1, t1) = _within(i for i, _ in sub), _within(h for _, h in sub)
            parts.append(f"{o[:14]} {len(sub)}: {w0}->{w1}" + (f" ({t0}->{t1})" if any(
                i.tpot_error is not None for i, _ in sub) else ""))
        out += _wrapped(f"      by {other} (runs: tokens/s within, (TPOT)):", parts)
        if g in refits:  # every moved constant, not only the furthest: those whose return changes the counts
            runs, now = [i.run for i, _ in pairs], (b["within"], b["tpot_within"])
            back = [(label, _score(runs, restored(base, refits[g], label)))
                    for label, _, _ in moved_constants(base, refits[g], most=1000)]
            back = sorted([x for x in back if x[1] != now], key=lambda x: -(x[1][0] + x[1][1]))
            out += _wrapped("      put back alone (tokens/s, TPOT within; the others change nothing):",
                            [f"{label} {w}" for label, w in back] or ["none"])
    return out
