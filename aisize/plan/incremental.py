"""Re-planning one workload at a time: a cache of per-workload results keyed by exactly what they read.

The app re-plans the whole scenario on every slider move, yet a move changes one field: the other
workloads' plans on each pool are the same as before. :class:`PlanCache` keeps each workload's
candidate plan (and its service day) keyed by the workload, its index, the pool's packing spec and
time slots, and by the *values of the policy and hardware fields the computation actually read*:
the policies and the pool's hardware context are handed to the planner wrapped in :class:`_Reads`,
which records every field read. A storage policy or the fabric's oversubscription then leaves an
inference service's cached plan valid, since the service never read them; a field it read, or any
use of the object as a whole (comparing it, dumping it, iterating or printing it) makes the entry depend on all
of it.

A wrong hit would be a wrong plan, so the key errs toward missing: the workload is compared by its
canonical JSON (which tells 1 from 1.0 and true from 1), read fields by their JSON or ``repr``.
"""

from __future__ import annotations

import dataclasses
import json
from collections import OrderedDict

ALL = "*"  # the object was used as a whole: the entry depends on every field
MAX_KEYS = 256  # distinct (workload, pool) keys kept, least recently used dropped first
MAX_PER_KEY = 8  # entries under one key (one per distinct value of the fields read)
MAX_CONTEXTS = 16  # hardware contexts whose canonical values are kept


class _Reads:
    """``real`` as the planner sees it, recording which of its fields are read.

    It hashes as ``real`` without a record (a hash alone decides nothing), so that a memoised function's
    result computed with it serves later calls with ``real`` itself (the views of a finished plan make
    them); comparing it, as a memoised function does before returning another call's result, records a
    use of the whole (that result may rest on any field)."""

    __slots__ = ("_real", "_fields", "read")

    def __init__(self, real, fields):
        self._real, self._fields, self.read = real, fields, set()

    def __getattr__(self, name):  # only for names not on the wrapper: the real object's
        value = getattr(self._real, name)
        self.read.add(name if name in self._fields else ALL)
        return value

    @property
    def __class__(self):  # isinstance() sees the real type
        return type(self._real)

    def __repr__(self):
        self.read.add(ALL)
        return repr(self._real)

    def __iter__(self):  # a pydantic model's (name, value) pairs: special methods bypass __getattr__
        self.read.add(ALL)
        return iter(self._real)

    def __hash__(self):
        return hash(self._real)

    def __eq__(self, other):
        self.read.add(ALL)
        if type(other) is _Reads:  # two plans' wrappers: a memoised hit rests on the whole of both
            other.read.add(ALL)
            return self._real == other._real
        return self._real == other

    def __ne__(self, other):
        return not self == other


class _Values:
    """Canonical values of one object's fields, computed once per plan and compared against entries."""

    def __init__(self, real, names, canon):
        self.real, self.names, self._canon, self._memo = real, names, canon, {}

    def __call__(self, name):
        if name not in self._memo:
            self._memo[name] = self._canon(self.real, name)
        return self._memo[name]

    def key(self, read: set) -> tuple:
        names = (ALL,) if ALL in read else tuple(sorted(read))
        return tuple((n, self(n)) for n in names)

    def matches(self, key: tuple) -> bool:
        return all(self(n) == v for n, v in key)


def _model_values(model) -> _Values:
    dump = model.model_dump(mode="json")
    canon = (lambda m, n: json.dumps(dump, sort_keys=True) if n == ALL
             else json.dumps(dump[n], sort_keys=True))
    return _Values(model, frozenset(type(model).model_fields), canon)


def _dataclass_values(obj) -> _Values:
    return _Values(obj, frozenset(f.name for f in dataclasses.fields(obj)),
                   lambda o, n: repr(o) if n == ALL else repr(getattr(o, n)))


def workload_key(w) -> str:
    return f"{type(w).__name__}:{w.model_dump_json()}"


