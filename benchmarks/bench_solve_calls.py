"""The serving solve's cost per call: the ``iteration_time``, ``steady_state`` and ``loaded_state`` calls of slider
moves, replayed and timed, with a hash of every figure they return.

Builds the app on the default preset, moves the request rate ``--rate-moves`` steps right (20: about 200
requests/s), then records every call of the three functions while each of the Inference tab's prompt, output,
prompt-CV, output-CV and request-rate sliders moves ``--moves`` steps. Each set of calls is then replayed (best of
``--repeats``; every loaded state cold: the kept solves are emptied before each call) and its time per call printed,
loaded states also by the shape of their rates. A solve prepares its steady states and iteration times once
(``prepare_steady_state``, ``prepare_iteration_time``): their calls are recorded as the whole calls they stand for,
and also replayed as the solves make them, each solve prepared once (the ``prepared:`` lines). The sha256 of every
field (bytes, dtype, shape and type) of every result lets two trees be compared: run it with ``PYTHONPATH`` on each
(from outside the checkout), the same calls must give the same hash.

    (cd /tmp; PYTHONPATH=<tree> /work/main/.venv/bin/python <tree>/benchmarks/bench_solve_calls.py)
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import functools
import hashlib
import importlib
import sys
import time

import numpy as np

from aisize.app import build_app
from aisize.scenario import DEFAULT_PRESET, preset, to_dict
from aisize.serving import latency

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
import bench_sliders as bs  # noqa: E402 (the benchmarks' own slider steps)

TIMED = (("aisize.serving.iteration", "iteration_time"), ("aisize.serving.steady", "steady_state"),
         ("aisize.serving.latency", "loaded_state"))
# a solve prepares them once and asks at many batches: (module, preparer, the call it stands for, what its calls take)
PREPARED = (("aisize.serving.iteration", "prepare_iteration_time", "iteration_time",
             ("decode_sequences", "prefill_tokens", "prefill_prompts", "graphed")),
            ("aisize.serving.steady", "prepare_steady_state", "steady_state", ("concurrency",)))
SLIDERS = ("Prompt [", "Output [", "Prompt length", "Output length", "Request rate")


def record(calls: dict, recording: list) -> dict:
    """Wrap the :data:`TIMED` functions wherever an aisize module holds them; returns {name: the real function}."""
    real = {}
    for module, name in TIMED:
        fn = real[name] = getattr(importlib.import_module(module), name)

        @functools.wraps(fn)
        def recorded(*args, _fn=fn, _name=name, **kwargs):
            if recording:
                calls[_name].append((args, kwargs))
            return _fn(*args, **kwargs)
        _patch(fn, name, recorded)
    for module, name, stands_for, taking in PREPARED:
        fn = getattr(importlib.import_module(module), name, None)
        if fn is None:  # a tree from before the prepared calls: its solves call the whole ones
            continue
        real[name] = fn

        @functools.wraps(fn)
        def prepared(*args, _fn=fn, _for=stands_for, _taking=taking, **kwargs):
            at = _fn(*args, **kwargs)
            if not recording:
                return at
            solve = (args, kwargs, [])
            calls["prepared " + _for].append(solve)

            def recorded(*call, **more):  # each call as the whole call it stands for
                if recording:
                    calls[_for].append((args, {**kwargs, **dict(zip(_taking, call))}))
                    solve[2].append(call)
                return at(*call, **more)
            return recorded
        _patch(fn, name, prepared)
    return real


def _patch(fn, name, wrapper) -> None:
    for mod in [m for n, m in list(sys.modules.items()) if n.startswith("aisize") and m is not None]:
        if getattr(mod, name, None) is fn:
            setattr(mod, name, wrapper)


def feed(h, value) -> None:
    """Every field of a result into the hash: records field by field, numbers and arrays by type, dtype, shape
    and bytes."""
    if dataclasses.is_dataclass(value):
        for f in dataclasses.fields(value):
            h.update(f.name.encode())
            feed(h, getattr(value, f.name))
    elif isinstance(value, (tuple, list)):
        for v in value:
            feed(h, v)
    else:
        a = np.asarray(value)
        h.update(f"{type(value).__name__}|{a.dtype}|{a.shape}|".encode())
        h.update(a.tobytes() if a.dtype != object else repr(value).encode())


def replay(fn, calls, repeats: int, cold: bool) -> float:
    """Best total seconds of the calls over ``repeats`` replays."""
    best = float("inf")
    for _ in range(repeats):
        total = 0.0
        for args, kwargs in calls:
            if cold:
                latency._solved.cache_clear()
            t0 = time.perf_counter()
            fn(*args, **kwargs)
            total += time.perf_counter() - t0
        best = min(best, total)
    return best


def replay_prepared(prepare, solves, repeats: int) -> float:
    """Best total seconds of the solves over ``repeats`` replays, each solve prepared once and asked its calls."""
    best = float("inf")
    for _ in range(repeats):
        total = 0.0
        for args, kwargs, asked in solves:
            t0 = time.perf_counter()
            at = prepare(*args, **kwargs)
            for call in asked:
                at(*call)
            total += time.perf_counter() - t0
        best = min(best, total)
    return best


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--moves", type=int, default=3, help="moves of each slider recorded")
    ap.add_argument("--rate-moves", type=int, default=20, help="request-rate steps first")
    ap.add_argument("--repeats", type=int, default=5, help="replays; the best is printed")
    args = ap.parse_args(argv)
    app = build_app(display=False, data=to_dict(preset(DEFAULT_PRESET)))
    calls, recording = collections.defaultdict(list), []
    real = record(calls, recording)
    view = app.open_tab("Inference").view
    rate = next(s for s in bs.sliders(view) if s.description.startswith("Request rate"))
    for _ in range(args.rate_moves):
        rate.value = bs.step(rate)
    recording.append(True)
    for which in SLIDERS:
        slider = next(s for s in bs.sliders(view) if s.description.startswith(which))
        for _ in range(args.moves):
            slider.value = bs.step(slider)
    recording.clear()
    for _, name in TIMED:
        cold = name == "loaded_state"
        h = hashlib.sha256()
        for a, k in calls[name]:
            if cold:
                latency._solved.cache_clear()
            feed(h, real[name](*a, **k))
        n = len(calls[name])
        best = replay(real[name], calls[name], args.repeats, cold)
        print(f"{name:15s} {n:5d} calls  {best / max(n, 1) * 1e6:8.1f} us a call  sha256 {h.hexdigest()[:16]}")
        solves = calls.get("prepared " + name)
        if solves:  # the calls the solves made through their prepared closures, prepared once a solve
            prep = next(p for _, p, f, _ in PREPARED if f == name)
            k = sum(len(asked) for *_, asked in solves)
            t = replay_prepared(real[prep], solves, args.repeats)
            print(f"  prepared: {k:4d} calls of {len(solves)} solves  {t / max(k, 1) * 1e6:8.1f} us a call "
                  "(their preparation included)")
        if cold:
            by = collections.defaultdict(list)
            for a, k in calls[name]:
                by[np.shape(k["requests_per_s"])].append((a, k))
            for shape, group in sorted(by.items(), key=lambda item: -len(item[1])):
                t = replay(real[name], group, args.repeats, True)
                print(f"  rates {str(shape):9s} {len(group):4d} calls  {t / len(group) * 1e6:8.1f} us a call")


if __name__ == "__main__":
    main()
