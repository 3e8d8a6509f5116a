"""A data-preparation workload: its IO on the shared storage and the capacity it keeps."""

from __future__ import annotations

from dataclasses import dataclass

from aisize.storage.blender import Workload, data_preparation
from aisize.units import GB, TB, KiB


@dataclass(frozen=True)
class DataPrepPlan:
    """IO and capacity of a data-preparation (or development) workload."""

    name: str
    team: str
    read_bytes_per_s: float
    write_bytes_per_s: float
    io_bytes: float
    metadata_ops_per_s: float
    capacity_bytes: float
    read_share: float  # of its bytes [-]


def plan_dataprep(w) -> DataPrepPlan:
    """Plan one :class:`~aisize.scenario.DataPrep` workload (units converted to base units)."""
    r, wr = w.read_gb_per_s * GB, w.write_gb_per_s * GB
    total = r + wr
    return DataPrepPlan(w.name, w.team, r, wr, w.io_size_kib * KiB, w.metadata_ops_per_s, w.capacity_tb * TB,
                        r / total if total else 0.0)


def dataprep_workload(p: DataPrepPlan) -> Workload:
    """Its :class:`~aisize.storage.blender.Workload` for the IO blender (small random IOs)."""
    return data_preparation(p.name, p.read_bytes_per_s, p.write_bytes_per_s, io_bytes=p.io_bytes,
                            metadata_ops_per_s=p.metadata_ops_per_s)
