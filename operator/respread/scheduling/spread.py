"""kube-scheduler's PodTopologySpread semantics, from cluster state (spread-semantics.md).

The vocabulary:

- An *effective constraint* is a spec entry after defaults and the matchLabelKeys merge (section 2).
- A *domain space* is the set of eligible domains for one constraint of one pod shape: which nodes
  pass the all-keys gate and the inclusion policies (section 3), and each one's domain value.
- A *count table* is the number of counted pods per domain (section 4), kept sparse: a domain that
  is eligible but absent from the table holds zero pods. That keeps hostname constraints over
  thousands of nodes cheap.
- A *profile* is everything that decides how a pod is judged: namespace, effective constraints,
  and (where a policy honours them) its node affinity and tolerations. Replicas share a profile.

``SpreadIndex`` builds and caches all of these for one ClusterState. ``filter_node`` is the
Filter (section 5); ``placement_verdict`` answers "does this bound pod's placement violate its
constraints" by evaluating it as if it were being placed again, with itself removed.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

from respread.core.kernel import SUCCESS, CountTable, DomainSpace, SpreadRule, Verdict
from respread.core.model import (
    FINISHED,
    NO_AFFINITY,
    ClusterState,
    Labels,
    LabelSelector,
    Node,
    NodeAffinity,
    Op,
    OwnerRef,
    Pod,
    PodSpec,
    Policy,
    Requirement,
    SpreadConstraint,
    Toleration,
    When,
    Workload,
)
from respread.core.selectors import (
    affinity_matches,
    narrowing,
    selector_matches,
    untolerated_taint,
)

HOSTNAME_KEY: Final = "kubernetes.io/hostname"

V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class EffectiveConstraint:
    key: str
    max_skew: int
    when: When
    selector: LabelSelector | None
    min_domains: int
    honor_affinity: bool
    honor_taints: bool
    from_defaults: bool = False
    # the (key, value) pairs matchLabelKeys added to the selector, from the pod's labels: a
    # Deployment's ReplicaSets each make a group of their own with pod-template-hash
    match_labels: tuple[tuple[str, str], ...] = ()

    @property
    def hard(self) -> bool:
        return self.when is When.DO_NOT_SCHEDULE


def effective_constraints(
    labels: Mapping[str, str],
    constraints: Iterable[SpreadConstraint],
    when: When,
    from_defaults: bool = False,
    default_selector: LabelSelector | None = None,
) -> tuple[EffectiveConstraint, ...]:
    """Section 2: the entries of one kind, with defaults and matchLabelKeys applied."""
    out = []
    for c in constraints:
        if c.when is not when:
            continue
        pairs: tuple[tuple[str, str], ...] = ()
        if from_defaults:
            selector = default_selector  # the derived selector replaces everything (section 8)
        else:
            selector = c.selector
            if selector is not None and c.match_label_keys:
                pairs = tuple((k, labels[k]) for k in c.match_label_keys if k in labels)
                selector = selector.with_terms(tuple(Requirement(k, Op.IN, (v,)) for k, v in pairs))
        out.append(
            EffectiveConstraint(
                key=c.topology_key,
                max_skew=c.max_skew,
                when=c.when,
                selector=selector,
                min_domains=c.min_domains or 1,
                honor_affinity=c.node_affinity_policy is not Policy.IGNORE,
                honor_taints=c.node_taints_policy is Policy.HONOR,
                from_defaults=from_defaults,
                match_labels=pairs,
            )
        )
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Profile:
    """How the scheduler judges pods of one shape: namespace, constraints, and what they honour."""

    namespace: str
    constraints: tuple[EffectiveConstraint, ...]
    self_match: tuple[bool, ...]
    affinity: NodeAffinity
    tolerations: tuple[Toleration, ...]

    @property
    def gate_keys(self) -> frozenset[str]:
        return frozenset(c.key for c in self.constraints)


def rule(profile: Profile, index: int) -> SpreadRule:
    """The Filter's rule for one constraint of pods of ``profile``."""
    c = profile.constraints[index]
    return SpreadRule(index, c.key, c.max_skew, c.min_domains, int(profile.self_match[index]))


