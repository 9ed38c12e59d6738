"""Writes tests/golden/outputs/ from today's code: `python -m tests.golden.record`."""

from __future__ import annotations

import shutil

from tests.golden.cases import OUTPUTS, cases, run


def main() -> None:
    shutil.rmtree(OUTPUTS, ignore_errors=True)
    OUTPUTS.mkdir()
    found = cases()
    for case in found:
        (OUTPUTS / f"{case.name}{case.suffix}").write_bytes(run(case))
    print(f"recorded {len(found)} outputs in {OUTPUTS}")


if __name__ == "__main__":
    main()
