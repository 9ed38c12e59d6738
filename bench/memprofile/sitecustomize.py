"""Loaded by bench/operator_scale.py --profile-memory into the operator's process (through
PYTHONPATH): tracemalloc from the start, and on SIGUSR2 the largest allocation sites, grouped
by file and by line, written to $RESPREAD_MEMPROFILE."""

import os
import signal
import tracemalloc

_path = os.environ.get("RESPREAD_MEMPROFILE")
if _path:
    tracemalloc.start(1)

    def _dump(signum: int, frame: object) -> None:
        snapshot = tracemalloc.take_snapshot()
        total = sum(s.size for s in snapshot.statistics("filename"))
        with open(_path, "w") as out:
            out.write(f"traced: {total / 2**20:.1f} MiB\n\n## by file\n")
            for stat in snapshot.statistics("filename")[:25]:
                out.write(f"{stat.size / 2**20:8.1f} MiB {stat.count:9d} {stat.traceback}\n")
            out.write("\n## by line\n")
            for stat in snapshot.statistics("lineno")[:40]:
                out.write(f"{stat.size / 2**20:8.1f} MiB {stat.count:9d} {stat.traceback}\n")

    signal.signal(signal.SIGUSR2, _dump)