def pod_counts(pod: Pod) -> bool:
    """Whether a bound pod is in the scheduler's NodeInfo at all (section 4)."""
    return not pod.terminating and not pod.finished


def _label_keys_read(constraints: tuple[SpreadConstraint, ...]) -> tuple[str, ...]:
    """The pod label keys the effective constraints depend on: selector keys, matchLabelKeys."""
    keys: dict[str, None] = {}
    for c in constraints:
        if c.selector is not None:
            keys.update((r.key, None) for r in c.selector.requirements)
        keys.update((k, None) for k in c.match_label_keys)
    return tuple(keys)


# A bucket of pods of one shape: namespace, id(labels), id(spec), the owner (a bare pod: its
# name), and whether its pods are live and bound to a known node.
ShapeKey = tuple[str, int, int, int | str, bool]
WorkloadKey = tuple[str, str, str]  # namespace, kind, name


def bucket_shapes(pods: Iterable[Pod], nodes: Mapping[str, Node]) -> dict[ShapeKey, list[int]]:
    """The pods' positions bucketed by shape: pods of one template share their (interned)
    labels, spec and owner, so per-template work (counting by labels; profiles and workloads
    in the analysis) is done once per bucket. A bare pod is its own workload: never bucketed
    with its look-alikes. Live, bound pods are bucketed apart from the others (unbound,
    terminating, finished), which count only towards the workloads' constraints."""
    shapes: dict[ShapeKey, list[int]] = {}
    for position, pod in enumerate(pods):
        node = pod.node_name
        live = not (node is None or node not in nodes or pod.terminating or pod.phase in FINISHED)
        owner = id(pod.owner) if pod.owner is not None else pod.name
        key = (pod.namespace, id(pod.labels), id(pod.spec), owner, live)
        bucket = shapes.get(key)
        if bucket is None:
            shapes[key] = [position]
        else:
            bucket.append(position)
    return shapes


def count_by_labels(
    pods: Sequence[Pod], live: Iterable[list[int]]
) -> dict[str, dict[Labels, dict[str, int]]]:
    """namespace -> labels -> node -> the live pods with exactly those labels there (the
    ``live`` buckets). Gathered by the labels' identity first (hashing Labels is a Python
    call), then merged by value."""
    by_identity: dict[tuple[str, int], tuple[Labels, dict[str, int]]] = {}
    for positions in live:
        first = pods[positions[0]]
        labels_key = (first.namespace, id(first.labels))
        entry = by_identity.get(labels_key)
        if entry is None:
            entry = by_identity[labels_key] = (first.labels, {})
        per_node = entry[1]
        for position in positions:
            node = pods[position].node_name
            assert node is not None
            per_node[node] = per_node.get(node, 0) + 1
    out: dict[str, dict[Labels, dict[str, int]]] = defaultdict(dict)
    for (namespace, _), (labels, per_node) in by_identity.items():
        known = out[namespace].get(labels)
        if known is None:
            out[namespace][labels] = per_node
        else:  # equal labels, interned apart
            for node, n in per_node.items():
                known[node] = known.get(node, 0) + n
    return out


def infer_workload_constraints(
    state: ClusterState, shapes: Iterable[list[int]]
) -> dict[WorkloadKey, tuple[SpreadConstraint, ...]]:
    """Per controller, the constraints its replacements will carry.

    The owner's template when the snapshot has it; otherwise the constraints its pods
    declare (pods of one controller come from one template, and spread constraints are
    immutable on a pod, so a pod that has them shows the template). Where pods disagree,
    the most common non-empty set wins, ties to the first pod in name order.
    """
    # Counted by identity (the loader interns them; a bucket's pods share theirs), then
    # merged by value: hashing the constraint tuples of every pod would dominate.
    pods = state.pods
    by_id: dict[WorkloadKey, Counter[int]] = defaultdict(Counter)
    values: dict[int, tuple[SpreadConstraint, ...]] = {}
    buckets: dict[WorkloadKey, list[list[int]]] = defaultdict(list)
    for positions in shapes:
        pod = pods[positions[0]]
        constraints = pod.spec.constraints
        if pod.owner is None or not constraints:
            continue
        key = (pod.namespace, pod.owner.kind, pod.owner.name)
        by_id[key][id(constraints)] += len(positions)
        values[id(constraints)] = constraints
        buckets[key].append(positions)
    out = {key: _most_common(pods, ids, values, buckets[key]) for key, ids in by_id.items()}
    for w in state.workloads:
        if w.template is not None:
            out[w.key] = w.template.spec.constraints
    return out


