"""The evictions made from each workload, by any policy, kept where every policy and every
leader sees them: cooldowns and caps per workload that hold across policies and restarts.

The record is one ConfigMap in the operator's namespace (`respread-evictions`, written by
kube/ledger.py), one key per workload, each holding the workload's recent evictions. An entry
is written *before* its eviction is sent, with the ConfigMap's resourceVersion as a
precondition, so two writers (two policies, or an old and a new leader) can never both count
on the same free slot; an eviction that the API server then refuses takes its entry back, and
one whose answer never came keeps it (it may still happen).

How overlapping policies combine: an entry holds its workload, for *every* policy, until the
evicting policy's cooldown has passed (`until`) and until the asking policy's own cooldown has
passed since the eviction, whichever is later: the strictest cooldown wins. Within one scan (one
`run`) a policy may evict up to its maxPerWorkload from a workload, as before; another scan,
of this policy or any other, evicts nothing more from it until those cooldowns have passed. So
overlapping policies never add up past maxPerWorkload within a cooldown, and deleting and
recreating a policy resets nothing.

Pure: the caller gives the ConfigMap's data and the time; this says what it means and what to
write. The pipeline (respread.pipeline.scan) takes the data as read when a scan plans
(`LedgerData`) and defers the workloads it holds.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from respread.analysis.groups import WorkloadRef
from respread.core.timestamps import format_rfc3339, rfc3339_or_none

LEDGER = "respread-evictions"  # the ConfigMap's name
KEY_LIMIT = 253  # a ConfigMap key's length
ENTRIES_LIMIT = 64  # per workload: far more than any cap within a cooldown

LedgerData = Mapping[str, str]  # the ConfigMap's data: a workload's key -> its entries (JSON)


@dataclass(frozen=True, slots=True)
class Recorded:
    """One eviction (or one about to be sent) from a workload."""

    pod: str
    uid: str
    policy: str
    run: str  # the scan that made it (policy and when it started): its own entries don't hold it
    at: float  # when it was recorded, just before the eviction was sent
    until: float  # the end of the evicting policy's cooldown
    planned: float | None = None  # when the plan it came from was made (for audits)

    def holds(self, now: float, cooldown: float) -> bool:
        """Whether this eviction still holds its workload for a policy with `cooldown`."""
        return self.until > now or now - self.at < cooldown


def key_of(workload: WorkloadRef) -> str:
    """The ConfigMap key of a workload: namespace.Kind.name (names may hold dots; a namespace
    and a kind never do), hashed down when too long for a key."""
    key = f"{workload.namespace}.{workload.kind}.{workload.name}"
    if len(key) <= KEY_LIMIT:
        return key
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return f"{key[: KEY_LIMIT - 17]}.{digest}"


def _entry(raw: object) -> Recorded | None:
    if not isinstance(raw, Mapping):
        return None
    at, until = rfc3339_or_none(raw.get("at")), rfc3339_or_none(raw.get("until"))
    fields = [raw.get(k) for k in ("pod", "uid", "policy", "run")]
    if at is None or until is None or not all(isinstance(f, str) for f in fields):
        return None
    pod, uid, policy, run = (str(f) for f in fields)
    return Recorded(pod, uid, policy, run, at, until, rfc3339_or_none(raw.get("planned")))


def parse_entries(raw: str | None) -> tuple[Recorded, ...]:
    """A key's entries; what cannot be read is left out (the next write replaces it)."""
    try:
        items = json.loads(raw or "[]")
    except ValueError:
        return ()
    if not isinstance(items, list):
        return ()
    return tuple(e for e in (_entry(i) for i in items) if e is not None)


def _rendered(e: Recorded) -> dict[str, str]:
    out = {
        "pod": e.pod,
        "uid": e.uid,
        "policy": e.policy,
        "run": e.run,
        "at": format_rfc3339(e.at, micro=True),
        "until": format_rfc3339(e.until, micro=True),
    }
    if e.planned is not None:
        out["planned"] = format_rfc3339(e.planned, micro=True)
    return out


def render_entries(entries: Iterable[Recorded]) -> str:
    ordered = sorted(entries, key=lambda e: (e.at, e.pod))
    return json.dumps([_rendered(e) for e in ordered], separators=(",", ":"))


def hold(
    entries: Iterable[Recorded],
    *,
    now: float,
    cooldown: float,
    max_per_workload: int | None,
    run: str,
) -> str:
    """Why the workload may not lose another pod now, to the scan `run` of a policy with
    `cooldown` and `max_per_workload` ("": it may)."""
    live = [e for e in entries if e.holds(now, cooldown)]
    others = sorted((e for e in live if e.run != run), key=lambda e: e.at)
    if others:
        last = others[-1]
        until = max(last.until, last.at + cooldown)
        return (
            f"cooldown: RebalancePolicy {last.policy} evicted {last.pod} {int(now - last.at)}s "
            f"ago; held {int(until - now) + 1}s more"
        )
    if max_per_workload is not None and len(live) >= max_per_workload:
        return f"maxPerWorkload {max_per_workload} reached"
    return ""


def held_workloads(
    data: LedgerData,
    workloads: Iterable[WorkloadRef],
    *,
    now: float,
    cooldown: float,
    run: str = "",
) -> dict[WorkloadRef, str]:
    """The workloads that earlier scans' evictions (any policy's) hold now, with why: what the
    planner defers. (The cap within this scan is the planner's own.) `run`: the scan asking,
    whose own entries do not hold it (a scan that has not evicted yet has none)."""
    out = {}
    for workload in workloads:
        why = hold(
            parse_entries(data.get(key_of(workload))),
            now=now,
            cooldown=cooldown,
            max_per_workload=None,
            run=run,
        )
        if why:
            out[workload] = why
    return out


def with_entry(
    entries: Iterable[Recorded], entry: Recorded, *, now: float, keep: float
) -> tuple[Recorded, ...]:
    """The entries to write with `entry` added, those that hold nobody any more dropped
    (`keep`: the longest cooldown of any policy, so that no policy's is cut short)."""
    live = [e for e in entries if e.holds(now, keep) and e.uid != entry.uid]
    return (*live[-(ENTRIES_LIMIT - 1) :], entry)


def without(entries: Iterable[Recorded], uid: str) -> tuple[Recorded, ...]:
    """The entries without the eviction of pod `uid` (refused: it did not happen)."""
    return tuple(e for e in entries if e.uid != uid)


def expired_keys(data: LedgerData, *, now: float, keep: float) -> list[str]:
    """Keys none of whose entries holds anybody any more: removed with the next write."""
    return sorted(
        key for key, raw in data.items() if not any(e.holds(now, keep) for e in parse_entries(raw))
    )
