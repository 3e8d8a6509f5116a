"""A serving fleet through the day: load profiles and autoscaling (and its simulation).

    from aisize.fleet import profile, Autoscaler, day_replicas
    day = day_replicas(profile([...24 rates...]), Autoscaler(2.0, 1, 20, 120.0), gpus_per_replica=4,
                       capacity_per_replica_per_s=2.5)
    day.gpu_hours, day.peak_replicas, day.hourly()
"""

from aisize.fleet.autoscale import (HPA_SCALE_DOWN_WINDOW_SECONDS, HPA_SYNC_SECONDS, HPA_TOLERANCE, Autoscaler,
                                    Day, day_replicas)
from aisize.fleet.profile import LoadProfile, from_csv, profile
from aisize.fleet.simulate import SimulatedDay, simulate_day

__all__ = ["LoadProfile", "profile", "from_csv", "Autoscaler", "Day", "day_replicas", "SimulatedDay",
           "simulate_day", "HPA_SYNC_SECONDS", "HPA_TOLERANCE", "HPA_SCALE_DOWN_WINDOW_SECONDS"]