def _most_common(
    pods: Sequence[Pod],
    ids: Counter[int],
    values: Mapping[int, tuple[SpreadConstraint, ...]],
    buckets: list[list[int]],
) -> tuple[SpreadConstraint, ...]:
    """The constraint set most of a controller's pods carry; on a tie, the first pod's (in
    name order) if it is one of the tied, else the least by repr."""
    counter: Counter[tuple[SpreadConstraint, ...]] = Counter()
    for cid, n in ids.items():
        counter[values[cid]] += n
    best = max(counter.values())
    tied = [c for c, n in counter.items() if n == best]
    if len(tied) == 1:
        return tied[0]
    _, position = min((pods[i].name, i) for b in buckets for i in b)
    first = pods[position].spec.constraints
    return first if first in tied else min(tied, key=repr)


def _service_requirements(state: ClusterState, pod: Pod) -> list[Requirement]:
    """Section 8, step 1: the selectors of the services in the pod's namespace selecting it,
    merged."""
    merged: dict[str, str] = {}
    for svc in state.services:
        if (
            svc.namespace == pod.namespace
            and svc.selector is not None
            and all(pod.labels.get(k) == v for k, v in svc.selector.items())
        ):
            merged.update(svc.selector)
    return [Requirement(k, Op.IN, (v,)) for k, v in sorted(merged.items())]


def _with_owner_selector(
    reqs: list[Requirement], owner: OwnerRef, workload: Workload | None
) -> list[Requirement]:
    """Section 8, step 2: an RC's selector merged in, a ReplicaSet's or StatefulSet's ANDed."""
    if workload is None or workload.selector is None:
        return reqs
    own = workload.selector.requirements
    if owner.kind == "ReplicationController":
        return [r for r in reqs if not any(x.key == r.key for x in own)] + list(own)
    if owner.kind in ("ReplicaSet", "StatefulSet"):
        return reqs + list(own)
    return reqs


class _PerConstraint(Generic[V]):
    """A value made for one constraint of a profile (a domain space, a count table), found by
    the interned profile's identity and the constraint's index, and shared by every profile
    whose content key is equal."""

    __slots__ = ("_by_content", "by_profile")

    def __init__(self) -> None:
        self.by_profile: dict[tuple[int, int], V] = {}  # interned profiles only
        self._by_content: dict[tuple[object, ...], V] = {}

    def store(
        self, profile: Profile, index: int, key: tuple[object, ...], make: Callable[[], V]
    ) -> V:
        """The value for ``key`` (made now if no profile has it yet), kept for this profile."""
        value = self._by_content.get(key)
        if value is None:
            value = self._by_content[key] = make()
        self.by_profile[(id(profile), index)] = value
        return value

    def adopt(
        self,
        previous: _PerConstraint[V],
        profiles: Collection[int],
        content: Callable[[tuple[object, ...]], bool],
    ) -> None:
        """``previous``'s values for these profiles (by identity), and those of its contents
        ``content`` keeps that they use (so what vanished from the cluster is not carried on).
        Copied whole and then trimmed: a copy keeps the keys' hashes, most are carried."""
        self.by_profile = _trimmed(previous.by_profile, lambda key, _: key[0] in profiles)
        used = {id(v) for v in self.by_profile.values()}
        self._by_content = _trimmed(
            previous._by_content, lambda key, value: id(value) in used and content(key)
        )


K = TypeVar("K")


