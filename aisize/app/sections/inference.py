"""Inference: the selected service's model, load (a request rate or users in flight), tokens and their
spread, SLOs, replica shape, engine, speculative decoding, prompt reuse and KV-cache tiers.

Shows the planned replica shape and fleet, TTFT and TPOT (mean and p95) against
their targets under the planned load, the per-GPU memory, the speculation and
calibration the estimate used, the reuse and tier figures
(:mod:`aisize.app.sections.inference_reuse`), and TTFT/TPOT vs load
(:func:`aisize.plan.latency_curve`). Every figure is the planner's.
"""

from __future__ import annotations

import html
import math
from dataclasses import replace

import ipywidgets as widgets
import numpy as np

from aisize import catalog, charts, serving
from aisize import format as F
from aisize.app import controls as K
from aisize.app.sections import OWN_MODEL, Section, selected, show_model
from aisize.app.sections.inference_reuse import ReuseControls, reuse_cards
from aisize.app.state import set_path
from aisize.present.slo_text import slo_reason_text
from aisize.plan import latency_curve
from aisize.scenario.model import WEIGHT_PRECISIONS
from aisize.serving.curves import LOAD_RISE, curve_reads

MODELS = catalog.transformers.ids()
TP_CHOICES = [("auto (fewest GPUs)", "auto")] + [(str(t), t) for t in (1, 2, 4, 8, 16, 32, 64, 72)]
PP_CHOICES = [("auto", "auto")] + [(str(p), p) for p in (1, 2, 4, 8)]
ENGINES = [("TensorRT-LLM", "trtllm"), ("vLLM", "vllm"), ("SGLang", "sglang")]
# "draft" is left out: it needs a draft model, which a scenario cannot name (the plan refuses it)
SPECULATION = [("none", "none"), ("MTP (multi-token prediction)", "mtp"), ("EAGLE-3", "eagle3"),
               ("n-gram (prompt lookup)", "ngram")]
LOADS = [("request rate", "rate"), ("users in flight", "users")]


def memory_note(i, headroom: float) -> str:
    """Why a service's GPU memory runs to the GPU's full size while training keeps ``headroom`` free (HTML):
    the planner sizes a service with its engine's own memory share (aisize.serving.memory.replica_memory), not
    with ``policies.memory_headroom`` (aisize.plan.training only)."""
    est = i.estimate if i.estimate is not None else i.pools_estimate
    eng = serving.ENGINES[est.engine] if est is not None and est.engine in serving.ENGINES else None
    if eng is None:
        return ""
    share = (f"{F.pct(eng.kv_memory_fraction)} of the GPU for weights, runtime and its KV cache (its GPU memory "
             "utilisation flag)" if eng.kv_fraction_of_total else
             f"weights and runtime first, then {F.pct(eng.kv_memory_fraction)} of what they leave for its KV "
             "cache (its free GPU memory fraction flag)")
    bar = ("the bar shows a decode GPU's weights and the KV cache in use at the planned batch, not the pool the "
           "engine reserves" if i.serving_mode == "disaggregated" else "so the bar fills the GPU by design")
    return (f"<p class='aisize-note'>Services are exempt from the GPU memory headroom ({F.pct(headroom)}, "
            f"policies.memory_headroom, kept free by training jobs): {html.escape(eng.name)} claims {share}; "
            f"{bar}.</p>")


