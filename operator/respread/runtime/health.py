"""The readiness endpoint (`respread run --readiness URL`): 200 while the replica's view of the
cluster can be trusted, 503 with the reason while it cannot (a watch failing or not listed yet,
the process just resumed from a pause). Liveness is kopf's endpoint (`--liveness`), answered
by the operator's probes (runtime/operator.py)."""

from __future__ import annotations

import logging
import urllib.parse
from collections.abc import Callable

import aiohttp.web

log = logging.getLogger(__name__)


def _address(url: str) -> tuple[str, int, str]:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "http" or not parts.port:
        raise ValueError(f"--readiness: expected http://HOST:PORT/PATH, got {url!r}")
    return parts.hostname or "localhost", parts.port, parts.path or "/"


async def serve_readiness(url: str, unready: Callable[[], str | None]) -> aiohttp.web.AppRunner:
    """Serve `url` until the returned runner is cleaned up; `unready` says why not, or None."""
    host, port, path = _address(url)

    async def ready(request: aiohttp.web.Request) -> aiohttp.web.Response:
        why = unready()
        if why is None:
            return aiohttp.web.Response(text="ready\n")
        return aiohttp.web.Response(status=503, text=f"not ready: {why}\n")

    app = aiohttp.web.Application()
    app.add_routes([aiohttp.web.get(path, ready)])
    runner = aiohttp.web.AppRunner(app, handle_signals=False, shutdown_timeout=1.0)
    await runner.setup()
    await aiohttp.web.TCPSite(runner, host, port).start()
    log.info("readiness on %s", url)
    return runner
