"""Every scheduler-filter scenario, and every disagreement the scheduler oracle found and saved
(tests/scenarios/found/): `explain` must give kube-scheduler's Filter verdicts exactly. The
saved answers are replayed here without Go."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from respread.analysis.groups import build_index
from respread.cli import explanation_dict
from respread.inputs.objects import load_texts
from respread.inputs.policy import DEFAULT_POLICY
from respread.scheduling.explain import explain_pod

from .conftest import scenario_dirs

SCENARIOS = scenario_dirs("scheduler-filter")
FOUND = sorted(
    p for p in (Path(__file__).parent / "found").iterdir() if (p / "cluster.yaml").is_file()
)


def incoming_pod_key(text: str) -> tuple[str, str]:
    for doc in yaml.safe_load_all(text):
        if doc and doc.get("kind") == "Pod":
            meta = doc["metadata"]
            if (meta.get("annotations") or {}).get("scenario/incoming") == "true":
                return meta.get("namespace", "default"), meta["name"]
    raise AssertionError("scenario has no pod annotated scenario/incoming")


@pytest.mark.parametrize(
    "scenario",
    [*SCENARIOS, *FOUND],
    ids=[*(p.name for p in SCENARIOS), *(f"found/{p.name}" for p in FOUND)],
)
def test_explain_matches_the_scheduler_filter(scenario: Path) -> None:
    text = (scenario / "cluster.yaml").read_text()
    expect = yaml.safe_load((scenario / "expect.yaml").read_text())
    loaded = load_texts([(str(scenario), text)])
    assert loaded.problems == ()
    namespace, name = incoming_pod_key(text)
    pod = next(p for p in loaded.state.pods if (p.namespace, p.name) == (namespace, name))

    result = explanation_dict(explain_pod(build_index(loaded.state, DEFAULT_POLICY), pod))

    statuses = {n["name"]: n["spreadFilter"] for n in result["nodes"]}
    assert statuses == expect["statusByNode"]
    feasible = sorted(n["name"] for n in result["nodes"] if n["feasible"])
    assert feasible == sorted(expect["feasibleNodesAllFilters"])
    passing = sorted(n for n, s in statuses.items() if s == "Success")
    assert passing == sorted(expect["feasibleNodes"])


def test_every_scheduler_scenario_is_collected() -> None:
    assert len(SCENARIOS) >= 36
    assert FOUND, "the saved oracle disagreements are replayed too"
