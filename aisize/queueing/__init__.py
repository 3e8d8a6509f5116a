"""Queueing: Little's law, analytic queues, latency curves, sizing, multi-class, job streams, simulation.

See docs/DESIGN.md section 2 ("Queueing") for the formulas and their sources.
"""

from aisize.queueing.analytic import (mgc_wait, 
    QueueResult,
    erlang_b,
    erlang_c,
    ggc,
    md1,
    mg1,
    mm1,
    mmc,
    response_quantile,
    response_tail,
    wait_quantile,
)
from aisize.queueing.curves import (
    ConcurrencyCurve,
    Station,
    StorageStation,
    bend_concurrency,
    inference_station,
    knee_concurrency,
    knee_load,
    latency_vs_concurrency,
    latency_vs_load,
    storage_station,
)
from aisize.queueing.jobs import (JobQueue, MultiGpuSimulation, job_queue, simulate_job_stream,
                                  simulate_multi_gpu, slots_for_target, wait_curve)
from aisize.queueing.little import little, outstanding_ios
from aisize.queueing.multiclass import JobClass, MultiClassResult, multiclass
from aisize.queueing.priority import PriorityClass, PriorityResult, priority_queue
from aisize.queueing.simulate import SimulationResult, simulate
from aisize.queueing.simulate_priority import PrioritySimulation, simulate_priority
from aisize.queueing.sizing import SizingResult, servers_for_target

__all__ = ["mgc_wait", 
    "ConcurrencyCurve", "JobClass", "JobQueue", "MultiGpuSimulation", "job_queue", "simulate_job_stream",
    "simulate_multi_gpu", "slots_for_target", "wait_curve", "MultiClassResult", "QueueResult", "SimulationResult",
    "SizingResult", "Station", "StorageStation", "bend_concurrency", "erlang_b", "erlang_c", "ggc", "inference_station",
    "knee_concurrency", "knee_load", "latency_vs_concurrency", "latency_vs_load", "little",
    "md1", "mg1", "mm1", "mmc", "multiclass", "outstanding_ios", "response_quantile",
    "response_tail", "servers_for_target", "simulate", "storage_station", "wait_quantile",
    "PriorityClass", "PriorityResult", "priority_queue", "PrioritySimulation", "simulate_priority",
]
