"""A finding in words: the sentence every surface (CLI, app, report, JSON, CSV) shows for a plan's finding.

The planner states each finding as typed facts under a stable code (:class:`aisize.plan.findings.Finding`);
:func:`finding_text` words it here, once, from those facts alone.
"""

from __future__ import annotations

from aisize.cost.prices import MAX_PRICE_AGE_MONTHS
from aisize.format import bytes_gpu, count, days, duration, layout, ms, num, pct, plural, power, rate, sig, span, \
    usd
from aisize.present.cost_text import verdict
from aisize.present.jobstreams import stream_target_text
from aisize.present.slo_text import slo_reason_text
from aisize.present.storage_text import latency_basis
from aisize.present.training_text import days_range_text, throughput_basis_text
from aisize.units import GB
from aisize.present.words import worded


def _gb(x: float) -> str:
    return f"{sig(x / GB)} GB"


def _tb(x: float) -> str:
    return f"{sig(x / 1e12)} TB"


def _ms(seconds: float) -> str:
    return str(ms(seconds))


def _memory_training(x) -> str:
    return (f"{x['workload']}: needs {bytes_gpu(x['needed_bytes'])} per GPU with layout "
            f"{layout(x['layout'], recompute=False)}, but {x['accelerator']} offers "
            f"{bytes_gpu(x['usable_bytes'])} after headroom: it does not fit")


def _memory_service(x) -> str:
    return (f"{x['workload']}: weights and one {bytes_gpu(x['kv_bytes_per_user'])} context do not fit any replica "
            f"shape tried (up to {x['gpus_per_replica']} x {x['accelerator']}): "
            + (x["reason"] or "no shape holds the model"))


def _host_short(x) -> str:
    return (f"{x['workload']}: needs {bytes_gpu(x['needed_bytes'])} of host RAM per server; {x['server']} has "
            f"{bytes_gpu(x['server_bytes'])}")


def _host_over(x) -> str:
    return (f"host RAM is over-provisioned for this plan: {x['server']} has {bytes_gpu(x['server_bytes'])}, "
            f"{sig(x['server_bytes'] / x['needed_bytes'])}x the {bytes_gpu(x['needed_bytes'])} the plan needs per "
            "server")


def _storage_too_small(x) -> str:
    over, worst = x["over_share"], x["worst"]
    also = [f"{_constraint(k)} {sig(v)}x" for k, v in over.items() if k != worst]  # the other constraints over
    return (f"storage {x['system']} is too small: {_constraint(worst)} demand is {sig(over[worst])}x what it "
            "supplies" + (f" (also over: {', '.join(also)})" if also else ""))


_CONSTRAINT = {"read": "read bandwidth", "write": "write bandwidth", "iops": "IOPS", "capacity": "capacity",
               "minimum": "the minimum purchase", "none": "nothing"}  # a storage plan's binding constraint, in words


def _constraint(name: str) -> str:
    return _CONSTRAINT.get(name, name)


def _and(names) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _storage_units(x) -> str:
    by, units = x["units_by"], round(x["units"])
    need = {k: round(by[k]) for k in ("read", "write", "iops", "capacity") if k in by}
    top = [_constraint(k) for k, n in need.items() if n == units]
    others = [(_constraint(k), n) for k, n in need.items() if n != units]
    rest = (f"{others[0][0]} needs {others[0][1]}" if len(others) == 1 else
            "the others need: " + ", ".join(f"{c} {n}" for c, n in others))
    bought = f"the plan buys {plural(units, 'unit')} of {x['system']}"
    if not top:  # the floor (storage_minimum_units) or nothing asked of the storage
        return f"{bought}, the minimum purchase: no constraint needs more ({rest})"
    if not others:
        return f"{bought}: {_and(top)} each need {units}"
    return f"{bought}, as many as {_and(top)} {'needs' if len(top) == 1 else 'each need'} ({rest})"


def _storage_binding(x) -> str:
    return (f"storage {x['system']}: {_constraint(x['binding'])} is its busiest constraint, at "
            f"{pct(x['utilisation_share'])} of what it supplies")


