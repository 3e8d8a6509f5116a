"""The serving solve's per-call cuts (issue 51 item 2) give every figure of numpy's long way, to the bit.

- :func:`aisize.serving.iteration.iteration_time` keeps a shape's constants (``iteration_shape._Layout``) and skips dividing or
  multiplying by a single 1: a replica given as plain numbers must equal the same replica given as one-element
  arrays (no layout kept, every division done), field by field, bit by bit;
- :func:`aisize.serving.latency.littles_law_concurrency` steps one root in plain floats: its root must equal the
  numpy loop's (the same rate as a one-element array), over roots that settle, kink, saturate and start from a
  bracket; its helpers must give numpy's division by zero, where, clip and nan_to_num on every edge value;
- :func:`aisize.serving.steady.steady_state` computes a plain concurrency through numpy scalars: its figures must
  equal a one-element array's;
- :func:`aisize.serving.latency.ttft_mixture_quantiles` times a full chunk and the last in one call: iteration_time
  must be elementwise (two iterations stacked along a new axis are each the one alone);
- :func:`aisize.queueing.mgc_wait` keeps its quantiles' checked tails: the same waits, and a bad quantile is still
  refused every time.

No timings are asserted here (``benchmarks/bench_sliders.py`` measures them).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from aisize.queueing import analytic as A
from aisize.serving import iteration as I
from aisize.serving import iteration_comm as C
from aisize.serving import iteration_shape as IS
from aisize.serving import latency as L
from aisize.serving import scalar_ops as O
from aisize.serving import steady as S
from solve_replicas import REPLICAS, replica


def _bits(x):
    a = np.asarray(x)
    return a.dtype.str, a.tobytes()


def _fields(it, shape=None) -> dict:
    """Every figure of an IterationTime (and its seconds), as bytes of the given broadcast shape."""
    out = {}
    for k, v in list(vars(it).items()) + [("gpu_seconds", it.gpu_seconds), ("seconds", it.seconds)]:
        if k == "overlap" or v is None:
            continue
        a = np.asarray(v, dtype=float)
        out[k] = np.broadcast_to(a, shape if shape is not None else a.shape).tobytes()
    return out


STEPS = [  # (decode_sequences, decode_context, prefill_tokens, prefill_prompts, prompt_tokens)
    (64.0, 1150.0, np.array([0.0, 1000.0]), np.array([0.0, 1.0]), 1000.0),
    (np.float64(3.5), np.float64(900.0), np.array([[0.0], [4000.0]]), np.array([[0.0], [4.0]]), np.array(1000.0)),
    (np.array([1.0, 33.0, 250.0]), 1300.0, np.array([[0.0], [512.0]]), np.array([[0.0], [0.5]]), 512.0),
    (0.0, 1.0, 8192.0, 8.0, 1024),
    (2048.0, 1500.0, 0.0, 0.0, 1000.0),
]


def _inline_iteration_time(costs, rates, calib, *, decode_sequences, decode_context, prefill_tokens,
                   prefill_prompts, prompt_tokens, gpus=1, attention_dp=1, pipeline_parallel=1,
                   stage_link_bytes_per_s=None, expert_parallel=None, speculation=None, graphed=True,
                   overlap=True, scaleup_domain=None, scaleout_bytes_per_s=None):
    """iteration_time as it was before its shape constants were kept (a5 c7cdfda), every term inline."""
    g = np.asarray(gpus, dtype=float)
    dp = np.asarray(attention_dp, dtype=float)
    pp = np.asarray(pipeline_parallel, dtype=float)
    ep = g if expert_parallel is None else np.asarray(expert_parallel, dtype=float)
    tp = g / dp
    v = 1.0 if speculation is None else float(speculation.verify_tokens)
    n = (decode_sequences * v + prefill_tokens) / pp  # tokens of one micro-batch through every linear layer
    sampled = (decode_sequences * v + prefill_prompts) / pp
    seqs = decode_sequences / pp
    prompts = prefill_prompts / pp
    # attention-DP groups run their own sequences; prompts come whole, so the group holding the most
    # prompt tokens sets the pace (with one group, all of them)
    per_prompt = np.where(prompts > 0, prefill_tokens / pp / np.maximum(prompts, 1e-12), 0.0)
    busiest_prompts = np.maximum(prompts / dp, np.minimum(prompts, 1.0))
    n_group = seqs * v / dp + busiest_prompts * per_prompt  # tokens through one group's attention and dense layers
    mem = rates.memory_bytes_per_s
    linear = (np.maximum(costs.attention_flops_per_token * n_group / tp / rates.attention_gemm_flops_per_s,
                         costs.attention_weight_bytes / tp / mem)
              + np.maximum(costs.dense_flops_per_token * n_group / tp / rates.dense_gemm_flops_per_s,
                           costs.dense_weight_bytes / tp / mem))
    if rates.kernel_gemms is not None:  # the engine's GEMMs as measured on this GPU, where tables cover them
        linear = I.kernel_linear_seconds(costs, *rates.kernel_gemms, n_group, tp, linear)
    moe_fixed = 0.0
    if rates.kernel_moe is not None and rates.kernel_moe_fixed_only:  # the roofline + the operator's fixed time
        experts = I._experts(costs, rates, calib, n, g, ep)
        moe_fixed = I.kernel_fixed_seconds(costs, *rates.kernel_moe, g, ep,
                                         lambda t: I._experts(costs, rates, calib, t, g, ep))
    elif rates.kernel_moe is not None and not rates.kernel_moe_cap:  # the engine's MoE operator as measured
        experts = I.kernel_experts_seconds(costs, *rates.kernel_moe, n, g, ep,  # on this GPU, where tables cover it
                                         lambda: I._experts(costs, rates, calib, n, g, ep))
    elif rates.kernel_moe is not None and costs.moe_layers:  # the roofline, capped by the measured operator on one GPU
        experts = I.capped_roofline(costs, rates, n, g, ep, lambda: I._experts(costs, rates, calib, n, g, ep))()
    else:
        experts = I._experts(costs, rates, calib, n, g, ep)
    head = np.maximum(costs.head_flops_per_token * sampled / g / rates.head_flops_per_s,
                      costs.head_weight_bytes / g / mem) + sampled / g * costs.vocab * I.LOGIT_BYTES * 2.0 / mem
    elementwise = calib.elementwise_bytes_per_token * costs.hidden * costs.layers * n_group / mem
    kv_split = np.minimum(tp, costs.kv_heads) * dp
    decode_attention = np.maximum(seqs * costs.kv_bytes(decode_context) / kv_split / mem,
                                  seqs * v * costs.decode_attention_flops(decode_context) / g
                                  / rates.attention_flops_per_s)
    prefill_attention = (busiest_prompts * (costs.attention_flops(prompt_tokens, prompt_tokens)
                                            + costs.ssm_scan_flops_per_token * prompt_tokens) / tp
                         / rates.attention_flops_per_s)
    table_share = None
    if rates.kernel_attention is not None:  # the engine's attention kernels as measured on this GPU, where covered
        scan = busiest_prompts * costs.ssm_scan_flops_per_token * prompt_tokens / tp / rates.attention_flops_per_s
        attention_only = (busiest_prompts * costs.attention_flops(prompt_tokens, prompt_tokens) / tp
                          / rates.attention_flops_per_s)
        verify_batch, verify_tp = I.verify_attention_lookup(costs.model, seqs / dp, v, tp)
        decode_attention, prefill_attention, table_share = I._kernel_attention(
            costs, rates.kernel_attention, verify_batch, decode_context, busiest_prompts, prompt_tokens, tp,
            decode_attention, attention_only, verify_tp)
        prefill_attention = prefill_attention + scan
    if costs.mamba_layers:  # each decoding sequence reads and writes its Mamba-2 state once per step
        decode_attention = decode_attention + seqs / dp * 2.0 * costs.ssm_state_bytes(tp) / mem
    hidden_bytes = n_group * costs.hidden * I.ACTIVATION_BYTES
    latency = calib.collective_seconds
    out = None if scaleout_bytes_per_s is None else float(scaleout_bytes_per_s) * calib.link_efficiency
    reduce = C.all_reduce_seconds(hidden_bytes, tp, rates.link_bytes_per_s, latency, scaleup_domain=scaleup_domain,
                                scaleout_bytes_per_s=out)
    if rates.kernel_allreduce is not None and out is None:  # one server's all-reduce as measured on the GPU
        reduce = I.kernel_allreduce_seconds(*rates.kernel_allreduce, hidden_bytes, tp, reduce)
    comm = 2.0 * costs.layers * reduce
    if costs.moe_layers:  # attention-DP groups gather their tokens for the experts and scatter them back
        gather = (dp - 1.0) * hidden_bytes / rates.link_bytes_per_s + latency
        remote = 0.0
        if out is not None:
            # across servers engines dispatch each token to the ranks of its experts and combine it back
            # (DeepEP's all-to-all [10]: fp8 out, 16-bit back); the share bound for other servers crosses
            # the NICs, each phase once per MoE layer, and the slower of the two links sets the pace
            remote = C.cross_server_dispatch_seconds(n_group, costs.experts_per_token, ep, g, scaleup_domain,
                                                   costs.hidden, out)
            gather = np.maximum(gather, 0.5 * remote)
        if rates.kernel_gather is not None and out is None and rates.dp_exchange_by_sizes:
            # TensorRT-LLM's NCCL broadcasts and reduces by per-rank sizes [11] [12], as NCCL measures them
            roofline = C.exchange_by_sizes_seconds(costs, n, n_group, dp, rates.link_bytes_per_s, latency)
            out_bytes, back_bytes = C.exchange_by_sizes_bytes(costs, n)
            exchange = C.kernel_gather_scatter_seconds(rates.kernel_gather, out_bytes, dp, roofline, back_bytes)
            comm = comm + costs.moe_layers * np.where(dp > 1, exchange, 0.0)
        elif rates.kernel_gather is not None and out is None:  # NCCL's all-gather + reduce-scatter, as measured
            exchange = C.kernel_gather_scatter_seconds(rates.kernel_gather, dp * hidden_bytes, dp, 2.0 * gather)
            comm = comm + costs.moe_layers * np.where(dp > 1, exchange, 0.0)
        elif rates.dp_exchange_by_sizes:  # each rank's own tokens, quantized out, 16-bit back [11]
            exchange = C.exchange_by_sizes_seconds(costs, n, n_group, dp, rates.link_bytes_per_s, latency)
            if out is not None:
                exchange = np.maximum(exchange, remote)
            comm = comm + costs.moe_layers * np.where(dp > 1, exchange, 0.0)
        else:
            comm = comm + 2.0 * costs.moe_layers * np.where(dp > 1, gather, 0.0)
    overhead = costs.layers * rates.layer_seconds + costs.moe_layers * rates.moe_layer_seconds + moe_fixed
    launch = np.where(graphed, 0.0, costs.layers * calib.eager_layer_seconds)
    host = rates.host_seconds_per_sequence * sampled * pp / dp
    # a round is p stage-times; a stage runs 1/p of every per-layer term, the last one the head
    link = rates.link_bytes_per_s if stage_link_bytes_per_s is None else (
        np.asarray(stage_link_bytes_per_s, dtype=float) * calib.link_efficiency)
    send = np.where(pp > 1, pp * (n_group * costs.hidden * I.ACTIVATION_BYTES / tp / link + latency), 0.0)
    drafts = _inline_draft_seconds(speculation, rates, calib, seqs, decode_context,
                                   dict(gpus=gpus, attention_dp=attention_dp, expert_parallel=expert_parallel))
    return I.IterationTime(linear, experts, head * pp, elementwise, decode_attention, prefill_attention,
                         comm + send, overhead + drafts * pp + 0.0 * n, host, launch, overlap, table_share)


def _inline_draft_seconds(spec, rates, calib, seqs, decode_context, shape_kwargs):
    """The drafter's k passes as aisize.serving.speculative.draft_seconds wrote them before the iteration prepared them
    once (speculative.prepare_draft_seconds): two iteration times asked whole at every batch."""
    if spec is None or spec.draft_costs is None:
        return 0.0
    seqs = np.asarray(seqs, dtype=float)
    common = dict(decode_sequences=seqs, decode_context=decode_context, prefill_tokens=0.0 * seqs,
                  prefill_prompts=0.0 * seqs, prompt_tokens=1.0, **shape_kwargs)
    one = I.iteration_time(spec.draft_costs, rates, calib, **common)
    first = I.iteration_time(spec.draft_costs, rates, calib, speculation=spec.first_pass, **common)
    first_seconds = first.gpu_seconds - first.head_seconds + one.head_seconds
    passes = first_seconds + (spec.draft_tokens - 1) * one.gpu_seconds + spec.draft_tokens * calib.draft_step_seconds
    return np.where(seqs > 0, passes, 0.0)


@pytest.mark.parametrize("name", list(REPLICAS))
def test_every_figure_is_the_inline_forms_to_the_bit_and_type(name):
    rep = replica(name)
    for (seqs, ctx, tokens, prompts, prompt), graphed in itertools.product(STEPS, (True, False)):
        step = dict(decode_sequences=seqs, decode_context=ctx, prefill_tokens=tokens, prefill_prompts=prompts,
                    prompt_tokens=prompt, graphed=graphed, speculation=rep.speculation, **rep.shape.kwargs())
        IS._LAYOUTS.clear()
        inline = _inline_iteration_time(rep.costs, rep.rates, rep.calibration, **step)
        for _ in range(2):  # a new layout, then the kept one
            got = I.iteration_time(rep.costs, rep.rates, rep.calibration, **step)
            assert {k: (type(v), _bits(v)) for k, v in vars(got).items()} == \
                {k: (type(v), _bits(v)) for k, v in vars(inline).items()}, (name, step)


@pytest.mark.parametrize("n", [1, 1.0, 0.5, 2, 8, np.nan])
def test_an_all_reduce_of_one_group_size_is_numpys_where(n):
    for payload, domain in itertools.product((np.array([[0.0, 3e6], [1e9, np.inf]]), 3e6, np.array(5.0)), (None, 4)):
        with np.errstate(invalid="ignore"):  # inf - inf in the ring the long way computes
            got = C.all_reduce_seconds(payload, n, 4.5e11, 5e-6, scaleup_domain=domain,
                                       scaleout_bytes_per_s=5e10)
            long_way = C.all_reduce_seconds(payload, np.array([[n]]), 4.5e11, 5e-6, scaleup_domain=domain,
                                            scaleout_bytes_per_s=5e10)  # an array: the ring and np.where
        assert type(got) is np.ndarray and np.shape(got) == np.shape(payload)
        assert _bits(got) == _bits(long_way), (n, payload, domain)


@pytest.mark.parametrize("name", list(REPLICAS))
def test_a_kept_layout_and_the_skipped_ones_give_the_long_ways_figures(name):
    rep = replica(name)
    kw = rep.shape.kwargs()
    as_arrays = {k: (v if v is None or k.startswith("scale") else np.array([v])) for k, v in kw.items()}
    for (seqs, ctx, tokens, prompts, prompt), graphed in itertools.product(STEPS, (True, False)):
        step = dict(decode_sequences=seqs, decode_context=ctx, prefill_tokens=tokens, prefill_prompts=prompts,
                    prompt_tokens=prompt, graphed=graphed, speculation=rep.speculation)
        IS._LAYOUTS.clear()
        cold = I.iteration_time(rep.costs, rep.rates, rep.calibration, **step, **kw)
        kept = I.iteration_time(rep.costs, rep.rates, rep.calibration, **step, **kw)  # from the kept layout
        assert IS._LAYOUTS, "a replica of plain numbers keeps its layout"
        long_way = I.iteration_time(rep.costs, rep.rates, rep.calibration, **step, **as_arrays)
        shape = np.shape(long_way.seconds)
        for it in (cold, kept):
            assert {k: type(v) for k, v in vars(it).items()} == {k: type(v) for k, v in vars(cold).items()}
            assert _fields(it, shape) == _fields(long_way, shape), (name, step)


@pytest.mark.parametrize("name", list(REPLICAS))
def test_two_iterations_stacked_along_a_new_axis_are_each_alone(name):
    """What the steady state's and the TTFT mixture's single calls rely on: iteration_time is elementwise."""
    rep = replica(name)
    decoding = np.array([[3.0], [250.0]])
    chunk = np.array([[8192.0, 8192.0, 8192.0], [7000.0, 7000.0, 7000.0]])
    last = np.array([[100.0, 1000.0, 5000.0], [1.0, 700.0, 6999.0]])
    prompts = np.array([[1.0, 2.0, 5.0], [1.0, 1.0, 7.0]])

    def one(tokens, n):
        return I.iteration_time(rep.costs, rep.rates, rep.calibration, decode_sequences=decoding,
                                decode_context=1200.0, prefill_tokens=tokens, prefill_prompts=n, prompt_tokens=1000.0,
                                graphed=rep.launch.graphed(decoding, decoding + tokens, tokens > 0),
                                speculation=rep.speculation, **rep.shape.kwargs()).seconds
    both = one(np.stack([chunk, last]), np.stack([1e-9 + 0.0 * prompts, prompts]))
    assert _bits(both[0]) == _bits(one(chunk, 1e-9 + 0.0 * prompts)) and _bits(both[1]) == _bits(one(last, prompts))


def test_a_layout_is_kept_per_replica_and_numbers_only():
    a, b = replica("dense 8B, TP 1"), replica("dense 70B, TP 4, FP8")
    IS._LAYOUTS.clear()
    step = dict(decode_sequences=8.0, decode_context=1000.0, prefill_tokens=0.0, prefill_prompts=0.0,
                prompt_tokens=1000.0)
    for rep in (a, b):
        I.iteration_time(rep.costs, rep.rates, rep.calibration, **step, **rep.shape.kwargs())
    assert len(IS._LAYOUTS) == 2
    I.iteration_time(a.costs, a.rates, a.calibration, **step, gpus=np.array([1, 2]))  # arrays: not kept
    I.iteration_time(a.costs, a.rates, a.calibration, **step, gpus=np.asarray(2))
    assert len(IS._LAYOUTS) == 2
    # another GPU count is another layout, with its own figures
    one = I.iteration_time(a.costs, a.rates, a.calibration, **step, gpus=1).seconds
    two = I.iteration_time(a.costs, a.rates, a.calibration, **step, gpus=2).seconds
    assert one != two and len(IS._LAYOUTS) == 3
    IS._layout.cache_clear()
    assert not IS._LAYOUTS


@pytest.mark.parametrize("x", [1.0, np.float64(1.0), np.array([1.0, 2.0]), -0.0, np.nan, np.inf, 3, np.array(7)])
def test_dividing_or_multiplying_by_one_is_skipped_only_where_it_gives_x_back(x):
    for f in (IS._per, IS._times):
        got = f(x, np.asarray(1.0), True)
        expected = x / np.asarray(1.0) if f is IS._per else x * np.asarray(1.0)
        assert type(got) is type(expected) and _bits(got) == _bits(expected)
        assert _bits(f(x, np.asarray(2.0), False)) == _bits(x / 2.0 if f is IS._per else x * 2.0)


def _long_root(tokens_per_s, iteration_seconds, slots, bracket=None):
    """The root by the numpy loop: the rate as a one-element array."""
    return L.littles_law_concurrency(np.array([tokens_per_s]), iteration_seconds, slots, bracket)[0]


def _kinked(x):
    """An iteration time that steps up where a batch fills a tile, and is flat past it."""
    x = np.asarray(x, dtype=float)
    return 0.01 + 1e-4 * x + 0.004 * (x > 37.0) + 0.002 * np.floor(x / 64.0)


ROOTS = [  # (tokens_per_s, T(B), slots): settling, on a kink, saturated, barely loaded, a flat T
    (2000.0, _kinked, 512.0), (3700.0, _kinked, 512.0), (1e6, _kinked, 256.0), (1e-3, _kinked, 512.0),
    (500.0, lambda x: 0.02 + 0.0 * np.asarray(x, dtype=float), 64.0),
    (9000.0, lambda x: 0.011 + 2e-5 * np.asarray(x, dtype=float) ** 1.3, 4096.0),
]


@pytest.mark.parametrize("rate, seconds, slots", ROOTS)
def test_one_root_in_plain_floats_is_the_numpy_loops_root(rate, seconds, slots):
    asked = []

    def t(x):
        asked.append(x)
        return seconds(x)
    got = L.littles_law_concurrency(rate, t, slots)
    assert type(got) is np.float64 and got is asked[-1]  # the last concurrency asked, so a caller may keep it
    assert _bits(got) == _bits(_long_root(rate, seconds, slots))
    # from a bracket of the roots at lower and higher rates
    lo, hi = L.littles_law_concurrency(0.7 * rate, seconds, slots), L.littles_law_concurrency(1.3 * rate, seconds,
                                                                                            slots)
    bracket = (lo, seconds(lo), hi, seconds(hi))
    assert _bits(L.littles_law_concurrency(rate, seconds, slots, bracket)) == _bits(
        _long_root(rate, seconds, slots, bracket))


def test_a_root_whose_iteration_time_comes_as_an_array_steps_in_numpy():
    def seconds(x):  # one element for a single concurrency: the steps go on in numpy, as numpy's loop did
        return np.atleast_1d(_kinked(x))
    for bracket in (None, (10.0, 0.011, 500.0, 0.0175)):
        got = L.littles_law_concurrency(2000.0, seconds, 512.0, bracket)
        assert type(got) is np.ndarray and got.shape == (1,)
        assert _bits(got) == _bits(_long_root(2000.0, seconds, 512.0, bracket))


EDGES = [0.0, -0.0, 1e-9, 1.0, -2.5, 7.0, 1e308, -1e308, math.inf, -math.inf, math.nan]


def test_the_plain_float_helpers_are_numpys():
    with np.errstate(all="ignore"):
        for a, b in itertools.product(EDGES, EDGES):
            assert _bits(O.divide(a, b)) == _bits(np.float64(a) / np.float64(b)), (a, b)
            assert _bits(O.where(a < b, a, b)) == _bits(np.where(a < b, a, b)), (a, b)
        for x, lo, hi in itertools.product(EDGES, EDGES, EDGES):
            assert _bits(O.finite_clip(x, lo, hi)) == _bits(np.clip(np.nan_to_num(x, nan=1e-9), lo, hi)), (x, lo, hi)
        grid = np.array(EDGES)
        x, lo, hi = (a.ravel() for a in np.meshgrid(grid, grid, grid))
        assert _bits(O.finite_clip(x, lo, hi)) == _bits(np.clip(np.nan_to_num(x, nan=1e-9), lo, hi))
    assert O.negate(True) is False and O.negate(False) is True
    assert list(O.negate(np.array([True, False]))) == [False, True]


@pytest.mark.parametrize("name", ["dense 8B, TP 1", "405B, PP 2", "MoE, MTP, attention DP"])
@pytest.mark.parametrize("arrivals", ["burst", "poisson"])
def test_a_plain_concurrency_is_computed_as_a_one_element_arrays(name, arrivals):
    rep = replica(name)
    kw = dict(input_tokens=1000.0, output_tokens=300.0, max_num_tokens=8192.0,
              chunked_prefill=rep.engine.chunked_prefill, shape=rep.shape, arrivals=arrivals, launch=rep.launch,
              speculation=rep.speculation)
    for b in (1.0, 37.5, 400.0):
        plain = S.steady_state(rep.costs, rep.rates, rep.calibration, concurrency=b, **kw)
        array = S.steady_state(rep.costs, rep.rates, rep.calibration, concurrency=np.array([b]), **kw)
        assert type(plain.concurrency) is np.ndarray and plain.concurrency.ndim == 0
        for k, v in vars(plain).items():
            assert np.ndim(v) == 0 and np.asarray(vars(array)[k]).size == 1, k
            assert _bits(v) == _bits(np.asarray(vars(array)[k]).ravel()[0]), k


def test_the_queues_kept_tails_give_the_same_waits_and_refuse_a_bad_quantile_every_time():
    A._tails.cache_clear()
    args = (np.array([3.0, 40.0]), 0.02, 2)
    first = A.mgc_wait(*args, service_cv=0.5, quantiles=(0.95, 0.99))
    again = A.mgc_wait(*args, service_cv=0.5, quantiles=(0.95, 0.99))
    arrays = A.mgc_wait(*args, service_cv=0.5, quantiles=(np.array(0.95), np.array(0.99)))  # not hashable
    assert [_bits(x) for x in first] == [_bits(x) for x in again] == [_bits(x) for x in arrays]
    assert A._tails((0.95, 0.99)) == (A.tail_probability(0.95), A.tail_probability(0.99))
    for _ in range(2):
        with pytest.raises(ValueError, match="quantiles"):
            A.mgc_wait(*args, quantiles=(0.95, 1.0))
