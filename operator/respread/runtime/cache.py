"""The operator's view of the cluster: slim records kept current by one watch per kind.

kopf delivers every object of each watched kind (first as a listing, then as changes); each
event replaces or removes one record. A scan takes a consistent ClusterState from here.
Nothing is written to the watched objects: no finalizers, no annotations.

A watch that cannot resume where it stopped (410 Gone: its resource version has expired, as
after an API server restart) is restarted by kopf with a new listing. A listing shows what
exists, never what was deleted meanwhile, so records of objects deleted while the watch was
away would stay forever. Listed objects arrive as events without a type; one arriving after
the initial listings marks the cache as relisted, and the next scan first sweeps it: a
metadata-only list of each kind says which objects exist, and records of any other object not
touched since the sweep began are dropped. A sweep also runs every RESYNC seconds, for a kind
relisted with no object left at all.

A watch that lost its connection (the API server restarted or unreachable) misses every event
until kopf has reconnected it, which its back-off may delay by up to half a minute after the
server is back; a scan in between would plan from a cache that missed events. So anything
suggesting a disconnection (a failed request of the operator's own, kopf reporting a failed
request, a failed Lease renewal) marks the cache suspect, and the next scan verifies it first:
the sweep's metadata-only lists carry each object's resourceVersion, and the scan waits (at
most CATCH_UP seconds) until the cache holds every listed object at that version or newer. If
the watches do not catch up in time the scan fails, and the next one verifies again: no plan is
ever made from a cache that is behind what the API server showed at the scan's start.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from respread.kube.client import KubeError
from respread.kube.reader import list_keys
from respread.model import (
    ClusterState,
    DisruptionBudget,
    Namespace,
    Node,
    Pod,
    Service,
    Workload,
)
from respread.snapshot import FieldError, ObjectParser, Record

log = logging.getLogger(__name__)

RESYNC = 600.0  # seconds between sweeps when no relisting asked for one
SETTLED = 5.0  # a listing that starts this long after the last listed object is a relisting
CATCH_UP = 60.0  # seconds a scan waits for the watches to catch up with a verifying list
Key = tuple[str, str]  # (namespace, name)
# {kind: the objects that exist}: with their resourceVersions ({key: version}) when known
Listing = Mapping[str, Collection[Key]]


class CacheBehindError(KubeError):
    """The watches did not catch up with the API server in time: the scan must not plan."""


def _newer(listed: str, cached: str | None) -> bool:
    """Whether the listed version of an object is newer than the cached one. resourceVersions
    are etcd revisions, compared as integers; anything else counts as newer unless equal."""
    if cached is None:
        return True
    if listed.isdigit() and cached.isdigit():
        return int(listed) > int(cached)
    return bool(listed) and listed != cached


@dataclass(frozen=True, slots=True)
class Watched:
    group: str
    version: str
    plural: str
    kind: str

    @property
    def path(self) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        return f"{base}/{self.plural}"


WATCHED = (
    Watched("", "v1", "pods", "Pod"),
    Watched("", "v1", "nodes", "Node"),
    Watched("", "v1", "namespaces", "Namespace"),
    Watched("", "v1", "services", "Service"),
    Watched("", "v1", "replicationcontrollers", "ReplicationController"),
    Watched("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget"),
    Watched("apps", "v1", "deployments", "Deployment"),
    Watched("apps", "v1", "replicasets", "ReplicaSet"),
    Watched("apps", "v1", "statefulsets", "StatefulSet"),
    Watched("apps", "v1", "daemonsets", "DaemonSet"),
    Watched("batch", "v1", "jobs", "Job"),
)


class ClusterCache:
    def __init__(self, parser: ObjectParser | None = None) -> None:
        self._parser = parser or ObjectParser()
        self._records: dict[str, dict[Key, Record]] = {w.kind: {} for w in WATCHED}
        self.last_event = 0.0
        self.last_listed = 0.0  # the last event of a listing (an event without a type)
        self.listed = False  # the first scan found the listings settled: any later one relists
        self.relisted = False  # a kind was relisted since the last sweep began
        self.suspect = False  # a watch may have been disconnected since the last sweep began
        self._versions: dict[str, dict[Key, str]] = {w.kind: {} for w in WATCHED}
        self.swept = time.monotonic()
        self.malformed = 0
        self._touched: dict[str, set[Key]] | None = None  # during a sweep
        self._sweeping = asyncio.Lock()

    def apply(self, kind: str, event_type: str | None, body: Mapping[str, Any]) -> None:
        """One watch event: None/ADDED/MODIFIED replace the record, DELETED removes it."""
        meta = body.get("metadata") or {}
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        self.last_event = time.monotonic()
        if event_type is None:
            settled = self.last_listed and self.last_event - self.last_listed > SETTLED
            if (self.listed or settled) and not self.relisted:
                log.info("%s objects are being relisted: a watch was restarted", kind)
                self.relisted = True
            self.last_listed = self.last_event
        if self._touched is not None:
            self._touched[kind].add(key)
        store = self._records[kind]
        if event_type == "DELETED":
            store.pop(key, None)
            self._versions[kind].pop(key, None)
            return
        self._versions[kind][key] = str(meta.get("resourceVersion") or "")
        try:
            record = self._parser.parse(body, kind)
        except FieldError as err:
            self.malformed += 1
            store.pop(key, None)
            log.warning("left out %s %s/%s: field %s: %s", kind, *key, err.path, err.message)
            return
        if record is not None:
            store[key] = record

    def count(self, kind: str) -> int:
        return len(self._records[kind])

    def mark_suspect(self, why: str) -> None:
        """Something suggests a watch lost its connection: verify before the next scan."""
        if not self.suspect:
            log.info("the watch cache will be verified before the next scan: %s", why)
        self.suspect = True

    def needs_sweep(self) -> bool:
        return self.relisted or self.suspect or time.monotonic() - self.swept > RESYNC

    def begin_sweep(self) -> None:
        self._touched = {kind: set() for kind in self._records}
        self.relisted = False  # a relisting from now on asks for another sweep
        self.suspect = False  # and so does a disconnection

    def behind(self, present: Listing) -> dict[str, int]:
        """Per kind, how many listed objects the cache lacks or holds at an older version."""
        out: dict[str, int] = {}
        for kind, listed in present.items():
            if not isinstance(listed, Mapping):  # no versions known: presence only
                continue
            cached = self._versions[kind]
            lagging = sum(1 for key, rv in listed.items() if _newer(rv, cached.get(key)))
            if lagging:
                out[kind] = lagging
        return out

    async def catch_up(self, present: Listing, timeout: float) -> None:
        """Wait until the watches have delivered everything `present` shows."""
        deadline = time.monotonic() + timeout
        lagging = self.behind(present)
        if lagging:
            log.info("waiting for the watches to catch up with the API server: %s", lagging)
        while lagging:
            if time.monotonic() > deadline:
                self.suspect = True
                raise CacheBehindError(
                    f"the watch cache is behind the API server after {timeout:.0f}s (objects "
                    "missing or outdated: "
                    + ", ".join(f"{n} {kind}" for kind, n in sorted(lagging.items()))
                    + "); not planning from it"
                )
            await asyncio.sleep(0.25)
            lagging = self.behind(present)

    def end_sweep(self, present: Listing) -> int:
        """Drop the records of objects neither in `present` (listed after begin_sweep) nor
        touched by an event since; returns how many were dropped."""
        touched, self._touched = self._touched or {}, None
        dropped = 0
        for kind, keys in present.items():
            store = self._records[kind]
            seen = touched.get(kind, set())
            versions = self._versions[kind]
            for key in [k for k in set(store) | set(versions) if k not in keys and k not in seen]:
                if store.pop(key, None) is not None:
                    dropped += 1
                versions.pop(key, None)
        self.swept = time.monotonic()
        return dropped

    def abort_sweep(self) -> None:
        self._touched = None
        self.relisted = True  # still to do

    async def sweep(self, api: client.ApiClient, catch_up: float | None = None) -> int:
        """Forget the objects the API server no longer has, and wait for the watches to
        deliver what it has, if a relisting, a suspected disconnection (or RESYNC) asks for
        it. Must run on the event loop that applies the events."""
        async with self._sweeping:
            if not self.needs_sweep():
                return 0
            self.begin_sweep()
            try:
                present = await asyncio.to_thread(list_keys, api, {w.kind: w.path for w in WATCHED})
            except BaseException:
                self.abort_sweep()
                raise
            dropped = self.end_sweep(present)
            await self.catch_up(present, CATCH_UP if catch_up is None else catch_up)
        if dropped:
            log.warning(
                "forgot %d cached object(s) deleted while a watch was away (relisted)", dropped
            )
        return dropped

    def snapshot(self) -> ClusterState:
        r = self._records

        def values(kind: str) -> tuple[Any, ...]:
            return tuple(r[kind].values())

        workloads: tuple[Workload, ...] = tuple(
            w
            for kind in (
                "Deployment",
                "ReplicaSet",
                "StatefulSet",
                "DaemonSet",
                "Job",
                "ReplicationController",
            )
            for w in r[kind].values()
            if isinstance(w, Workload)
        )
        nodes: tuple[Node, ...] = values("Node")
        pods: tuple[Pod, ...] = values("Pod")
        budgets: tuple[DisruptionBudget, ...] = values("PodDisruptionBudget")
        services: tuple[Service, ...] = values("Service")
        namespaces: tuple[Namespace, ...] = values("Namespace")
        return ClusterState(
            nodes=nodes,
            pods=pods,
            budgets=budgets,
            workloads=workloads,
            services=services,
            namespaces=namespaces,
            taken_at=time.time(),
        )
