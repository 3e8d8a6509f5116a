"""Inference: the selected service's model, request rate, tokens and latency targets.

Shows KV cache, tensor parallelism, batch, replicas and GPUs, latencies, the
per-GPU memory, and latency vs load with the knee (:func:`aisize.plan.latency_curve`).
"""

from __future__ import annotations

import ipywidgets as widgets

from aisize import catalog, charts
from aisize.app import controls as K
from aisize.app.sections import Section, selected
from aisize.plan import latency_curve
from aisize.scenario.model import WEIGHT_PRECISIONS
from aisize.units import GB, GiB, MB

TP_CHOICES = [("auto (smallest that fits)", "auto")] + [(str(t), t) for t in (1, 2, 4, 8, 16)]


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
        self.tp = K.dropdown("Tensor parallel", TP_CHOICES, "auto", "GPUs per replica; must divide the heads")
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
        self.bind(self.tp, w("tensor_parallel"))
        self.service.observe(lambda _: self._on_plan(self.state.plan), names="value")
        left = K.controls_column([self.service, self.model, self.weights, self.kv, self.rate, self.prompt, self.output,
                             self.ttft, self.tpot, self.tp, self.error])
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
                          (self.tpot, "tpot_target_ms"), (self.tp, "tensor_parallel")):
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
        mem_key = (tuple(sorted(i.memory_per_gpu_bytes.items())), i.gpu_memory_bytes)
        self.memory_chart.show(mem_key, lambda: charts.memory_breakdown(
            i.memory_per_gpu_bytes, i.gpu_memory_bytes,
            title=f"Memory per GPU: {i.name} ({plan.accelerator})").properties(width=charts.WIDTH - 80))
        # the chart's shape is fixed per service; a new curve, knee or title only swaps rows and params
        curve = self._curve(i)
        target = i.latency_target_seconds
        self.latency_chart.show(
            (i.name, target is None),
            lambda: charts.latency_vs_load(curve, i.knee_requests_per_s, i.requests_per_s, target),
            params={charts.MARK: float(i.requests_per_s)},
            data=charts.latency_vs_load_data(curve, i.knee_requests_per_s, target),
            title=f"Request latency vs load: {i.name} ({i.replicas} replicas)")

    def _curve(self, i):
        """:func:`latency_curve` of ``i``, kept while its station stays (a load move keeps the curve)."""
        key = i.station
        if self._curve_at[0] != key:
            self._curve_at = (key, latency_curve(i))
        return self._curve_at[1]

    @staticmethod
    def _figures(i, knee_factor: float) -> str:
        ok = (lambda flag: "good" if flag else "bad")
        return K.cards([
            K.card("inference.replicas", "Replicas", i.replicas, "", "Copies of the model serving in parallel"),
            K.card("inference.gpus", "GPUs", i.gpus, "GPUs"),
            K.card("inference.tensor_parallel", "GPUs per replica (TP)", i.tensor_parallel, ""),
            K.card("inference.batch", "Batch per replica", i.batch, "sequences",
                   "Concurrent sequences per replica at the TPOT target", state=ok(i.tpot_met)),
            K.card("inference.kv_per_token", "KV cache per token", i.kv_bytes_per_token / MB, "MB"),
            K.card("inference.kv_per_user", "KV cache per request", i.kv_bytes_per_user / GB, "GB",
                   "Prompt + output tokens of one request"),
            K.card("inference.kv_per_gpu", "KV cache per GPU", i.memory_per_gpu_bytes["kv_cache_bytes"] / GiB,
                   "GiB", "At the chosen batch"),
            K.card("inference.ttft", "TTFT (unloaded)", i.ttft_seconds * 1e3, "ms"),
            K.card("inference.tpot", "TPOT", i.tpot_seconds * 1e3, "ms/token", state=ok(i.tpot_met)),
            K.card("inference.latency_p95", "Request latency p95", i.latency_p95_seconds, "s",
                   f"target {i.latency_target_seconds:.3g} s", state=ok(i.latency_target_met)),
            K.card("inference.utilisation", "Utilisation", i.utilisation, ""),
            K.card("inference.knee", "Knee", i.knee_requests_per_s, "requests/s",
                   f"Load at which mean latency reaches {knee_factor:g}x unloaded"),
        ])
