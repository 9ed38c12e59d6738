"""The operator's view of the cluster: slim records kept current by one list-and-watch per kind.

A Reflector (runtime/reflector.py) per kind lists its objects page by page, storing each as a
slim record as it arrives, then watches for changes from the listing's resourceVersion; each
event replaces or removes one record. Raw objects are never kept. A scan takes a consistent
ClusterState from here; nothing is written to the watched objects.

A watch that cannot resume where it stopped (410 Gone: its resourceVersion has expired, as after
an API server restart) is followed by a new listing, which replaces what the cache held of that
kind: records of objects no longer listed (deleted while the watch was away) are dropped when
the listing ends. While a kind is being relisted, or its watch is disconnected, the kind is not
*synced* and no scan plans: a scan waits (at most CATCH_UP seconds) until every kind is synced.

A watch that resumes after a disconnection gets every event it missed from the API server, but a
request of the operator's own that failed (or a failed Lease renewal) may mean the API server was
away longer than anyone noticed. Anything suggesting that marks the cache *suspect*, and the
next scan verifies it first: metadata-only lists of each kind carry each object's
resourceVersion; records of objects not listed are dropped, and the scan waits (at most
CATCH_UP seconds) until the cache holds every listed object at that version or newer. If the
watches do not catch up in time the scan fails, and the next one verifies again: no plan is ever
made from a cache that is behind what the API server showed at the scan's start. A periodic scan
on a healthy cache makes no request to read the cluster at all.

The reflectors run in threads; every change to the records, and every snapshot, holds one lock.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from respread.core.model import (
    ClusterState,
    Workload,
)
from respread.inputs.objects import FieldError, ObjectParser, Record
from respread.inputs.volumes import pin_pods
from respread.kube.client import KubeError
from respread.kube.reader import list_keys

log = logging.getLogger(__name__)

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
    Watched("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler"),
    Watched("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim"),
    Watched("", "v1", "persistentvolumes", "PersistentVolume"),
)


class ClusterCache:
    def __init__(self, parser: ObjectParser | None = None) -> None:
        self._parser = parser or ObjectParser()
        self._lock = threading.Lock()
        self._records: dict[str, dict[Key, Record]] = {w.kind: {} for w in WATCHED}
        self._versions: dict[str, dict[Key, str]] = {w.kind: {} for w in WATCHED}
        self.listed: set[str] = set()  # kinds listed at least once
        self.synced: set[str] = set()  # kinds listed and watched without a gap since
        self.failing: dict[str, str] = {}  # kinds whose list or watch failed: the last error
        self.suspect = False  # a request failed since the last verification began
        self.malformed = 0
        self._touched: dict[str, set[Key]] | None = None  # during a verification
        # Counts changes to the records: a snapshot is taken again only after one, so scans of
        # an unchanged cluster get the same state object (pipeline.AnalysisMemo reuses its
        # analysis).
        self._generation = 0
        self._taken: tuple[int, ClusterState] | None = None
        self._sweeping = asyncio.Lock()
        # Called from the reflectors' threads after a watch event changed a record.
        self.on_change: Callable[[], None] | None = None

    # ---- changes (from the reflectors' threads) -------------------------------------------

    def apply(self, kind: str, event_type: str | None, body: Mapping[str, Any]) -> Key:
        """One object: None (listed), ADDED or MODIFIED replace its record, DELETED removes
        it. Returns its key. A watch event that changes what respread keeps of the cluster
        (a record added, changed or removed; not a status heartbeat it does not keep) calls
        `on_change`."""
        meta = body.get("metadata") or {}
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        version = str(meta.get("resourceVersion") or "")
        with self._lock:
            if self._touched is not None:
                self._touched[kind].add(key)
            before = self._records[kind].get(key)
            if event_type == "DELETED":
                self._records[kind].pop(key, None)
                self._versions[kind].pop(key, None)
                after = None
            else:
                self._versions[kind][key] = version
                after = self._parse(kind, key, body)
            # _parse keeps an equal record the object it was: a change is a new object
            changed = before is not after
            if changed:
                self._generation += 1
        if event_type is not None and changed and self.on_change is not None:
            self.on_change()
        return key

    def _parse(self, kind: str, key: Key, body: Mapping[str, Any]) -> Record | None:
        """The object's record, stored (under the lock); a malformed object is left out."""
        store = self._records[kind]
        try:
            record = self._parser.parse(body, kind)
        except FieldError as err:
            self.malformed += 1
            store.pop(key, None)
            log.warning(
                "left out %s %s: field %s: %s",
                kind,
                "/".join(k for k in key if k)[:120],
                err.path,
                err.message[:200],
            )
            return None
        if record is not None and store.get(key) != record:
            # an equal record stays the object it was: the scans carry what they made of
            # unchanged objects by identity (analysis/groups.py, remedies/cost/memo.py)
            store[key] = record
        return store.get(key)

    def begin_listing(self, kind: str) -> None:
        """A listing of `kind` starts: it is not synced until the listing ends."""
        with self._lock:
            self.synced.discard(kind)

    def end_listing(self, kind: str, keys: Collection[Key]) -> int:
        """The listing of `kind` is complete (`keys`: every object it held): records of any
        other object of that kind are dropped, and the kind is synced. Returns how many."""
        with self._lock:
            store, versions = self._records[kind], self._versions[kind]
            gone = [k for k in store.keys() | versions.keys() if k not in keys]
            for key in gone:
                if store.pop(key, None) is not None:
                    self._generation += 1
                versions.pop(key, None)
            self.listed.add(kind)
            self.synced.add(kind)
            self.failing.pop(kind, None)
        if gone:
            log.info("%s: forgot %d object(s) deleted while the watch was away", kind, len(gone))
        return len(gone)

    def set_synced(self, kind: str, synced: bool, error: str | None = None) -> None:
        """The kind's watch is current again, or not (`error`: it failed, and is retried)."""
        with self._lock:
            if synced and kind in self.listed:
                self.synced.add(kind)
                self.failing.pop(kind, None)
            else:
                self.synced.discard(kind)
                if error is not None:
                    self.failing[kind] = error

    # ---- readiness ------------------------------------------------------------------------

    def ready(self) -> bool:
        """Every kind listed, and watched without a gap since."""
        return len(self.synced) == len(WATCHED)

    def unsynced(self) -> list[str]:
        return sorted({w.kind for w in WATCHED} - self.synced)

    async def wait_ready(self, timeout: float | None = None) -> None:
        """Until every kind is synced: CacheBehindError after `timeout` (CATCH_UP) seconds, or at
        once when a kind's list or watch is failing (the API server away or refusing)."""
        timeout = CATCH_UP if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while not self.ready():
            failing = {k: e for k, e in self.failing.items() if k not in self.synced}
            if failing:
                kind, error = sorted(failing.items())[0]
                raise CacheBehindError(
                    f"the watches of {', '.join(sorted(failing))} are failing ({kind}: "
                    f"{error[:200]}); not planning"
                )
            if time.monotonic() > deadline:
                raise CacheBehindError(
                    f"the watches of {', '.join(self.unsynced())} are not synced with the API "
                    f"server after {timeout:.0f}s (disconnected or relisting); not planning"
                )
            await asyncio.sleep(0.1)

    def count(self, kind: str) -> int:
        return len(self._records[kind])

    def mark_suspect(self, why: str) -> None:
        """Something suggests a watch lost its connection: verify before the next scan."""
        if not self.suspect:
            log.info("the watch cache will be verified before the next scan: %s", why)
        self.suspect = True

    def needs_sweep(self) -> bool:
        return self.suspect

    def begin_sweep(self) -> None:
        with self._lock:
            self._touched = {kind: set() for kind in self._records}
            self.suspect = False  # a new suspicion from now on asks for another verification

    def behind(self, present: Listing) -> dict[str, int]:
        """Per kind, how many listed objects the cache lacks or holds at an older version."""
        out: dict[str, int] = {}
        with self._lock:
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
        dropped = 0
        with self._lock:
            touched, self._touched = self._touched or {}, None
            for kind, keys in present.items():
                store = self._records[kind]
                seen = touched.get(kind, set())
                versions = self._versions[kind]
                for key in [k for k in store.keys() | versions.keys() if k not in keys]:
                    if key in seen:
                        continue
                    if store.pop(key, None) is not None:
                        dropped += 1
                        self._generation += 1
                    versions.pop(key, None)
        return dropped

    def abort_sweep(self) -> None:
        with self._lock:
            self._touched = None
            self.suspect = True  # still to do

    async def sweep(self, api: client.ApiClient, catch_up: float | None = None) -> int:
        """If something made the cache suspect: forget the objects the API server no longer
        has, and wait for the watches to deliver what it has."""
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
            log.warning("forgot %d cached object(s) the API server no longer has", dropped)
        return dropped

    def snapshot(self) -> ClusterState:
        """The cluster as the records hold it: the same object as the last snapshot's while no
        record has changed since (its `taken_at` is then when that one was taken)."""
        with self._lock:
            if self._taken is not None and self._taken[0] == self._generation:
                return self._taken[1]
            state = self._snapshot()
            self._taken = (self._generation, state)
            return state

    def _snapshot(self) -> ClusterState:
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
        return pin_pods(
            ClusterState(
                nodes=values("Node"),
                pods=values("Pod"),
                budgets=values("PodDisruptionBudget"),
                workloads=workloads,
                services=values("Service"),
                namespaces=values("Namespace"),
                taken_at=time.time(),
                autoscalers=values("HorizontalPodAutoscaler"),
                claims=values("PersistentVolumeClaim"),
                volumes=values("PersistentVolume"),
            )
        )
