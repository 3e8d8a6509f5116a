"""Latency of one replica under load: mean, p95 and p99 TTFT and TPOT at a request rate.

Requests arrive as a Poisson stream of rate λ. In steady state a replica with
mean iteration time T holds ``B = λ·(T + (O-1)·T)`` requests (Little's law [1])
and each iteration carries a Poisson number of new prefills with mean ``m = λ·T``.
Iterations without a prefill take ``T0``; those with one take ``T1`` (the
iteration model with ``m / (1 - e^-m)`` prefills, the conditional mean), so
``T = e^-m·T0 + (1 - e^-m)·T1``. B and T depend on each other; B is the root of
``λ·O·T(B) = B``, found by regula falsi (Illinois).

- TPOT: a request decodes over ``O - 1`` iterations; the number that carry a
  prefill is binomial with p = 1 - e^-m, so its mean TPOT is T and its p95 is
  ``T0 + (T1 - T0)·(p + 1.645·sqrt(p(1-p)/(O-1)))`` (normal approximation).
- TPOT p95 also allows for the batch's own fluctuation: with slots to spare the
  requests in flight are Poisson, so the p95 batch is ``B + 1.645·sqrt(B)``.
- TTFT: the request's fixed time outside the GPU (HTTP, tokenizing: the calibration's
  ``request_seconds``) + admission wait + the wait for the token budget + the wait for the next
  iteration to start (length-biased: ``E[T²]/2E[T]``; one more with an overlap scheduler, which
  picked that one's batch already) + with TensorRT-LLM's attention-DP balancing the wait
  until every rank has a prompt + with SGLang's ``--scheduler-recv-interval N`` the (N - 1) / 2 whole
  iterations until it next takes requests in + the iteration(s) carrying the prefill. Admission is a
  queue for the replica's ``c`` slots (the concurrency its batch limit and KV pool allow), each
  held for ``S = T + (O - 1)·T``: M/G/c with
  the Allen-Cunneen correction for the lengths' variability [2] and the Erlang C
  tail for p95 and p99 [3]. Without chunked prefill at most ``q = budget // I`` whole prompts
  fit one iteration, so prompts queue as M/D/q with service ``T1``; with chunking
  they share the budget left after decoding (M/D/1, service = a prompt's share).
- TTFT p95 and p99 where every prompt is at the mean length (the estimate's replica and its latency curve):
  the larger of these and the iteration mixture's (:func:`replica_ttft_quantiles`), nearer the simulation.
- p99: the same terms at q = 0.99 (z = 2.326, each wait's Erlang C tail at 1 %, the balancing wait's
  exponential tail at -ln 0.01 = 4.6 x its mean), one function for both (``at_quantile``).

λ at or beyond the replica's capacity is unstable: reported as such, with
infinite latencies, never as a negative wait.

References
----------
.. [1] Little 1961, "A proof for the queuing formula L = λW", Oper. Res. 9(3).
.. [2] Allen 1990, "Probability, Statistics and Queueing Theory", sec. 6.4 (G/G/c).
.. [3] Kleinrock 1975, "Queueing Systems" vol. 1, sec. 3.5 (M/M/c waiting-time tail).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, fields as record_fields

import numpy as np

from aisize.queueing import mgc_wait
from aisize.serving.engine import GRAPHED
from aisize.serving.iteration import iteration_time
from aisize.serving.littles_law import littles_law_concurrency
from aisize.serving.prefix import prefill_work
from aisize.serving.shapes import ShapeGrid
from aisize.serving.steady import _ndim, _number, balance_wait_iterations, prepare_steady_state
from aisize.serving import tails as T
from aisize.serving.tails import QUANTILES, Z95, normal_quantile, residual_quantile

__all__ = ["LoadedState", "Z95", "littles_law_concurrency", "loaded_state", "ttft_mixture_quantiles"]


@dataclass(frozen=True)
class LoadedState:
    """A replica at request rate λ (per replica) [s, count]."""

    requests_per_s: object
    stable: object
    utilisation: object  # λ / capacity
    concurrency: object  # mean requests in flight
    iteration_seconds: object  # mean
    decode_iteration_seconds: object  # T0
    prefill_iteration_seconds: object  # T1
    ttft_seconds: object
    ttft_p95_seconds: object
    tpot_seconds: object
    tpot_p95_seconds: object
    ttft_p99_seconds: object
    tpot_p99_seconds: object
    queue_seconds: object  # mean admission wait


def _solved(costs, rates, calib, tokens_per_s, slots, steps, near, kwargs):
    """(steady state at the requests in flight B that Little's law settles at, {q: steady state at B + z·sqrt(B)}
    for q in QUANTILES) of :func:`loaded_state`, remembered by exactly what they read (:func:`_solve_key`): a move of
    the prompt's or the lengths' CV, or of a target, solves again the same root (its admission and prefill queues
    read the spread; the root does not)."""
    try:
        key = _solve_key(costs, rates, calib, tokens_per_s, slots, steps, near, kwargs)
    except _Unkeyed:
        key = None  # solved, not kept
    got = _SOLVED.get(key[0]) if key is not None else None
    if got is not None and got[0][0] is key[1][0] and got[0][1] is key[1][1]:
        _SOLVED.move_to_end(key[0])
        return got[1]
    last = []  # (concurrency, state) of the last evaluation: the root finder ends on the root it returns
    steady = prepare_steady_state(costs, rates, calib, **kwargs)  # what the solve's arguments fix, read once

    def state_at(concurrency):
        if last and last[0] is concurrency:
            return last[1]
        st = steady(np.maximum(concurrency, 1e-9))
        last[:] = [concurrency, st]
        return st

    bracket = None
    if near is not None:  # Little's law at those rates: B = λ·steps·T, at most the slots
        r_lo, t_lo, r_hi, t_hi = (np.asarray(v, dtype=float) for v in near)
        bracket = (np.minimum(r_lo * steps * t_lo, slots), t_lo, np.minimum(r_hi * steps * t_hi, slots), t_hi)
    scan = None if key is None else _scanned(key, lambda x: state_at(x).iteration_seconds)
    st = state_at(littles_law_concurrency(tokens_per_s, lambda x: state_at(x).iteration_seconds, slots, bracket,
                                          scan))
    tails = _tail_states(st, slots, steady)
    for state in (st, *tails.values()):  # shared by every later hit: a caller writing into one would change them
        for v in vars(state).values():
            if isinstance(v, np.ndarray):
                v.flags.writeable = False
    if key is None:
        return st, tails
    _SOLVED[key[0]] = (key[1], (st, tails))
    while len(_SOLVED) > _KEPT_SOLVES:
        _SOLVED.popitem(last=False)
    return st, tails


_SOLVED: OrderedDict = OrderedDict()  # value key -> ((costs, calib), (steady state, tails)), latest last
_KEPT_SOLVES = 512  # a move re-plans a few shapes at a few rates each; the sizing grid adds one per shape: 128 let a
# run of prompt, output and CV moves age out the solves a target move then asks again (512: about 3 MB)
_SCANNED: OrderedDict = OrderedDict()  # (the solve's key less the rate) -> ((costs, calib), {ndim: T at the scan})
_KEPT_SCANS = 256  # one per replica a move solves for (a shape at its lengths, a few kB), at any rate (as the solves)


def _clear() -> None:
    _SOLVED.clear()
    _SCANNED.clear()


_solved.cache_clear = _clear  # aisize.plan.clear_caches finds it (cold-plan benchmarks)


def _scanned(key, iteration_seconds):
    """``scan_seconds`` of :func:`littles_law_concurrency` for the solve ``key`` (:func:`_solve_key`): the mean
    iterations at the scan's points, slots / 2^k, read from a solve of the same replica at another rate (a rate
    move solves each shape at new rates only; the scan's points and their steady states are the same at any)."""
    value, held = key
    # what the scan's points read: the costs and calibration, the GPU's rates, the slots and steady_state's
    # arguments; not the rate, the steps (output_tokens and speculation are among the arguments) or the bracket
    scan_key = value[:3] + (value[4],) + value[7:]

    def seconds(points):
        got = _SCANNED.get(scan_key)
        if got is None or got[0][0] is not held[0] or got[0][1] is not held[1]:
            got = _SCANNED[scan_key] = (held, {})
            while len(_SCANNED) > _KEPT_SCANS:
                _SCANNED.popitem(last=False)
        _SCANNED.move_to_end(scan_key)
        kept = got[1].get(points.shape)  # the points' shape: the solve's dimensions
        if kept is None:
            kept = got[1][points.shape] = np.asarray(iteration_seconds(points))
            kept.flags.writeable = False
        return kept
    return seconds


