"""What :func:`aisize.serving.iteration.iteration_time` reads of a replica's shape alone, kept per shape.

A slider move solves new replicas at many concurrencies, each an iteration time on a few numbers, where numpy's
cost per call (not the arithmetic) is most of the time. Everything that depends only on the shape (its GPUs,
groups and stages, the model, the GPU's achieved rates and the calibration), not on the batch, is computed once
per shape by the expression ``iteration_time`` had inline, so its figures are the long way's to the bit; the
model's figures at a pair of lengths are kept per shape too. Where a shape has one stage, one attention group or
one token a step, dividing or multiplying by that 1 is skipped where it gives its operand back to the bit.
Measured and argued in docs/speed-solve.md.
"""

from __future__ import annotations

import numpy as np

from aisize.serving.calibration import REPLICATED_ELEMENTWISE_BYTES
from aisize.serving.kernel_moe import fixed_seconds as kernel_fixed_seconds
from aisize.serving.moe_format import low_latency_scale as moe_format_low_latency_scale
from aisize.serving.moe_format import scale as moe_format_scale


class _Layout:
    """What :func:`~aisize.serving.iteration.iteration_time` reads of a replica's shape alone (its GPUs, the model,
    the GPU's rates and the calibration, not the batch), each by the expression it had inline, so a shape's figures
    are those of the long way to the bit; kept per shape (:func:`_layout`) where every shape argument is a plain
    number."""

    __slots__ = ("held", "g", "dp", "pp", "ep", "tp", "v", "mem", "attention_weight_seconds", "dense_weight_seconds",
                 "head_weight_seconds", "elementwise_bytes_per_token", "kv_split", "ssm_state_bytes",
                 "overhead_seconds", "moe_format_delta", "moe_format_max_tokens", "eager_seconds", "link_bytes_per_s",
                 "scaleout_bytes_per_s", "_lengths",
                 "one_stage", "one_group", "one_token", "pipelined")

    def __init__(self, costs, rates, calib, gpus, attention_dp, pipeline_parallel, expert_parallel, speculation,
                 stage_link_bytes_per_s, scaleout_bytes_per_s):
        self.held = (costs, rates, calib, speculation)  # a kept layout holds what its key has by id
        g = self.g = np.asarray(gpus, dtype=float)
        dp = self.dp = np.asarray(attention_dp, dtype=float)
        self.pp = np.asarray(pipeline_parallel, dtype=float)
        ep = self.ep = g if expert_parallel is None else np.asarray(expert_parallel, dtype=float)
        tp = self.tp = g / dp
        self.v = 1.0 if speculation is None else float(speculation.verify_tokens)
        mem = self.mem = rates.memory_bytes_per_s
        self.attention_weight_seconds = costs.attention_weight_bytes / tp / mem
        self.dense_weight_seconds = costs.dense_weight_bytes / tp / mem
        self.head_weight_seconds = costs.head_weight_bytes / g / mem
        per_hidden = calib.elementwise_bytes_per_token  # "replicated": all of it on every GPU of the TP group
        if calib.elementwise_source == "split":  # the hidden-size part on every GPU, the rest over the TP group
            # (under attention DP a group's tokens over its tp GPUs: the MoE side's n tokens over g = dp x tp too)
            per_hidden = REPLICATED_ELEMENTWISE_BYTES + calib.elementwise_bytes_per_token / tp
        self.elementwise_bytes_per_token = per_hidden * costs.hidden * costs.layers
        self.kv_split = np.minimum(tp, costs.kv_heads) * dp
        self.ssm_state_bytes = costs.ssm_state_bytes(tp) if costs.mamba_layers else None
        moe_fixed = 0.0
        if rates.kernel_moe is not None and rates.kernel_moe_fixed_only:  # the roofline + the operator's fixed time
            from aisize.serving.iteration import _experts  # the roofline at one token (iteration imports this)
            moe_fixed = kernel_fixed_seconds(costs, *rates.kernel_moe, g, ep,
                                             lambda t: _experts(costs, rates, calib, t, g, ep))
        moe_layer = rates.moe_layer_seconds
        # what the low-latency MoE kernels change of the MoE layers' fixed time, in iterations of at most
        # moe_format_max_tokens tokens through a MoE layer (moe_layer_source="low_latency_kernels"; 0: none)
        self.moe_format_delta, self.moe_format_max_tokens = 0.0, rates.moe_format_max_tokens
        if rates.moe_format is not None and costs.moe_layers:  # scaled to the expert format (moe_format)
            if rates.moe_format_max_tokens is not None:
                self.moe_format_delta = costs.moe_layers * moe_layer * (
                    moe_format_low_latency_scale(costs, *rates.moe_format, g, ep) - 1.0)
            else:
                moe_layer = moe_layer * moe_format_scale(costs, *rates.moe_format, g, ep)
        self.overhead_seconds = costs.layers * rates.layer_seconds + costs.moe_layers * moe_layer + moe_fixed
        self.eager_seconds = costs.layers * calib.eager_layer_seconds
        self.link_bytes_per_s = rates.link_bytes_per_s if stage_link_bytes_per_s is None else (
            np.asarray(stage_link_bytes_per_s, dtype=float) * calib.link_efficiency)
        self.scaleout_bytes_per_s = (None if scaleout_bytes_per_s is None
                                     else float(scaleout_bytes_per_s) * calib.link_efficiency)
        self._lengths = {}
        # a single number 1 (one stage, one attention group, one token a step): x / 1 and x * 1 are x to the bit
        self.one_stage, self.one_group = _is_one(self.pp), _is_one(dp)
        self.one_token = self.v == 1.0
        # np.where(pp > 1, send, 0.0) is zeros of the tokens' shape where pp, tp and the link are single numbers
        # and pp is 1: the send need not be computed
        self.pipelined = not (self.one_stage and tp.ndim == 0 and np.ndim(self.link_bytes_per_s) == 0)

    def lengths(self, costs, decode_context, prompt_tokens):
        """(KV bytes of a sequence at the decoding context, its decode FLOPs per token, a prompt's attention and
        scan FLOPs): the model's figures at these lengths, kept per pair of plain positive lengths (a solve asks
        the same pair at every concurrency it tries)."""
        key = (_plain(decode_context), _plain(prompt_tokens))
        got = self._lengths.get(key) if None not in key else None
        if got is None:
            got = (costs.kv_bytes(decode_context), costs.decode_attention_flops(decode_context),
                   costs.attention_flops(prompt_tokens, prompt_tokens), costs.ssm_scan_flops_per_token * prompt_tokens)
            if None not in key:
                if len(self._lengths) >= _KEPT_LENGTHS:
                    self._lengths.clear()
                self._lengths[key] = got
        return got


