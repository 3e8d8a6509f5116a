"""Interconnect: link transfers, collective operations and fabric sizing."""

from aisize.network.collectives import (OPS, bus_bandwidth, collective_seconds, traffic_factor,
                                        transfer_seconds, two_tier_collective_seconds)
from aisize.network.fabric import (FatTree, Nics, StorageNetwork, compute_fabric, compute_nics,
                                   compute_nics_for, fat_tree, storage_network)
from aisize.network.placement import domain_share
from aisize.network.links import (CommTime, LinkFeed, Staging, gradient_sync, link_feed,
                                  link_feed_for, link_transfer_seconds, moe_all_to_all,
                                  staging_for, staging_seconds, tensor_parallel_traffic)

__all__ = ["OPS", "bus_bandwidth", "collective_seconds", "traffic_factor", "transfer_seconds",
           "two_tier_collective_seconds",
           "FatTree", "Nics", "StorageNetwork", "compute_fabric", "compute_nics", "compute_nics_for",
           "fat_tree", "storage_network",
           "CommTime", "LinkFeed", "Staging", "gradient_sync", "link_feed", "link_feed_for",
           "link_transfer_seconds", "moe_all_to_all", "staging_for", "staging_seconds",
           "tensor_parallel_traffic", "domain_share"]
