"""The cyclic garbage collector paused around analysis and planning.

Analysis allocates hundreds of thousands of objects on a large cluster, which triggers full
collections that walk every loaded record again: at 150,000 pods they cost as much as the
analysis itself (bench/README.md). The records are acyclic and freed by reference counting.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator


class _Pausers:
    lock = threading.Lock()
    count = 0
    was_enabled = True


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The collector off inside; on again when the last of concurrent callers (scans of
    several policies) leaves, even on an error. Leaves it off if it was off before."""
    with _Pausers.lock:
        _Pausers.count += 1
        if _Pausers.count == 1:
            _Pausers.was_enabled = gc.isenabled()
            gc.disable()
    try:
        yield
    finally:
        with _Pausers.lock:
            _Pausers.count -= 1
            if _Pausers.count == 0 and _Pausers.was_enabled:
                gc.enable()
