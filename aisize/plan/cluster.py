"""The whole plan: every workload, then servers, racks, power, fabric and shared storage.

Jobs do not share servers: each workload gets ceil(GPUs / GPUs per server)
servers, and the totals are sums of the parts (golden-tested).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from aisize.network.fabric import Nics, compute_fabric, compute_nics_for, storage_network
from aisize.plan import context as C
from aisize.plan import job as J
from aisize.plan.dataprep import DataPrepPlan, plan_dataprep
from aisize.plan.inference import InferencePlan, plan_inference
from aisize.plan.storage import StoragePlan, plan_storage
from aisize.plan.training import TrainingPlan, plan_training


@dataclass(frozen=True)
class NetworkPlan:
    """Compute fabric (scale-out) and storage network of all GPU servers.

    The storage fabric's endpoints are the GPU servers' storage NICs plus the storage
    system's own ports: enough ports of the storage link to carry the storage's supplied
    read rate (ceil(supply_read_bytes_per_s / port rate), at least one). In xe9680-genai,
    3 servers x 2 NICs + 1 port (12 GB/s on a 12.5 GB/s port) = 7 endpoints.
    """

    compute_link: str
    compute_nics_per_server: int
    compute_nics: int
    scaleout_per_gpu_bytes_per_s: float
    compute_fabric: dict  # aisize.network.fabric.FatTree fields
    storage_link: str
    storage_nics_per_server: float
    storage_nics: float
    storage_fabric: dict
    scaleup_link: str  # link tensor-parallel traffic crosses inside a server: NVLink, else PCIe (job.scaleup)
    scaleup_per_gpu_bytes_per_s: float  # per GPU, per direction
    scaleup_domain: int  # GPUs one scale-up domain joins


@dataclass(frozen=True)
class Plan:
    """A scenario's bill of materials and the figures behind it. Totals are sums of the parts."""

    scenario_name: str
    server: str
    accelerator: str
    storage_system: str
    training: tuple[TrainingPlan, ...]
    inference: tuple[InferencePlan, ...]
    dataprep: tuple[DataPrepPlan, ...]
    gpus: int
    servers: int
    racks: int
    servers_per_rack: int
    power_watts: float  # GPU servers at their maximum system power
    host_memory_needed_bytes: float  # the most any workload needs on one server
    server_host_memory_bytes: float
    network: NetworkPlan
    storage: StoragePlan
    policies: dict
    assumptions: dict
    findings: tuple = ()  # aisize.plan.findings.Finding, filled by plan()
    scenario: object = None  # the aisize.scenario.Scenario planned

    @property
    def workloads(self) -> tuple:
        """Every workload plan in scenario order groups: training, inference, data preparation."""
        return self.training + self.inference + self.dataprep


def _racks(ctx: C.HardwareContext, servers: int) -> tuple[int, int]:
    """(racks, servers per rack): by rack units and by the rack power budget; a rack-scale system is a rack."""
    s = ctx.server
    if s.rack_units is None:
        return servers, 1
    per = max(1, min(C.RACK_UNITS // s.rack_units, int(C.RACK_POWER_WATTS // s.power_watts)))
    return math.ceil(servers / per), per


def _network(ctx: C.HardwareContext, hardware, servers: int, nics: Nics, read_per_server: float,
             supply_read: float) -> NetworkPlan:
    """Both fabrics; the storage system connects with enough ports for its supplied read rate (all units)."""
    n = max(servers, 1)
    fabric = compute_fabric(n, nics, hardware.switch_radix, oversubscription=hardware.oversubscription)
    link = ctx.storage_nic_link.bandwidth_per_direction_bytes_per_s
    store = storage_network(n, read_per_server, link, max(1, math.ceil(supply_read / link)),
                            hardware.switch_radix, min_nics_per_server=max(1, ctx.server.storage_nics),
                            oversubscription=hardware.oversubscription)
    net = NetworkPlan(ctx.scale_out_link.id, nics.nics_per_server, nics.nics_per_server * servers,
                      nics.per_gpu_bytes_per_s, dataclasses.asdict(fabric), ctx.storage_nic_link.id,
                      float(store.nics_per_server), float(store.nics_per_server) * servers,
                      dataclasses.asdict(store.fabric), *J.scaleup(ctx), int(ctx.accelerator.scaleup_domain))
    return net


def plan(scenario) -> Plan:
    """Plan a :class:`~aisize.scenario.Scenario`: a bill of materials, the figures behind it, and findings.

    Raises ValueError (naming the workload and field) when a fixed layout or input is inconsistent,
    or when the inputs ask for more than the formulas accept (:mod:`aisize.plan.errors`).
    """
    from aisize.plan.errors import planning_error

    try:
        return _plan(scenario)
    except (ValueError, ArithmeticError) as error:
        raise planning_error(error, scenario, _plan) from error


def _plan(scenario) -> Plan:
    from aisize.plan.findings import assumptions_used, findings

    ctx = C.resolve(scenario.hardware)
    pol = scenario.policies
    training = tuple(plan_training(w, ctx, pol) for w in scenario.workloads if w.kind == "training")
    inference = tuple(plan_inference(w, ctx, pol) for w in scenario.workloads if w.kind == "inference")
    dataprep = tuple(plan_dataprep(w) for w in scenario.workloads if w.kind == "data-prep")
    gpus = sum(p.gpus for p in training + inference)
    servers = sum(p.servers for p in training + inference)
    racks, per_rack = _racks(ctx, servers)
    read_per_server = sum(t.read_bytes_per_s for t in training) / max(servers, 1)
    nics = compute_nics_for(ctx.server, ctx.scale_out_link)
    storage = plan_storage(training, inference, dataprep, ctx, pol, servers, nics)
    net = _network(ctx, scenario.hardware, servers, nics, read_per_server, storage.supply_read_bytes_per_s)
    host_need = max([p.host_memory_needed_bytes for p in training + inference], default=0.0)
    p = Plan(scenario.name, ctx.server.id, ctx.accelerator.id, ctx.storage.id, training, inference, dataprep,
             int(gpus), int(servers), int(racks), int(per_rack), float(servers * ctx.server.power_watts),
             float(host_need), float(ctx.server.host_memory_bytes), net, storage, pol.model_dump(mode="json"),
             assumptions_used(pol), (), scenario)
    return dataclasses.replace(p, findings=tuple(findings(p)))
