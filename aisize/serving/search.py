"""SLO-driven search over serving configurations, vectorized, with the Pareto frontier.

A configuration is a replica shape (GPUs per stage, stages, attention-DP groups),
a precision pair, a concurrency (requests in flight per replica) and a token
budget per iteration (with or without chunked prefill), served aggregated
(prefill and decode on the same GPUs) or disaggregated (separate prefill and
decode pools, the KV cache shipped between them [1, 2]). Each is evaluated at
its concurrency with the iteration model, all at once with numpy:

- aggregated: TPOT from the steady state with random arrivals
  (:func:`~aisize.serving.steady.steady_state`), TTFT = half an iteration of wait
  plus the prefill iteration(s), throughput = concurrency / mean iteration;
- disaggregated: each pair by the model of its pools (:class:`~aisize.serving.pool_pair.PoolPair`,
  :func:`~aisize.serving.pool_pair.pools_state`, what :func:`aisize.serving.estimate_disaggregated` and the
  planner's sizing read) at zero prefill load: TTFT = time outside the GPU + a lone prompt's iteration + the KV
  transfer over the prefill replica's KV shards, the same at every statistic; the decode replica at the row's
  batch (up to its slots), TPOT its decode-only iteration, at p95/p99 that of the Poisson batch
  ``B + z·sqrt(B)``; a prefill replica serves ``q·dp`` prompts per full iteration of its token budget
  (docs/serving-replica.md, "The configuration search's pairs").

A configuration is feasible when its KV pool holds its concurrency and it meets
the TTFT and TPOT targets; the frontier is the set of feasible configurations
no other beats on both tokens/s per GPU and tokens/s per user. GPUs for a
request rate follow from the per-GPU throughput; the planner refines the chosen
one with queueing (:func:`aisize.serving.estimate` at a rate).

References
----------
.. [1] Zhong et al. 2024, "DistServe", OSDI'24, arXiv:2401.09670, sec. 3-4 (goodput per GPU,
       prefill and decode pools sized separately, KV transfer).
.. [2] Patel et al. 2024, "Splitwise", ISCA'24, arXiv:2311.18677 (phase splitting, KV transfer).
.. [3] NVIDIA AIConfigurator (ai-dynamo/aiconfigurator): the frontier of tokens/s/GPU vs
       tokens/s/user over parallel configurations, aggregated and disaggregated.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd

from aisize import checks, models
from aisize.serving.calibration import CALIBRATION
from aisize.serving.costs import model_costs
from aisize.serving.engine import resolve_engine
from aisize.serving.hardware import device
from aisize.serving.hardware import scaleout_bytes_per_s as server_scaleout_bytes_per_s
from aisize.serving.iteration import achieved_rates, iteration_time
from aisize.serving.tails import QUANTILES, Z95, Z99, normal_quantile
from aisize.serving.memory import replica_memory
from aisize.serving.shapes import ReplicaShape, ShapeGrid, divisors, engine_runs
from aisize.serving.sizing import STATISTICS
from aisize.serving.steady import steady_state
from aisize.serving.tails import STATISTIC_SUFFIX

BATCHES = tuple(2 ** k for k in range(13))  # 1 .. 4096 requests in flight
BUDGETS = (0, 512, 1024, 2048, 4096, 8192, 16384)  # 0: no chunking (budget = whole prompts)
UNCHUNKED_BUDGET = 8192  # without chunking, at least this many tokens (and always a whole prompt)
PREFILL_BUDGETS = (2048, 4096, 8192, 16384)
MODES = ("aggregated", "disaggregated")


@dataclass(frozen=True)
class SearchResult:
    """What the search found: every feasible configuration, the frontier and the best."""

    configurations: int  # evaluated
    feasible: pd.DataFrame  # configurations that fit and meet the targets
    frontier: pd.DataFrame  # Pareto-optimal among all that fit (tokens/s/GPU vs tokens/s/user)
    best: dict | None  # the feasible one with the highest tokens/s per GPU (fewest GPUs)
    seconds: float  # wall time of the whole search: the evaluation and the results

    @property
    def configurations_per_s(self) -> float:
        return self.configurations / self.seconds if self.seconds > 0 else float("inf")


def _shapes(model, dev, max_gpus, pipeline_parallels):
    """(tp, dp, pp) arrays of shapes: TP over divisors up to the scale-up domain that split the heads."""
    return _shape_rows(model.experts, model.heads, model.layers, dev.scaleup_domain, max_gpus,
                       tuple(pipeline_parallels))


@lru_cache(maxsize=256)
def _shape_rows(experts, heads, layers, scaleup_domain, max_gpus, pipeline_parallels):
    """:func:`_shapes` of what it reads (every precision pair of a search asks again); read-only."""
    rows = []
    for pp in pipeline_parallels:
        for tp in divisors(max(1, max_gpus // pp)):
            if tp > scaleup_domain:
                continue
            for dp in divisors(tp) if experts > 1 else (1,):
                if heads % (tp // dp) == 0 and pp <= layers:
                    rows.append((tp, dp, pp))
    widest = max((tp for tp, _, pp in rows if pp == 1), default=1)  # stages are whole TP groups of this width
    rows = [r for r in rows if engine_runs(ReplicaShape(*r), widest)]  # the engines' layouts (docs/engine-shapes.md)
    out = np.array(rows, dtype=float).T
    out.setflags(write=False)
    return out


def _aggregated(m, costs, dev, rates, calib, engine, i, o, shapes, link):
    """Shapes x batches x token budgets. The unchunked and the chunked budgets are evaluated apart (the
    steady state differs), each along its own budget columns; a shape's figures are given along the shape
    axis only and broadcast to the grid."""
    tp, dp, pp = (a[:, None, None] for a in shapes)
    b = np.asarray(BATCHES, dtype=float)[None, :, None]
    budget = np.asarray(BUDGETS, dtype=float)[None, None, :]
    chunked = budget > 0
    budget = np.where(chunked, np.maximum(budget, b + 1.0), np.maximum(UNCHUNKED_BUDGET, i + b))
    grid = (tp.shape[0], b.shape[1], budget.shape[2])
    shape = ShapeGrid(tp, dp, pp, link)
    tpot, tpot95, tpot99, ttft, ttft95, ttft99 = (np.empty(grid) for _ in range(6))
    for flag in (False, True):
        cols = np.flatnonzero(chunked[0, 0] == flag)
        st = steady_state(costs, rates, calib, concurrency=b, input_tokens=i, output_tokens=o,
                          max_num_tokens=budget[:, :, cols] * dp * pp, chunked_prefill=flag, shape=shape,
                          arrivals="poisson")
        p = st.prefill_share

        def tpot_at(z):  # a request's share of iterations with prefill work, at the normal tail z over its tokens
            return st.decode_iteration_seconds + (st.prefill_iteration_seconds - st.decode_iteration_seconds) * (
                np.minimum(p + z * np.sqrt(p * (1 - p) / max(o - 1.0, 1.0)), 1.0))
        prefill = st.prefill_iterations * st.prefill_iteration_seconds
        req = calib.request_seconds
        # an arrival waits a uniform share of the running iteration: half on average, q of it at the q-quantile
        tpot[:, :, cols], tpot95[:, :, cols], tpot99[:, :, cols] = st.iteration_seconds, tpot_at(Z95), tpot_at(Z99)
        ttft[:, :, cols] = req + 0.5 * st.iteration_seconds + prefill
        ttft95[:, :, cols] = req + 0.95 * st.iteration_seconds + prefill
        ttft99[:, :, cols] = req + 0.99 * st.iteration_seconds + prefill
    mem = replica_memory(costs, engine, dev.memory_bytes, sequence_tokens=i + o, max_num_tokens=budget,
                         gpus=tp, attention_dp=dp, pipeline_parallel=pp)
    gpus = tp * pp
    per_replica = b / tpot  # output tokens/s
    return dict(mode="aggregated", tensor_parallel=tp, attention_dp=dp, pipeline_parallel=pp,
                batch=np.broadcast_to(b, grid), budget=budget, chunked=chunked, prefill_gpus=0.0 * b,
                decode_gpus=gpus, gpus_per_replica=gpus, tpot_s=tpot, tpot_p95_s=tpot95, tpot_p99_s=tpot99,
                ttft_s=ttft, ttft_p95_s=ttft95, ttft_p99_s=ttft99, tokens_per_s_per_gpu=per_replica / gpus,
                tokens_per_s_per_user=1.0 / tpot, fits=mem.sequences >= b, kv_transfer_s=0.0 * b)


def _disaggregated(m, costs, dev, rates, calib, engine, i, o, shapes, link, nic):
    """Prefill shapes x decode shapes x decode batches x prefill token budgets, each pair by the model of
    :class:`~aisize.serving.pool_pair.PoolPair` (:func:`~aisize.serving.pool_pair.pools_state`, the one
    :func:`aisize.serving.estimate_disaggregated` and the planner's sizing read) at zero prefill load, its decode
    replica at the row's batch (docs/serving-replica.md, "The configuration search's pairs").

    The pair's figures of one side depend on that side's shape only: the prefill iterations (full and lone),
    memory and KV transfer on the prefill shape and budget, the decode iterations and slots on the decode shape
    and batch. Each is evaluated once per shape and taken to the n^2 pairs."""
    n = shapes.shape[1]
    pi, di = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    pi, di = pi.ravel(), di.ravel()
    tp, dp, pp = (a[:, None] for a in shapes)  # n x 1: one row per shape
    grid_shape = ShapeGrid(tp, dp, pp, link)
    ep = tp if m.experts > 1 else 1.0  # experts over the stage's GPUs, as disaggregated.pool_spec hands pools over
    b = np.asarray(BATCHES, dtype=float)[None, :]
    flag = np.maximum(np.asarray(PREFILL_BUDGETS, dtype=float), float(i))[None, :]  # the engine's token budget
    # prefill, as estimate_disaggregated builds it: q whole prompts per attention-DP rank under the rank's budget
    rank = np.broadcast_to(engine.rank_limit(flag, dp), (n, flag.size))
    q = np.maximum(np.floor(rank / i), 1.0)
    spans, chunk = np.maximum(np.ceil(i / rank), 1.0), np.minimum(float(i), rank)
    prompts = q * dp  # a full iteration's, whole replica
    # full and lone-prompt iterations in one call, side by side along the budgets
    two = np.concatenate([prompts, np.ones_like(q)], axis=1)
    t_full, t_one = np.split(iteration_time(
        costs, rates, calib, decode_sequences=0.0 * two, decode_context=float(i), prefill_tokens=two * np.tile(chunk, 2),
        prefill_prompts=two, prompt_tokens=float(i), graphed=False, **grid_shape.kwargs()).seconds * np.tile(spans, 2),
        2, axis=1)
    p_fits = replica_memory(costs, engine, dev.memory_bytes, sequence_tokens=i + 1.0, max_num_tokens=q * i,
                            gpus=tp, attention_dp=dp, pipeline_parallel=pp, expert_parallel=ep).fits
    # each prefill GPU ships its shard of the prompt's cache (beyond the KV heads, shards repeat)
    shards = np.minimum(shapes[0], max(costs.kv_heads, 1) * shapes[1]) * shapes[2]
    transfer = float(costs.kv_bytes(float(i))) / (nic * shards)  # by prefill shape
    # decode: slots from the batch limit per rank and the KV pool; iterations launched as the engine does
    mbs = 4096.0 if engine.max_batch_size is None else engine.rank_limit(float(engine.max_batch_size), dp)
    mbs = np.broadcast_to(np.asarray(mbs, dtype=float), tp.shape)
    d_mem = replica_memory(costs, engine, dev.memory_bytes, sequence_tokens=i + o, max_num_tokens=mbs, gpus=tp,
                           attention_dp=dp, pipeline_parallel=pp, expert_parallel=ep)
    slots = np.where(d_mem.fits, np.minimum(mbs * dp * pp, d_mem.sequences), 0.0)  # n x 1
    launch = engine.launch(mbs, dp * pp)

    def decode_seconds(batch):  # n x batches
        return iteration_time(costs, rates, calib, decode_sequences=batch, decode_context=i + 0.5 * o,
                              prefill_tokens=0.0 * batch, prefill_prompts=0.0 * batch, prompt_tokens=float(i),
                              graphed=launch.graphed(batch, batch, False), overlap=launch.overlap,
                              **grid_shape.kwargs()).seconds
    # the mean batch, then the Poisson batch's p95 and p99 (up to the slots), in one call along the batches
    batches = [np.broadcast_to(b, (n, b.size))]
    batches += [np.minimum(b + normal_quantile(qt) * np.sqrt(b), np.maximum(slots, 1.0)) for qt in QUANTILES]
    dec = np.split(decode_seconds(np.concatenate(batches, axis=1)), len(batches), axis=1)
    # the pairs' grid: pairs x batches x budgets
    grid = (n * n, b.size, flag.size)
    gpus = shapes[0] * shapes[2]
    d_tp, d_dp, d_pp, d_gpus = (a[di][:, None, None] for a in (*shapes, gpus))
    p_gpus, transfer = gpus[pi][:, None, None], transfer[pi][:, None, None]
    tpot, tpot95, tpot99 = (t[di][:, :, None] for t in dec)
    t_full, t_one, prompts = (a[pi][:, None, :] for a in (t_full, t_one, prompts))
    fits = p_fits[pi][:, None, :] & (b[:, :, None] <= slots[di][:, :, None])
    b = b[:, :, None]
    # GPU-seconds per request in each pool (a full prefill iteration's share; o - 1 decode steps), then tokens/s
    # per GPU of the whole deployment
    prefill_gpu_s = t_full / prompts * p_gpus
    decode_gpu_s = max(o - 1.0, 0.0) * tpot / b * d_gpus
    ttft = calib.request_seconds + t_one + transfer  # zero prefill load: no wait, the prompt's own iteration
    p_tp, p_dp, p_pp = (a[pi][:, None, None] for a in shapes)
    return dict(mode="disaggregated", tensor_parallel=d_tp, attention_dp=d_dp, pipeline_parallel=d_pp,
                batch=np.broadcast_to(b, grid), budget=flag[:, None, :], chunked=np.zeros(grid, bool),
                prefill_tensor_parallel=p_tp, prefill_attention_dp=p_dp, prefill_pipeline_parallel=p_pp,
                prefill_gpus=p_gpus, decode_gpus=d_gpus, gpus_per_replica=p_gpus + d_gpus, tpot_s=tpot,
                tpot_p95_s=tpot95, tpot_p99_s=tpot99, ttft_s=ttft, ttft_p95_s=ttft, ttft_p99_s=ttft,
                tokens_per_s_per_gpu=o / (prefill_gpu_s + decode_gpu_s), tokens_per_s_per_user=1.0 / tpot,
                fits=fits, kv_transfer_s=transfer, prefill_share_of_gpus=prefill_gpu_s / (prefill_gpu_s + decode_gpu_s))


def search(model, accelerator, *, input_tokens, output_tokens, ttft_target_s=None, tpot_target_s=None,
           statistic="p95", weight_precisions=("fp8",), kv_precisions=("fp8",), max_gpus_per_replica=None,
           pipeline_parallels=(1,), modes=MODES, scaleout_bytes_per_s=None, gpu_hour_usd=None,
           engine="trtllm", calibration=CALIBRATION) -> SearchResult:
    """Evaluate every configuration, keep the feasible ones, and return the frontier and the best.

    Parameters
    ----------
    model : catalog id or model record; accelerator : catalog accelerator id
    input_tokens, output_tokens : mean lengths [tokens]
    ttft_target_s, tpot_target_s : targets [s] (None: no target)
    statistic : "mean", "p95" or "p99": which statistic the targets bound
    weight_precisions, kv_precisions : formats to try (each must be supported by the GPU)
    max_gpus_per_replica : GPUs a replica may use (default: the scale-up domain x stages)
    pipeline_parallels : stage counts to try (stages beyond one scale-up domain use its scale-out NICs)
    modes : "aggregated" and/or "disaggregated"
    scaleout_bytes_per_s : NIC rate per GPU per direction (KV transfer, stages across servers);
        default: the catalog's first server with this GPU
    gpu_hour_usd : price of one GPU-hour; when given, every configuration gets
        ``usd_per_million_output_tokens`` = price / (3,600 x tokens/s per GPU) x 10^6
    engine : an :class:`~aisize.serving.Engine` or a key of ``data/engines.csv`` (its KV pool and reserve)

    Returns
    -------
    :class:`SearchResult`; ``configurations_per_s`` is its speed (configurations over the whole search's wall time).
    """
    import time

    m = models.resolve(model)
    engine = resolve_engine(engine, flat_out=False)
    i = float(checks.integer("input_tokens", input_tokens, high=10**8))
    o = float(checks.integer("output_tokens", output_tokens, high=10**8))
    stat = checks.choice("statistic", statistic, STATISTICS)
    for mode in modes:
        checks.choice("modes", mode, MODES)
    for name, given in (("modes", modes), ("weight_precisions", weight_precisions), ("kv_precisions", kv_precisions)):
        if not len(given):
            raise ValueError(f"{name}={given!r} is not allowed: name at least one")
    ttft_t = np.inf if ttft_target_s is None else checks.positive("ttft_target_s", ttft_target_s)
    tpot_t = np.inf if tpot_target_s is None else checks.positive("tpot_target_s", tpot_target_s)
    start = time.perf_counter()
    parts = []  # (columns of one precision pair and mode, weight format, KV format)
    for wp in weight_precisions:
        for kv in kv_precisions:
            dev = device(accelerator, wp, kv)
            costs = model_costs(m, wp, kv)
            rates = achieved_rates(dev, calibration, engine)
            limit = max_gpus_per_replica or dev.scaleup_domain * max(pipeline_parallels)
            shapes = _shapes(m, dev, int(limit), pipeline_parallels)
            nic = scaleout_bytes_per_s or server_scaleout_bytes_per_s(dev.id)
            link = nic if max(pipeline_parallels) > 1 else None
            if "aggregated" in modes:
                parts.append((_aggregated(m, costs, dev, rates, calibration, engine, i, o, shapes, link), wp, kv))
            if "disaggregated" in modes:
                parts.append((_disaggregated(m, costs, dev, rates, calibration, engine, i, o, shapes, link,
                                             nic * calibration.link_efficiency), wp, kv))
    count = sum(part["batch"].size for part, _, _ in parts)
    fit = _Fitting(parts, ttft_t, tpot_t, stat)
    if gpu_hour_usd is not None:
        price = checks.non_negative("gpu_hour_usd", gpu_hour_usd, high=1e6)
        fit.columns["usd_per_million_output_tokens"] = price / 3600.0 / fit.columns["tokens_per_s_per_gpu"] * 1e6
    # the feasible ones by tokens/s per GPU, highest first; the frontier by tokens/s per user, lowest first
    meets = np.flatnonzero(fit.columns["meets_targets"])
    by_gpu = _argsort(fit.columns["tokens_per_s_per_gpu"][meets], descending=True)
    feasible = fit.frame(meets[by_gpu])
    kept = _pareto_rows(fit.columns["tokens_per_s_per_user"], fit.columns["tokens_per_s_per_gpu"])
    frontier = fit.frame(kept[_argsort(fit.columns["tokens_per_s_per_user"][kept])])
    best = fit.row(meets[by_gpu[0]]) if len(meets) else None  # as feasible.iloc[0].to_dict() reads it
    seconds = time.perf_counter() - start  # the evaluation and the results
    return SearchResult(count, feasible, frontier, best, seconds)


class _Fitting:
    """The configurations whose KV pool holds their batch, as numpy columns of every part's arrays, each
    row's labels by code; result frames are built from them once, of the rows they show (a frame per part
    and their concatenation cost more than the evaluation). The columns: the labels, each part's in order,
    then ``meets_targets``; a column a part lacks (the disaggregated prefill share) is NaN on its rows."""

    LABELS = ("mode", "weight_precision", "kv_precision")

    def __init__(self, parts, ttft_t, tpot_t, stat):
        names = []
        for part, _, _ in parts:
            names += [k for k in (*part, "meets_targets") if k not in names and k not in self.LABELS]
        suffix = STATISTIC_SUFFIX[stat]
        columns = {k: [] for k in names}
        codes = []  # each row's part, for its labels
        for n, (part, _, _) in enumerate(parts):
            grid = part["batch"].shape  # a column may be given along fewer axes: it is the same on the rest
            at = np.flatnonzero(np.broadcast_to(part["fits"], grid))
            rows = len(at)
            flat = _gather({k: v for k, v in part.items() if k != "mode"}, grid, at)
            flat["meets_targets"] = (flat[f"ttft{suffix}_s"] <= ttft_t) & (flat[f"tpot{suffix}_s"] <= tpot_t)
            for k, kept in columns.items():
                kept.append(flat[k] if k in flat else np.full(rows, np.nan))
            codes.append(np.full(rows, n))
        self.columns = {k: np.concatenate(v) for k, v in columns.items()}
        self.codes = np.concatenate(codes)
        self.labels = {k: pd.Series([(p["mode"], wp, kv)[j] for p, wp, kv in parts]).array
                       for j, k in enumerate(self.LABELS)}

    def row(self, row) -> dict:
        """One row as a dict of Python scalars (what ``DataFrame.iloc[i].to_dict()`` gives)."""
        out = {k: str(values[self.codes[row]]) for k, values in self.labels.items()}
        out.update((k, v[row].item()) for k, v in self.columns.items())
        return out

    def frame(self, rows) -> pd.DataFrame:
        """The frame of ``rows`` (positions among the fitting configurations), in that order."""
        codes = self.codes[rows]
        out = {k: values.take(codes) for k, values in self.labels.items()}  # pandas' own string dtype
        out.update((k, v.take(rows)) for k, v in self.columns.items())
        # its own arrays, not copied again into one block
        return pd.DataFrame(out, index=pd.RangeIndex(len(rows)), copy=False)


def _gather(columns, grid, at) -> dict:
    """Each column (an array broadcastable to ``grid``) at the flat positions ``at`` of ``grid``, read from
    the column's own axes (no broadcast grid is built; one index per distinct shape)."""
    index, out, axes, seen = {grid: at}, {}, None, {}
    for k, v in columns.items():
        if id(v) in seen:  # a column given as another's array (a TTFT the same at every statistic): a copy of it
            out[k] = out[seen[id(v)]].copy()
            continue
        seen[id(v)] = k
        if v.shape != grid or not v.flags.c_contiguous:
            v = v.reshape((1,) * (len(grid) - v.ndim) + v.shape)
            v = v[tuple(slice(0, 1) if st == 0 else slice(None) for st in v.strides)]  # a broadcast view's own
        if v.shape not in index:
            axes = np.unravel_index(at, grid) if axes is None else axes
            flat = np.zeros_like(at)  # (a column of one value: every row reads it)
            for i, d in zip(axes, v.shape):
                flat = flat * d + (i if d > 1 else 0)
            index[v.shape] = flat
        out[k] = v.reshape(-1).take(index[v.shape])
    return out


def _argsort(values, descending=False) -> np.ndarray:
    """The order pandas' ``sort_values`` gives one float column (``pandas.core.sorting.nargsort``): numpy's
    quicksort, descending as the reversed sort of the reversed values, NaN last in row order."""
    nan = np.isnan(values)
    rows = np.flatnonzero(~nan)
    v = values[rows]
    if descending:
        return np.r_[rows[::-1][v[::-1].argsort(kind="quicksort")][::-1], np.flatnonzero(nan)]
    return np.r_[rows[v.argsort(kind="quicksort")], np.flatnonzero(nan)]


def _pareto_rows(x, y) -> np.ndarray:
    """Positions of the rows :func:`pareto` keeps, in its order before its final sort.

    :func:`pareto` sorts by ``x`` then ``y``, both descending, ties in row order (pandas' stable
    lexicographic sort), and keeps a row where its ``y`` beats every row before it. Of a run of equal ``x``
    only the run's first row in that order can be kept (the first row of the highest ``y``), and it is
    where that ``y`` beats the runs before: so one sort on ``x`` (ties in any order) and a reduction per run
    find the same rows. With a NaN, the lexicographic sort itself."""
    if not len(x):
        return np.arange(0)
    if np.isnan(x).any() or np.isnan(y).any():
        order = np.lexsort((-y, -x))
        ys = y[order]
        return order[np.r_[True, ys[1:] > np.maximum.accumulate(ys)[:-1]]]
    order = np.argsort(-x)
    xs, ys = x[order], y[order]
    starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])
    top = np.maximum.reduceat(ys, starts)  # each run's highest y
    at_top = ys == np.repeat(top, np.diff(np.r_[starts, len(xs)]))
    first = np.minimum.reduceat(np.where(at_top, order, len(x)), starts)  # its first row
    return first[np.r_[True, top[1:] > np.maximum.accumulate(top)[:-1]]]


def pareto(frame: pd.DataFrame, x="tokens_per_s_per_user", y="tokens_per_s_per_gpu") -> pd.DataFrame:
    """Rows no other row beats on both ``x`` and ``y`` (higher is better), sorted by ``x``."""
    if frame.empty:
        return frame.copy()
    f = frame.sort_values([x, y], ascending=[False, False])
    best = np.maximum.accumulate(f[y].to_numpy())
    keep = np.r_[True, f[y].to_numpy()[1:] > best[:-1]]
    return f[keep].sort_values(x).reset_index(drop=True)