_LAYOUTS: dict = {}  # (ids of the costs, rates, calibration and speculation, the shape's numbers) -> _Layout
_KEPT_LAYOUTS = 1024  # a few hundred bytes each; emptied whole when full
_KEPT_LENGTHS = 256


def _is_one(x) -> bool:
    """``x`` is a single number equal to 1."""
    return np.ndim(x) == 0 and x == 1.0


def _per(x, d, one):
    """``x / d``; ``x`` itself where ``one`` (d is the single number 1) and ``x`` is a float64 array or scalar, which
    dividing by 1 gives back to the bit (every IEEE value, signed zeros and NaN among them), in its type."""
    if one and (type(x) is np.float64 or (type(x) is np.ndarray and x.dtype.char == "d")):
        return x
    return x / d


def _times(x, f, one):
    """``x * f``; ``x`` itself where ``one`` (f is the single number 1) and ``x`` is a float64 array or scalar."""
    if one and (type(x) is np.float64 or (type(x) is np.ndarray and x.dtype.char == "d")):
        return x
    return x * f


def _plain(x):
    """``x`` as a float key where it is one positive number (an int, a float or a 0-d float array), else None
    (zeros, which may be -0.0, NaN and arrays are not kept). Equal keys enter ``np.asarray(x, dtype=float)`` as
    equal float64 numbers (an int by the same rounding)."""
    t = type(x)
    if t is float or t is np.float64 or t is int or (t is np.ndarray and x.ndim == 0 and x.dtype.kind in "fiu"):
        v = float(x)
        return v if v > 0 else None
    return None


def _layout(costs, rates, calib, gpus, attention_dp, pipeline_parallel, expert_parallel, speculation,
            stage_link_bytes_per_s, scaleout_bytes_per_s) -> _Layout:
    """The shape's :class:`_Layout`, kept where its numbers are plain ints or positive floats, else made for this
    call. A key equal to a kept one holds numbers equal to its plain positive ones (an array is not hashable), and
    each number enters as ``np.asarray(x, dtype=float)`` or ``float(x)``: the same figures whatever its type."""
    key = (id(costs), id(rates), id(calib), id(speculation)) + tuple(
        _frozen(x) for x in (gpus, attention_dp, pipeline_parallel, expert_parallel, stage_link_bytes_per_s,
                             scaleout_bytes_per_s))
    try:
        got = _LAYOUTS.get(key)
    except TypeError:  # an array among the numbers that may still change
        got = None
    if got is not None and got.held[0] is costs and got.held[1] is rates and got.held[2] is calib:
        return got
    got = _Layout(costs, rates, calib, gpus, attention_dp, pipeline_parallel, expert_parallel, speculation,
                  stage_link_bytes_per_s, scaleout_bytes_per_s)
    if all(x is None or type(x) is int or (type(x) is float and x > 0) or type(x) is _Frozen for x in key[4:]):
        if len(_LAYOUTS) >= _KEPT_LAYOUTS:
            _LAYOUTS.clear()
        _LAYOUTS[key] = got
    return got


class _Frozen(tuple):
    """A read-only array's key: (dtype, shape, bytes). Equal keys are equal arrays to the bit, which enter
    :class:`_Layout` as the same float64 numbers; read-only, the array a kept layout may alias cannot change."""


def _frozen(x):
    """``x`` itself, or a read-only numpy array's :class:`_Frozen` key (the sizing screen's shapes, a column of
    shapes asked at every step of its solves); a writeable array as is (unhashable: not kept), and so a read-only
    view of a writeable array, which can change under a kept layout."""
    if type(x) is np.ndarray and x.dtype.kind in "fiu" and _immutable(x):
        return _Frozen((x.dtype.str, x.shape, x.tobytes()))
    return x


def _immutable(x) -> bool:
    """``x`` and every array it views are read-only. The bases are asked first: a view ``np.broadcast_arrays`` made
    of a writeable array warns when its own flag is read (numpy's FutureWarning), and is not kept anyway."""
    base = x.base
    if base is not None and not (type(base) is np.ndarray and _immutable(base)):
        return False
    return not x.flags.writeable


_layout.cache_clear = _LAYOUTS.clear  # aisize.plan.clear_caches finds it (cold-plan benchmarks)