class PlanCache:
    """Per-workload planning results of earlier plans, for :func:`aisize.plan.plan` (``cache=``).

    One per app state: the entries assume the catalog, price tables and the default serving
    calibration stay as they were when computed (they are fixed within a process)."""

    def __init__(self, max_keys: int = MAX_KEYS):
        self._entries: OrderedDict = OrderedDict()
        self.max_keys = max_keys
        self.hits = self.misses = 0  # workload entries (call)
        self.steps_reused = self.steps_computed = 0  # whole-plan steps (reuse)
        self._policies = None
        # hardware contexts (frozen, from the memoised aisize.plan.context.resolve) with their fields' canonical
        # values, kept across plans: the records' reprs are long. Each is held, so its id stays its own
        self._contexts: OrderedDict = OrderedDict()
        self._proxies = {}  # this plan's wrappers by (workload, pool index): a service's day reuses them
        self._last = {}  # name -> (inputs, policies' canonical JSON, result) of the last plan's whole-plan steps

    def begin(self, policies) -> None:
        """Start one plan: the policies' canonical values are computed once."""
        self._policies, self._proxies = _model_values(policies), {}

    def _ctx_values(self, ctx) -> _Values:
        if id(ctx) not in self._contexts:
            self._contexts[id(ctx)] = (ctx, _dataclass_values(ctx))
            while len(self._contexts) > MAX_CONTEXTS:
                self._contexts.popitem(last=False)
        self._contexts.move_to_end(id(ctx))
        return self._contexts[id(ctx)][1]

    def call(self, base: tuple, ctx, compute, track_ctx: bool = True, share=None, rests_on=None):
        """``compute(ctx, policies)``'s result for the key ``base`` (what the computation depends on beside the
        policies and ``ctx``), computed with recording wrappers on a miss. ``track_ctx`` False keys on the whole
        ``ctx`` and hands it over unwrapped (a training job's memoised layout search is keyed by it), or, after the
        computation, on the fields ``rests_on()`` names (None: the whole). ``share`` names wrappers that later calls
        of this plan with the same ``share`` reuse."""
        ctx_values, pol_values = self._ctx_values(ctx), self._policies
        entries = self._entries.get(base)
        if entries is not None:
            self._entries.move_to_end(base)
            for ctx_key, pol_key, value in entries:
                if ctx_values.matches(ctx_key) and pol_values.matches(pol_key):
                    self.hits += 1
                    return value
        self.misses += 1
        proxies = self._proxies.get(share) if share is not None else None
        if proxies is None:
            proxies = (_Reads(ctx, ctx_values.names) if track_ctx else None,
                       _Reads(pol_values.real, pol_values.names))
            if share is not None:
                self._proxies[share] = proxies
        ctx_proxy, pol_proxy = proxies
        value = compute(ctx_proxy if ctx_proxy is not None else ctx, pol_proxy)
        fields = ctx_proxy.read if ctx_proxy is not None else (rests_on() if rests_on is not None else None) or {ALL}
        ctx_key = ctx_values.key(fields)
        entry = (ctx_key, pol_values.key(pol_proxy.read), value)
        self._entries.setdefault(base, []).insert(0, entry)
        del self._entries[base][MAX_PER_KEY:]
        while len(self._entries) > self.max_keys:
            self._entries.popitem(last=False)
        return value

    def reuse(self, name: str, inputs: tuple, ctx, compute):
        """``compute(ctx, policies)``, or the last plan's result of step ``name`` where its ``inputs`` are the same
        objects (or equal numbers, text and records) and the fields of ``ctx`` and the policies it read are equal: a
        step that reads the workloads' plans, which a reused candidate hands over as the same objects. One entry per
        step."""
        ctx_values, pol_values = self._ctx_values(ctx), self._policies
        last = self._last.get(name)
        if (last is not None and _same(last[0], inputs) and ctx_values.matches(last[1])
                and pol_values.matches(last[2])):
            self.steps_reused += 1
            return last[3]
        self.steps_computed += 1
        ctx_proxy, pol_proxy = _Reads(ctx, ctx_values.names), _Reads(pol_values.real, pol_values.names)
        value = compute(ctx_proxy, pol_proxy)
        # the inputs are held: their ids stay theirs while compared
        self._last[name] = (inputs, ctx_values.key(ctx_proxy.read), pol_values.key(pol_proxy.read), value)
        return value


_PLAIN = (int, float, str, bool, type(None))


def _same(a, b) -> bool:
    """Whether ``a`` and ``b`` are the same inputs: one object, or containers of the same objects, or equal plain
    values or records (a record whose comparison is not a plain True, as one holding arrays, is not the same; nor
    one whose ``repr`` differs, which tells 1 from 1.0 and -0.0 from 0.0 where ``==`` does not)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, _PLAIN) or dataclasses.is_dataclass(a):
        try:
            return (a == b) is True and repr(a) == repr(b)
        except (ValueError, TypeError):  # arrays compared element-wise
            return False
    return False
