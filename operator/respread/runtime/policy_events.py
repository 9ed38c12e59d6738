"""Events about a RebalancePolicy, posted from the event loop (best effort, as post_event is)."""

from __future__ import annotations

import asyncio

from kubernetes import client

from respread.inputs.policy import RebalancePolicy
from respread.kube.writer import post_policy_event


async def tell_policy(
    api: client.ApiClient,
    policy: RebalancePolicy,
    uid: str | None,
    reason: str,
    *,
    warning: bool,
    message: str,
) -> None:
    await asyncio.to_thread(
        post_policy_event, api, policy.name, uid, reason, message=message, warning=warning
    )
