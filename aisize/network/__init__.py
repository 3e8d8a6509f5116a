"""Interconnect: link transfers, collective operations and fabric sizing."""

from aisize.network.collectives import (OPS, bus_bandwidth, collective_seconds, traffic_factor,
                                        transfer_seconds, two_tier_collective_seconds)

__all__ = ["OPS", "bus_bandwidth", "collective_seconds", "traffic_factor", "transfer_seconds",
           "two_tier_collective_seconds"]