def _tail_states(st, slots, steady) -> dict:
    """{q: steady state at the batch's q-quantile B + z·sqrt(B)} for q in QUANTILES, at most the slots, from one
    call of ``steady(concurrency)`` (:func:`~aisize.serving.steady.steady_state`, elementwise: each point's figures
    are those of a call of its own) with the quantiles along a new first axis; one call per quantile where a
    figure of ``st`` has more dimensions than the batch (its other arguments would not broadcast after that axis)."""
    points = [np.maximum(np.minimum(st.concurrency + normal_quantile(q) * np.sqrt(st.concurrency),
                                    np.maximum(slots, 1.0)), 1e-9) for q in QUANTILES]
    nd = _ndim(points[0])
    if any(_ndim(v) > nd for v in vars(st).values()):
        return {q: steady(b) for q, b in zip(QUANTILES, points)}
    both = steady(np.stack(points))
    fields = vars(both)
    return {q: type(both)(**{k: v[j] if _ndim(v) == nd + 1 else v for k, v in fields.items()})
            for j, q in enumerate(QUANTILES)}


class _Unkeyed(Exception):
    """An argument whose ``repr`` does not hold its whole value: the solve is not kept."""


def _value(x):
    """``x`` by value for a key: an array by its dtype, shape and bytes, anything else (numbers, frozen records) by
    its type and ``repr`` (which tells 1 from 1.0 and -0.0 from 0.0). A record holding a long array, whose ``repr``
    numpy shortens with "...", raises :class:`_Unkeyed` (two such records may print the same)."""
    if isinstance(x, np.ndarray):
        return ("array", x.dtype.str, x.shape, x.tobytes())
    if isinstance(x, ShapeGrid):  # its fields are arrays: by their bytes, not numpy's slow (and shortened) repr
        return (type(x).__name__, tuple((f.name, _value(getattr(x, f.name))) for f in record_fields(x)))
    text = repr(x)
    if "..." in text:
        raise _Unkeyed(type(x).__name__)
    return (type(x).__name__, text)


