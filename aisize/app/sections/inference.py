"""Inference: the selected service's model, request rate, tokens, SLOs, replica shape and engine.

Shows the planned replica shape and fleet, TTFT and TPOT (mean and p95) against
their targets under the planned load, the per-GPU memory, and TTFT/TPOT vs load
(:func:`aisize.plan.latency_curve`). Every figure is the planner's.
"""

from __future__ import annotations

import ipywidgets as widgets

from aisize import catalog, charts
from aisize import format as F
from aisize.app import controls as K
from aisize.app.sections import Section, selected
from aisize.plan import latency_curve
from aisize.scenario.model import WEIGHT_PRECISIONS

TP_CHOICES = [("auto (fewest GPUs)", "auto")] + [(str(t), t) for t in (1, 2, 4, 8, 16, 32, 64, 72)]
PP_CHOICES = [("auto", "auto")] + [(str(p), p) for p in (1, 2, 4, 8)]


class InferenceSection(Section):
    title = "Inference"

    def __init__(self, state):
        self.service = K.dropdown("Service", [], None, "Which inference workload of the scenario these controls edit")
        self.model = K.dropdown("Model", K.options(catalog.transformers.ids()), None, "Model served (catalog id)")
        self.weights = K.dropdown("Weight precision", list(WEIGHT_PRECISIONS), None,
                                  "Number format of the served weights")
        self.kv = K.dropdown("KV cache precision", ["fp32", "bf16", "fp16", "fp8"], None,
                             "Number format of the attention key/value cache")
        self.rate = K.log_slider("Request rate [requests/s]", 10, 0.1, 10_000, "Mean arrival rate of requests")
        self.prompt = K.log_slider("Prompt [tokens]", 1024, 16, 131_072, "Input tokens per request",
                                   steps_per_decade=12, fmt=".0f")
        self.output = K.log_slider("Output [tokens]", 256, 1, 32_768, "Generated tokens per request",
                                   steps_per_decade=12, fmt=".0f")
        self.ttft = K.log_slider("TTFT target [ms]", 2000, 50, 60_000, "Time to first token target (prefill)")
        self.tpot = K.log_slider("TPOT target [ms/token]", 50, 5, 1000, "Time per output token target (decode)")
        self.stat = K.dropdown("SLO statistic", [("p95", "p95"), ("mean", "mean")], "p95",
                               "Whether the TTFT and TPOT targets bound the p95 or the mean")
        self.tp = K.dropdown("Tensor parallel", TP_CHOICES, "auto", "GPUs per pipeline stage; must divide the heads")
        self.pp = K.dropdown("Pipeline stages", PP_CHOICES, "auto", "Stages of a replica; may span servers")
        self.mode = K.dropdown("Serving", [("aggregated", "aggregated"), ("disaggregated", "disaggregated")],
                               "aggregated", "Disaggregated: separate prefill and decode pools, KV shipped between")
        self.engine = K.dropdown("Engine limits", [("TensorRT-LLM", "trtllm"), ("vLLM", "vllm")], "trtllm",
                                 "Whose scheduler limits and defaults the replica runs with")
        self.figures = widgets.HTML()
        self.memory_chart, self.latency_chart = K.ChartSlot(), K.ChartSlot()
        self._curve_at = (None, None)  # (inputs, frame) of the last latency curve
        super().__init__(state)
        w = self._path
        self.bind(self.model, w("model"))
        self.bind(self.weights, w("weight_precision"))
        self.bind(self.kv, w("kv_precision"))
        self.bind(self.rate, w("requests_per_s"), float)
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
        left = K.controls_column([self.service, self.model, self.weights, self.kv, self.rate, self.prompt, self.output,
                                  self.ttft, self.tpot, self.stat, self.tp, self.pp, self.mode, self.engine,
                                  self.error])
        self.view.children = [widgets.HBox([left, K.figures_column([self.figures, self.memory_chart.box])]),
                              self.latency_chart.box]
        self.quietly(self.sync)

    def _path(self, field):
        return lambda: None if self.service.value is None else ("workloads", self.service.value, field)

    def sync(self) -> None:
        selected(self.service, self.state.workloads("inference"))
        if self.service.value is None:
            return
        w = self.state.data["workloads"][self.service.value]
        for knob, key in ((self.model, "model"), (self.weights, "weight_precision"), (self.kv, "kv_precision"),
                          (self.rate, "requests_per_s"), (self.prompt, "prompt_tokens"),
                          (self.output, "output_tokens"), (self.ttft, "ttft_target_ms"),
                          (self.tpot, "tpot_target_ms"), (self.stat, "slo_statistic"), (self.tp, "tensor_parallel"),
                          (self.pp, "pipeline_parallel"), (self.mode, "serving"), (self.engine, "engine")):
            K.assign(knob, "value", w[key])

    def _plan_service(self, plan):
        name = self.state.data["workloads"][self.service.value]["name"]
        return next(i for i in plan.inference if i.name == name)

    def update(self, plan) -> None:
        if self.service.value is None:
            K.assign(self.figures, "value", "<p>This scenario has no inference service.</p>")
            return
        i = self._plan_service(plan)
        K.assign(self.figures, "value", self._figures(i, plan.assumptions["plan.knee_factor"]))
        self.memory_chart.show("memory", lambda: charts.memory_breakdown(
            i.memory_per_gpu_bytes, i.gpu_memory_bytes).properties(width=charts.WIDTH - 80),
            data=charts.memory_breakdown_data(i.memory_per_gpu_bytes, i.gpu_memory_bytes),
            title=f"Memory per GPU: {i.name} ({plan.accelerator})")
        # the chart's shape is fixed per service; a new curve, targets or title only swaps rows and params
        if i.estimate is None or not i.estimate.feasible:
            return
        curve = self._curve(i)
        self.latency_chart.show(
            (i.name, "serving"),
            lambda: charts.serving_latency(curve, i.ttft_target_seconds, i.tpot_target_seconds, i.requests_per_s),
            params={charts.MARK: float(i.requests_per_s)},
            data=charts.serving_latency_data(curve, i.ttft_target_seconds, i.tpot_target_seconds),
            title=f"TTFT and TPOT vs load: {i.name} ({i.replicas} replicas of {i.gpus_per_replica} GPUs)")

    def _curve(self, i):
        """:func:`latency_curve` of ``i``, kept while its replica and fleet stay (a load move keeps it)."""
        key = (i.estimate.model, i.estimate.accelerator, i.estimate.weight_precision, i.estimate.kv_precision,
               i.estimate.input_tokens, i.estimate.output_tokens, i.estimate.engine, i.tensor_parallel,
               i.pipeline_parallel, i.attention_dp, i.replicas)
        if self._curve_at[0] != key:
            self._curve_at = (key, latency_curve(i))
        return self._curve_at[1]

    @staticmethod
    def _figures(i, knee_factor: float) -> str:
        ok = (lambda flag: "good" if flag else "bad")
        shape = f"{i.tensor_parallel}" + (f" × PP {i.pipeline_parallel}" if i.pipeline_parallel > 1 else "") + (
            f", ADP {i.attention_dp}" if i.attention_dp > 1 else "")
        stat = i.slo_statistic
        ttft = i.ttft_p95_seconds if stat == "p95" else i.ttft_seconds
        tpot = i.tpot_p95_seconds if stat == "p95" else i.tpot_seconds
        items = [
            K.card("inference.replicas", "Replicas", i.replicas, "", "Copies of the model serving in parallel"),
            K.card("inference.gpus", "GPUs for this service", i.gpus, "GPUs"),
            K.card("inference.tensor_parallel", "Replica shape (TP)", shape, "",
                   "GPUs per pipeline stage, stages, attention data-parallel groups"),
            K.card("inference.mode", "Serving", i.serving_mode, ""),
            K.card("inference.batch", "Batch per replica", F.num(i.batch), "requests",
                   f"Mean requests in flight under the planned load (at most {i.max_batch})"),
            K.card("inference.capacity", "Capacity per replica", F.sig(i.output_tokens_per_s_per_replica), "tokens/s",
                   "Output tokens/s with every request waiting (max throughput)"),
            K.card("inference.ttft", f"TTFT {stat}", F.ms(ttft), "",
                   f"mean {F.ms(i.ttft_seconds)}, p95 {F.ms(i.ttft_p95_seconds)}; "
                   f"target {F.ms(i.ttft_target_seconds)}", state=ok(i.ttft_met)),
            K.card("inference.tpot", f"TPOT {stat}", F.ms(tpot), "per token",
                   f"mean {F.ms(i.tpot_seconds)}, p95 {F.ms(i.tpot_p95_seconds)}; "
                   f"target {F.ms(i.tpot_target_seconds)}", state=ok(i.tpot_met)),
            K.card("inference.latency_p95", "Request latency p95", F.duration(i.latency_p95_seconds), "",
                   "TTFT p95 + (output - 1) x TPOT p95", state=ok(i.latency_target_met)),
            K.card("inference.kv_per_token", "KV cache per token", F.bytes_si(i.kv_bytes_per_token), "",
                   "Keys and values of one token over all layers"),
            K.card("inference.kv_per_user", "KV cache per request", F.bytes_si(i.kv_bytes_per_user), "",
                   "Prompt + output tokens of one request"),
            K.card("inference.kv_per_gpu", "KV cache in use per GPU", F.bytes_gpu(i.kv_in_use_per_gpu_bytes),
                   "", f"At the planned batch, of a pool of {F.bytes_gpu(i.memory_per_gpu_bytes['kv_cache_bytes'])}"),
            K.card("inference.utilisation", "Utilisation", F.pct(i.utilisation), "of capacity",
                   "Of each replica's capacity at the planned load"),
            K.card("inference.knee", "Knee (request rate)", F.sig(i.knee_requests_per_s), "requests/s",
                   f"Load at which mean latency reaches {knee_factor:g}x unloaded"),
        ]
        if i.pools is not None and i.serving_mode == "disaggregated":
            items += [K.card("inference.prefill_gpus", "Prefill GPUs", i.pools.prefill_gpus, "GPUs"),
                      K.card("inference.decode_gpus", "Decode GPUs", i.pools.decode_gpus, "GPUs"),
                      K.card("inference.kv_transfer", "KV transfer", F.duration(i.pools.kv_transfer_s), "",
                             f"{F.bytes_si(i.pools.kv_bytes_per_request)} per request")]
        if i.slo_reason:
            items.append(K.card("inference.slo", "SLOs", "unreachable", "", i.slo_reason, state="bad"))
        return K.cards(items)
