"""Warm-ahead: fire-and-forget ``max_tokens=1`` requests that leave a conversation's prefix in
the escalation target's prefix cache.

* :func:`warm_request` (pure) builds the warm body from the live request: the same messages
  and everything else that shapes the rendered prompt (tools, tool_choice, response_format,
  chat-template arguments), so the escalated request's prompt starts with the warm's prompt
  token for token; ``max_tokens=1``, not streamed, no fallbacks or retries.
* :class:`WarmRunner` owns the background tasks: at most ``max_concurrency`` at once (a warm
  over the bound is skipped, not queued: a late warm is worth little), each under
  ``timeout_s``, every task kept in a set and cancelled and awaited by :meth:`aclose`.
  A failed or timed-out warm is logged and reported to ``on_done``; it never reaches a client.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from enum import Enum
from typing import Any

logger = logging.getLogger("litellm_kvwarm.warm")

DEFAULT_MAX_CONCURRENCY = 4
DEFAULT_TIMEOUT_S = 120.0

#: Request keys that change the prompt the chat template renders (vLLM's chat endpoint).
PROMPT_SHAPING_KEYS = (
    "messages",
    "tools",
    "tool_choice",
    "functions",
    "function_call",
    "response_format",
    "chat_template",
    "chat_template_kwargs",
    "add_generation_prompt",
    "continue_final_message",
    "documents",
    "extra_body",
)


class WarmOutcome(str, Enum):
    """What happened to a warm candidate. Values are metric label values."""

    FIRED = "fired"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    SKIPPED_DISABLED = "skipped_disabled"
    SKIPPED_BELOW_THRESHOLD = "skipped_below_threshold"
    SKIPPED_UNKNOWN_MODEL = "skipped_unknown_model"
    SKIPPED_FORBIDDEN = "skipped_forbidden"
    SKIPPED_COOLDOWN = "skipped_cooldown"
    SKIPPED_NO_SESSION = "skipped_no_session"
    SKIPPED_BUSY = "skipped_busy"


def warm_request(data: Mapping[str, Any], *, target: str, metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The warm body for model group ``target``: prompt-shaping keys of ``data`` copied as they
    are, ``max_tokens=1``, ``stream=False``, no retries or fallbacks, and ``metadata``."""
    body: dict[str, Any] = {key: data[key] for key in PROMPT_SHAPING_KEYS if data.get(key) is not None}
    body.update(
        model=target,
        max_tokens=1,
        stream=False,
        metadata=dict(metadata),
        num_retries=0,
        fallbacks=[],
        context_window_fallbacks=[],
    )
    return body


Sender = Callable[[dict[str, Any]], Awaitable[Any]]
DoneCallback = Callable[[WarmOutcome, float, str], None]


class WarmRunner:
    """Runs warms in owned background tasks.

    Args:
        send: performs one warm (``router.acompletion(**body)`` in the proxy).
        max_concurrency: warms in flight at most; more are skipped (``SKIPPED_BUSY``).
        timeout_s: a warm running longer is cancelled (``TIMED_OUT``).
        on_done: called with ``(outcome, duration_s, target)`` when a warm ends.
        clock: monotonic seconds.
    """

    def __init__(
        self,
        send: Sender,
        *,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        on_done: DoneCallback | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._send = send
        self._max = max_concurrency
        self._timeout_s = timeout_s
        self._on_done = on_done
        self._clock = clock
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def in_flight(self) -> int:
        return len(self._tasks)

    def submit(self, body: dict[str, Any]) -> bool:
        """Start a warm in the background; ``False`` (nothing started) when at the bound."""
        if len(self._tasks) >= self._max:
            return False
        task = asyncio.get_running_loop().create_task(self._run(body), name=f"kvwarm-warm-{body.get('model')}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    async def _run(self, body: dict[str, Any]) -> None:
        target = str(body.get("model"))
        started = self._clock()
        try:
            await asyncio.wait_for(self._send(body), timeout=self._timeout_s)
        except asyncio.TimeoutError:
            outcome = WarmOutcome.TIMED_OUT
            logger.warning("[KV-WARM] warm of %r timed out after %.1fs", target, self._timeout_s)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a failed warm is counted and logged, never surfaced to a client
            outcome = WarmOutcome.FAILED
            logger.warning("[KV-WARM] warm of %r failed: %s", target, type(exc).__name__)
            logger.debug("warm failure detail", exc_info=True)
        else:
            outcome = WarmOutcome.SUCCEEDED
        duration = self._clock() - started
        if outcome is WarmOutcome.SUCCEEDED:
            logger.info("[KV-WARM] warm of %r done in %.2fs", target, duration)
        if self._on_done:
            self._on_done(outcome, duration, target)

    async def drain(self) -> None:
        """Wait for the warms in flight to finish (tests and orderly shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def aclose(self) -> None:
        """Cancel every warm in flight and wait until they are gone."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()
