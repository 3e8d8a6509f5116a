"""A replica serving reused prompts, KV-cache tiers and lengths from a distribution: the estimate's hook.

:func:`aisize.serving.estimate` takes ``prefix=`` (a :class:`~aisize.serving.prefix.Reuse`),
``kv_tiers=`` (:class:`~aisize.serving.tiers.KVTier` records below HBM) and
``length_distribution=`` (:class:`~aisize.serving.lengths.Lengths`); this module turns them into
the replica's state:

1. the HBM tier is the KV pool the running requests leave free (whole-model bytes: the pool per
   GPU times the GPUs a token's KV is split over), so it depends on the batch, which depends on
   the prefill work the hits save: a fixed point, reached in a few passes;
2. the hits (:func:`~aisize.serving.tiers.reuse_tiers`) give the prompt tokens a request finds,
   and the replica's iterations compute only the rest (``cached_tokens`` of
   :func:`~aisize.serving.steady.steady_state`);
3. TTFT splits by class: a request whose history was found in tier k reloads from k, then prefills
   its new tokens; a first turn prefills its new tokens; a turn whose history was evicted prefills
   it too. Each class waits out the iteration running when it arrives and shares its own with the
   prompts that arrived meanwhile (:func:`~aisize.serving.tails.ttft_tail`, over the prompt lengths
   too when they come from a distribution): the mean, p95 and p99 are over the classes;
4. lengths from a distribution make the decoding context and the KV in use length-biased, and the
   TPOT tail a mixture over output lengths (:mod:`.lengths`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from aisize.serving import lengths as L
from aisize.serving import tails as T
from aisize.serving.iteration import prepare_iteration_time
from aisize.serving.prefix import Reuse, cache_load, prefill_work, session_tokens
from aisize.serving.replica import Latency, Replica, ReplicaState, capacity, evaluate
from aisize.serving.tiers import KVTier, ReuseTiers, check_tiers, reuse_tiers

# LMCache's default share of a reused chunk's tokens that blending recomputes (lmcache/v1/config.py,
# blend_recompute_ratio = 0.15; CacheBlend, EuroSys'25)
BLEND_RECOMPUTE_SHARE = 0.15
# an iteration carrying prompt chunks none of which completes: the iteration model counts prompt tokens per
# completing prompt, so a vanishing count keeps the tokens in every layer without sampling or attention
_CHUNK_ONLY = 1e-9
_PASSES = 4  # fixed-point passes over the HBM tier (the batch moves by < 1 % after three)


@dataclass(frozen=True)
class ReuseEstimate:
    """Prefix reuse on one replica at its request rate [share, tokens, s, B]."""

    tiers: ReuseTiers  # hits, tokens computed and each tier's part (aisize.serving.tiers)
    hbm_cache_bytes: float  # the KV pool the batch leaves free (whole-model bytes)
    prefill_saved_share: float  # share of prompt tokens not computed
    ttft_hit_s: float | None  # mean TTFT of a request whose history was found (None: single turns have none)
    ttft_miss_s: float  # mean TTFT of one whose history was not (first turns included)
    ttft_by_tier_s: dict  # mean TTFT of a hit, by the tier that served it


@dataclass(frozen=True)
class LengthEffects:
    """What lengths from a distribution change [tokens, s]."""

    lengths: L.Lengths
    decode_context_tokens: float  # mean context of a decoding sequence (length-biased)
    kv_tokens_per_sequence: float  # KV a request in flight holds (reserved or grown), length-biased
    kv_in_use_bytes: float  # the batch's KV, whole replica (whole-model bytes)
    input_p95_tokens: float
    output_p95_tokens: float


@dataclass(frozen=True)
class ServingWorkload:
    """What estimate was told beyond mean lengths (module docstring), checked."""

    reuse: Reuse | None
    tiers: tuple
    lengths: L.Lengths | None

    def settle(self, load, rep: Replica, cap, state: ReplicaState):
        """(capacity, state) of the replica (fitting its GPUs) under ``load`` with reuse, tiers and lengths; the
        state's ``kv_reuse`` and ``lengths`` set where asked."""
        costs, rates, shape, i, o = rep.costs, rep.rates, rep.shape, rep.input_tokens, rep.output_tokens
        ctx = L.decode_context_tokens(self.lengths) if self.lengths else None
        prompt_cv = self.lengths.input.cv if self.lengths else 0.0

        def run(cached):
            c = capacity(rep, cached_tokens=cached, decode_context_tokens=ctx)
            return c, evaluate(rep, load, c, cached, ctx, prompt_cv)

        held = self._held_tokens(rep.engine, i, o)
        if self.reuse is None:
            cap, state = run(0.0)
            tokens, rt, hbm = None, None, 0.0
        else:
            tokens = session_tokens(self.reuse, i, o)
            lam = load.requests_per_s
            loadc = cache_load(self.reuse, tokens, lam, costs.kv_bytes)
            whole = float(cap.memory.kv_pool_bytes) * rep.kv_split * rep.groups
            cached = 0.0
            s, u = tokens.shared_tokens, tokens.new_tokens_per_turn
            for k in range(_PASSES):
                stable = state.stable and np.isfinite(state.batch)
                batch = state.batch if stable else float(cap.state.concurrency)  # overloaded: the pool runs full
                hbm = max(whole - batch * float(costs.kv_bytes(held)), 0.0)
                prefill = self._prefill(rep, state, ctx)
                hbm_tier = KVTier("hbm", hbm, rates.memory_bytes_per_s * shape.gpus)
                rt = reuse_tiers(loadc, tokens, (hbm_tier,) + self.tiers, kv_bytes=costs.kv_bytes,
                                 kv_bytes_per_token=float(costs.kv_bytes_per_token_full
                                                          + costs.kv_bytes_per_token_window),
                                 recompute_seconds=lambda h: prefill(u + h, s + u + h) - prefill(u, s + u + h),
                                 blend_recompute_share=BLEND_RECOMPUTE_SHARE,
                                 response_seconds=state.ttft.mean_seconds + (o - 1) * state.tpot.mean_seconds)
                if abs(rt.cached_tokens - cached) < 0.5 and k > 0:
                    break
                cached = rt.cached_tokens
                cap, state = run(cached)
        return cap, self._latencies(rep, state, ctx, rt, hbm, held)

    def _held_tokens(self, engine, i, o):
        """KV tokens a request in flight holds: reserved whole or grown so far, length-biased by a distribution."""
        if self.lengths is None:
            return i + o if engine.reserve_full_sequence else i + 0.5 * o
        if engine.reserve_full_sequence:
            return L.reserved_tokens(self.lengths)
        return L.decode_context_tokens(self.lengths)

    @staticmethod
    def _iteration(rep: Replica, state: ReplicaState, ctx):
        """``seconds(tokens, prompts, attention_tokens)``: the iterations that carry those prefills beside the batch
        (a prompt longer than the budget left spans several full ones); with ``spans=True``, (one of those
        iterations, how many)."""
        costs, rates, calib, engine, spec = rep.costs, rep.rates, rep.calibration, rep.engine, rep.speculation
        i, o, shape = rep.input_tokens, rep.output_tokens, rep.shape
        tau = 1.0 if spec is None else spec.acceptance_length
        verify = 1.0 if spec is None else spec.verify_tokens
        steps = 1.0 + (o - 1.0) / tau
        batch = state.batch if np.isfinite(state.batch) else 0.0
        decoding = batch * (steps - 1.0) / steps
        room = max(float(rep.limits.max_num_tokens) * rep.groups - decoding * verify, 1.0)
        launch = rep.launch
        context = i + 0.5 * o if ctx is None else ctx

        kw = shape.kwargs()

        def seconds(tokens, prompts, attention, spans=False):
            # chunks of a full budget, then the last chunk, which samples and pays the prompt's attention: the
            # iteration time at this attention prepared once for both (iteration_time's seconds, to the bit)
            at = prepare_iteration_time(costs, rates, calib, decode_context=context, prompt_tokens=attention,
                                        overlap=launch.overlap, speculation=spec, **kw)

            def one(tokens, prompts):
                return at(decoding, tokens, prompts, launch.graphed(decoding, decoding * verify + tokens, tokens > 0),
                          True)
            tokens, prompts = np.asarray(tokens, dtype=float), np.asarray(prompts, dtype=float)
            n = np.where(engine.chunked_prefill & (tokens > room), np.ceil(tokens / room), 1.0)
            last = np.where(n > 1, tokens - (n - 1.0) * room, np.minimum(tokens, room))
            chunk = one(room + 0.0 * tokens, _CHUNK_ONLY + 0.0 * prompts)  # no prompt completes in it
            total = (n - 1.0) * chunk + one(last, prompts)
            return (total / n, n) if spans else total
        return seconds

    def _prefill(self, *args):
        """``seconds(new, prompt)``: the iteration(s) that prefill one prompt's new tokens beside the batch."""
        it = self._iteration(*args)

        def seconds(new, prompt):
            new = np.asarray(new, dtype=float)
            return it(new, 1.0 + 0.0 * new, prefill_work(prompt, np.asarray(prompt) - new)[1])
        return seconds

    def _latencies(self, rep: Replica, state: ReplicaState, ctx, rt, hbm, held) -> ReplicaState:
        """The state with TTFT by class and the tails of TTFT and TPOT (:mod:`.tails`); ``kv_reuse`` and
        ``lengths`` set where asked."""
        state = replace(state, kv_reuse=None, lengths=None)
        if not state.stable or not np.isfinite(state.ttft.mean_seconds):
            return state
        costs, i, o, spec = rep.costs, rep.input_tokens, rep.output_tokens, rep.speculation
        seconds = self._iteration(rep, state, ctx)
        if rt is None:  # one class: every request computes its whole prompt
            classes = [(1.0, float(i), float(i), 0.0)]
        else:
            classes = [(rt.hit_share * u.history_served / max(rt.history_hit, 1e-12), rt.hit_new_tokens,
                        rt.hit_input_tokens, rt.reload_s_by_tier[u.name]) for u in rt.tiers if u.history_served > 0]
            # misses: first turns (no history yet) and turns whose history was not found, apart (sizes differ)
            t = rt.tokens
            first = 1.0 / t.turns
            classes.append((first, rt.hit_new_tokens, t.shared_tokens + t.new_tokens_per_turn, rt.miss_reload_s))
            classes.append((1.0 - rt.hit_share - first, rt.hit_new_tokens + rt.hit_input_tokens
                            - t.shared_tokens - t.new_tokens_per_turn, rt.hit_input_tokens, rt.miss_reload_s))
        xs, ws = _points(self.lengths.input) if self.lengths else (np.array([float(i)]), np.ones(1))
        scale = xs / float(i)
        new = np.concatenate([n * scale for _, n, _, _ in classes])
        prompt = np.concatenate([p * scale for _, _, p, _ in classes])
        extra = np.concatenate([r + 0.0 * scale for _, _, _, r in classes])
        weight = np.concatenate([max(w, 0.0) * ws for w, _, _, _ in classes])
        attention = prefill_work(prompt, prompt - new)[1]
        tau = 1.0 if spec is None else spec.acceptance_length
        t0, t1 = state.decode_iteration_seconds, state.prefill_iteration_seconds
        mean_it = state.tpot.mean_seconds * tau
        p = float(np.clip((mean_it - t0) / (t1 - t0), 0.0, 1.0)) if t1 > t0 else 0.0
        ttft, (ttft95, ttft99), rows = T.ttft_tail(
            requests_per_s=state.requests_per_s, t0=t0, t1=t1, prefill_share=p, seconds=seconds,
            others=(new, attention, weight), own=(new, attention, extra, weight), mean_ttft=state.ttft.mean_seconds,
            q=T.QUANTILES)
        sigma = T.iteration_sigma(prefill_share=p, seconds=seconds, others=(new, attention, weight))
        # each in place of the queueing model's figure at mean lengths, which it reads
        tpot95, tpot99 = self._tpot_tails(state, sigma, mean_it, p, o, tau, T.QUANTILES)
        state = replace(state, ttft=Latency(ttft, ttft95, ttft99),
                        tpot=Latency(state.tpot.mean_seconds, tpot95, tpot99))
        if rt is not None:  # each class's mean over its rows (one per prompt length)
            per = weight.reshape(len(classes), -1)
            means = (per * rows.reshape(len(classes), -1)).sum(axis=1) / np.maximum(per.sum(axis=1), 1e-300)
            share = per.sum(axis=1)
            served = [u.name for u in rt.tiers if u.history_served > 0]
            by_tier = {n: m for n, m, w in zip(served, means[:-2].tolist(), share[:-2]) if w > 0}
            hit = float((share[:-2] * means[:-2]).sum()) / rt.hit_share if rt.hit_share > 0 else None
            miss = float((share[-2:] * means[-2:]).sum() / max(share[-2:].sum(), 1e-300))
            state = replace(state, kv_reuse=ReuseEstimate(rt, hbm, rt.cached_tokens / float(i), hit, miss, by_tier))
        if self.lengths is not None:
            state = replace(state, lengths=LengthEffects(
                self.lengths, float(L.decode_context_tokens(self.lengths)), float(held),
                state.batch * float(costs.kv_bytes(held)), _p95(self.lengths.input),
                _p95(self.lengths.output)))
        return state

    def _tpot_tails(self, state, sigma, mean_it, p, o, tau, qs):
        """TPOT q-quantiles (one per q of ``qs``, bisected together) over the output lengths, with the spread
        ``sigma`` of one iteration over the prompts it carries (:mod:`.tails`), plus the queueing model's allowance
        at q for the batch's own fluctuation (its q-quantile beyond the mean and the binomial spread of prefills,
        ``state.tpot``'s p95 or p99 as :func:`~aisize.serving.latency.loaded_state` gave them)."""
        t0, t1 = state.decode_iteration_seconds, state.prefill_iteration_seconds
        n_mean = max((o - 1.0) / tau, 1.0)
        ox, ow = _points(self.lengths.output) if self.lengths else (np.array([float(o)]), np.ones(1))
        tails = T.tpot_quantile(mean_it / tau, sigma / tau, (ox - 1.0) / tau, ow, tuple(qs))
        out = []
        for q, tail in zip(qs, tails):
            binomial = T.normal_quantile(q) * (t1 - t0) * np.sqrt(p * (1.0 - p)) / tau / np.sqrt(n_mean)
            at_q = {0.95: state.tpot.p95_seconds, 0.99: state.tpot.p99_seconds}[q]
            batch_part = max(at_q - state.tpot.mean_seconds - binomial, 0.0)
            out.append(tail + batch_part)
        return tuple(out)


