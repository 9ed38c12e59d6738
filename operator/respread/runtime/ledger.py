"""The eviction ledger as a scan uses it (remedies/evict/ledger.py decides, kube/ledger.py reads
and writes): what it records when a scan plans (the pipeline defers the workloads it holds),
taking a slot before an eviction, and giving it back when the eviction was refused."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from kubernetes import client

from respread.analysis.groups import WorkloadRef
from respread.kube.client import KubeError
from respread.kube.ledger import read_ledger, write_ledger
from respread.remedies.evict.ledger import (
    LEDGER,
    LedgerData,
    Recorded,
    expired_keys,
    hold,
    key_of,
    parse_entries,
    render_entries,
    with_entry,
    without,
)

log = logging.getLogger(__name__)

ATTEMPTS = 5  # reads and writes of one slot, when other writers keep changing the ledger


class LedgerBusyError(KubeError):
    """Other writers kept changing the ledger: no slot could be taken."""


@dataclass(frozen=True, slots=True)
class Slot:
    """What a scan asks of the ledger before evicting a pod of `workload`."""

    workload: WorkloadRef
    pod: str
    uid: str
    policy: str
    run: str
    cooldown: float
    max_per_workload: int | None
    planned: float | None = None  # when the plan was made (wall clock)


class Ledger:
    def __init__(
        self,
        api: client.ApiClient,
        namespace: str,
        keep: Callable[[], float],
        name: str = LEDGER,
    ) -> None:
        self.api = api
        self.namespace = namespace
        self.name = name
        self.keep = keep  # the longest cooldown of any policy: no entry is dropped before it

    async def recorded(self) -> LedgerData:
        """The evictions recorded now (any policy's, any leader's), for a scan to plan with."""
        ledger = await asyncio.to_thread(read_ledger, self.api, self.namespace, self.name)
        return ledger.data

    async def reserve(self, slot: Slot) -> str:
        """Record the eviction about to be made ("": recorded, go ahead), or say why the
        workload is held. The write carries the version read: a concurrent writer makes it
        read again."""
        for _ in range(ATTEMPTS):
            ledger = await asyncio.to_thread(read_ledger, self.api, self.namespace, self.name)
            key = key_of(slot.workload)
            entries = parse_entries(ledger.data.get(key))
            now = time.time()
            why = hold(
                entries,
                now=now,
                cooldown=slot.cooldown,
                max_per_workload=slot.max_per_workload,
                run=slot.run,
            )
            if why:
                return why
            entry = Recorded(
                slot.pod, slot.uid, slot.policy, slot.run, now, now + slot.cooldown, slot.planned
            )
            keep = max(self.keep(), slot.cooldown)
            changes: dict[str, str | None] = dict.fromkeys(
                (k for k in expired_keys(ledger.data, now=now, keep=keep) if k != key), None
            )
            changes[key] = render_entries(with_entry(entries, entry, now=now, keep=keep))
            if await asyncio.to_thread(
                write_ledger,
                self.api,
                self.namespace,
                self.name,
                changes,
                resource_version=ledger.resource_version,
            ):
                return ""
        raise LedgerBusyError(
            f"ConfigMap {self.namespace}/{self.name} kept changing: no slot taken for "
            f"{slot.workload}"
        )

    async def release(self, workload: WorkloadRef, uid: str) -> None:
        """Take back the entry of an eviction that was refused (best effort: an entry left
        only holds the workload for its cooldown)."""
        try:
            for _ in range(ATTEMPTS):
                ledger = await asyncio.to_thread(read_ledger, self.api, self.namespace, self.name)
                key = key_of(workload)
                entries = parse_entries(ledger.data.get(key))
                kept = without(entries, uid)
                if len(kept) == len(entries) or ledger.resource_version is None:
                    return
                if await asyncio.to_thread(
                    write_ledger,
                    self.api,
                    self.namespace,
                    self.name,
                    {key: render_entries(kept) if kept else None},
                    resource_version=ledger.resource_version,
                ):
                    return
        except KubeError as err:
            log.info("could not take back the ledger entry of %s: %s", workload, err)
