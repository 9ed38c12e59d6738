"""Keeping the ClusterCache current: one list-then-watch loop per kind, each in a thread.

A Reflector lists its kind page by page into the cache (each object parsed into its slim record
as its page arrives, the raw page dropped before the next is fetched), then watches from the
listing's resourceVersion, with bookmarks, resuming from the last version it saw whenever a
stream ends. Only a 410 Gone (the version has expired) makes it list again. A failed request is
retried with a back-off; meanwhile its kind is not synced, so no scan plans from it, and the
cache is marked suspect, so the next scan verifies it.

Why not kopf: kopf handles every object as a resource with its own worker task, queue, memory
and logger, which costs about 30 KB per pod at rest and delays the first report by minutes on a
large cluster (docs/dev/scale.md has the figures). kopf still serves the policies, probes and login.

While a listing arrives the cyclic garbage collector is paused (records are acyclic; full
collections over a growing heap would walk every record again and again); once the first
listing of every kind is in, one collection runs and the survivors are frozen out of the
collector's way (gc.freeze), so later collections never walk the records.
"""

from __future__ import annotations

import gc
import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kubernetes import client

from respread.core.collector import gc_paused
from respread.kube.client import DEFAULT_TIMEOUTS, Timeouts, pooled_client
from respread.kube.watch import GoneError, SilentError, list_pages, watch_events
from respread.runtime.cache import WATCHED, ClusterCache, Key, Watched

log = logging.getLogger(__name__)

BACKOFF = (1.0, 2.0, 5.0, 10.0, 20.0, 30.0)
SERVER_TIMEOUT = 300  # seconds the API server keeps a watch open (jittered up to +20%)
# A watch with no byte for this long is reopened from the last version seen. kube-apiserver's
# watch cache sends a bookmark about once a minute (v1.34, measured on a quiet kind: the first
# after 120 s, then every 60 s), so only a connection that stalled without being closed stays
# silent for 180 s. A server without the watch cache sends no bookmarks: its quiet kinds are
# then watched again every 180 s, one request each.
SILENCE = 180.0


@dataclass(frozen=True, slots=True)
class WatchPosition:
    """Where a kind's watch stands: the last resourceVersion it delivered (None while it lists
    again), and how many listings it has made (a new one means it relisted)."""

    version: str | None
    listings: int


@dataclass
class ListingStats:
    """When each kind's first listing completed (monotonic), and how many objects it held."""

    started: float = field(default_factory=time.monotonic)
    done: dict[str, tuple[float, int]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, kind: str, count: int) -> None:
        with self.lock:
            self.done.setdefault(kind, (time.monotonic(), count))


