"""YAML written the way kubectl writes it (``kubectl get -o yaml``: sigs.k8s.io/yaml's
JSONToYAML, go-yaml v2 underneath), for tests that hand respread YAML text.

go-yaml v2 leaves a string unquoted exactly when it would read it back as a string (and it is
not a YAML 1.1 base-60 number); PyYAML's own dumper decides by YAML 1.1's rules instead, and
leaves ``n``, ``y``, ``0o17`` or ``1e3`` plain, which kubectl reads as false, true, 15 and 1000.
tests/oracles/test_yaml_oracle.py holds respread's reading to the real writer.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from respread.inputs.scalars import STR, resolve

_BASE_60 = re.compile(r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?")


class _Dumper(yaml.SafeDumper):
    pass


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    quoted = resolve("", value)[0] != STR or _BASE_60.fullmatch(value) is not None
    style = '"' if quoted else ("|" if "\n" in value else None)
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _string)


def dump_all(docs: Any, flow: bool = False) -> str:
    return yaml.dump_all(
        docs, Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=flow
    )


def dump(doc: Any, flow: bool = False) -> str:
    return dump_all([doc], flow)
