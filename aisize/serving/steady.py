"""Steady state of one replica under continuous batching at a given concurrency.

With ``B`` requests in flight, every iteration produces one token per request:
a request spends one iteration finishing its prefill (which samples its first
token) and ``O - 1`` decoding, so on average ``m = B / O`` prefills complete per
iteration and ``B (O - 1) / O`` sequences decode, at a mean context of
``I + O / 2`` [1, 2]. Output tokens per second are ``B`` over the mean iteration.

How prefills spread over iterations decides the mean iteration, because an
iteration's time is convex in its tokens (weights are read once whatever the
batch, so a few prompt tokens ride along free while many turn it compute-bound):

- ``"burst"`` (every request waiting from the start: a max-throughput benchmark):
  without chunking, prompts are admitted in order while the token budget lasts, so
  they arrive in cohorts of ``q = (budget - decode tokens) // I`` and a share
  ``m / q`` of iterations carries one [3];
- ``"poisson"`` (requests arriving at random): without chunking the number of
  prefills in an iteration is Poisson with mean m, so a share ``1 - e^-m`` of
  iterations carries prefills, ``m / (1 - e^-m)`` of them on average;
- with TensorRT-LLM's attention-DP balancing (``enable_balance``) prompts wait until every
  rank has one, so an iteration that carries prefills carries a set of one per rank (more
  where a rank's budget takes more and more are waiting) [4], and a prompt's wait for the set
  is :func:`balance_wait_iterations`;
- with chunked prefill (Sarathi-Serve [1]) a waiting queue fills every iteration's
  budget, so the prompt tokens spread evenly (``m·I`` per iteration); with random
  arrivals prompts still come whole while they fit the budget, and a longer one spans
  ``ceil(I / budget)`` iterations of a full budget.

An engine that does not mix (``Engine.mixes_prefill`` False; SGLang's own default [6]) runs an iteration with prompt work alone, on the whole
token budget, and the decoding sequences wait for it: per decode step they wait a share of such an iteration,
so the step that prefills costs the prefill alone plus a decode iteration, not one iteration carrying both.

Concurrency is bounded by the engine's batch limit, the KV pool (each request
holding blocks for its whole length when the engine reserves them) and the token
budget (``B (I + O - 1) / O`` tokens per iteration on average).

References
----------
.. [1] Agrawal et al. 2024 (Sarathi-Serve), OSDI'24, arXiv:2403.02310, sec. 3-4.
.. [2] docs/DESIGN.md section 2, "Serving (one replica)".
.. [3] TensorRT-LLM ``microBatchScheduler.cpp``: requests are taken in order; a
       context request costs its prompt; the first that does not fit ends the batch.
.. [4] TensorRT-LLM ``_executor/py_executor.py`` ``_balance_adp_requests`` (``attention_dp_config``:
       ``enable_balance``, ``timeout_iters``); ``executor_request_queue.py``
       ``_balance_requests_across_ranks`` hands new requests to the ranks below their share of the
       active requests, fewest active tokens first (a heap).
.. [5] Rényi 1953, "On the theory of order statistics", Acta Math. Acad. Sci. Hungar. 4: the gaps
       between n exponential waits of rate r, in order, are exponential of rates n·r, (n-1)·r, ..., r,
       so the longest has mean H_n / r, H_n the n-th harmonic number.
.. [6] sgl-project/sglang ``server_args.py`` (``enable_mixed_chunk = False``), ``managers/scheduler.py``
       ``get_next_batch_to_run`` (a new prefill batch runs before the decode batch; mixed only with
       ``--enable-mixed-chunk``); :attr:`aisize.serving.engine.Engine.mixes_prefill`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aisize.serving.engine import GRAPHED
from aisize.serving.iteration import prepare_iteration_time
from aisize.serving.iteration_shape import _times
from aisize.serving.prefix import prefill_work
from aisize.serving.scalar_ops import clip_ufunc as _clip
from aisize.serving.tails import exponential_quantile_factor

ARRIVALS = ("burst", "poisson")


@dataclass(frozen=True)
class SteadyState:
    """A replica's steady state at a concurrency (per replica unless said)."""

    concurrency: object  # requests in flight [count]
    iteration_seconds: object  # mean iteration: the mean TPOT [s]
    decode_iteration_seconds: object  # an iteration without prefill work [s]
    prefill_iteration_seconds: object  # an iteration carrying prefill work [s]
    prefill_share: object  # share of iterations that carry prefill work
    prefill_iterations: object  # iterations a prompt's prefill spans (1 without chunking)
    output_tokens_per_s: object
    requests_per_s: object
    tokens_per_step: float = 1.0  # τ: tokens a decode step emits per sequence (speculative decoding)
    # whether prefill work rides in a decode iteration; without, prefill_iteration_seconds is a prefill iteration
    # alone plus the decode iteration after it (what a decoding sequence waits per step that prefills)
    mixes_prefill: bool = True

    @property
    def prompt_iteration_seconds(self):
        """The iteration in which a prompt prefills and samples its first token [s]: with mixing the one carrying
        prefill work, without it the prefill iteration alone."""
        if self.mixes_prefill:
            return self.prefill_iteration_seconds
        return self.prefill_iteration_seconds - self.decode_iteration_seconds

    @property
    def tpot_seconds(self):
        """Mean time per output token after the first: the mean iteration over the tokens a step emits."""
        return self.iteration_seconds / self.tokens_per_step


