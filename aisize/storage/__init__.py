"""Storage: read demand and data stalls, IO and file formats, capacity, checkpoints,
building-block sizing and the IO blender."""

from aisize.storage.blender import (Blend, Workload, blend, checkpoint_bursts, data_preparation,
                                    inference_model_loading, kv_cache_tier, mixed, seed_workloads, training_reads,
                                    workload)
from aisize.storage.capacity import CapacityPlan, capacity_plan, protection_efficiency
from aisize.storage.checkpoint import (FULL_STATE_BYTES_PER_PARAM, WEIGHTS_ONLY_BYTES_PER_PARAM,
                                       CheckpointPlan, CheckpointSize, CheckpointWrite,
                                       checkpoint_plan, checkpoint_size, checkpoint_write,
                                       cluster_mtbf, goodput, read_bandwidth_for_rto,
                                       restore_seconds, write_bandwidth_for_stall,
                                       young_daly_interval)
from aisize.storage.demand import (DEFAULT_TARGET_UTILISATION, MLPERF_STORAGE_AU_THRESHOLDS,
                                   DataStall, ReadDemand, data_stall, mlperf_read_demand,
                                   read_demand, samples_per_s_from_batch, supply_for_utilisation,
                                   training_read_demand)
from aisize.storage.io import (FORMATS, Compression, IOProfile, compression_tradeoff, io_profile,
                               io_profile_for_format)
from aisize.storage.sizing import StorageUnits, storage_units, storage_units_for

__all__ = [
    "Blend", "Workload", "blend", "checkpoint_bursts", "data_preparation", "inference_model_loading", "kv_cache_tier",
    "mixed", "seed_workloads", "training_reads", "workload",
    "CapacityPlan", "capacity_plan", "protection_efficiency",
    "FULL_STATE_BYTES_PER_PARAM", "WEIGHTS_ONLY_BYTES_PER_PARAM", "CheckpointPlan", "CheckpointSize",
    "CheckpointWrite", "checkpoint_plan", "checkpoint_size", "checkpoint_write", "cluster_mtbf",
    "goodput", "read_bandwidth_for_rto", "restore_seconds", "write_bandwidth_for_stall",
    "young_daly_interval",
    "DEFAULT_TARGET_UTILISATION", "MLPERF_STORAGE_AU_THRESHOLDS", "DataStall", "ReadDemand",
    "data_stall", "mlperf_read_demand", "read_demand", "samples_per_s_from_batch", "supply_for_utilisation",
    "training_read_demand",
    "FORMATS", "Compression", "IOProfile", "compression_tradeoff", "io_profile",
    "io_profile_for_format",
    "StorageUnits", "storage_units", "storage_units_for",
]