def _solve_key(costs, rates, calib, tokens_per_s, slots, steps, near, kwargs) -> tuple:
    """(key, (costs, calib)) of :func:`_solved`: the costs and calibration by identity (made once per model and
    held by the entry, so no other object takes their ids while kept), everything else it reads by value."""
    rest = tuple((k, _value(v)) for k, v in sorted(kwargs.items()))
    near_key = None if near is None else tuple(_value(np.asarray(v, dtype=float)) for v in near)
    return ((id(costs), id(calib), _value(rates), _value(np.asarray(tokens_per_s, dtype=float)), _value(slots),
             _value(np.asarray(steps, dtype=float)), near_key) + rest), (costs, calib)


def loaded_state(costs, rates, calib, *, requests_per_s, capacity_requests_per_s, slots, input_tokens,
                 output_tokens, max_num_tokens, chunked_prefill, shape, length_cv=0.0, launch=GRAPHED,
                 speculation=None, cached_tokens=0.0, decode_context_tokens=None, prompt_cv=0.0,
                 near=None) -> LoadedState:
    """Mean, p95 and p99 latencies of a replica serving ``requests_per_s`` (Poisson).

    Parameters
    ----------
    costs, rates, calib : as for :func:`~aisize.serving.iteration.iteration_time`
    requests_per_s : λ, arrivals per second at this replica
    capacity_requests_per_s : the replica's maximum rate (from its max-throughput state)
    slots : requests the replica admits at once (batch limit and KV pool) [count]
    input_tokens, output_tokens : mean lengths [tokens]
    max_num_tokens, chunked_prefill : the engine's token budget and prefill mode
    shape : :class:`~aisize.serving.shapes.ReplicaShape`
    length_cv : coefficient of variation of the request lengths (0: fixed lengths)
    launch : the engine's CUDA-graph and overlap behaviour (:class:`~aisize.serving.engine.Launch`)
    speculation : :class:`~aisize.serving.speculative.Speculation`, or None
    cached_tokens, decode_context_tokens : a cached prompt prefix and the decoding context, as for
        :func:`~aisize.serving.steady.steady_state`
    prompt_cv : coefficient of variation of the prompt tokens computed: the spread of the prefill queue's
        service (Pollaczek-Khinchine: the wait grows with 1 + cv²) (:mod:`~aisize.serving.lengths`)
    near : ``(rate_low, T_low, rate_high, T_high)``, the mean iterations (``iteration_seconds``) this
        replica settles at for stable rates below and above each of ``requests_per_s``: their requests in
        flight bracket each solve (a search refining between rates it evaluated), so none is scanned for
    """
    lam = np.asarray(requests_per_s, dtype=float)
    o = np.asarray(output_tokens, dtype=float)
    cap = np.asarray(capacity_requests_per_s, dtype=float)
    util = lam / cap
    stable = util < 1.0
    lam_s = np.where(stable, lam, 0.5 * cap)  # evaluate unstable points somewhere finite, then mark them
    lam_s, o = _number(lam_s), _number(o)  # one rate: numpy scalars, the same figures (steady._number)

    tau = 1.0 if speculation is None else speculation.acceptance_length
    steps = 1.0 + (o - 1.0) / tau  # iterations of a request's life
    st, tails = _solved(costs, rates, calib, lam_s * steps, slots, steps, near, dict(
        input_tokens=input_tokens, output_tokens=output_tokens, max_num_tokens=max_num_tokens,
        chunked_prefill=chunked_prefill, shape=shape, arrivals="poisson", launch=launch, speculation=speculation,
        cached_tokens=cached_tokens, decode_context_tokens=decode_context_tokens))
    mean, t0, t1, p = st.iteration_seconds, st.decode_iteration_seconds, st.prefill_iteration_seconds, st.prefill_share
    hold = (st.prefill_iterations + steps - 1.0) * mean  # a slot is held while prefilling and for its decode steps
    c = np.maximum(np.floor(slots), 1.0)
    offered = lam_s * hold
    util = np.maximum(util, offered / c)  # random arrivals mix prefills less well than a waiting queue
    stable = util < 1.0
    # admission: M/G/c over the replica's slots, the lengths' spread as the service CV (Allen-Cunneen)
    ok_adm, _, wq, *wq_q = mgc_wait(np.maximum(lam_s, 1e-12), hold, c, service_cv=length_cv, quantiles=QUANTILES)
    stable = stable & ok_adm
    # prompts queue for the token budget: without chunking at most q whole prompts fit an iteration
    # (q "servers", each busy for the iteration that carries the prefill); with chunking the prompt
    # tokens share the budget left after the decode tokens (one server, service = a prompt's share)
    full = np.asarray(input_tokens, dtype=float)
    i, attention = prefill_work(full, cached_tokens)  # the prompt tokens computed, and their attention's length
    ctx = full + 0.5 * o if decode_context_tokens is None else decode_context_tokens
    verify = 1.0 if speculation is None else speculation.verify_tokens
    decoding = st.concurrency * (steps - 1.0) / steps
    riding = decoding if launch.mixes_prefill else np.zeros_like(decoding)  # SGLang runs a prefill alone (engine.py [8])
    room = np.maximum(max_num_tokens - riding * verify, 1.0)
    t_pre = st.prompt_iteration_seconds  # the iteration a prompt samples in (without mixing: the prefill alone)
    # an arrival waits out the iteration in progress, landing in long ones more often (length-biased residual
    # E[T²] / 2E[T]; its quantiles: :func:`~aisize.serving.tails.residual_quantile`)
    residual = ((1.0 - p) * t0**2 + p * t1**2 if launch.mixes_prefill else t0**2 + p * t_pre**2) / (2.0 * mean)
    # a request's prefill iteration also carries the prompts that arrived during the iteration it
    # waited out, whose length is size-biased: E[T²]/E[T] = 2 x the residual
    fit = room / i if chunked_prefill else np.maximum(np.floor(room / i), 1.0)
    mine = np.minimum(1.0 + 2.0 * lam_s * residual, np.maximum(fit, 1.0))
    own_tokens = np.minimum(mine * i, room)
    own = iteration_time(costs, rates, calib, decode_sequences=riding, decode_context=ctx,
                         prefill_tokens=own_tokens, prefill_prompts=mine, prompt_tokens=attention,
                         graphed=launch.graphed(riding, riding + own_tokens, True), overlap=launch.overlap,
                         speculation=speculation, **shape.kwargs()).seconds
    t_prefill = np.where(st.prefill_iterations > 1, st.prefill_iterations * t_pre, own)
    if chunked_prefill:  # prompts share the budget left after decoding: one server, a prompt's share each
        servers, service = 1.0, t_pre * i / room
    else:
        servers, service = fit, t_pre
    ok_pf, _, pf_wait, *pf_wait_q = mgc_wait(np.maximum(lam_s, 1e-12), np.maximum(service, 1e-12), servers,
                                             service_cv=prompt_cv, quantiles=QUANTILES)
    stable = stable & ok_pf
    # the M/D/q wait already holds the residual of the prefill in service (ρ·S/2); keep only the
    # backlog beyond it, the residual of whatever iteration is running being counted on its own
    rho_pf = np.minimum(lam_s * service / servers, 1.0)
    scheduled = mean if launch.overlap else 0.0  # an overlap scheduler chose the next batch already
    with np.errstate(invalid="ignore"):
        backlog = np.maximum(pf_wait - rho_pf * service / 2.0, 0.0)
        # attention-DP balancing holds a prompt until every rank has one (slots to spare: prompts go round)
        held, _ = balance_wait_iterations(launch, shape.attention_dp, lam_s * mean, ranks_full=False)
        polled = launch.receive_wait_iterations() * mean  # SGLang's --scheduler-recv-interval
        ttft = calib.request_seconds + wq + backlog + residual + scheduled + polled + held * mean + t_prefill
    n = np.maximum(steps - 1.0, 1.0)

    def at_quantile(q, wq_q, pf_wait_q):
        """TTFT and TPOT q-quantiles: every wait at its q-quantile; a request's iterations carry a binomial
        number of prefills, and the batch itself fluctuates (requests in a system with ample slots are
        Poisson: its q-quantile at B + z·sqrt(B))."""
        z = normal_quantile(q)
        with np.errstate(invalid="ignore"):
            backlog_q = np.maximum(pf_wait_q - rho_pf * service / 2.0, 0.0)
            _, held_q = balance_wait_iterations(launch, shape.attention_dp, lam_s * mean, ranks_full=False,
                                                quantile=q)
            ttft_q = (calib.request_seconds + wq_q + backlog_q + residual_quantile(q, p, t0, t1) + scheduled
                      + launch.receive_wait_iterations(q) * mean + held_q * mean + t_prefill)
        hi = tails[q]  # the steady state at the batch's q-quantile (_solved)
        with np.errstate(invalid="ignore"):  # unstable points may hold inf - inf; they are replaced below
            spread = np.minimum(p + z * np.sqrt(p * (1.0 - p) / n), 1.0)
            tpot_q = np.maximum(hi.decode_iteration_seconds + (hi.prefill_iteration_seconds
                                                               - hi.decode_iteration_seconds) * spread, mean) / tau
        return ttft_q, tpot_q

    (ttft95, tpot95), (ttft99, tpot99) = (at_quantile(*a) for a in zip(QUANTILES, wq_q, pf_wait_q))
    inf = np.inf

    def finite(x):
        return np.where(stable, x, inf)
    return LoadedState(requests_per_s=lam, stable=stable, utilisation=util,
                       concurrency=finite(np.minimum(lam_s * steps * mean, c)), iteration_seconds=mean,
                       decode_iteration_seconds=t0, prefill_iteration_seconds=t1, ttft_seconds=finite(ttft),
                       ttft_p95_seconds=finite(ttft95), tpot_seconds=finite(mean / tau),
                       tpot_p95_seconds=finite(tpot95), ttft_p99_seconds=finite(ttft99),
                       tpot_p99_seconds=finite(tpot99), queue_seconds=finite(wq))