def token_budget_concurrency(input_tokens, output_tokens, max_num_tokens, *, whole_prompts=False):
    """Largest concurrency whose iterations fit the token budget [count].

    On average an iteration carries ``B (I + O - 1) / O`` tokens. When prompts are
    not chunked they come whole: at most ``q = (budget - decode tokens) // I`` per
    iteration, so at most ``O·q`` requests are in flight (one prefill per request
    lifetime of O iterations).
    """
    i = np.asarray(input_tokens, dtype=float)
    o = np.asarray(output_tokens, dtype=float)
    b = np.floor(max_num_tokens * o / (i + o - 1.0))
    if whole_prompts:
        for _ in range(3):  # B -> decode tokens -> prompts per iteration -> B (converges in a step or two)
            per = np.maximum(np.floor((max_num_tokens - b * (o - 1.0) / o) / i), 1.0)
            b = np.minimum(b, o * per)
    return b


def balance_wait_iterations(launch, attention_dp, prompts_per_iteration, *, ranks_full, quantile=0.95):
    """Mean and ``quantile`` (p95 by default) iterations a prompt waits for TensorRT-LLM's attention-DP balancing
    (0 when it is off).

    Prompts are held until every one of the ``dp`` ranks has one, at most ``launch.balance_iters``
    iterations [4]. ``prompts_per_iteration`` (m) arrive over the replica. The engine hands a new request
    only to a rank below its share of the active requests (``expected_num_active_requests``, the larger of
    ceil(active / dp) and the busiest rank's), the one with the fewest active tokens first [4]. Arriving at
    random (an open loop) they go round the ranks and a prompt waits for the ``dp - 1`` next:
    ``(dp - 1) / 2m`` on average. In a closed loop (``ranks_full``) the ranks hold equal shares of the C
    requests, so the only rank below its share is the one whose request just finished, batch limit or not
    (InferenceX's ``max_batch_size = C / TP`` fills them too): each rank gets them at ``r = m / dp``, and from one release
    the next set is complete when the last of the dp ranks has one, ``H_dp / r`` iterations on average (the
    longest of dp exponential waits [5]), at most the timeout. That cycle is taken as the mean wait: the
    published runs wait longer than its length-biased residual (E[T²] / 2E[T], 1.6 / r at dp = 8) would
    say, likely because prompts left over on the busier ranks queue behind the set. Where the timeout ends
    most holds, a prompt waits half of it on average. A quantile q takes the wait's tail as exponential
    (-ln(1 - q) x the mean: 3 at p95, 4.6 at p99), at most the timeout. [iterations]
    """
    zero = np.zeros(np.broadcast(np.asarray(attention_dp, dtype=float), prompts_per_iteration, ranks_full).shape)
    if not launch.balance_iters:
        return zero, zero
    dp = np.asarray(attention_dp, dtype=float)
    m = np.maximum(np.asarray(prompts_per_iteration, dtype=float), 1e-12)
    harmonic = np.log(dp) + np.euler_gamma + 0.5 / dp - 1.0 / (12.0 * dp**2)  # H_dp, to 0.1 % from dp = 2
    mean = np.where(ranks_full, np.minimum(harmonic * dp / m, launch.balance_iters),
                    np.minimum((dp - 1.0) / (2.0 * m), 0.5 * launch.balance_iters))
    mean = np.where(dp > 1, mean, 0.0)
    return mean, np.minimum(exponential_quantile_factor(quantile) * mean, launch.balance_iters)


