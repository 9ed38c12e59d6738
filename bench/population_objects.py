"""operator_scale.py's population as objects, without a control plane.

`scale_population.populate` builds the population with API requests; here the same calls, in
the same order with the same random choices, go to a recorder that keeps each object as the API
server would store it (metadata filled in, merge patches applied, status subresources merged),
so that the benchmark's own population can be scanned offline (operator_scan.py --population).
"""

from __future__ import annotations

import copy
import sys
import types
from collections.abc import Callable, Iterator
from itertools import count
from typing import Any

import scale_population

KINDS = {  # resource -> (apiVersion, kind); service accounts are not kept
    "nodes": ("v1", "Node"),
    "namespaces": ("v1", "Namespace"),
    "pods": ("v1", "Pod"),
    "deployments": ("apps/v1", "Deployment"),
    "replicasets": ("apps/v1", "ReplicaSet"),
    "poddisruptionbudgets": ("policy/v1", "PodDisruptionBudget"),
}
CREATED = "2026-11-26T00:00:00Z"
POPULATED_AT = 1_795_651_200.0 + 3600  # an hour after CREATED


def _merge(into: dict[str, Any], patch: dict[str, Any]) -> None:
    """An RFC 7386 merge patch, in place."""
    for key, value in patch.items():
        if value is None:
            into.pop(key, None)
        elif isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = copy.deepcopy(value)


class Recorder:
    """Stands in for scale_population.Requests: keeps what the requests would create."""

    def __init__(self, api: object = None, threads: int = 0) -> None:
        self.objects: dict[str, dict[str, Any]] = {}  # by path
        self._serial = count(1)

    def _path(self, path: str) -> tuple[str, str | None, str]:
        """(the object's path, its namespace, its resource) for a request path."""
        path = path.removesuffix("/status")
        parts = path.strip("/").split("/")
        ns = parts[parts.index("namespaces") + 1] if "namespaces" in parts[:-2] else None
        resource = parts[-2] if parts[-2] in KINDS else parts[-1]
        return path, ns, resource

    def post(self, path: str, body: Any) -> dict[str, Any]:
        _, ns, resource = self._path(path + "/x")
        if resource not in KINDS:
            return {"metadata": {"uid": f"uid-{next(self._serial)}"}}
        obj = copy.deepcopy(body)
        obj["apiVersion"], obj["kind"] = KINDS[resource]
        meta = obj.setdefault("metadata", {})
        serial = next(self._serial)
        meta.update(uid=f"uid-{serial}", resourceVersion=str(serial), creationTimestamp=CREATED)
        if ns is not None:
            meta["namespace"] = ns
        self.objects[f"{path}/{meta['name']}"] = obj
        return obj

    def merge(self, path: str, body: Any) -> dict[str, Any]:
        obj = self.objects[self._path(path)[0]]
        _merge(obj, body)
        return obj

    def call(self, method: str, path: str, body: Any = None, content: str = "") -> dict[str, Any]:
        assert method == "GET", method
        return self.objects[self._path(path)[0]]

    def delete(self, path: str) -> dict[str, Any]:
        self.objects.pop(self._path(path)[0], None)
        return {}

    def each(self, fn: Callable[[Any], Any], items: list[Any]) -> list[Any]:
        return [fn(i) for i in items]


def population(nodes: int, pods: int, prefix: str = "b") -> Iterator[dict[str, Any]]:
    """The objects `populate(api, nodes, pods, prefix=prefix)` creates."""
    recorder = Recorder()
    real = scale_population.Requests
    fake_module = types.ModuleType("population")
    fake_module._refuse_controller_replicas = lambda *args: ""  # type: ignore[attr-defined]
    saved = sys.modules.get("population")
    sys.modules["population"] = fake_module
    scale_population.Requests = lambda api, threads=16: recorder  # type: ignore[assignment,misc]
    try:
        scale_population.populate(None, nodes, pods, prefix=prefix)  # type: ignore[arg-type]
    finally:
        scale_population.Requests = real  # type: ignore[misc]
        if saved is None:
            sys.modules.pop("population", None)
        else:
            sys.modules["population"] = saved
    yield from recorder.objects.values()