def ttft_mixture_quantiles(costs, rates, calib, *, requests_per_s, concurrency, iteration_seconds,
                           decode_iteration_seconds, prefill_iteration_seconds, ttft_seconds, input_tokens,
                           output_tokens, max_num_tokens, chunked_prefill, shape, launch=GRAPHED, speculation=None,
                           quantiles=QUANTILES):
    """TTFT q-quantiles (a tuple, one array per q) of a replica at Poisson rates, every prompt of the mean length:
    the mixture of :func:`~aisize.serving.tails.ttft_tail` (the rest of the iteration running at an arrival,
    which carries a Poisson number of prompts, then the iteration it shares with the prompts that arrived
    meanwhile), vectorized over the rates; what the queueing model adds beyond those two terms (the time outside
    the GPU, the admission wait, the token budget's backlog) stays a constant. Against the simulation
    (:mod:`aisize.serving.simulate`) it is nearer than the two-point residual of :func:`loaded_state`
    (xe9680-genai's Chat assistant 8B at 50 % load: -3 % where that was -10 %).

    ``requests_per_s``, ``concurrency`` (the requests in flight), ``iteration_seconds`` (the mean),
    ``decode_iteration_seconds``, ``prefill_iteration_seconds`` and ``ttft_seconds`` (the mean) are the
    :class:`LoadedState`'s at each rate (1-D, one per rate) [1/s, count, s]; the rest as for :func:`loaded_state`.
    """
    lam = np.atleast_1d(np.asarray(requests_per_s, dtype=float))[:, None]  # rates x components
    mean = np.atleast_1d(np.asarray(iteration_seconds, dtype=float))[:, None]
    t0 = np.atleast_1d(np.asarray(decode_iteration_seconds, dtype=float))[:, None]
    t1 = np.atleast_1d(np.asarray(prefill_iteration_seconds, dtype=float))[:, None]
    tau = 1.0 if speculation is None else speculation.acceptance_length
    verify = 1.0 if speculation is None else speculation.verify_tokens
    steps = 1.0 + (output_tokens - 1.0) / tau
    batch = _finite(np.atleast_1d(np.asarray(concurrency, dtype=float)))[:, None]
    decoding = batch * (steps - 1.0) / steps
    room = np.maximum(max_num_tokens - decoding * verify, 1.0)
    i = float(input_tokens)
    attention = float(prefill_work(i, 0.0)[1])
    context = i + 0.5 * output_tokens

    def one(tokens, prompts):
        return iteration_time(costs, rates, calib, decode_sequences=decoding, decode_context=context,
                              prefill_tokens=tokens, prefill_prompts=prompts, prompt_tokens=attention,
                              graphed=launch.graphed(decoding, decoding * verify + tokens, tokens > 0),
                              overlap=launch.overlap, speculation=speculation, **shape.kwargs()).seconds

    def seconds(tokens, prompts):
        """(the iterations carrying these prefills beside the batch, one of them, how many): a prompt longer than
        the budget left spans several, each a full chunk but the last, which samples [s, count]."""
        n = np.where(chunked_prefill & (tokens > room), np.ceil(tokens / room), 1.0)
        last = np.where(n > 1, tokens - (n - 1.0) * room, np.minimum(tokens, room))
        # a full chunk and the last one in one call along a new first axis (iteration_time is elementwise)
        chunk, final = one(np.stack(np.broadcast_arrays(room + 0.0 * tokens, last)),
                           np.stack(np.broadcast_arrays(1e-9 + 0.0 * prompts, prompts)))
        total = (n - 1.0) * chunk + final
        return total, total / n, n

    k = np.arange(T.MAX_COARRIVALS + 1, dtype=float)[None, :]
    p = np.clip(np.where(t1 > t0, (mean - t0) / np.where(t1 > t0, t1 - t0, 1.0), 0.0), 0.0, 1.0)
    # the queueing model's residual and own iteration at the mean: what its mean adds beyond them stays
    mean_t = (1.0 - p) * t0 + p * t1
    residual = ((1.0 - p) * t0**2 + p * t1**2) / (2.0 * mean_t)
    mine = 1.0 + 2.0 * lam * residual
    # one evaluation: the running iteration with J ~ Pois(-ln(1 - p)) prompts (a J-prompt one spanning n_J
    # iterations), this request's own with K co-arrivals, and the queueing model's own
    prompts = np.concatenate([k + 0.0 * lam, 1.0 + k + 0.0 * lam, mine], axis=1)
    total, each, spans = seconds(prompts * i, prompts)
    m = k.size
    t, spans, own, core = each[:, :m], spans[:, :m], total[:, m:2 * m], residual + total[:, 2 * m:]
    mass = T.poisson(-np.log(np.maximum(1.0 - p[:, 0], 1e-12))) * spans
    v = mass * t / (mass * t).sum(axis=1, keepdims=True)  # landed in by length
    co = T.poisson((lam * t).ravel()).reshape(t.shape + (m,))  # co-arrivals while waiting out type J
    mean_ttft = np.atleast_1d(np.asarray(ttft_seconds, dtype=float))[:, None]
    shift = np.maximum(_finite(mean_ttft - core), 0.0)  # a wait, never a credit
    rows = t.shape[0]
    weight = (v[:, :, None] * co).reshape(rows, -1)  # rates x (J, K)
    start = (shift[:, :, None] + own[:, None, :] + 0.0 * t[:, :, None]).reshape(rows, -1)
    width = np.repeat(t, k.size, axis=1)  # each J's width for every K: t[:, :, None] broadcast over K, flattened
    return T.uniform_mixture_quantiles(weight, start, width, quantiles)