def _storage_capacity(x) -> str:
    return (f"storage {x['system']} publishes no capacity, so aisize cannot check it: the plan needs "
            f"{_tb(x['raw_bytes'])} raw ({_tb(x['usable_bytes'])} usable at storage_usable_ratio "
            f"{x['usable_ratio']:g}); confirm the system holds it")


def _storage_over(x) -> str:
    units = round(x["units"])
    return (f"storage is over-provisioned: its busiest constraint, {_constraint(x['busiest'])}, uses only "
            f"{pct(x['utilisation_share'])} of what {plural(units, 'unit')} of {x['system']} "
            f"{'supplies' if units == 1 else 'supply'}")


def _storage_unstable(x) -> str:
    return (f"storage IO queue is unstable: {x['io_per_s']:,.0f} IO/s asked exceed the {x['supply_io_per_s']:,.0f} "
            "IO/s it serves; latency grows without bound")


def _storage_knee(x) -> str:
    return (f"storage runs past its latency knee: at {x['io_per_s']:,.0f} IO/s its mean IO latency rises "
            f"{num(x['elasticity'])} times as fast as the load (it reaches {x['knee_factor']:g}x the unloaded "
            f"latency at {x['knee_io_per_s']:,.0f} IO/s); p95 IO latency {ms(x['latency_p95_seconds'])}")


def _storage_units_knee(x) -> str:
    need, bought, knee = x["units_at_knee"], x["units"], f"{x['knee_factor']:g}x"
    if need <= bought:
        return (f"the {plural(bought, 'unit')} of {x['system']} bought (for {_constraint(x['binding'])}) "
                f"{'keeps' if bought == 1 else 'keep'} the IO blend below the latency knee (mean latency within "
                f"{knee} unloaded)" + ("" if need == bought else f"; {plural(need, 'unit')} would be enough for that"))
    return (f"{plural(need, 'unit')} of {x['system']} would keep the IO blend below the latency knee (mean latency "
            f"within {knee} unloaded); the plan buys {bought}, for {_constraint(x['binding'])}: add "
            f"{need - bought} for latency headroom")


def _data_stall(x) -> str:
    return (f"{x['workload']}: GPUs wait for data {pct(x['stall_share'])} of the time (supplied "
            f"{_gb(x['supplied_bytes_per_s'])}/s of {_gb(x['needed_bytes_per_s'])}/s)"
            + (", within the target utilisation" if x["within_target"] else ""))


FAR_ABOVE = 100  # a storage bound this many times the job's GPUs is said as "far above", not as a count


def _bottleneck(x) -> str:
    bound, gpus = x["bottleneck_gpus"], x["job_gpus"]
    if not gpus:
        return f"{x['workload']}: storage would limit this job beyond about {bound:,.0f} GPUs"
    if bound < gpus:
        return (f"{x['workload']}: storage limits this job: it feeds about {bound:,.0f} GPUs at full speed, fewer than "
                f"the {gpus:,} it uses")
    if bound > FAR_ABOVE * gpus:
        return (f"{x['workload']}: storage keeps up with this job with room to spare: it would limit it only beyond "
                f"{FAR_ABOVE}x the {gpus:,} GPUs it uses")
    return (f"{x['workload']}: storage would limit this job beyond about {bound:,.0f} GPUs, {sig(bound / gpus)}x the "
            f"{gpus:,} it uses")


def _links_short(x) -> str:
    return (f"{x['workload']}: the {x['link']} links are below the data demand ({sig(x['utilisation_share'])}x "
            "their capacity); use faster or more NICs")


def _links_busy(x) -> str:
    return f"{x['workload']}: training data fills {pct(x['utilisation_share'])} of the {x['link']} links"


def _links_used(x) -> str:
    return f"{x['workload']}: training data uses {pct(x['utilisation_share'])} of the {x['link']} links"


def _beyond_context(x) -> str:
    return (f"{x['workload']}: a request of {x['request_tokens']:,.0f} tokens exceeds {x['model']}'s context window "
            f"of {x['context_window_tokens']:,} tokens: the model cannot serve it")