def ceiling_note(curve, disaggregated: bool) -> str:
    """Why the TPOT p95 of ``curve`` levels off while its mean rises (HTML; "" where it does not): the p95 decode batch
    is at a replica's slots, and a full batch's iteration is the longest a token takes; the requests beyond wait
    for a slot, in their TTFT (aisize.serving.pool_pair.pools_state, aisize.serving.latency.loaded_state)."""
    rate, p95, mean = (curve[k].to_numpy(dtype=float)
                       for k in ("requests_per_s", "tpot_p95_seconds", "tpot_seconds"))
    ok = np.isfinite(p95) & np.isfinite(mean)
    rate, p95, mean = rate[ok], p95[ok], mean[ok]
    flat = p95 >= p95.max(initial=0.0) * (1 - 1e-9)
    if len(p95) < 3 or flat.sum() < 2:
        return ""
    k = int(np.argmax(flat))
    if not mean[-1] > mean[k]:
        return ""
    where = "decode replica" if disaggregated else "replica"
    return (f"<p class='aisize-note'>TPOT p95 levels off at {F.ms(p95[k])} from {F.sig(rate[k])} requests/s while the "
            f"mean rises to {F.ms(mean[-1])}: there the p95 batch fills every slot of a {where}, and a full batch's "
            "iteration is the longest a token takes. The requests beyond wait for a slot, which their TTFT carries.</p>")


