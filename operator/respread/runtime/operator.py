"""The operator process: the watch cache, one APScheduler job per policy, liveness and metrics.

kopf runs the event loop and watches the RebalancePolicies (and serves login, probes and
start-up/clean-up); one Reflector thread per cluster kind lists and watches it into the
ClusterCache (runtime/reflector.py says why not through kopf). APScheduler's AsyncIOScheduler,
on kopf's loop, ticks each policy on its schedule (misfires coalesced); a tick starts the scan
as a task of its own, unless the previous one still runs (scans never overlap). The first scans
start as soon as every kind has been listed once.

With leader election (`respread run --leader-elect`), every replica watches and keeps its cache
warm, but only the holder of the coordination.k8s.io Lease scans (writes statuses, posts
Events, evicts): see runtime/leader.py. A replica that becomes leader seeds each policy's
memory from its status and scans at once; one that stops leading cancels its scans. kopf
itself runs standalone (its "peering" is not leader election: peers of equal priority all
pause).

Enforce acts only on fresh state (docs/operations.md): every request has timeouts (Bounds),
each scan a deadline and a guard (runtime/guard.py), a heartbeat notices pauses of the process
(runtime/heartbeat.py), the watch cache is shown current before a scan acts
(runtime/freshness.py), and evictions are recorded in the eviction ledger before they are made
(runtime/ledger.py). Liveness fails for a scan stuck past its deadline; readiness
(`--readiness`) while the watches fail or the cache cannot be shown current.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import kopf
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger
from kubernetes import client

from respread.core.timestamps import format_rfc3339
from respread.inputs.policy import DEFAULT_POLICY, PolicyError, RebalancePolicy, parse_policy
from respread.kube.client import (
    DEFAULT_TIMEOUTS,
    GROUP,
    PLURAL,
    VERSION,
    Timeouts,
    api_client,
    with_timeouts,
)
from respread.kube.writer import patch_status
from respread.pipeline import SharedAnalyses
from respread.remedies.cost.release import NOT_DELETING, RELEASE_INTERVAL, Lifecycle, lifecycle_of
from respread.report.contract import conditions_status_json
from respread.report.model import (
    ConditionsStatus,
    ConditionStatus,
    ConditionType,
    StatusCondition,
)
from respread.runtime import metrics, surges
from respread.runtime.cache import WATCHED, ClusterCache
from respread.runtime.enforcing import Safety
from respread.runtime.freshness import Freshness
from respread.runtime.guard import DEFAULT_LIMITS, ScanGuard, ScanLimits
from respread.runtime.health import serve_readiness
from respread.runtime.heartbeat import DEFAULT_PAUSES, Heartbeat, PauseSettings
from respread.runtime.leader import LeaderElector, default_identity, default_namespace
from respread.runtime.leadership import LeaseTiming
from respread.runtime.ledger import Ledger
from respread.runtime.memory import PolicyMemory
from respread.runtime.prompt import Prompter, PromptSettings, ScanBudget
from respread.runtime.reflector import Reflectors
from respread.runtime.scan import run_scan
from respread.runtime.triggers import overdue_at, trigger_for

log = logging.getLogger(__name__)

STALE_FACTOR = 3  # liveness fails when a policy's last scan is older than 3 intervals
GRACE = 65.0  # seconds allowed on top of that (a scan that waits for the watches to catch up)
REPLAN_AFTER = 1.0  # seconds before a scan that stopped so that a fresh plan may act runs again


@dataclass(frozen=True, slots=True)
class Bounds:
    """How long anything may take: every request (connect and read timeouts), a scan (its
    deadline, the age of a plan it acts on, its wait for the cache to be shown current), and
    how long a gap between heartbeats counts as a pause of the process."""

    timeouts: Timeouts = DEFAULT_TIMEOUTS
    scan: ScanLimits = DEFAULT_LIMITS
    pauses: PauseSettings = DEFAULT_PAUSES

    @property
    def stuck(self) -> float:
        """Seconds past its deadline after which a scan counts as stuck (liveness fails): time
        for it to report what it did not do (a status write and an Event or two)."""
        return 3 * (self.timeouts.connect + self.timeouts.read)


@dataclass(frozen=True, slots=True)
class Election:
    """`respread run --leader-elect`: which Lease, who I am, and the timings."""

    name: str = "respread"
    namespace: str | None = None  # default: the pod's namespace, else respread-system
    identity: str | None = None  # default: POD_NAME, else hostname_pid
    timing: LeaseTiming = field(default_factory=LeaseTiming)


@dataclass
class App:
    api: client.ApiClient
    cache: ClusterCache = field(default_factory=ClusterCache)
    policies: dict[str, tuple[RebalancePolicy, str | None]] = field(default_factory=dict)
    memories: dict[str, PolicyMemory] = field(default_factory=dict)
    analyses: SharedAnalyses = field(default_factory=SharedAnalyses)  # shared by the policies
    statuses: dict[str, dict[str, Any]] = field(default_factory=dict)  # as last watched
    scheduler: AsyncIOScheduler | None = None
    started: float = field(default_factory=time.monotonic)
    elector: LeaderElector | None = None
    acting_since: float | None = None  # monotonic; None: standalone (acting since `started`)
    running: set[asyncio.Task[Any]] = field(default_factory=set)
    scanning: dict[str, asyncio.Task[None]] = field(default_factory=dict)  # by policy name
    election_task: asyncio.Task[None] | None = None
    reflectors: Reflectors | None = None
    lifecycles: dict[str, Lifecycle] = field(default_factory=dict)  # deletion, finalizer
    bounds: Bounds = field(default_factory=Bounds)
    heartbeat: Heartbeat | None = None
    freshness: Freshness | None = None
    ledger: Ledger | None = None
    scans: dict[str, ScanGuard] = field(default_factory=dict)  # the scans running now
    background: set[asyncio.Task[Any]] = field(default_factory=set)  # the heartbeat
    readiness: Any = None  # the readiness server's runner, when serving
    prompts: PromptSettings = field(default_factory=PromptSettings)
    prompter: Prompter | None = None
    budgets: dict[str, ScanBudget] = field(default_factory=dict)  # prompted scans' time
    prompting: set[str] = field(default_factory=set)  # a prompted scan is due
    waiting: set[str] = field(default_factory=set)  # prompted, not scanned since
    recheck: asyncio.TimerHandle | None = None

    def bound_kopf(self, settings: kopf.OperatorSettings) -> None:
        """kopf's own requests (the policies' watch, its patches) get the same timeouts."""
        settings.watching.server_timeout = 300
        settings.networking.error_backoffs = [1, 2, 5, 10, 20, 30]
        settings.watching.client_timeout = 330  # a stalled watch of the policies is given up
        settings.watching.connect_timeout = self.bounds.timeouts.connect
        settings.networking.request_timeout = self.bounds.timeouts.read
        settings.networking.connect_timeout = self.bounds.timeouts.connect

    async def start_watching_freshness(self, readiness: str | None) -> None:
        """Once the reflectors run: the freshness proofs, the heartbeat, readiness."""
        assert self.reflectors is not None
        self.freshness = Freshness(
            self.api, self.cache, self.reflectors.position, timeouts=self.bounds.timeouts
        )
        self.heartbeat = Heartbeat(self.bounds.pauses, on_pause=self.paused)
        self.background.add(asyncio.create_task(self.heartbeat.run(), name="heartbeat"))
        if readiness is not None:
            self.readiness = await serve_readiness(readiness, self.unready)
        if self.prompts.enabled:
            self.prompter = Prompter(self.prompts, self.prompted)
            self.cache.on_change = self.prompter.poke
            self.background.add(asyncio.create_task(self.prompter.run(), name="prompts"))

    async def stop_watching_freshness(self) -> None:
        self.cache.on_change = None
        if self.recheck is not None:
            self.recheck.cancel()
        for task in list(self.background):
            task.cancel()
        if self.readiness is not None:
            await self.readiness.cleanup()
        if self.freshness is not None:
            self.freshness.close()

    def paused(self, gap: float) -> None:
        """The process was paused for `gap` seconds: verify the cache before the next scan
        (every scan that planned before stops acting: its guard sees the pause)."""
        self.cache.mark_suspect(f"the process was paused for {gap:.0f}s")

    def acting(self) -> bool:
        """May this replica scan, write and evict now? Always, unless leader election says no."""
        return self.elector is None or self.elector.leading

    async def on_leadership(self, leading: bool) -> None:
        """Leadership changed: a new leader remembers what the statuses say and scans at once;
        a former leader stops its scans and forgets (its successor writes from now on)."""
        self.memories.clear()
        for name in list(self.policies):
            metrics.forget(name)
        if leading:
            self.acting_since = time.monotonic()
            if self.scheduler is not None:
                for job in self.scheduler.get_jobs():
                    job.modify(next_run_time=_now())
            return
        self.acting_since = None
        for task in list(self.running):
            task.cancel()

    async def warm(self) -> None:
        """Wait until every kind has been listed once (a first scan then plans from the whole
        cluster), unless a kind's list/watch keeps failing: the scan then runs, fails and
        reports why in the policy's status."""
        while not self.cache.listed >= {w.kind for w in WATCHED}:
            if self.reflectors is not None and self.reflectors.failing():
                return
            await asyncio.sleep(0.1)

    async def tick(self, name: str) -> None:
        """The scheduler's job: start this policy's scan as a task of its own and return, so
        that the scheduler never holds a running instance (a first scan waiting minutes for
        the listing, or a scan longer than its interval, would make it skip the next run with
        a warning). A tick that finds the previous scan still running is skipped."""
        running = self.scanning.get(name)
        if running is not None and not running.done():
            if self.cache.listed >= {w.kind for w in WATCHED}:
                log.info("scan of RebalancePolicy %s still running: this tick is skipped", name)
            return
        task = asyncio.get_running_loop().create_task(self.scan(name), name=f"scan {name}")
        self.scanning[name] = task
        task.add_done_callback(lambda done: _forget_scan(self.scanning, name, done))

    async def scan(self, name: str) -> None:
        if not self.acting():
            return  # a follower keeps its cache warm and writes nothing
        task = asyncio.current_task()
        if task is not None:
            self.running.add(task)
        self.waiting.discard(name)  # this scan sees every change so far
        prompted = name in self.prompting  # only prompted scans are paid from the budget
        self.prompting.discard(name)
        started = None  # once the listing is in: waiting for it is no scan's cost
        try:
            await self.warm()
            started = time.monotonic()
            await self._scan(name)
        except asyncio.CancelledError:  # shutdown, or this replica stopped leading
            log.info("scan of RebalancePolicy %s stopped before it ended", name)
        finally:
            if prompted and started is not None:
                budget = self.budgets.get(name, ScanBudget())
                self.budgets[name] = budget.after(started, time.monotonic(), self.prompts)
            if name in self.waiting:
                asyncio.get_running_loop().call_soon(self.prompted, [name])
            self.scans.pop(name, None)
            if task is not None:
                self.running.discard(task)
            if name not in self.policies:  # deleted while it ran: what it exported goes too
                metrics.forget_policy(name)

    async def _scan(self, name: str) -> None:
        entry = self.policies.get(name)
        if entry is None or not self.acting():
            return
        policy, uid = entry
        memory = self.memories.get(name)
        if memory is None:  # first scan since start or election: what the status says
            status = self.statuses.get(name)
            memory = self.memories[name] = PolicyMemory.from_status(status, self.analyses)
        guard = self.scans[name] = ScanGuard(
            self.bounds.scan, self.cache, self.heartbeat, acting=self.acting
        )
        if not await run_scan(
            self.api,
            self.cache,
            policy,
            memory,
            uid,
            acting=self.acting,
            lifecycle=self.lifecycles.get(name, NOT_DELETING),
            others=self.others(name),
            safety=Safety(guard, self.freshness, self.ledger),
        ):
            self.unschedule(name)
        elif guard.replan:
            asyncio.get_running_loop().call_later(REPLAN_AFTER, self.rescan, name)

    def prompted(self, names: Iterable[str] | None = None) -> None:
        """The cluster changed (runtime/prompt.py): scan each policy on an interval now, or as
        soon as its share of the time allows (or its running scan ends)."""
        if not self.acting():
            return
        now, later = time.monotonic(), []
        for name in list(self.policies if names is None else names):
            entry = self.policies.get(name)
            if entry is None or entry[0].schedule.cron is not None:
                continue  # gone, or scanned only when its cron says
            if self.lifecycles.get(name, NOT_DELETING).deleting_since is not None:
                continue
            self.waiting.add(name)
            running = self.scanning.get(name)
            if running is not None and not running.done():
                continue  # prompted again when it ends
            left = self.prompt_gap_left(name, now)
            if left > 0:
                later.append(left)
                continue
            self.prompting.add(name)
            self.rescan(name)
        if later:
            self.recheck_in(min(later))

    def prompt_gap_left(self, name: str, now: float) -> float:
        """Seconds until a prompted scan of `name` may start (0: now)."""
        return self.budgets.get(name, ScanBudget()).wait(now, self.prompts)

    def recheck_in(self, delay: float) -> None:
        """Prompt the waiting policies again in `delay` seconds (one timer, the earliest)."""
        loop = asyncio.get_running_loop()
        due = loop.time() + delay
        if self.recheck is not None:
            if self.recheck.when() <= due:
                return
            self.recheck.cancel()
        self.recheck = loop.call_at(due, self._rechecked)

    def _rechecked(self) -> None:
        self.recheck = None
        self.prompted(sorted(self.waiting))

    def rescan(self, name: str) -> None:
        """Scan the policy again now (its last scan stopped so that a fresh plan may act)."""
        job = self.scheduler.get_job(name) if self.scheduler is not None else None
        if job is not None and name in self.policies:
            job.modify(next_run_time=_now())

    def longest_cooldown(self) -> float:
        """The longest cooldown of any policy: the eviction ledger keeps entries that long."""
        return max((p.eviction.cooldown for p, _ in self.policies.values()), default=0.0)

    def others(self, name: str) -> list[RebalancePolicy]:
        """The other policies that are not being deleted (one may keep a cost this one wrote)."""
        return [
            p
            for n, (p, _) in self.policies.items()
            if n != name and self.lifecycles.get(n, NOT_DELETING).deleting_since is None
        ]

    def schedule(
        self, policy: RebalancePolicy, uid: str | None, lifecycle: Lifecycle = NOT_DELETING
    ) -> None:
        previous = self.policies.get(policy.name)
        was_deleting = self.lifecycles.get(policy.name, NOT_DELETING).deleting_since is not None
        deleting = lifecycle.deleting_since is not None
        if deleting:  # when this operator saw the deletion first, on its own clock
            seen = self.lifecycles.get(policy.name, NOT_DELETING).seen
            lifecycle = replace(lifecycle, seen=seen if was_deleting else time.time())
        self.policies[policy.name] = (policy, uid)
        self.lifecycles[policy.name] = lifecycle
        if (
            previous is not None
            and previous[0].generation == policy.generation
            and was_deleting == deleting
        ):
            return  # a status update, not a spec change
        assert self.scheduler is not None
        trigger, grace = trigger_for(policy.schedule)
        if deleting:  # taking its pod-deletion-costs back: passes every RELEASE_INTERVAL
            trigger, grace = IntervalTrigger(seconds=RELEASE_INTERVAL), int(RELEASE_INTERVAL)
        self.scheduler.add_job(
            self.tick,
            trigger,
            args=[policy.name],
            id=policy.name,
            name=policy.name,
            replace_existing=True,
            max_instances=1,
            coalesce=True,
            misfire_grace_time=grace,
            next_run_time=_now(),
        )
        log.info(
            "RebalancePolicy %s scheduled (%s, %s)",
            policy.name,
            policy.mode.value,
            policy.schedule.cron or f"every {policy.schedule.interval:.0f}s",
        )

    def unschedule(self, name: str) -> None:
        self.policies.pop(name, None)
        self.memories.pop(name, None)
        self.statuses.pop(name, None)
        self.lifecycles.pop(name, None)
        self.budgets.pop(name, None)
        self.prompting.discard(name)
        metrics.forget_policy(name)
        if self.scheduler is not None and self.scheduler.get_job(name) is not None:
            self.scheduler.remove_job(name)

    def stale(self) -> list[str]:
        """Policies whose scans are overdue: STALE_FACTOR scheduled scans missed (intervals, or
        the cron's own times). A follower scans nothing and is never stale; a leader's clock
        starts when it was elected."""
        if not self.acting():
            return []
        now = time.time()
        since = self.acting_since if self.acting_since is not None else self.started
        out = []
        for name, (policy, _) in self.policies.items():
            memory = self.memories.get(name)
            last = memory.last_scan if memory is not None else None
            reference = last if last is not None else now - (time.monotonic() - since)
            if now > overdue_at(policy.schedule, reference, STALE_FACTOR) + GRACE:
                out.append(name)
        return out

    def stuck(self) -> list[str]:
        """Scans running past their deadline by more than the time to report it: every request
        has a deadline, so a scan there is stuck (a bug, or a process starved of CPU)."""
        return [
            f"{name} ({-guard.left():.0f}s past its deadline)"
            for name, guard in self.scans.items()
            if -guard.left() > self.bounds.stuck
        ]

    def unready(self) -> str | None:
        """Why this replica's view of the cluster cannot be trusted now, if it cannot."""
        if self.heartbeat is not None and self.heartbeat.stalled():
            return f"the process was paused for {self.heartbeat.stalled():.0f}s"
        if self.cache.failing:
            kind, error = sorted(self.cache.failing.items())[0]
            kinds = ", ".join(sorted(self.cache.failing))
            return f"the watches of {kinds} are failing ({kind}: {error[:200]})"
        recent = max(60.0, 3 * self.bounds.scan.catch_up)
        failure = self.freshness.recent_failure(recent) if self.freshness is not None else None
        if failure is not None:
            return f"the watch cache could not be shown current: {failure}"
        unlisted = sorted({w.kind for w in WATCHED} - self.cache.listed)
        if unlisted:
            return f"not listed yet: {', '.join(unlisted)}"
        return None

    def unhealthy(self) -> str | None:
        """Why liveness should fail, if it should: a scan stuck past its deadline, overdue
        scans (leader or standalone), or a leader election loop that stopped turning (any
        replica)."""
        stuck_scans = self.stuck()
        if stuck_scans:
            return f"scans stuck: {', '.join(stuck_scans)}"
        if self.elector is not None:
            stuck = time.monotonic() - self.elector.last_attempt
            if stuck > max(30.0, 10 * self.elector.timing.retry_period):
                return f"leader election has not tried the Lease for {stuck:.0f}s"
        stale = self.stale()
        if stale:
            return f"scans are stale for: {', '.join(stale)}"
        return None