def _slo_missed(x) -> str:
    stat, missed = x["statistic"], []
    if not x["ttft_met"]:
        missed.append(f"TTFT {stat} {_ms(x['ttft_seconds'])} over the {_ms(x['ttft_target_seconds'])} target")
    if not x["tpot_met"]:
        missed.append(f"TPOT {stat} {_ms(x['tpot_seconds'])} over the {_ms(x['tpot_target_seconds'])} target")
    return f"{x['workload']}: " + "; ".join(missed)


def _uncalibrated(x) -> str:
    spread = ""
    if x["capacity_range_output_tokens_per_s"]:
        lo, hi = x["capacity_range_output_tokens_per_s"]
        t_lo, t_hi = x["tpot_range_seconds"]
        over = x["overloaded_under"]
        spread = (f": under the calibrated generations' efficiencies its {plural(x['replicas'], 'replica')} serve "
                  f"{sig(lo)} to {sig(hi)} output tokens/s at most and its TPOT mean is "
                  + (_ms(t_lo) if t_lo == t_hi else f"{_ms(t_lo)} to {_ms(t_hi)}")
                  + (f" (with the {' and '.join(over)} efficiencies the load would overload them)" if over else "")
                  + "; size with the low end")
    return (f"{x['workload']}: {x['accelerator']} is of a GPU generation without fitted serving efficiencies; "
            f"Hopper's stand in, so its figures are uncalibrated{spread}")


def _service_knee(x) -> str:
    return (f"{x['workload']}: past the latency knee at {x['requests_per_s']:g} requests/s: its {x['statistic']} "
            f"request latency rises {num(x['elasticity'])} times as fast as the load there (at this slope "
            f"{pct(x['load_rise_share'])} more load adds {pct(x['elasticity'] * x['load_rise_share'])} to latency)")


def _disaggregated(x) -> str:
    return (f"{x['workload']}: disaggregated, {x['prefill_gpus']} prefill + {x['decode_gpus']} decode GPUs; each "
            f"request ships its prompt's {bytes_gpu(x['kv_bytes_per_request'])} of KV cache "
            f"({_ms(x['kv_transfer_seconds'])}), {rate(x['kv_link_bytes_per_s'])} in all, "
            f"{pct(x['kv_link_utilisation_share'])} of the prefill NICs")


def _mfu_gap(x) -> str:
    return (f"{x['workload']}: the step-time model predicts MFU {pct(x['mfu_predicted_share'])}, the plan assumes "
            f"{pct(x['mfu_assumed_share'])}: check the assumption")


def _throughput(x) -> str:
    basis, why = throughput_basis_text(x["basis"]), days_range_text(x["days_range_basis"])
    mfu = "" if "MFU" in basis else f" ({pct(x['mfu_assumed_share'])} MFU)"  # the basis may name it
    rests = "" if x["rule"] in ("measured", "scenario") else "from "  # "measured: ...", "given by the scenario: ..."
    spread = (f", range {span(x['days_low'], x['days_high'], 'days')} ({why})"
              if x["days_low"] != x["days_high"] else f" ({why})")
    return (f"{x['workload']}: throughput {rests}{basis}{mfu}; {days(x['training_days'])}{spread}"
            + (f"; source: {x['source']}" if x["source"] else ""))


def _goodput_zero(x) -> str:
    return (f"{x['workload']}: goodput 0: failures come faster than checkpoints and restarts; the job never "
            "finishes (raise the node MTBF, cut the restart time or use fewer servers)")


def _goodput_low(x) -> str:
    return (f"{x['workload']}: goodput {pct(x['goodput_share'])}: failures and checkpoints cost "
            f"{pct(1 - x['goodput_share'])} of its wall time, more than {pct(1 - x['goodput_warning_share'])}")


def _checkpoint_slow(x) -> str:
    return (f"{x['workload']}: checkpoints write at {_gb(x['write_bytes_per_s'])}/s; keeping writes under "
            f"{pct(x['max_stall_share'])} of training needs {_gb(x['needed_bytes_per_s'])}/s")