def _trimmed(entries: dict[K, V], keep: Callable[[K, V], bool]) -> dict[K, V]:
    """A copy of ``entries`` with those ``keep`` refuses left out."""
    out = entries.copy()
    for key in [k for k, v in entries.items() if not keep(k, v)]:
        del out[key]
    return out


class SpreadIndex:
    """All spread state of one ClusterState, computed lazily and cached."""

    def __init__(
        self,
        state: ClusterState,
        default_constraints: tuple[SpreadConstraint, ...] = (),
        empty_selector_matches_all: bool = False,
        include_soft: bool = False,
        outage_domains: Mapping[str, frozenset[str]] | None = None,
    ) -> None:
        self.state = state
        # key -> domains in an outage, left out of every space of that key and counted toward
        # minDomains only (KEP-5980); empty: the scheduler's counting
        self.outage_domains: Mapping[str, frozenset[str]] = outage_domains or {}
        self.default_constraints = default_constraints
        self.empty_selector_matches_all = empty_selector_matches_all
        self.include_soft = include_soft
        self.nodes: dict[str, Node] = {n.name: n for n in state.nodes}
        self.node_labels: dict[str, Labels] = {n.name: n.labels for n in state.nodes}
        shapes = bucket_shapes(state.pods, self.nodes)
        # the live buckets, as positions in state.pods
        self.shapes: tuple[list[int], ...] = tuple(v for k, v in shapes.items() if k[4])
        self.pods_by_labels = count_by_labels(state.pods, self.shapes)
        self.workloads: dict[WorkloadKey, Workload] = {w.key: w for w in state.workloads}
        self._workload_constraints = infer_workload_constraints(state, shapes.values())
        self._spaces: _PerConstraint[DomainSpace] = _PerConstraint()
        self._tables: _PerConstraint[CountTable] = _PerConstraint()
        self._matches: dict[tuple[int, int], tuple[LabelSelector, Labels, bool]] = {}
        # namespace -> (label key, value) -> (first-seen position, labels) of pods_by_labels
        self._label_index: dict[str, dict[tuple[str, str], list[tuple[int, Labels]]]] = {}
        # Keyed by the identity of interned objects; each entry holds those objects, so no id in
        # a key can be reused by another object while the entry exists.
        self._profiles: dict[tuple[object, ...], tuple[Profile, tuple[object, ...]]] = {}
        self._relevant_keys: dict[int, tuple[tuple[SpreadConstraint, ...], tuple[str, ...]]] = {}
        self._profile_values: dict[Profile, Profile] = {}
        self._default_selectors: dict[tuple[object, ...], LabelSelector | None] = {}
        self._rules: dict[int, tuple[Profile, tuple[SpreadRule, ...]]] = {}

    @property
    def settings(self) -> tuple[object, ...]:
        """What it was made with beside the state: indexes with equal settings judge the same
        pods alike."""
        return (
            self.default_constraints,
            self.empty_selector_matches_all,
            self.include_soft,
            self.outage_domains,
        )

    def adopt(self, previous: SpreadIndex, namespaces: Collection[str]) -> None:
        """Carry ``previous``'s profiles, and their domain spaces, count tables, rules, default
        selectors and label indexes, for ``namespaces``: called on a fresh index before any
        use, where the nodes and the settings are the same as ``previous``'s and these
        namespaces' pods, owners and services are too (analysis/groups.py decides). Spread
        counts never cross a namespace, so all of these are the same as this index would make
        for them; carrying the very objects keeps a carried group's profile this index's own."""
        assert self.settings == previous.settings, "an index adopts only from its like"
        self._profile_values = _trimmed(
            previous._profile_values, lambda p, _: p.namespace in namespaces
        )
        self._profiles = _trimmed(previous._profiles, lambda key, _: key[0] in namespaces)
        ids = {id(p) for p in self._profile_values}
        self._spaces.adopt(previous._spaces, ids, lambda _: True)
        self._tables.adopt(previous._tables, ids, lambda key: key[0] in namespaces)
        self._rules = _trimmed(previous._rules, lambda pid, _: pid in ids)
        self._default_selectors = _trimmed(
            previous._default_selectors, lambda key, _: key[0] in namespaces
        )
        # positions in the namespace's pods_by_labels: the same pods give the same label sets in
        # the same first-seen order
        self._label_index = _trimmed(previous._label_index, lambda ns, _: ns in namespaces)

    # ---- selectors -------------------------------------------------------------------------

    def counts_pod(
        self, selector: LabelSelector | None, labels: Labels, *, remember: bool = True
    ) -> bool:
        """Whether the counting step counts a pod with these labels (mind the `{}` bug, 2.4).
        ``remember``: keep the answer for the next asking (off for a question asked once: the
        deletion-cost order asks each pair of a namespace's selectors and label sets once, and
        keeping them would hold one entry per pair)."""
        if selector is None:
            return False
        if not selector.requirements:
            return self.empty_selector_matches_all
        # Keyed by identity (selectors and labels are interned; hashing Labels costs a Python
        # call); the entry holds both objects, so neither id can be reused while it exists.
        key = (id(selector), id(labels))
        hit = self._matches.get(key)
        if hit is not None:
            return hit[2]
        found = selector_matches(selector, labels)
        if remember:
            self._matches[key] = (selector, labels, found)
        return found

    # ---- the replacement's shape ----------------------------------------------------------

    def replacement_constraints(self, pod: Pod) -> tuple[SpreadConstraint, ...]:
        """The spread constraints the pod is judged by: its own, else its workload's.

        A pod's own constraints are what the scheduler checked it against, so they win. A pod
        with none, whose controller's template or sibling pods carry some, is judged by those:
        its replacement will carry them.
        """
        if pod.spec.constraints or pod.owner is None:
            return pod.spec.constraints
        inherited = self._workload_constraints.get((pod.namespace, pod.owner.kind, pod.owner.name))
        return inherited if inherited is not None else pod.spec.constraints

    def default_selector(self, pod: Pod) -> LabelSelector | None:
        """Section 8: services selecting the pod, plus its RC/RS/StatefulSet's selector."""
        key = (pod.namespace, pod.labels, pod.owner)
        if key in self._default_selectors:
            return self._default_selectors[key]
        reqs = _service_requirements(self.state, pod)
        owner = pod.owner
        if owner is not None:
            workload = self.workloads.get((pod.namespace, owner.kind, owner.name))
            reqs = _with_owner_selector(reqs, owner, workload)
        result = LabelSelector(tuple(reqs)) if reqs else None
        self._default_selectors[key] = result
        return result

    def profile_for(
        self,
        namespace: str,
        labels: Labels,
        spec: PodSpec,
        constraints: tuple[SpreadConstraint, ...],
        pod_for_defaults: Pod | None = None,
    ) -> Profile:
        """The profile of a pod with these labels and spec, carrying ``constraints``."""
        key, anchors = self._profile_key(namespace, labels, spec, constraints, pod_for_defaults)
        hit = self._profiles.get(key)
        if hit is not None:
            return hit[0]
        cons = self._effective(labels, constraints, pod_for_defaults)
        honors_affinity = any(c.honor_affinity for c in cons)
        honors_taints = any(c.honor_taints for c in cons)
        profile = Profile(
            namespace=namespace,
            constraints=cons,
            self_match=tuple(
                c.selector is not None and selector_matches(c.selector, labels) for c in cons
            ),
            affinity=spec.affinity if honors_affinity else NO_AFFINITY,
            tolerations=spec.tolerations if honors_taints else (),
        )
        profile = self._profile_values.setdefault(profile, profile)
        self._profiles[key] = (profile, anchors)
        return profile

    def _profile_key(
        self,
        namespace: str,
        labels: Labels,
        spec: PodSpec,
        constraints: tuple[SpreadConstraint, ...],
        pod_for_defaults: Pod | None,
    ) -> tuple[tuple[object, ...], tuple[object, ...]]:
        """What decides a profile, by the identity of interned objects, and those objects."""
        if not constraints:
            # Default constraints: services and the owner decide the selector.
            owner = pod_for_defaults.owner if pod_for_defaults is not None else None
            return (namespace, id(labels), id(spec), owner), (labels, spec)
        # Labels matter only through the keys the selectors and matchLabelKeys read, so pods
        # differing elsewhere (a StatefulSet's pod-name label) share one profile.
        known = self._relevant_keys.get(id(constraints))
        if known is None:
            known = self._relevant_keys[id(constraints)] = (
                constraints,
                _label_keys_read(constraints),
            )
        read = tuple(labels.get(k) for k in known[1])
        return (namespace, id(spec), id(constraints), read), (spec, constraints)

    def _effective(
        self,
        labels: Labels,
        constraints: tuple[SpreadConstraint, ...],
        pod_for_defaults: Pod | None,
    ) -> tuple[EffectiveConstraint, ...]:
        """Section 2: the hard constraints, then (when soft ones are wanted) the soft ones; the
        pod's own, else the cluster's defaults with the derived selector (section 8)."""
        whens = [When.DO_NOT_SCHEDULE] + ([When.SCHEDULE_ANYWAY] if self.include_soft else [])
        selector = None
        if not constraints and self.default_constraints and pod_for_defaults is not None:
            selector = self.default_selector(pod_for_defaults)
        effective: list[EffectiveConstraint] = []
        for when in whens:
            if constraints:
                effective.extend(effective_constraints(labels, constraints, when))
            elif selector is not None:
                effective.extend(
                    effective_constraints(labels, self.default_constraints, when, True, selector)
                )
        return tuple(effective)

    def profile_of(self, pod: Pod) -> Profile:
        """The profile of the pod's replacement: how its owner would place it again today."""
        return self.profile_for(
            pod.namespace, pod.labels, pod.spec, self.replacement_constraints(pod), pod
        )

    # ---- eligibility and counting ----------------------------------------------------------

    def gate_keys(self, profile: Profile, index: int) -> frozenset[str]:
        """All-keys gate: hard constraints are gated on every hard key, soft ones on soft keys."""
        when = profile.constraints[index].when
        return frozenset(c.key for c in profile.constraints if c.when is when)

    def space(self, profile: Profile, index: int) -> DomainSpace:
        """The eligible domains of one of the profile's constraints (section 3)."""
        found = self._spaces.by_profile.get((id(profile), index))
        if found is not None:
            return found
        c = profile.constraints[index]
        gate = self.gate_keys(profile, index)
        affinity = profile.affinity if c.honor_affinity else None
        tolerations = profile.tolerations if c.honor_taints else None
        return self._spaces.store(
            profile,
            index,
            (gate, c.key, affinity, tolerations),
            lambda: eligible_domains(
                self.state.nodes,
                gate,
                c.key,
                affinity,
                tolerations,
                outage=self.outage_domains.get(c.key, frozenset()),
            ),
        )

    def table(self, profile: Profile, index: int) -> CountTable:
        """The shared count table of a profile's constraint; copy it before changing it."""
        found = self._tables.by_profile.get((id(profile), index))
        if found is not None:
            return found
        selector = profile.constraints[index].selector
        space = self.space(profile, index)
        return self._tables.store(
            profile,
            index,
            (profile.namespace, selector, space),
            lambda: CountTable(space, self._count(profile.namespace, selector, space)),
        )

    def _count(
        self, namespace: str, selector: LabelSelector | None, space: DomainSpace
    ) -> dict[str, int]:
        """Section 4: the live pods of the namespace the selector counts, per eligible domain."""
        counts: dict[str, int] = {}
        node_domain = space.node_domain
        for labels, per_node in self._candidates(namespace, selector):
            if not self.counts_pod(selector, labels):
                continue
            for node_name, n in per_node.items():
                domain = node_domain.get(node_name)
                if domain is not None:
                    counts[domain] = counts.get(domain, 0) + n
        return counts

    def _candidates(
        self, namespace: str, selector: LabelSelector | None
    ) -> Iterable[tuple[Labels, dict[str, int]]]:
        """The label sets of the namespace ``selector`` might count, in first-seen order.

        A selector with an In requirement can only count label sets that hold one of its
        values, so only those are visited (and still checked); else every label set is.
        """
        pods = self.pods_by_labels.get(namespace, {})
        req = narrowing(selector)
        if req is None:
            return pods.items()
        index = self._label_index.get(namespace)
        if index is None:
            index = self._label_index[namespace] = defaultdict(list)
            for position, labels in enumerate(pods):
                for pair in labels.items():
                    index[pair].append((position, labels))
        hits = [hit for value in req.values for hit in index.get((req.key, value), ())]
        if len(req.values) > 1:
            hits.sort(key=lambda hit: hit[0])
        return ((labels, pods[labels]) for _, labels in hits)

    def tables(self, profile: Profile) -> tuple[CountTable, ...]:
        return tuple(self.table(profile, i) for i in range(len(profile.constraints)))

    def rules(self, profile: Profile) -> tuple[SpreadRule, ...]:
        """The Filter's rule for each of the profile's constraints."""
        hit = self._rules.get(id(profile))  # the entry holds the profile: its id stays its own
        if hit is None:
            hit = self._rules[id(profile)] = (
                profile,
                tuple([rule(profile, i) for i in range(len(profile.constraints))]),
            )
        return hit[1]

    def is_counted(self, profile: Profile, index: int, pod: Pod) -> bool:
        """Whether ``pod`` (bound, in the profile's namespace) is in the constraint's counts."""
        if pod.namespace != profile.namespace or pod.node_name is None or not pod_counts(pod):
            return False
        if pod.node_name not in self.space(profile, index).node_domain:
            return False
        return self.counts_pod(profile.constraints[index].selector, pod.labels)