def _finite(x: np.ndarray) -> np.ndarray:
    """``np.nan_to_num(x, posinf=0.0)`` of a float array (only read after): ``x`` itself where every value is
    finite, which nan_to_num copies unchanged (a test of a few microseconds where nan_to_num takes twenty)."""
    return x if np.isfinite(x).all() else np.nan_to_num(x, posinf=0.0)


def replica_ttft_quantiles(rep, *, requests_per_s, concurrency, iteration_seconds, decode_iteration_seconds,
                           prefill_iteration_seconds, ttft_seconds, ttft_p95_seconds, ttft_p99_seconds):
    """TTFT (p95, p99) of a :class:`~aisize.serving.replica.Replica` at the :func:`loaded_state` figures given (1-D):
    what the estimate reports at its rate and the latency curve at each of its rates (one figure for both).

    Each model leaves out a spread the other has: :func:`ttft_mixture_quantiles` holds the queueing model's
    waits (admission, the token budget's backlog, attention-DP balancing, a polling scheduler) at their means,
    and :func:`loaded_state` has the running iteration as two kinds and its own at the mean. So each quantile is
    the larger of the two. Against the simulation (seed 3, 2000 requests) the mixture is the nearer where no
    request waits (xe9680-genai's Chat assistant 8B at 50 % load: -2.4 % where the other is -8.9 %;
    serving-at-scale's Assistant 405B: -12 % where -30 %), the queueing model where prompts queue for the token
    budget (shared-cluster's Batch summaries 8B at 83 %: -2.4 % where the mixture is -28 %)."""
    mixture = ttft_mixture_quantiles(
        rep.costs, rep.rates, rep.calibration, requests_per_s=requests_per_s, concurrency=concurrency,
        iteration_seconds=iteration_seconds, decode_iteration_seconds=decode_iteration_seconds,
        prefill_iteration_seconds=prefill_iteration_seconds, ttft_seconds=ttft_seconds,
        input_tokens=rep.input_tokens, output_tokens=rep.output_tokens,
        max_num_tokens=rep.limits.max_num_tokens * rep.groups, chunked_prefill=rep.engine.chunked_prefill,
        shape=rep.shape, launch=rep.launch, speculation=rep.speculation, quantiles=QUANTILES)
    return tuple(np.fmax(m, np.atleast_1d(np.asarray(old, dtype=float)))
                 for m, old in zip(mixture, (ttft_p95_seconds, ttft_p99_seconds)))