def _pool(x) -> str:
    shared = x["shared_servers"]
    bound = ("the fewest any packing could use" if x["servers"] == x["lower_bound_servers"] else
             f"the GPUs alone need at least {x['lower_bound_servers']}")
    sharing = ("no server is shared between workloads" if shared == 0 else
               f"{plural(shared, 'server')} {'is' if shared == 1 else 'are'} shared by several workloads")
    whole = "the plan's" if x["pools"] > 1 else "the"  # the busy peak is the whole plan's, not the pool's
    return (f"pool {x['pool']}: {x['servers']} x {x['server']} ({bound}); {sharing}; at most "
            f"{x['gpus_busy_peak']:,} of {whole} {x['gpus']:,} GPUs are busy at once")


def _queue_unstable(x) -> str:
    return (f"{x['workload']}: unstable: on average {sig(x['offered_gpus'])} GPUs of work arrive for the "
            f"{x['gpus']} GPUs it has ({pct(x['utilisation_share'])} busy), so its queue grows without bound: it needs "
            f"more than {sig(x['offered_gpus'])} GPUs")


def _queue_wait(x) -> str:
    target = stream_target_text(x["target"])
    return (f"{x['workload']}: {x['gpus']} GPUs run {plural(x['slots'], 'job')} at once (sized for {target}); "
            f"a job waits {duration(x['wait_mean_seconds'])} on average, {duration(x['wait_p95_seconds'])} at p95, "
            f"and the GPUs are busy {pct(x['utilisation_share'])} of the time"
            + ("" if x["target_met"] else ": the target is not met"))


def _unpriced(x) -> str:
    return f"no price for {', '.join(x['items'])}: counted at $0 (add rows to data/prices.csv or cost.prices)"


def _assumed_prices(x) -> str:
    n = len(x["items"])
    return (f"{plural(n, 'price')} used {'is an assumption' if n == 1 else 'are assumptions'} to replace with quotes: "
            f"{', '.join(x['items'])} (scenario cost.prices overrides any)")


def _stale_price(x) -> str:
    return (f"price {x['price']} ({x['item']}) is dated {x['date']}, {sig(x['age_months'])} months ago "
            f"(older than {num(MAX_PRICE_AGE_MONTHS)} months): replace it with a current figure "
            "(data/prices.csv or cost.prices)")


def _assumptions_used(x) -> str:
    from aisize.present.assumption_text import assumption_sentences

    return "assumptions used: " + " ".join(assumption_sentences(x["scenario"], x["assumptions"], x["plan"]))


def _write_rate(x) -> str:
    return f"{x['system']} publishes no write rate: writes assumed at {pct(x['write_share'])} of its read rate"


def _storage_queue(x) -> str:
    said = []
    if not x["iops_published"]:
        said.append(f"no IOPS, so its IO rate is taken as its read bandwidth / the IO blend's mean IO size, "
                    f"{sig(x['unit_io_per_s'])} IO/s per unit")
    elif x.get("iops_derived"):
        ceiling = x.get("iops_node_ceiling_per_s")
        cap = (f", capped at {sig(ceiling)} IO/s a node, the most one node of a published all-flash file system "
               "served in SPECstorage 2020") if ceiling else ""
        said.append(f"no measured IOPS (its rating is derived from its drives and network{cap}: an upper bound), "
                    f"so at the IO blend's mean IO size a unit serves {sig(x['unit_io_per_s'])} IO/s")
    if not x["latency_published"]:
        said.append(f"no IO latency, so its queue assumes the planner's default, {ms(x['latency_seconds'])} "
                    f"unloaded, {latency_basis(x['latency_source'], x['system'])}")
    return f"storage {x['system']} publishes " + "; and ".join(said)


def _service_day(x) -> str:
    return (f"{x['workload']}: the autoscaler holds {x['least_replicas']} to {x['peak_replicas']} replicas through the "
            f"day, {count(x['gpu_hours'])} GPU-hours instead of {count(x['peak_held_gpu_hours'])} at the peak all "
            f"day: {usd(x['usd_per_million_tokens'])} per million tokens over the day "
            f"({usd(x['usd_per_million_tokens_peak_held'])} with the peak held)")


def _overloaded(x) -> str:
    return (f"{x['workload']}: the load outruns the replicas for {duration(x['overloaded_seconds'])} a day while new "
            f"ones load ({duration(x['scale_up_seconds'])} each): requests queue then; a host cache, a lower target "
            "or more min_replicas shortens it")