def _forget_scan(
    scanning: dict[str, asyncio.Task[None]], name: str, done: asyncio.Task[None]
) -> None:
    if scanning.get(name) is done:
        del scanning[name]


def _now() -> datetime:
    return datetime.now(UTC)


def _token(config: Any) -> str | None:
    """The bearer token, wherever this kubernetes client version keeps it."""
    keys = config.api_key or {}
    raw = str(keys.get("BearerToken") or keys.get("authorization") or "").strip()
    # A kubeconfig's token comes bare; the in-cluster loader stores "bearer <token>" (lower case).
    scheme, _, rest = raw.partition(" ")
    return (rest if scheme.lower() == "bearer" else raw).strip() or None


def build_registry(app: App, readiness: str | None = None) -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()

    @kopf.on.event(GROUP, VERSION, PLURAL, registry=registry, id="policies")
    def on_policy(*, type: str, body: kopf.Body, **_: Any) -> None:
        _on_policy(app, type, body)  # kopf passes the watch event's type as `type`

    @kopf.on.startup(registry=registry)
    async def startup(settings: kopf.OperatorSettings, **_: Any) -> None:
        await _start(app, settings, readiness)

    @kopf.on.cleanup(registry=registry)
    async def cleanup(**_: Any) -> None:
        await _stop(app)

    @kopf.on.probe(registry=registry, id="scans")
    def scans(**_: Any) -> dict[str, Any]:
        problem = app.unhealthy()
        if problem:
            raise kopf.PermanentError(problem)
        return {name: (m.last_scan or 0) for name, m in app.memories.items()}

    @kopf.on.probe(registry=registry, id="leader")
    def leader(**_: Any) -> str:
        if app.elector is None:
            return "standalone"
        return app.elector.identity if app.acting() else f"following {app.elector.holder or '-'}"

    return registry


