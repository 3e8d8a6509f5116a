"""LLM serving: what one replica of a model delivers on a GPU, and how many replicas a service needs.

The public entry point is :func:`estimate`. Modules, from physics to search:
``costs`` (per-token FLOPs and bytes of a model), ``hardware`` (a GPU's peaks for a
precision), ``calibration`` (the fitted efficiencies and overheads), ``engine``
(scheduler limits), ``memory`` (weights and KV pool per GPU), ``iteration`` (one
continuous-batching iteration), ``replica`` (a replica as a value, built once by
:func:`replica`, and its state under a load), ``steady`` and ``throughput`` (a replica at its
capacity), ``latency`` (TTFT/TPOT under load), ``shapes`` (TP/PP/EP/attention-DP).
"""

from aisize.serving.calibration import CALIBRATION, Calibration
from aisize.serving.engine import ENGINES, Engine
from aisize.serving.replica import Latency, Load, Replica, ReplicaState, evaluate
from aisize.serving.estimate import ServingEstimate, decode_step, estimate, replica  # the function, not the module
from aisize.serving.pools import DisaggregatedEstimate, PoolsDoNotFit, disaggregated_curve, estimate_disaggregated
from aisize.serving.search import SearchResult, pareto, search

__all__ = ["estimate", "ServingEstimate",
           "replica", "Replica", "ReplicaState", "Load", "Latency", "evaluate",
           "estimate_disaggregated", "DisaggregatedEstimate", "PoolsDoNotFit",
           "disaggregated_curve",
           "decode_step", "search",
           "SearchResult", "pareto", "Calibration",
           "CALIBRATION", "Engine", "ENGINES"]