def _tenants_unstable(x) -> str:
    at = x["at_seconds"] / 3600.0
    tenants = x["tenants"]
    who = (f"tenant {tenants[0]} is unstable (its" if len(tenants) == 1 else
           f"tenants {', '.join(tenants[:-1])} and {tenants[-1]} are unstable (their")
    return (f"{x['workload']}: at {int(at):02d}:{int(round(at % 1 * 60)):02d} {who} queue grows until "
            "the loading replicas serve); higher priorities keep their latency")


def _cheapest_pair(x) -> str:
    return (f"{x['workload']}: the cheapest disaggregated pair is prefill on {x['prefill_server']} and decode on "
            f"{x['decode_server']}: {usd(x['usd_per_million_tokens'])} per million tokens at the peak")


def _free_gpus(x) -> str:
    return (f"pool {x['pool']}: {count(x['free_gpu_hours'])} GPU-hours a day stay free (troughs), at most "
            f"{x['free_gpus_max']} GPUs at once: room for batch or training jobs in those hours")


def _site_short(x) -> str:
    return f"site: the plan needs {power(x['it_watts_needed'])} of IT; the site feeds {power(x['it_watts_supplied'])}"


WORDS = {
    "memory.training_does_not_fit": _memory_training, "memory.service_does_not_fit": _memory_service,
    "host.ram_short": _host_short, "host.ram_overprovisioned": _host_over,
    "storage.too_small": _storage_too_small, "storage.units_bought": _storage_units,
    "storage.binding": _storage_binding, "storage.capacity_unpublished": _storage_capacity,
    "storage.overprovisioned": _storage_over, "storage.io_unstable": _storage_unstable,
    "storage.past_knee": _storage_knee, "storage.units_for_knee": _storage_units_knee,
    "storage.data_stall": _data_stall, "storage.bottleneck_gpus": _bottleneck,
    "network.links_short": _links_short, "network.links_busy": _links_busy, "network.links_used": _links_used,
    "inference.beyond_context": _beyond_context,
    "inference.slo_unreachable": lambda x: f"{x['workload']}: {slo_reason_text(x['reason'])}",
    "inference.slo_missed": _slo_missed, "inference.uncalibrated": _uncalibrated,
    "inference.past_knee": _service_knee, "inference.disaggregated": _disaggregated,
    "compute.chinchilla": lambda x: f"{x['workload']}: {x['note']}", "compute.mfu_gap": _mfu_gap,
    "compute.throughput_basis": _throughput,
    "checkpoint.goodput_zero": _goodput_zero, "checkpoint.goodput_low": _goodput_low,
    "checkpoint.write_slow": _checkpoint_slow,
    "placement.pool_unused": lambda x: f"pool {x['pool']}: no workload needs it (0 servers)",
    "placement.pool": _pool, "queue.unstable": _queue_unstable, "queue.wait": _queue_wait,
    "cost.unpriced": _unpriced, "cost.assumed_prices": _assumed_prices, "cost.stale_price": _stale_price,
    "cost.rental_compared": lambda x: f"rental compared with the GPU bought: {x['note']}",
    "cost.verdict": lambda x: verdict(x["cost"]),
    "fabric.pool": lambda x: f"pool {x['pool']} compute fabric: {x['reason']}",
    "assumptions.used": _assumptions_used, "assumptions.write_rate": _write_rate,
    "assumptions.storage_queue": _storage_queue,
    "fleet.service_day": _service_day, "fleet.overloaded": _overloaded, "fleet.tenants_unstable": _tenants_unstable,
    "fleet.cheapest_pair": _cheapest_pair, "fleet.free_gpus": _free_gpus, "power.site_short": _site_short,
}


def finding_text(finding) -> str:
    """The sentence that says ``finding`` (an :class:`aisize.plan.findings.Finding`), from its facts alone."""
    return worded(WORDS, finding.code, "finding code", "aisize.present.findings.WORDS", finding.facts | finding.refs)


__all__ = ["finding_text", "WORDS"]
