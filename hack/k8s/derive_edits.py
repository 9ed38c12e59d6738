#!/usr/bin/env python3
"""Derive `go mod edit` flags for a wrapper module from a release's own go.mod.

Input (stdin): the JSON that `go mod edit -json <release go.mod>` prints.
Output (stdout): one `go mod edit` flag per line, to be applied to a throwaway wrapper module
that requires the release, so that `go build <release>/cmd/...` resolves like the release's own
build does:

* every `replace X => ./staging/src/X` becomes `-replace=X=X@<staging version>`: no version on
  the left, so it also catches the `v0.0.0` placeholder requirements the release carries;
* every other module-to-module replace, every exclude and every godebug line is copied as is;
* any other replace to a local path is an error: the wrapper cannot reproduce it.

Usage: derive_edits.py <staging-version>   (for k8s.io/kubernetes v1.34.4 that is v0.34.4)
"""

from __future__ import annotations

import json
import sys
from typing import Any

STAGING_PREFIX = "./staging/src/"


def _is_local(path: str) -> bool:
    return path.startswith(("./", "../", "/"))


def _module(ref: dict[str, Any]) -> str:
    version = ref.get("Version")
    return f"{ref['Path']}@{version}" if version else str(ref["Path"])


def derive(gomod: dict[str, Any], staging_version: str) -> list[str]:
    flags: list[str] = []
    for rep in gomod.get("Replace") or []:
        old, new = rep["Old"], rep["New"]
        if new.get("Version") is None and _is_local(new["Path"]):
            local = new["Path"]
            if not local.startswith(STAGING_PREFIX) or local[len(STAGING_PREFIX) :] != old["Path"]:
                raise SystemExit(
                    f"derive_edits: cannot reproduce local replace {_module(old)} => {local}"
                )
            flags.append(f"-replace={old['Path']}={old['Path']}@{staging_version}")
        else:
            flags.append(f"-replace={_module(old)}={_module(new)}")
    for exc in gomod.get("Exclude") or []:
        flags.append(f"-exclude={exc['Path']}@{exc['Version']}")
    for dbg in gomod.get("GoDebug") or []:
        flags.append(f"-godebug={dbg['Key']}={dbg['Value']}")
    if not any(f.startswith("-replace=") for f in flags):
        raise SystemExit("derive_edits: the release's go.mod has no replace directives at all")
    return flags


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit("usage: derive_edits.py <staging-version>  < go-mod-edit.json")
    for flag in derive(json.load(sys.stdin), sys.argv[1]):
        print(flag)


if __name__ == "__main__":
    main()