def _on_policy(app: App, event: str, body: kopf.Body) -> None:
    """A RebalancePolicy was created, changed or deleted: (re)schedule its scans, or stop them."""
    metadata = body.get("metadata", {})
    name = metadata.get("name", "")
    if event == "DELETED":
        app.unschedule(name)
        return
    lifecycle = lifecycle_of(metadata)
    try:
        policy = parse_policy(body)
    except PolicyError as err:
        log.error("%s", err)
        _on_invalid_policy(app, name, metadata, lifecycle, err)
        return
    app.statuses[name] = dict(body.get("status") or {})
    app.schedule(policy, metadata.get("uid"), lifecycle)


def _on_invalid_policy(
    app: App, name: str, metadata: Any, lifecycle: Lifecycle, err: PolicyError
) -> None:
    """A policy that does not parse: one being deleted still takes its costs back (by name, the
    defaults' bound); any other stops scanning, and the leader says why in its status."""
    if lifecycle.deleting_since is not None and lifecycle.finalizer:
        app.schedule(replace(DEFAULT_POLICY, name=name), metadata.get("uid"), lifecycle)
        return
    app.unschedule(name)
    if not app.acting():
        return  # the leader reports it
    invalid = StatusCondition(
        type=ConditionType.READY,
        status=ConditionStatus.FALSE,
        reason="InvalidPolicy",
        message=str(err)[:1024],
        last_transition_time=format_rfc3339(time.time()),
    )
    generation = metadata.get("generation", 0)
    patch_status(app.api, name, conditions_status_json(ConditionsStatus(generation, (invalid,))))


