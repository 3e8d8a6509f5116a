"""Placement: bin-packing workloads onto the servers of their pools, over time.

Each GPU workload becomes *items*, the pieces that must sit on one server: a
serving replica (its tensor-parallel GPUs), a training job's share of each
server it spans, one job slot of a job stream. An item needs GPUs (inside one
scale-up domain when it is no larger than one), host RAM and compute-fabric NIC
ports, in every time slot its workload is active (:mod:`aisize.plan.timeline`);
it keeps the same server in all of them. Workloads that never run at the same
time share GPUs.

Packing is first-fit decreasing [1]: workloads in order of their largest item
(ties: the one active in more slots first), each item into the first server of
its pool with room in all its slots (among domains, the fullest that still
fits: best fit inside a server), a new server only when none has room. A
workload goes whole into the first pool (in the scenario's order) that can hold
it. FFD never uses more than 11/9 OPT + 6/9 bins in one dimension [2]; the plan
shows the lower bound max over slots of ceil(GPUs active / GPUs per server).

References
----------
.. [1] D. S. Johnson, "Near-optimal bin packing algorithms", PhD thesis, MIT, 1973.
.. [2] G. Dósa, "The tight bound of first fit decreasing bin-packing algorithm is
   FFD(I) <= 11/9 OPT(I) + 6/9", ESCAPE 2007, LNCS 4614.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

from aisize import checks


@dataclass(frozen=True)
class Demand:
    """What one workload needs from one pool's servers."""

    workload: str
    field_path: str  # "workloads.N" (error messages name it)
    items: tuple[int, ...]  # GPUs of each piece that must sit on one server
    host_bytes_per_gpu: float  # host RAM per GPU, beyond the server's OS share
    nics_per_gpu: float  # compute-fabric ports per GPU (0: its traffic stays inside a server)
    slots: frozenset  # time slots it is active in
    item_slots: tuple = ()  # per item, the slots it is present in (a service's replicas through the day); () = slots

    def pieces(self) -> list[tuple[int, frozenset]]:
        """(GPUs, slots) of every item."""
        return list(zip(self.items, self.item_slots or [self.slots] * len(self.items)))


@dataclass(frozen=True)
class PoolSpec:
    """A pool's servers and limits, as the packer sees them."""

    name: str
    field_path: str  # "pools.N" or "hardware.server" for the implicit pool
    server: str  # catalog id
    gpus_per_server: int
    domain: int  # GPUs per scale-up domain inside a server
    host_bytes: float  # host RAM per server
    os_bytes: float  # host RAM the OS and runtime keep on every server
    nics: int  # compute NIC ports per server
    fixed: int | None  # a fixed server count, or None ("auto")
    limit: int | None  # most servers allowed (site or rack limit), or None
    limit_field: str  # the scenario field behind ``limit`` / ``fixed``


@dataclass
class _Server:
    """A server while packing. Its room is kept only for the slots something uses it in (the others are
    as new): a server costs what it holds, not the scenario's slots, so thousands of slots stay cheap."""

    pool: str
    index: int
    sizes: list  # GPUs of each scale-up domain
    host: float  # host RAM beyond the OS share, and NIC ports, of an empty slot
    nics: float
    free: dict = field(default_factory=dict)  # slot -> list of free GPUs per domain (used slots only)
    host_free: dict = field(default_factory=dict)
    nics_free: dict = field(default_factory=dict)
    items: list = field(default_factory=list)  # (workload, gpus, slots)
    # servers opened alike in one run of equal items and unchanged since share this token (_place_items's copies):
    # _result summarises their contents once
    alike: object = None


@dataclass(frozen=True)
class ServerUse:
    """One server after packing: what it holds and its busiest slot."""

    pool: str
    server: int  # index within the pool, from 0
    gpus: int
    workloads: tuple  # dicts: workload, gpus, slots (sorted slot indices)
    peak_gpus_used: int
    peak_host_bytes: float  # incl. the OS share
    peak_nics: float
    host_bytes: float
    nics: int


@dataclass(frozen=True)
class PoolPlacement:
    """A pool after packing."""

    name: str
    server: str
    servers: int
    gpus_per_server: int
    lower_bound_servers: int  # max over slots of ceil(GPUs active / GPUs per server)
    fixed: int | None
    limit: int | None


@dataclass(frozen=True)
class Placement:
    """The packing of every GPU workload: pools, servers, and where each workload went."""

    pools: tuple[PoolPlacement, ...]
    servers: tuple[ServerUse, ...]
    assignment: dict  # workload -> {"pool": name, "servers": [indices], "items": [GPUs...]}
    method: str
    slot_labels: tuple = ()  # a name per time slot (aisize.plan.timeline.Slots.labels)