class Reflector:
    """List, then watch, one kind into the cache, until stopped."""

    def __init__(
        self,
        api: client.ApiClient,
        cache: ClusterCache,
        watched: Watched,
        *,
        stop: threading.Event,
        stats: ListingStats,
        on_first_listing: Callable[[str], None] = lambda kind: None,
    ) -> None:
        self.api = api
        self.cache = cache
        self.watched = watched
        self.stop = stop
        self.stats = stats
        self.on_first_listing = on_first_listing
        self.version: str | None = None  # the last resourceVersion seen; None: list first
        self.listings = 0
        self.failures = 0
        self.silences = 0

    @property
    def kind(self) -> str:
        return self.watched.kind

    def run(self) -> None:
        attempt = 0
        while not self.stop.is_set():
            try:
                if self.version is None:
                    self._list()
                self._watch()
                attempt = 0
            except GoneError as err:
                log.info("%s: the watch expired (%s); listing again", self.kind, err)
                self.version = None  # the next turn lists, unsyncing the kind first
            except SilentError:
                # Not a failure: watching again from our version replays what we missed. If
                # the server is really gone, that request fails and counts as one.
                self.silences += 1
                log.info("%s: no word from the watch in %.0fs; watching again", self.kind, SILENCE)
            except Exception as err:  # the API server away, refusing, or a broken stream
                self.failures += 1
                self.cache.set_synced(self.kind, False, error=f"{type(err).__name__}: {err}")
                self.cache.mark_suspect(f"the {self.watched.plural} watch failed: {err}"[:300])
                delay = BACKOFF[min(attempt, len(BACKOFF) - 1)]
                attempt += 1
                log.warning(
                    "%s: list/watch failed (%s: %s); retrying in %.0fs",
                    self.kind,
                    type(err).__name__,
                    str(err)[:200],
                    delay,
                )
                self.stop.wait(delay)

    def _list(self) -> None:
        self.cache.begin_listing(self.kind)
        keys: set[Key] = set()
        first = self.listings == 0
        with gc_paused():
            version = ""
            for page in list_pages(self.api, self.watched.path):
                if self.stop.is_set():
                    return
                for item in page.items:
                    keys.add(self.cache.apply(self.kind, None, item))
                version = page.resource_version
                del page
        self.cache.end_listing(self.kind, keys)
        self.version = version
        self.listings += 1
        if first:
            self.stats.record(self.kind, len(keys))
            self.on_first_listing(self.kind)
        else:
            log.info("%s: relisted %d object(s)", self.kind, len(keys))

    def _watch(self) -> None:
        assert self.version is not None
        timeout = int(SERVER_TIMEOUT * (1 + 0.2 * random.random()))
        events = watch_events(
            self.api,
            self.watched.path,
            self.version,
            server_timeout=timeout,
            read_timeout=SILENCE,
        )
        self.cache.set_synced(self.kind, True)  # the server replays from our version on
        for event in events:
            if self.stop.is_set():
                return
            obj = event.get("object") or {}
            version = (obj.get("metadata") or {}).get("resourceVersion")
            kind = event.get("type")
            if kind in ("ADDED", "MODIFIED", "DELETED"):
                self.cache.apply(self.kind, kind, obj)
            if version:
                self.version = str(version)


class Reflectors:
    """One Reflector thread per watched kind, sharing a client whose connection pool holds a
    connection per watch."""

    def __init__(
        self,
        api: client.ApiClient,
        cache: ClusterCache,
        kinds: Sequence[Watched] = WATCHED,
        timeouts: Timeouts = DEFAULT_TIMEOUTS,
    ) -> None:
        self.api = pooled_client(api, len(kinds) + 2, timeouts)
        self.cache = cache
        self.stop = threading.Event()
        self.stats = ListingStats()
        self._pending = {w.kind for w in kinds}
        self._pending_lock = threading.Lock()
        self.reflectors = [
            Reflector(
                self.api, cache, w, stop=self.stop, stats=self.stats, on_first_listing=self._listed
            )
            for w in kinds
        ]
        self.threads: list[threading.Thread] = []

    def _listed(self, kind: str) -> None:
        """A kind's first listing is in; after the last one, collect once and freeze."""
        with self._pending_lock:
            self._pending.discard(kind)
            last = not self._pending
        if last:
            gc.collect()
            gc.freeze()
            took = time.monotonic() - self.stats.started
            counts = ", ".join(f"{n} {k}" for k, (_, n) in sorted(self.stats.done.items()) if n)
            log.info("listed every watched kind in %.1fs: %s", took, counts or "nothing")

    def position(self, kind: str) -> WatchPosition:
        for r in self.reflectors:
            if r.kind == kind:
                return WatchPosition(r.version, r.listings)
        raise KeyError(kind)

    def failing(self, attempts: int = 3) -> list[str]:
        """Kinds never listed whose list/watch has failed `attempts` times or more."""
        return [r.kind for r in self.reflectors if r.listings == 0 and r.failures >= attempts]

    def start(self) -> None:
        for r in self.reflectors:
            t = threading.Thread(target=r.run, name=f"reflector-{r.kind}", daemon=True)
            self.threads.append(t)
            t.start()

    def close(self, timeout: float = 2.0) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout)