class InferenceSection(Section):
    title = "Inference"

    def __init__(self, state):
        self.service = K.dropdown("Service", [], None, "Which inference workload of the scenario these controls edit")
        self.model = K.dropdown("Model", K.options(MODELS), None, "Model served (catalog id)")
        self.weights = K.dropdown("Weight precision", list(WEIGHT_PRECISIONS), None,
                                  "Number format of the served weights")
        self.kv = K.dropdown("KV cache precision", ["fp32", "bf16", "fp16", "fp8"], None,
                             "Number format of the attention key/value cache")
        self.load = K.dropdown("Load given as", LOADS, "rate", "A request rate (open loop, random arrivals), or "
                               "users in flight (each sends its next request when answered)")
        self.rate = K.log_slider("Request rate [requests/s]", 10, 0.1, 10_000, "Mean arrival rate of requests")
        self.users = K.log_slider("Users in flight", 64, 1, 1_000_000, "Requests held in flight (a closed loop, "
                                  "no think time); the plan finds the rate they send", fmt=".0f")
        self.prompt = K.log_slider("Prompt [tokens]", 1024, 16, 131_072, "Input tokens per request",
                                   steps_per_decade=12, fmt=".0f")
        self.output = K.log_slider("Output [tokens]", 256, 1, 32_768, "Generated tokens per request",
                                   steps_per_decade=12, fmt=".0f")
        self.prompt_cv = K.float_slider("Prompt length CV", 0.0, 0.0, 4.0, 0.05, "Spread of prompt lengths "
                                        "(lognormal coefficient of variation; 0: all the same)", fmt=".2f")
        self.output_cv = K.float_slider("Output length CV", 0.0, 0.0, 4.0, 0.05, "Spread of output lengths "
                                        "(reasoning models: 1 or more)", fmt=".2f")
        self.ttft = K.log_slider("TTFT target [ms]", 2000, 50, 60_000, "Time to first token target (prefill)")
        self.tpot = K.log_slider("TPOT target [ms/token]", 50, 5, 1000, "Time per output token target (decode)")
        self.stat = K.dropdown("SLO statistic", [("p95", "p95"), ("p99", "p99"), ("mean", "mean")], "p95",
                               "Whether the TTFT and TPOT targets bound the p95, the p99 or the mean")
        self.tp = K.dropdown("Tensor parallel", TP_CHOICES, "auto", "GPUs per pipeline stage; must divide the heads")
        self.pp = K.dropdown("Pipeline stages", PP_CHOICES, "auto", "Stages of a replica; may span servers")
        self.mode = K.dropdown("Serving", [("aggregated", "aggregated"), ("disaggregated", "disaggregated")],
                               "aggregated", "Disaggregated: separate prefill and decode pools, KV shipped between")
        self.engine = K.dropdown("Engine limits", ENGINES, "trtllm",
                                 "Whose scheduler limits and defaults the replica runs with")
        self.speculative = K.dropdown("Speculative decoding", SPECULATION, "none",
                                      "A drafter proposes tokens the model verifies in one pass")
        self.draft_tokens = K.int_slider("Draft tokens per step", 1, 1, 16, 1, "Tokens drafted per decode step (k)")
        self.reuse = ReuseControls(lambda: None if self._syncing or self.service.value is None
                                   else self.state.data["workloads"][self.service.value], self._change,
                                   self._change_ahead)
        self.figures, self.memory_note, self.latency_note = widgets.HTML(), widgets.HTML(), widgets.HTML()
        self.memory_chart, self.latency_chart = K.ChartSlot(), K.ChartSlot()
        self._curve_at = (None, None)  # (inputs, frame) of the last replica's latency curve
        self._rows_at = (None, None, None)  # (key, rows, curve) of the last chart rows
        super().__init__(state)
        w = self._path
        self.bind(self.model, lambda: None if self.model.value == OWN_MODEL else w("model")())
        self.bind(self.weights, w("weight_precision"))
        self.bind(self.kv, w("kv_precision"))
        self.bind(self.rate, lambda: w("requests_per_s")() if self.load.value == "rate" else None, float)
        self.bind(self.users, lambda: w("concurrency")() if self.load.value == "users" else None,
                  lambda v: float(max(round(v), 1)))
        self.bind(self.prompt_cv, w("prompt_cv"), float)
        self.bind(self.output_cv, w("output_cv"), float)
        self.bind(self.draft_tokens, lambda: w("speculative_tokens")() if self.speculative.value != "none" else None,
                  int)
        self.reuse.bind(self.bind, lambda *keys: lambda: None if self.service.value is None or
                        self.state.data["workloads"][self.service.value][keys[0]] is None
                        else ("workloads", self.service.value) + keys)
        self.load.observe(self._on_load, names="value")
        self.speculative.observe(self._on_speculative, names="value")
        self.bind(self.prompt, w("prompt_tokens"), lambda v: int(round(v)))
        self.bind(self.output, w("output_tokens"), lambda v: int(round(v)))
        self.bind(self.ttft, w("ttft_target_ms"), float)
        self.bind(self.tpot, w("tpot_target_ms"), float)
        self.bind(self.stat, w("slo_statistic"))
        self.bind(self.tp, w("tensor_parallel"))
        self.bind(self.pp, w("pipeline_parallel"))
        self.bind(self.mode, w("serving"))
        self.bind(self.engine, w("engine"))
        self.service.observe(lambda _: self._on_plan(self.state.plan), names="value")
        # the service's controls, hidden when the scenario has no service (they would edit nothing)
        self.controls = widgets.VBox([self.model, self.weights, self.kv, self.load, self.rate, self.users, self.prompt,
                                      self.output, self.prompt_cv, self.output_cv, self.ttft, self.tpot, self.stat,
                                      self.tp, self.pp, self.mode, self.engine, self.speculative, self.draft_tokens,
                                      self.reuse.view])
        left = K.controls_column([self.service, self.controls, self.error])
        self.view.children = [widgets.HBox([left, K.figures_column([self.figures, self.memory_chart.box,
                                                                    self.memory_note])]),
                              self.latency_chart.box, self.latency_note]
        self.quietly(self.sync)

    def _path(self, field):
        return lambda: None if self.service.value is None else ("workloads", self.service.value, field)

    def _change(self, updates: dict) -> None:
        """Set several fields of the selected service at once (``updates``: a path under the service -> its
        value), as one edit: fields that exclude each other change together. A refusal shows its message and
        puts the controls back to the scenario."""
        if self._syncing or self.service.value is None:
            return
        refused = self.state.replace(_updated(self.state.data, self.service.value, updates))
        if refused:
            self.quietly(self.sync)
            K.assign(self.error, "value", K.error_html(refused))

    def _change_ahead(self, updates: dict) -> None:
        """Plan ahead the scenario ``updates`` would make of the selected service (a multi-field slider's next
        step: :class:`aisize.app.ahead.PlanAhead`)."""
        if self.service.value is not None:
            i = self.service.value
            self.state.ahead.schedule(lambda data: _updated(data, i, updates))

    def _on_load(self, change) -> None:
        """Switch between a rate and users in flight, keeping the load the plan found: by Little's law, users
        = rate x mean request latency (the planner's own relation for a service given as users)."""
        if self._syncing or self.service.value is None:
            return
        i = self._plan_service(self.state.plan)
        if change["new"] == "users":
            users = i.requests_per_s * i.latency_mean_seconds
            users = min(max(round(users), 1), 10 ** self.users.max) if math.isfinite(users) else round(self.users.value)
            self._change({("requests_per_s",): None, ("concurrency",): float(users)})
        else:
            rate = i.requests_per_s if math.isfinite(i.requests_per_s) and i.requests_per_s > 0 else self.rate.value
            self._change({("requests_per_s",): float(rate), ("concurrency",): None})

    def _on_speculative(self, change) -> None:
        method = None if change["new"] == "none" else change["new"]
        self._change({("speculative_method",): method,
                      ("speculative_tokens",): None if method is None else int(self.draft_tokens.value)})

    def sync(self) -> None:
        selected(self.service, self.state.workloads("inference"))
        K.assign(self.controls.layout, "display", "none" if self.service.value is None else None)
        if self.service.value is None:
            return
        w = self.state.data["workloads"][self.service.value]
        show_model(self.model, MODELS, w["model"], self.state.scenario.workloads[self.service.value].model)
        for knob, key in ((self.weights, "weight_precision"), (self.kv, "kv_precision"),
                          (self.rate, "requests_per_s"), (self.users, "concurrency"), (self.prompt, "prompt_tokens"),
                          (self.output, "output_tokens"), (self.prompt_cv, "prompt_cv"), (self.output_cv, "output_cv"),
                          (self.ttft, "ttft_target_ms"), (self.tpot, "tpot_target_ms"), (self.stat, "slo_statistic"),
                          (self.tp, "tensor_parallel"), (self.pp, "pipeline_parallel"), (self.mode, "serving"),
                          (self.engine, "engine")):
            if w[key] is not None:  # exactly one of rate and users is set
                K.assign(knob, "value", w[key])
        if w["speculative_method"] is not None:
            K.assign(self.draft_tokens, "value", w["speculative_tokens"] or 1)  # the plan's default: 1
        users = w["concurrency"] is not None
        K.assign(self.load, "value", "users" if users else "rate")
        K.show_if(not users, self.rate)
        K.show_if(users, self.users)
        K.assign(self.speculative, "value", w["speculative_method"] or "none")
        K.show_if(w["speculative_method"] is not None, self.draft_tokens)
        self.reuse.sync(w)

    def _plan_service(self, plan):
        name = self.state.data["workloads"][self.service.value]["name"]
        return next(i for i in plan.inference if i.name == name)

    def update(self, plan) -> None:
        if self.service.value is None:  # nothing of the last scenario's service stays on the page
            K.assign(self.figures, "value", "<p>This scenario has no inference service.</p>")
            K.assign(self.memory_note, "value", "")
            self.memory_chart.clear()
            self.latency_chart.clear()
            K.assign(self.latency_note, "value", "")
            return
        i = self._plan_service(plan)
        K.assign(self.figures, "value", self._figures(i, plan.assumptions["plan.knee_factor"],
                                                      plan.assumptions["plan.knee_elasticity"]))
        # disaggregated: the plan's memory line items are a decode GPU's (the prefill GPUs' weights are a card)
        gpu = "decode GPU" if i.serving_mode == "disaggregated" else "GPU"
        self.memory_chart.show("memory", lambda: charts.memory_breakdown(
            i.memory_per_gpu_bytes, i.gpu_memory_bytes).properties(width=charts.WIDTH - 80),
            data=charts.memory_breakdown_data(i.memory_per_gpu_bytes, i.gpu_memory_bytes),
            title=f"Memory per {gpu}: {i.name} ({plan.accelerator})")
        K.assign(self.memory_note, "value", memory_note(i, plan.scenario.policies.memory_headroom))
        # the chart's shape is fixed per service; a new curve, targets or title only swaps rows and params
        pools = i.serving_mode == "disaggregated" and i.pools_estimate is not None and i.pools_estimate.feasible
        if not pools and (i.estimate is None or not i.estimate.feasible):  # no curve: the last one was another's
            self.latency_chart.clear()
            K.assign(self.latency_note, "value", "")
            return
        # the pools bought, from the model that gives their figures (plan.latency_curve), drawn as it is (a rate
        # factor of 1); or one replica's curve, drawn at the replica count: a move that changes only the count
        # moves the chart's factor and sends no rows
        curve, factor = (latency_curve(i), 1) if pools else (self._replica_curve(i), max(i.replicas, 1))
        self.latency_chart.show(
            (i.name, "serving"),
            lambda: charts.serving_latency(curve, i.ttft_target_seconds, i.tpot_target_seconds, i.requests_per_s,
                                           rate_factor=factor),
            params={charts.MARK: float(i.requests_per_s), charts.RATE_FACTOR: factor},
            data=self._rows(curve, i.ttft_target_seconds, i.tpot_target_seconds),
            title=f"TTFT and TPOT vs load: {i.name} ({F.serving_shape(i)})")
        fleet = curve if factor == 1 else curve.assign(requests_per_s=curve["requests_per_s"] * factor)
        K.assign(self.latency_note, "value", ceiling_note(fleet, i.serving_mode == "disaggregated"))

    def _replica_curve(self, i):
        """:func:`latency_curve` of one replica of ``i``, kept while its replica stays: a load move keeps it (the
        replicas share the load evenly, so the fleet's curve is its rates times the replica count), unless the
        curve passes through the estimate's own figures, and a move of the prompts' spread or reuse does not
        (``curve_reads``: the curve read them, and was kept stale before)."""
        e = i.estimate
        key = (e.model, e.accelerator, e.weight_precision, e.kv_precision, e.input_tokens, e.output_tokens, e.engine,
               i.tensor_parallel, i.pipeline_parallel, i.attention_dp, e.max_requests_per_s,
               e.max_concurrency, e.speculative_method, e.speculative_tokens, e.acceptance_length, curve_reads(e))
        if self._curve_at[0] != key:
            self._curve_at = (key, latency_curve(replace(i, replicas=1)))
        return self._curve_at[1]

    def _rows(self, curve, ttft_target_seconds, tpot_target_seconds) -> dict[str, list[dict]]:
        """The chart's rows of ``curve`` and the targets, the same lists while they stay (the slot's comparison of
        unchanged rows is then one identity test)."""
        key = (id(curve), ttft_target_seconds, tpot_target_seconds)
        if self._rows_at[0] != key or self._rows_at[2] is not curve:
            self._rows_at = (key, charts.serving_latency_data(curve, ttft_target_seconds, tpot_target_seconds), curve)
        return self._rows_at[1]

    @staticmethod
    def _figures(i, knee_factor: float, steep: float) -> str:
        ok = (lambda flag: "good" if flag else "bad")
        stat, disagg = i.slo_statistic, i.serving_mode == "disaggregated"
        ttft, tpot = i.ttft_at_statistic_seconds, i.tpot_at_statistic_seconds
        items = [
            K.card("inference.replicas", "Replicas" + (" (prefill + decode)" if i.pools is not None
                                                       and i.serving_mode == "disaggregated" else ""),
                   i.replicas, "", "Copies of the model serving in parallel"),
            K.card("inference.gpus", "GPUs for this service", i.gpus, "GPUs"),
            # the plan's one wording of the shape, adding up to the GPUs ("10 prefill replicas × TP 1 × PP 2 + ...")
            K.card("inference.tensor_parallel", "Replica shape", F.serving_shape(i), "",
                   "Replicas × GPUs per pipeline stage (TP), stages (PP), attention data-parallel groups (ADP)"),
            K.card("inference.mode", "Serving", i.serving_mode, ""),
            K.card("inference.batch", "Batch per decode replica" if disagg else "Batch per replica", F.num(i.batch),
                   "requests", f"Mean requests in flight under the planned load (at most {i.max_batch})"
                   + ("; a prefill replica batches prompts apart" if disagg else "")),
            K.card("inference.capacity", "Capacity per decode replica" if disagg else
                   "Capacity per replica", F.sig(i.output_tokens_per_s_per_replica), "output tokens/s",
                   "Output tokens/s with every request waiting (max throughput)"
                   + ("; the prefill replicas produce no output tokens" if disagg else "")),
            K.card("inference.ttft", f"TTFT {stat}", F.ms(ttft), "",
                   f"mean {F.ms(i.ttft_seconds)}, p95 {F.ms(i.ttft_p95_seconds)}, p99 {F.ms(i.ttft_p99_seconds)}; "
                   f"target {F.ms(i.ttft_target_seconds)}", state=ok(i.ttft_met)),
            K.card("inference.tpot", f"TPOT {stat}", F.ms(tpot), "per token",
                   f"mean {F.ms(i.tpot_seconds)}, p95 {F.ms(i.tpot_p95_seconds)}, p99 {F.ms(i.tpot_p99_seconds)}; "
                   f"target {F.ms(i.tpot_target_seconds)}", state=ok(i.tpot_met)),
            # in seconds, as the workloads table's "request latency p95 [s]" (it read "1.35 min" beside "81.2")
            K.card("inference.latency_p95", "Request latency p95", F.quantity(i.latency_p95_seconds, "s"), "",
                   "TTFT p95 + (output - 1) x TPOT p95", state=ok(i.latency_target_met)),
            K.card("inference.latency_p99", "Request latency p99", F.quantity(i.latency_p99_seconds, "s"), "",
                   "TTFT p99 + (output - 1) x TPOT p99"),
            K.card("inference.kv_per_token", "KV cache per token", F.bytes_gpu(i.kv_bytes_per_token), "",
                   "Keys and values of one token over all layers"),
            # prompt and output: a disaggregated request ships its prompt's only (the KV transfer card's figure)
            K.card("inference.kv_per_user", "KV cache per request (prompt + output)", F.bytes_gpu(i.kv_bytes_per_user),
                   "", "Prompt + output tokens of one request"),
            K.card("inference.kv_per_gpu", "KV cache in use per GPU", F.bytes_gpu(i.kv_in_use_per_gpu_bytes),
                   "", f"At the planned batch, of a pool of {F.bytes_gpu(i.memory_per_gpu_bytes['kv_cache_bytes'])}"),
            K.card("inference.utilisation", "Utilisation", F.pct(i.utilisation), "of capacity",
                   "Of each replica's capacity at the planned load"),
            # the knee as the curve's slope at the planned load (issue 49.2): "mean latency 2x unloaded at 0.356
            # requests/s" beside a rate of 1.00 read as a service past its knee, though the curve is flat there (a
            # decode-heavy service doubles its mean latency at light load); the warning is the plan's threshold
            K.card("inference.knee", f"Latency {stat} rise at the planned load",
                   F.pct(i.latency_elasticity * LOAD_RISE, signed=True), f"per +{F.pct(LOAD_RISE)} load",
                   f"Request latency {stat} rises {F.pct(i.latency_elasticity * LOAD_RISE)} for "
                   f"{F.pct(LOAD_RISE)} more load at the planned {F.sig(i.requests_per_s)} requests/s "
                   f"(elasticity {F.sig(i.latency_elasticity)}); "
                   f"past the knee above {F.pct(steep * LOAD_RISE, signed=True)} (elasticity {steep:g}). "
                   f"Mean latency reaches {knee_factor:g}x unloaded at {F.sig(i.knee_requests_per_s)} requests/s",
                   state="bad" if i.latency_elasticity > steep else ""),
        ]
        if i.pools is not None and i.serving_mode == "disaggregated":
            items += [K.card("inference.prefill_gpus", "Prefill GPUs", i.pools.prefill_gpus,
                             F.noun_for(i.pools.prefill_gpus, "GPU")),
                      K.card("inference.decode_gpus", "Decode GPUs", i.pools.decode_gpus,
                             F.noun_for(i.pools.decode_gpus, "GPU")),
                      K.card("inference.kv_transfer", "KV transfer", F.duration(i.pools.kv_transfer_s), "",
                             f"{F.bytes_gpu(i.pools.kv_bytes_per_request)} per request: its prompt's KV cache, "
                             "shipped from prefill to decode (KV cache is GPU memory: GiB)")]
        items += InferenceSection._pool_weight_cards(i)
        items += InferenceSection._load_cards(i) + InferenceSection._estimate_cards(i.estimate)
        if i.slo_reason:
            items.append(K.card("inference.slo", "SLOs", "unreachable", "", slo_reason_text(i.slo_reason), state="bad"))
        return K.cards(items) + reuse_cards(i)

    @staticmethod
    def _pool_weight_cards(i) -> list[str]:
        """Each pool's weights per GPU (disaggregated): the memory chart draws a decode GPU, and a prefill GPU of
        another shape holds other weights (RAG 70B: 65.7 GiB at TP 1 beside 32.9 GiB at TP 2)."""
        est = i.pools_estimate if i.serving_mode == "disaggregated" else None
        weights = est.weights_per_gpu_bytes if est is not None else {}
        why = f"Of {F.bytes_gpu(i.gpu_memory_bytes)} per GPU; {F.serving_shape(i)}"
        return [K.card(f"inference.{side}_weights", f"Weights per {side} GPU", F.bytes_gpu(weights[side]), "", why)
                for side in ("prefill", "decode") if side in weights]

    @staticmethod
    def _load_cards(i) -> list[str]:
        """The load: users in flight and the rate they send (Little's law, the planner's fixed point), or a rate."""
        if i.concurrency is not None:
            return [K.card("inference.users", "Users in flight", F.count(i.concurrency), "requests",
                           "Given: each user sends its next request when the last is answered"),
                    K.card("inference.rate", "Request rate", F.per_s(i.requests_per_s, "requests/s"), "",
                           f"What they send: users ÷ mean request latency ({F.duration(i.latency_mean_seconds)}), "
                           "Little's law; the fleet is planned for it")]
        return [K.card("inference.rate", "Request rate", F.per_s(i.requests_per_s, "requests/s"), "",
                       "Given (random arrivals)")]

    @staticmethod
    def _estimate_cards(e) -> list[str]:
        """What the replica's estimate used: speculative decoding and its calibration (aggregated serving)."""
        if e is None:
            return []
        items = []
        if e.speculative_method is not None:
            source = e.speculation.acceptance_source if e.speculation is not None else ""
            items += [K.card("inference.speculative", "Speculative decoding", e.speculative_method,
                             f"{e.speculative_tokens} drafted per step",
                             "Each decode step drafts k tokens and verifies k + 1 in one pass of the model"),
                      K.card("inference.acceptance", "Acceptance length", F.sig(e.acceptance_length), "tokens/step",
                             "Tokens a decode step emits per request on average, the model's own included: a "
                             f"request needs (output - 1) ÷ this many steps. From {source}")]
        if e.uncalibrated:
            items.append(K.card("inference.calibration", "Serving calibration", "uncalibrated", "",
                                f"{e.accelerator}: no public runs of its GPU generation calibrate the serving model; "
                                f"{serving.CALIBRATION.fallback_generation}'s efficiencies stand in", state="bad"))
        else:
            items.append(K.card("inference.calibration", "Serving calibration", e.calibration, "",
                                "Efficiencies fitted on public runs of this GPU's generation"))
        return items


def _updated(data: dict, index: int, updates: dict) -> dict:
    """A copy of ``data`` with ``updates`` (a path under workload ``index`` -> its value) set."""
    for keys, value in updates.items():
        data = set_path(data, ("workloads", index) + keys, value)
    return data