async def _start(app: App, settings: kopf.OperatorSettings, readiness: str | None) -> None:
    """kopf's settings, then the watches, the freshness proofs, the heartbeat and readiness,
    the scheduler, the orphaned-surge pass and the leader election (or leadership at once,
    standalone)."""
    settings.posting.enabled = False  # respread posts its own, meaningful Events
    app.bound_kopf(settings)
    app.reflectors = Reflectors(app.api, app.cache, timeouts=app.bounds.timeouts)
    app.reflectors.start()
    await app.start_watching_freshness(readiness)
    app.scheduler = AsyncIOScheduler(event_loop=asyncio.get_running_loop(), timezone="UTC")
    app.scheduler.start()
    surges.watch_orphans(  # a policy being deleted hands its surges to the orphan pass
        app.api,
        app.cache,
        lambda: [
            n for n in app.policies if app.lifecycles.get(n, NOT_DELETING).deleting_since is None
        ],
        app.acting,
    )
    if app.elector is not None:
        app.election_task = asyncio.create_task(app.elector.run(), name="leader election")
    else:
        metrics.LEADER.set(1)


async def _stop(app: App) -> None:
    await app.stop_watching_freshness()
    if app.scheduler is not None:
        app.scheduler.shutdown(wait=False)
    surges.stop_orphans()
    if app.reflectors is not None:
        app.reflectors.close(timeout=0)
    for task in list(app.running):
        task.cancel()
    if app.elector is not None:
        if app.election_task is not None:
            app.election_task.cancel()
        await app.elector.stop()  # stops acting, then releases the Lease