def eligible_domains(
    nodes: Iterable[Node],
    gate: frozenset[str],
    key: str,
    affinity: NodeAffinity | None,
    tolerations: tuple[Toleration, ...] | None,
    *,
    outage: frozenset[str] = frozenset(),
) -> DomainSpace:
    """Section 3: the nodes carrying every gate key that the inclusion policies keep (node
    affinity and taints when honoured: not None), each with its value of ``key``.

    ``outage``: domains in an outage that KEP-5980's counting leaves out of the space; they
    still count toward minDomains (``DomainSpace.absent``).
    """
    node_domain: dict[str, str] = {}
    domain_nodes: dict[str, list[str]] = defaultdict(list)
    absent: set[str] = set()
    for node in nodes:
        labels = node.labels
        if any(k not in labels for k in gate):
            continue
        if affinity is not None and not affinity_matches(affinity, node):
            continue
        if tolerations is not None and untolerated_taint(tolerations, node.taints) is not None:
            continue
        value = labels[key]
        if value in outage:
            absent.add(value)
            continue
        node_domain[node.name] = value
        domain_nodes[value].append(node.name)
    return DomainSpace(node_domain, {d: tuple(n) for d, n in domain_nodes.items()}, len(absent))


def check_constraint(
    profile: Profile, index: int, table: CountTable, node: Node, counted: bool = False
) -> Verdict:
    """Section 5 for one constraint: may a pod of ``profile`` be placed on ``node``?

    ``counted`` says the pod being judged is itself in ``table``, on this node: a bound pod
    judged as if it were being placed again, which first takes it out of the counts.
    """
    return rule(profile, index).verdict(
        table, node.labels.get(profile.constraints[index].key), counted
    )


def filter_node(
    profile: Profile,
    tables: tuple[CountTable, ...],
    node: Node,
    counted: tuple[bool, ...] | None = None,
    hard_only: bool = True,
) -> Verdict:
    """Section 5: every constraint in spec order; the first failure decides the status."""
    for i, c in enumerate(profile.constraints):
        if hard_only and not c.hard:
            continue
        verdict = check_constraint(profile, i, tables[i], node, counted[i] if counted else False)
        if not verdict.ok:
            return verdict
    return SUCCESS


def owner_key(pod: Pod) -> tuple[str, str, str] | None:
    owner: OwnerRef | None = pod.owner
    return (pod.namespace, owner.kind, owner.name) if owner is not None else None