def _without_and_with(x, nd):
    """``x`` (at most ``nd`` dimensions) after zeros of its shape, along a new first axis of length 2."""
    x = np.asarray(x, dtype=float)
    out = np.zeros((2,) + (1,) * (nd - x.ndim) + x.shape)  # as np.stack of zeros and x, without its checks
    out[1] = x
    return out


def _ndim(x) -> int:
    """``np.ndim(x)``, without numpy's dispatch for the arrays, plain numbers and Nones a steady state mostly gets."""
    if isinstance(x, (np.ndarray, np.generic)):
        return x.ndim
    return 0 if x is None or isinstance(x, (float, int)) else np.ndim(x)


def _number(x):
    """A 0-d array as its numpy scalar (``x[()]``), anything else as is. Arithmetic and ufuncs on a 0-d array
    return numpy scalars, so every figure computed from either is the same value of the same type; a scalar
    spares numpy's array dispatch (a tenth of the time an operation with a plain float takes)."""
    return x[()] if type(x) is np.ndarray and x.ndim == 0 else x


def steady_state(costs, rates, calib, *, concurrency, input_tokens, output_tokens, max_num_tokens,
                 chunked_prefill, shape, arrivals="burst", launch=GRAPHED, speculation=None, cached_tokens=0.0,
                 decode_context_tokens=None) -> SteadyState:
    """Iteration times and throughput of a replica holding ``concurrency`` requests.

    Parameters
    ----------
    costs, rates, calib : see :func:`~aisize.serving.iteration.iteration_time`
    concurrency : requests in flight, B (within the limits above) [count]
    input_tokens, output_tokens : I, O per request [tokens]
    max_num_tokens : the engine's token budget per iteration [tokens]
    chunked_prefill : whether prompts are split across iterations
    shape : :class:`~aisize.serving.shapes.ReplicaShape`
    arrivals : "burst" (all requests waiting) or "poisson" (random arrivals)
    launch : which iterations the engine replays from CUDA graphs, and its host overlap
        (:class:`~aisize.serving.engine.Launch`)
    speculation : :class:`~aisize.serving.speculative.Speculation` (None: one token per step); a
        request then needs ``1 + (O - 1) / τ`` iterations, its prefill and its decode steps
    cached_tokens : prompt tokens a request finds in a KV cache: not prefilled, still attended to and
        read (:func:`~aisize.serving.prefix.prefill_work`) [tokens]
    decode_context_tokens : mean context of the decoding sequences (None: ``I + O/2``; lengths from a
        distribution make it length-biased, :mod:`~aisize.serving.lengths`) [tokens]
    """
    return _prepare(costs, rates, calib, input_tokens, output_tokens, max_num_tokens, chunked_prefill, shape, arrivals,
                    launch, speculation, cached_tokens, decode_context_tokens)(concurrency)


def prepare_steady_state(costs, rates, calib, *, input_tokens, output_tokens, max_num_tokens, chunked_prefill, shape,
                         arrivals="burst", launch=GRAPHED, speculation=None, cached_tokens=0.0,
                         decode_context_tokens=None):
    """:func:`steady_state` with all but the concurrency fixed, for a solve that asks it at many: returns
    ``state(concurrency)``, the :class:`SteadyState` ``steady_state`` gives with these arguments, to the bit. What
    depends only on the fixed arguments (the lengths, the shape's keywords, the engine's flags and the iteration
    time's own fixed part, :func:`~aisize.serving.iteration.prepare_iteration_time`) is read once, by the same
    expressions."""
    return _prepare(costs, rates, calib, input_tokens, output_tokens, max_num_tokens, chunked_prefill, shape, arrivals,
                    launch, speculation, cached_tokens, decode_context_tokens)


