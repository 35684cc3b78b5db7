"""What one warm's body holds in memory, in bytes: the measure of ``KVWARM_WARM_QUEUE_BYTES`` (pure, no I/O).

A queued warm keeps its whole body (the request's messages, images and documents as data URLs included)
until a slot sends it, and a warm in flight keeps it until its target answers: with the target hanging,
warm-zone requests carrying 5 MB images grew the proxy by ~5.5 MB each (breaker B, 2026-12: +548 MB for
100), where LiteLLM alone holds nothing once a request is answered. The runner bounds the sum of
:func:`body_bytes` over the warms it holds (:class:`~litellm_kvwarm.warm.WarmRunner`).

:func:`body_bytes` is CPython's own size of each object of the body (``sys.getsizeof``: a string's
header and characters at its 1, 2 or 4 bytes per character, a dict's or list's table), summed over one
walk of the body. No copy and no serialisation (a ``json.dumps`` of a 5 MB image would copy 5 MB on
the request path): one ``getsizeof`` per node, ~0.1 µs each, so a 200-message chat body costs tens of
microseconds, a 5 MB data URL the same as a short string. It is an upper bound of what the body alone
keeps alive: an object the body shares with something else (the live request while it runs, another
warm's body) is counted whole, once per reference. The estimator's :class:`~litellm_kvwarm.request_counts.RequestCounts`
is not one: it counts rendered characters (not bytes), keeps no image's data URL length and sees the request,
not the warm body (a head, a reply appended, metadata).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

__all__ = ["body_bytes"]


def body_bytes(body: object) -> int:
    """Bytes ``body`` holds: ``sys.getsizeof`` of every dict, list, tuple and leaf reached from it (keys
    included); a leaf reached twice counted twice (an upper bound), a container once (a cycle ends).
    Iterative: no recursion limit."""
    total, stack, seen = 0, [body], set()
    size = sys.getsizeof
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is str or kind is int or kind is bytes or node is None:  # the leaves of a JSON body, first (the common case)
            total += size(node)
            continue
        if isinstance(node, (dict, list, tuple, Mapping)):
            if id(node) in seen:
                continue
            seen.add(id(node))
            if isinstance(node, (dict, Mapping)):
                stack.extend(node.keys())
                stack.extend(node.values())
            else:
                stack.extend(node)
        total += size(node)
    return total