class _SuspectOnKopfErrors(logging.Handler):
    """kopf logs an error for every failed request, its watch streams' included (which it then
    retries with back-off): the watch cache may be missing events, so verify it first."""

    def __init__(self, cache: ClusterCache) -> None:
        super().__init__(logging.ERROR)
        self.cache = cache

    def emit(self, record: logging.LogRecord) -> None:
        self.cache.mark_suspect(f"kopf: {record.getMessage()[:200]}")


def run(
    kubeconfig: str | None = None,
    *,
    election: Election | None = None,
    liveness: str | None = None,
    metrics_port: int | None = 9090,
    bounds: Bounds | None = None,
    readiness: str | None = None,
    namespace: str | None = None,
    prompts: PromptSettings | None = None,
) -> None:
    """Start the operator and block until it is stopped. `namespace`: the operator's own (the
    Lease's and the eviction ledger's), default: the pod's, else respread-system."""
    bounds = bounds or Bounds()
    api = with_timeouts(api_client(kubeconfig), bounds.timeouts)
    identity = (election.identity if election is not None else None) or default_identity()
    # Every request names the replica (the audit log's userAgent), so that what each replica
    # did can be told apart.
    api.user_agent = f"respread/{identity}"
    app = App(api=api, bounds=bounds, prompts=prompts or PromptSettings())
    app.ledger = Ledger(api, namespace or default_namespace(), app.longest_cooldown)
    if election is not None:
        app.elector = LeaderElector(
            api,
            namespace=election.namespace or namespace or default_namespace(),
            name=election.name,
            identity=identity,
            timing=election.timing,
            on_change=app.on_leadership,
            on_error=lambda err: app.cache.mark_suspect(f"the Lease: {err}"),
        )
    registry = build_registry(app, readiness)
    logging.getLogger("kopf").addHandler(_SuspectOnKopfErrors(app.cache))

    @kopf.on.login(registry=registry)
    def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        config = api.configuration
        return kopf.ConnectionInfo(
            server=config.host,
            ca_path=config.ssl_ca_cert,
            insecure=not config.verify_ssl,
            scheme="Bearer" if _token(config) else None,
            token=_token(config),
            certificate_path=config.cert_file,
            private_key_path=config.key_file,
            default_namespace=None,
        )

    if metrics_port:
        metrics.serve(metrics_port)
    asyncio.run(
        kopf.operator(
            registry=registry,
            clusterwide=True,
            standalone=True,  # no kopf peering: leader election is respread's own (above)
            liveness_endpoint=liveness,
        )
    )