def _prepare(costs, rates, calib, input_tokens, output_tokens, max_num_tokens, chunked_prefill, shape, arrivals,
             launch, speculation, cached_tokens, decode_context_tokens):
    """The concurrency's part of :func:`steady_state` as a closure over what its other arguments fix."""
    o = _number(np.asarray(output_tokens, dtype=float))
    full = _number(np.asarray(input_tokens, dtype=float))
    ctx = full + 0.5 * o if decode_context_tokens is None else np.asarray(decode_context_tokens, dtype=float)
    if _ndim(cached_tokens) == 0 and not cached_tokens > 0:  # nothing cached: prefill_work's whole prompt, as is
        i = attention = full
    else:
        i, attention = prefill_work(full, cached_tokens)  # the prompt tokens computed, and their attention's length
    tau = 1.0 if speculation is None else speculation.acceptance_length
    steps = 1.0 + (o - 1.0) / tau  # iterations of a request's life
    kw = shape.kwargs()
    verify = 1.0 if speculation is None else speculation.verify_tokens
    mixes = launch.mixes_prefill
    balance = launch.balance_iters
    fixed_nd = max(map(_ndim, (ctx, i, attention, *kw.values())))
    one_verify = verify == 1.0  # decoding * 1.0 is decoding to the bit (a float64 number or array): skipped
    # whole prompts of one length (chunked_prefill a false bool, I one number): no prompt spans iterations, so
    # spans is ones of the budget's shape (np.where's of a false condition and 1.0) and the per-prompt share stays
    whole = type(chunked_prefill) in (bool, np.bool_) and not chunked_prefill and _ndim(i) == 0
    iterate = prepare_iteration_time(costs, rates, calib, decode_context=ctx, prompt_tokens=attention,
                                     overlap=launch.overlap, speculation=speculation, **kw)

    def state(concurrency):
        held = np.asarray(concurrency, dtype=float)  # the state's concurrency, as given
        b = _number(held)
        m = b / steps  # prefills completing per iteration
        decoding = b - m
        # prompt tokens an iteration may still take: what decoding leaves of the budget, or all of it where a
        # prefill iteration runs alone
        budget = np.maximum(max_num_tokens - (_times(decoding, verify, one_verify) if mixes else 0.0), 1.0)
        if chunked_prefill and arrivals == "burst" and mixes:  # a waiting queue fills every iteration's budget
            prefill_tokens, prompts, share = m * i, m, None
            spans = np.ceil(i / budget)
        elif chunked_prefill and arrivals == "burst":  # ... or runs alone in iterations of a full budget
            share = np.minimum(m * i / budget, 1.0)
            prefill_tokens, prompts = m * i / share, m / share
            spans = np.ceil(i / budget)
        else:
            # whole prompts while they fit the budget; with chunking a longer prompt spans
            # ceil(I / budget) iterations of a full budget each
            fit = budget / i if chunked_prefill else np.maximum(np.floor(budget / i), 1.0)
            if whole:
                spans = np.ones(np.shape(budget))
            else:
                spans = np.where(chunked_prefill & (i > budget), np.ceil(i / budget), 1.0)
            if arrivals == "burst":
                per = fit
            else:  # a Poisson number, given at least one, capped by what fits
                per = np.minimum(m / np.maximum(-np.expm1(-m), 1e-12), np.maximum(fit, 1.0))
                if balance:  # held until every attention-DP rank has one: a set of one per rank
                    dp = np.asarray(shape.attention_dp, dtype=float)
                    per_rank = np.maximum(np.floor(budget / dp / i), 1.0) if not chunked_prefill else fit / dp
                    # at so light a load that the timeout ends most holds, a release carries what came meanwhile
                    fewest = np.minimum(dp, np.maximum(m * balance, 1.0))
                    per = np.where(dp > 1, _clip(per, fewest, np.maximum(dp * per_rank, fewest)), per)
            if not whole:  # (with spans all ones, np.where gives per's values in an array of per's shape)
                per = np.where(spans > 1, 1.0 / spans, per)
            share = np.minimum(m / per, 1.0)
            prefill_tokens, prompts = np.minimum(per * i, budget), per
        # the iteration without prefill work and the one with it in one call, along a new first axis
        # (numpy's cost per operation, not the arithmetic, is most of an iteration's evaluation here)
        nd = max(_ndim(decoding), _ndim(prefill_tokens), _ndim(prompts), fixed_nd)
        prefill_tokens, prompts = _without_and_with(prefill_tokens, nd), _without_and_with(prompts, nd)
        # without mixing, the prefill iteration carries no decoding sequences and the decode iteration follows it
        running = decoding if mixes else _without_and_with(decoding, nd)[::-1]
        graphed = launch.graphed(running, _times(running, verify, one_verify) + prefill_tokens, prompts > 0)
        decode_only, with_prefill = iterate(running, prefill_tokens, prompts, graphed, True)
        if not mixes:  # the decoders advance once per prefill iteration and the decode iteration after it
            with_prefill = with_prefill + decode_only
        share = np.ones_like(with_prefill) if share is None else share
        mean = (1.0 - share) * decode_only + share * with_prefill
        requests = b / (steps * mean)
        return SteadyState(held, mean, decode_only, with_prefill, share, spans, requests * o, requests, tau, mixes)
    return state
