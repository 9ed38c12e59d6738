"""Matching: label selectors, required node affinity, taints and tolerations.

These follow the API machinery exactly (see spread-semantics.md sections 2.3 and 3): a nil
selector matches nothing, ``{}`` matches everything, node-selector terms are ORed, an empty term
matches nothing, Gt/Lt compare integers, and toleration matching uses Kubernetes' rules.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from respread.core.model import (
    Effect,
    LabelSelector,
    Node,
    NodeAffinity,
    NodeSelectorTerm,
    Op,
    Requirement,
    Taint,
    Toleration,
)


def narrowing(selector: LabelSelector | None) -> Requirement | None:
    """The selector's first In requirement: labels it matches hold one of its values, so an
    index by (key, value) finds every candidate. None: any labels may match."""
    if selector is None:
        return None
    return next((r for r in selector.requirements if r.op is Op.IN), None)


def requirement_matches(req: Requirement, labels: Mapping[str, str]) -> bool:
    value = labels.get(req.key)
    if req.op is Op.IN:
        return value is not None and value in req.value_set
    if req.op is Op.NOT_IN:
        return value is None or value not in req.value_set
    if req.op is Op.EXISTS:
        return value is not None
    if req.op is Op.DOES_NOT_EXIST:
        return value is None
    if value is None or len(req.values) != 1:
        return False
    left, right = _as_int(value), _as_int(req.values[0])
    if left is None or right is None:
        return False
    return left > right if req.op is Op.GT else left < right


_INT64 = re.compile(r"[+-]?[0-9]+")


def _as_int(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64): optional sign, decimal digits, 64-bit range."""
    if not _INT64.fullmatch(text):
        return None
    number = int(text)
    return number if -(2**63) <= number < 2**63 else None


def selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelectorAsSelector(selector).Matches(labels)."""
    if selector is None:
        return False
    return all(requirement_matches(r, labels) for r in selector.requirements)


_LABEL_VALUE = re.compile(r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?")


def _parses(req: Requirement) -> bool:
    """Whether labels.NewRequirement accepts it: a term with one that fails never matches.
    Decided once per requirement (checking 100,000 values for every node is quadratic)."""
    known = _PARSES.get(req)
    if known is None:
        if len(_PARSES) >= _MEMO_SIZE:
            _PARSES.clear()
        known = _PARSES[req] = _parses_now(req)
    return known


def _parses_now(req: Requirement) -> bool:
    if not all(len(v) <= 63 and _LABEL_VALUE.fullmatch(v) for v in req.values):
        return False
    if req.op in (Op.GT, Op.LT):
        return len(req.values) == 1 and _as_int(req.values[0]) is not None
    return True


# Memos of pure functions of immutable records (requirements are interned, so a lookup is an
# identity check), bounded so that a long-running operator does not keep every one it saw.
_MEMO_SIZE = 4096
_PARSES: dict[Requirement, bool] = {}


def term_matches(term: NodeSelectorTerm, node: Node) -> bool:
    if not term.match_expressions and not term.match_fields:
        return False
    if not all(_parses(r) for r in term.match_expressions):
        return False
    if not all(requirement_matches(r, node.labels) for r in term.match_expressions):
        return False
    fields = {"metadata.name": node.name}
    return all(requirement_matches(r, fields) for r in term.match_fields)


def affinity_matches(affinity: NodeAffinity, node: Node) -> bool:
    """The NodeAffinity filter: every nodeSelector pair, and one required term if any are set."""
    for key, value in affinity.node_selector.items():
        if node.labels.get(key) != value:
            return False
    if affinity.required_terms is None:
        return True
    return any(term_matches(t, node) for t in affinity.required_terms)


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """v1.Toleration.ToleratesTaint."""
    if toleration.effect is not None and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    op = toleration.operator or "Equal"
    if op == "Exists":
        return True
    if op == "Equal":
        return toleration.value == taint.value
    if op in ("Lt", "Gt"):
        mine, theirs = _as_int(toleration.value), _as_int(taint.value)
        if mine is None or theirs is None:
            return False
        return theirs < mine if op == "Lt" else theirs > mine
    return False


_HARD_EFFECTS = (Effect.NO_SCHEDULE, Effect.NO_EXECUTE)
_FEW = 8  # up to this many tolerations, comparing each is faster than an index


@dataclass(frozen=True, slots=True)
class _Tolerations:
    """Tolerations indexed by what they match, so that a taint is looked up in them instead
    of compared with each (6,000 taints against 6,000 tolerations is quadratic otherwise).
    An empty key (a toleration of every key) is indexed under "", no effect under None."""

    exists: frozenset[tuple[str, Effect | None]]
    equal: frozenset[tuple[str, str, Effect | None]]
    below: dict[tuple[str, Effect | None], int]  # Lt: a taint's value below the largest bound
    above: dict[tuple[str, Effect | None], int]  # Gt: above the smallest


def _indexed(tolerations: tuple[Toleration, ...]) -> _Tolerations:
    exists, equal = set(), set()
    below: dict[tuple[str, Effect | None], int] = {}
    above: dict[tuple[str, Effect | None], int] = {}
    for t in tolerations:
        op = t.operator or "Equal"
        where = (t.key, t.effect)
        bound = _as_int(t.value) if op in ("Lt", "Gt") else None
        if op == "Exists":
            exists.add(where)
        elif op == "Equal":
            equal.add((t.key, t.value, t.effect))
        elif op == "Lt" and bound is not None:
            below[where] = max(bound, below.get(where, bound))
        elif op == "Gt" and bound is not None:
            above[where] = min(bound, above.get(where, bound))
    return _Tolerations(frozenset(exists), frozenset(equal), below, above)


def _tolerated(index: _Tolerations, taint: Taint) -> bool:
    """Whether any indexed toleration tolerates the taint (v1.Toleration.ToleratesTaint)."""
    number = _as_int(taint.value) if index.below or index.above else None
    for where in ((taint.key, taint.effect), (taint.key, None), ("", taint.effect), ("", None)):
        if where in index.exists or (where[0], taint.value, where[1]) in index.equal:
            return True
        if number is not None and (
            number < index.below.get(where, number) or number > index.above.get(where, number)
        ):
            return True
    return False


def _index_of(tolerations: tuple[Toleration, ...]) -> _Tolerations:
    """The index of a spec's tolerations, made once (tuples are interned: keyed by identity,
    the tuple kept so that its identity is not reused)."""
    known = _TOLERATIONS.get(id(tolerations))
    if known is None or known[0] is not tolerations:
        if len(_TOLERATIONS) >= _MEMO_SIZE:
            _TOLERATIONS.clear()
        known = _TOLERATIONS[id(tolerations)] = (tolerations, _indexed(tolerations))
    return known[1]


_TOLERATIONS: dict[int, tuple[tuple[Toleration, ...], _Tolerations]] = {}


def untolerated_taint(tolerations: Iterable[Toleration], taints: Iterable[Taint]) -> Taint | None:
    """The first NoSchedule/NoExecute taint no toleration tolerates, if any."""
    tols = tolerations if isinstance(tolerations, tuple) else tuple(tolerations)
    if len(tols) <= _FEW:
        for taint in taints:
            if taint.effect in _HARD_EFFECTS and not any(tolerates(t, taint) for t in tols):
                return taint
        return None
    index = _index_of(tols)
    for taint in taints:
        if taint.effect in _HARD_EFFECTS and not _tolerated(index, taint):
            return taint
    return None