def _new_server(spec: PoolSpec, index: int) -> _Server:
    domains = max(1, spec.gpus_per_server // spec.domain)
    sizes = [spec.domain] * domains
    sizes[-1] += spec.gpus_per_server - spec.domain * domains
    return _Server(spec.name, index, sizes, spec.host_bytes - spec.os_bytes, float(spec.nics))


def _copy(server: _Server, index: int, alike: object) -> _Server:
    """A server at ``index`` holding what ``server`` holds (the copies of a run of equal items, :func:`_place_items`)."""
    return _Server(server.pool, index, list(server.sizes), server.host, server.nics,
                   {t: list(free) for t, free in server.free.items()}, dict(server.host_free),
                   dict(server.nics_free), list(server.items), alike)


def _domains_for(server: _Server, gpus: int, slots, domain: int) -> list[int] | None:
    """Domain indices an item of ``gpus`` takes on ``server`` in all ``slots``, or None."""
    frees = [server.free.get(t, server.sizes) for t in slots]
    n = len(frees[0])
    if gpus <= domain:
        fits = [(min(f[j] for f in frees), j) for j in range(n) if all(f[j] >= gpus for f in frees)]
        return [min(fits)[1]] if fits else None
    # larger than a domain: whole free domains (a replica or job spanning domains takes them all)
    whole = [j for j in range(n) if all(f[j] == server.sizes[j] for f in frees)]
    take, total = [], 0
    for j in whole:
        if total >= gpus:
            break
        take.append(j)
        total += server.sizes[j]
    return take if total >= gpus else None


def _fits(server: _Server, spec: PoolSpec, gpus: int, d: Demand, slots):
    host = d.host_bytes_per_gpu * gpus
    nics = d.nics_per_gpu * gpus
    slots = sorted(slots)
    if any(server.host_free.get(t, server.host) < host - 1e-6 or server.nics_free.get(t, server.nics) < nics - 1e-9
           for t in slots):
        return None
    return _domains_for(server, gpus, slots, spec.domain)


def _take(server: _Server, domains: list[int], gpus: int, d: Demand, spec: PoolSpec, slots) -> None:
    for t in slots:
        free = server.free.setdefault(t, list(server.sizes))
        left = gpus
        for j in domains:
            used = min(left, free[j]) if gpus <= spec.domain else free[j]
            free[j] -= used
            left -= min(left, used)
        server.host_free[t] = server.host_free.get(t, server.host) - d.host_bytes_per_gpu * gpus
        server.nics_free[t] = server.nics_free.get(t, server.nics) - d.nics_per_gpu * gpus
    server.items.append((d.workload, gpus, tuple(sorted(slots))))
    server.alike = None  # no longer like the servers opened with it


def _full(server: _Server, slot_count: int) -> bool:
    return len(server.free) == slot_count and not any(any(free) for free in server.free.values())


def _place_items(servers: list[_Server], spec: PoolSpec, d: Demand, all_slots, others: int = 0, memo=None,
                 touched=None) -> list[int] | None:
    """First fit for every item of ``d`` (largest first); opens servers as allowed. None: no room.

    A server past :data:`aisize.checks.MAX_SERVERS` (with ``others``, the other pools' servers) is refused
    before it is made, naming the workload and the fewest servers it would take.

    Servers full in every slot are skipped from the front (they never free up while packing), and an
    item of the same size and slots as an earlier one starts where that one went (packing only takes room,
    so a server that could not hold it then cannot now): a job of a thousand whole servers, or one busy in
    some slots only, costs linear, not quadratic, time. Where a run of equal items has filled a server it
    opened and the next one finds no room, every later one of the run would open and fill a server the same
    way (no earlier server holds one, and each new one starts empty): those servers are copied from it, as
    many as the run fills and the limits allow, and the rest go one by one (a 32,768-GPU job is 4,096 copies,
    not 4,096 searches). ``memo`` carries where to start over calls that place the same Demand again (a job
    stream taking the rest); ``touched`` collects a copy of each server that was there before this call, as
    it was before this call changed it, so that a failed call can be undone without copying the whole pool
    first (the servers it opened are dropped).
    """
    memo = {} if memo is None else memo
    used, start, since = [], memo.get("start", 0), memo.setdefault("since", {})
    pieces = sorted(d.pieces(), key=lambda p: (-p[0], -len(p[1])))
    before, run = len(servers), None  # run: [(GPUs, slots), the server its first item opened, items it holds]
    i = 0
    while i < len(pieces):
        gpus, slots = pieces[i]
        if gpus > spec.gpus_per_server:
            return None
        while start < len(servers) and _full(servers[start], len(all_slots)):
            start += 1
        spot, opened = None, False
        for j in range(max(start, since.get((gpus, slots), 0)), len(servers)):
            domains = _fits(servers[j], spec, gpus, d, slots)
            if domains is not None:
                spot = (servers[j], domains)
                break
        if spot is None:
            cap = spec.fixed if spec.fixed is not None else spec.limit
            most = min(checks.MAX_SERVERS, checks.MAX_SERVER_SLOTS // len(all_slots))
            if run is not None and run[0] == (gpus, slots) and run[1] == len(servers) - 1:
                copies = _run_copies(pieces, i, run[2], len(servers), cap, most - others)
                if copies:
                    template, alike = servers[run[1]], object()
                    template.alike = alike
                    for _ in range(copies):
                        servers.append(_copy(template, len(servers), alike))
                        used.extend([len(servers) - 1] * run[2])
                    since[gpus, slots] = len(servers) - 1
                    i += copies * run[2]
                    continue
            if cap is not None and len(servers) >= cap:
                return None
            if others + len(servers) >= most:
                left = sum(g for g, _ in pieces[i:])
                slots_said = (f"; the plan cuts time into {len(all_slots):,} slots (phases x pieces of the day) and "
                              f"holds {checks.MAX_SERVER_SLOTS:,} server-slots" if most < checks.MAX_SERVERS else "")
                checks.count("servers", others + len(servers) + math.ceil(left / spec.gpus_per_server), most,
                             why=f"{d.field_path} ({d.workload!r}) on {spec.server} servers of {spec.gpus_per_server} "
                                 f"GPUs in pool {spec.name!r}, beside the {others + len(servers):,} servers placed "
                                 f"before it" + slots_said)
            s = _new_server(spec, len(servers))
            servers.append(s)
            domains = _fits(s, spec, gpus, d, slots)
            if domains is None:
                return None  # one item needs more host RAM or NICs than a whole server has
            spot, opened = (s, domains), True
        if touched is not None and spot[0].index < before and spot[0].index not in touched:
            touched[spot[0].index] = copy.deepcopy(spot[0])
        _take(spot[0], spot[1], gpus, d, spec, slots)
        since[gpus, slots] = spot[0].index
        used.append(spot[0].index)
        if opened:
            run = [(gpus, slots), spot[0].index, 1]
        elif run is not None and run[0] == (gpus, slots) and run[1] == spot[0].index:
            run[2] += 1
        else:
            run = None
        i += 1
    memo["start"] = start
    return used


def _run_copies(pieces, i: int, per_server: int, servers: int, cap, most: int) -> int:
    """Servers to open as copies of a run's full one for the equal items from ``pieces[i]`` on, ``per_server`` to
    a server: every whole server's worth of them, within the pool's ``cap`` and the ``most`` servers allowed
    (the next one past a limit is then opened one by one, and refused as it was)."""
    same = 0
    while i + same < len(pieces) and pieces[i + same] == pieces[i]:
        same += 1
    room = min(cap - servers if cap is not None else same, most - servers)
    return max(min(same // per_server, room), 0)


def pack(specs: list[PoolSpec], demands: dict[str, list[tuple[int, Demand]]], order: list[str],
         slot_count: int, fill: tuple = ()) -> tuple[Placement, dict[str, int], dict[str, int]]:
    """Pack each workload (in ``order``) into the first of its candidate pools that holds it.

    ``demands`` maps a workload to (pool index, Demand) pairs in preference order. ``fill`` lists
    (name, pool index, Demand of ONE job) placed last, repeated while the pool has room (a job
    stream taking "the rest"). Returns the placement, the pool index each workload went to and
    the jobs each ``fill`` got. Raises ValueError naming the scenario field that stops a workload
    from being placed.
    """
    all_slots = list(range(slot_count))
    checks.count("servers", sum(s.fixed or 0 for s in specs), checks.MAX_SERVERS, why="the pools' fixed servers")
    state = {i: [_new_server(s, k) for k in range(s.fixed or 0)] for i, s in enumerate(specs)}
    chosen, assignment = {}, {}
    for name in order:
        tried = []
        for pool, d in demands[name]:
            used = _tried(state[pool], specs[pool], d, all_slots, _others(state, pool))
            if used is not None:
                chosen[name] = pool
                assignment[name] = {"pool": specs[pool].name, "servers": sorted(set(used)), "items": list(d.items)}
                break
            tried.append((pool, d))
        else:
            raise ValueError(_no_room(specs, tried, name))
    demands = dict(demands)
    filled = {}
    for name, pool, one in fill:  # one job at a time on the pool itself; the one that finds no room is undone
        jobs, used, memo, servers = 0, [], {}, state[pool]
        while True:
            got = _tried(servers, specs[pool], one, all_slots, _others(state, pool), memo)
            if got is None:
                break
            jobs, used = jobs + 1, used + got
        filled[name], chosen[name] = jobs, pool
        whole = Demand(one.workload, one.field_path, one.items * jobs, one.host_bytes_per_gpu, one.nics_per_gpu,
                       one.slots)
        demands[name] = [(pool, whole)]
        assignment[name] = {"pool": specs[pool].name, "servers": sorted(set(used)), "items": list(whole.items)}
    return _result(specs, state, assignment, demands, chosen, slot_count), chosen, filled


def _tried(servers: list[_Server], spec: PoolSpec, d: Demand, all_slots, others: int, memo=None) -> list[int] | None:
    """:func:`_place_items` on ``servers``, undone where it finds no room: the servers it changed put back as they
    were, the ones it opened dropped (the pool is not copied first: a workload beside a job of thousands of
    servers touches a few)."""
    opened, touched = len(servers), {}
    used = _place_items(servers, spec, d, all_slots, others, memo, touched)
    if used is None:
        for k, before in touched.items():
            servers[k] = before
        del servers[opened:]
    return used


def _others(state: dict, pool: int) -> int:
    """Servers of the pools other than ``pool`` so far."""
    return sum(len(servers) for k, servers in state.items() if k != pool)


def _no_room(specs, tried, name) -> str:
    pool, d = tried[0]
    s = specs[pool]
    big = max(d.items)
    if big > s.gpus_per_server:
        return (f"{d.field_path}: {name!r} needs {big} GPUs on one server; pool {s.name!r} ({s.server}) has "
                f"{s.gpus_per_server} per server")
    if len(tried) == 1 and s.fixed is None and s.limit is None:
        return (f"{d.field_path}: one piece of {name!r} ({big} GPUs) needs more host RAM or NICs than a "
                f"{s.server} server of pool {s.name!r} has")
    names = ", ".join(repr(specs[p].name) for p, _ in tried)
    cap = s.fixed if s.fixed is not None else s.limit
    return (f"{s.limit_field}: pool {s.name!r} cannot hold workload {name!r} ({sum(d.items)} GPUs in pieces of "
            f"{sorted(set(d.items), reverse=True)}) beside the others within {cap} servers"
            + (f" (pools tried: {names})" if len(tried) > 1 else "") + "; allow more servers or use 'auto'")


def _summary(spec: PoolSpec, s: _Server) -> tuple:
    """(workloads, peak GPUs, peak host RAM [bytes], peak NIC ports) of a packed server, as :class:`ServerUse`
    holds them: the busiest of the slots it is used in (an unused slot uses nothing beyond the OS share)."""
    peak = max((spec.gpus_per_server - sum(free) for free in s.free.values()), default=0)
    host = max([spec.host_bytes - left for left in s.host_free.values()] + [spec.os_bytes])
    nics = max([spec.nics - left for left in s.nics_free.values()] + [0.0])
    merged = {}  # one entry per workload and set of slots (a service's night replicas differ)
    for w, g, slots in s.items:
        entry = merged.setdefault((w, slots), {"workload": w, "gpus": 0, "slots": slots})
        entry["gpus"] += g
    return tuple(merged.values()), int(peak), float(host), float(nics)


def _result(specs, state, assignment, demands, chosen, slot_count) -> Placement:
    uses, pools = [], []
    for i, spec in enumerate(specs):
        servers = state[i]
        alike = {}  # a run's copies, as summarised once (their token: _Server.alike)
        for s in servers:
            got = alike.get(s.alike) if s.alike is not None else None
            if got is None:
                got = _summary(spec, s)
                if s.alike is not None:
                    alike[s.alike] = got
            workloads, peak, host, nics = got
            uses.append(ServerUse(spec.name, s.index, spec.gpus_per_server, tuple(dict(w) for w in workloads), peak,
                                  host, nics, float(spec.host_bytes), int(spec.nics)))
        gpus_in = {}  # GPUs active per set of slots (few distinct sets), then per slot
        for w, pairs in demands.items():
            for p, d in pairs if chosen.get(w) == i else ():
                for g, slots in d.pieces() if p == i else ():
                    gpus_in[slots] = gpus_in.get(slots, 0) + g
        active = [0] * slot_count
        for slots, g in gpus_in.items():
            for t in slots:
                if t < slot_count:
                    active[t] += g
        bound = max((math.ceil(a / spec.gpus_per_server) for a in active), default=0)
        pools.append(PoolPlacement(spec.name, spec.server, len(servers), spec.gpus_per_server, int(bound),
                                   spec.fixed, spec.limit))
    return Placement(tuple(pools), tuple(uses), assignment,
                     "first-fit decreasing over time slots (best-fit domain inside a server)")