_POINTS: dict = {}  # length distribution -> (its points, their weights), read-only; (its p95,) under ("p95", it)
_KEPT_POINTS = 64  # a few distributions a move (a CV slider's, the other length's); emptied whole when full


def _points(dist):
    """``dist.points()``, kept by the distribution's value (a frozen record): every probe of a length-CV move asks
    them of the same two distributions (16 inverse and 15 normal CDFs each in plain Python)."""
    got = _POINTS.get(dist)
    if got is None:
        got = tuple(np.asarray(x, dtype=float) for x in dist.points())
        for x in got:
            x.flags.writeable = False
        _keep(dist, got)
    return got


def _p95(dist) -> float:
    """``float(dist.quantile(0.95))``, kept as :func:`_points`."""
    got = _POINTS.get(("p95", dist))
    if got is None:
        got = (float(dist.quantile(0.95)),)
        _keep(("p95", dist), got)
    return got[0]


def _keep(key, value) -> None:
    if len(_POINTS) >= _KEPT_POINTS:
        _POINTS.clear()
    _POINTS[key] = value


_points.cache_clear = _POINTS.clear  # aisize.plan.clear_caches finds it (cold-plan benchmarks)


def serving_workload(prefix, kv_tiers, length_distribution, input_tokens, output_tokens, requests_per_s,
                     kv_bytes) -> ServingWorkload | None:
    """The checked extras of :func:`~aisize.serving.estimate`, or None when none is given (today's behaviour)."""
    if prefix is None and kv_tiers is None and length_distribution is None:
        return None
    if prefix is not None and not isinstance(prefix, Reuse):
        raise ValueError(f"prefix={prefix!r} is not allowed: give an aisize.serving.prefix.Reuse")
    if kv_tiers is not None and prefix is None:
        raise ValueError("kv_tiers is given without prefix: tiers hold reused prompts; describe the reuse with "
                         "prefix=Reuse(...)")
    if prefix is not None and requests_per_s is None:
        raise ValueError("prefix needs requests_per_s: sessions and chunks are reused at a rate (Little's law on "
                         "sessions); give the request rate at this replica")
    if length_distribution is not None:
        if not isinstance(length_distribution, L.Lengths):
            raise ValueError(f"length_distribution={length_distribution!r} is not allowed: give an "
                             f"aisize.serving.lengths.Lengths")
        L.check_means(length_distribution, input_tokens, output_tokens)
    tiers = ()
    if prefix is not None:
        tokens = session_tokens(prefix, input_tokens, output_tokens)
        tiers = check_tiers(kv_tiers, float(kv_bytes(tokens.session_tokens)))
    return ServingWorkload(prefix, tiers, length_distribution)
