"""Errors inside a streamed response, as the proxy hands the stream to the client (async, no I/O).

A server that accepted a stream (HTTP 200) may still refuse it in-band: SGLang's ``{"error": {...}}``
event, TGI's ``{"error": "...", "error_type": ...}``, llama.cpp's chunk without ``choices``, LM
Studio's ``event: error``. LiteLLM raises on such a frame; before any generated content its
mid-stream fallback (the Router's ``stream_with_fallbacks``) moves the request on like any other
failure, and the plugin's hooks see it there (backstop hop, learned limits). After content has gone
out nothing can be retried: :func:`pass_through` lets the error through unchanged and counts it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterable
from typing import Any

from .decode_warm import DecodeTap
from .metrics import Metrics
from .usage import stream_item_has_content

__all__ = ["pass_through"]

logger = logging.getLogger("litellm_kvwarm")


async def pass_through(response: AsyncIterable[Any], request_data: object, metrics: Metrics,
                       tap: DecodeTap | None = None) -> AsyncGenerator[Any, None]:
    """Yield every item of ``response`` unchanged; an exception raised by it is counted in
    ``kvwarm_stream_errors_total{model_group, after_content}`` (content: text, reasoning or a tool
    call already yielded; see :func:`~litellm_kvwarm.usage.stream_item_has_content`) and re-raised as is.
    ``tap``: each item is fed to it after it was yielded (decode warms; it never raises); told when the
    client leaves before the end (the generator closed or cancelled), so no reply it never got is warmed."""
    sent = False
    try:
        async for item in response:
            if not sent:
                sent = _has_content(item)
            yield item
            if tap is not None:
                await tap.feed(item)
    except (GeneratorExit, asyncio.CancelledError):
        if tap is not None:
            tap.abandon()
        raise
    except Exception:
        try:
            group = request_data.get("model") if isinstance(request_data, dict) else None
            metrics.stream_errors.labels(group if isinstance(group, str) else "", "true" if sent else "false").inc()
            if sent:
                logger.info("[CONTEXT-ROUTE] error frame after content on %r: passed through, not retried", group)
        except Exception:
            logger.debug("stream error not counted", exc_info=True)
        raise


def _has_content(item: Any) -> bool:
    """:func:`~litellm_kvwarm.usage.stream_item_has_content`, never raising: an item it cannot read (a chunk of
    an odd shape, an event object whose attributes raise) counts as content (sent as it is, like bytes or an
    event of another API), and the client's stream goes on exactly as LiteLLM hands it over."""
    try:
        return stream_item_has_content(item)
    except Exception:
        return True
