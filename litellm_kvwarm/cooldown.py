"""Per-session warm cooldown: one store contract, memory / Redis / fallback backends.

Contract (every backend, one test suite): ``await store.acquire(key, cooldown_s)`` returns
``True`` exactly once per ``key`` per ``cooldown_s`` seconds of the store's clock —
atomically, so several proxy workers or replicas sharing a Redis fire exactly one warm —
and ``False`` while the cooldown runs. Keys are built by
:func:`litellm_kvwarm.identity.scoped_key` (tenant-scoped hashes).

* :class:`MemoryCooldownStore`: bounded (default 256 keys, least recently used dropped),
  one process only; the embedded default when no Redis is configured.
* :class:`RedisCooldownStore`: a Lua script (``cooldown_acquire.lua``, shipped with the
  package) compares the stored deadline with the injected clock and sets the new one with
  a ``PX`` expiry, in one atomic step. Errors are raised as :class:`CooldownStoreError`.
* :class:`FallbackCooldownStore`: Redis first; on a Redis error it logs, calls
  ``on_fallback`` and answers from memory, so requests never wait on a broken Redis; it
  tries Redis again after ``retry_after_s``.

Clocks are wall-clock seconds (``time.time``) by default: deadlines are compared across
processes, so they must share an epoch; skew of a few seconds against a 300 s cooldown is
harmless.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from importlib import resources
from typing import Any, Protocol

logger = logging.getLogger("litellm_kvwarm.cooldown")

DEFAULT_MEMORY_CAPACITY = 256
DEFAULT_RETRY_AFTER_S = 30.0
#: Extra lifetime of a Redis key past its deadline, so clock skew between replicas cannot
#: let the key vanish before the deadline it stores (milliseconds).
REDIS_EXPIRY_SLACK_MS = 5_000

Clock = Callable[[], float]


class CooldownStoreError(Exception):
    """A backend could not answer (connection refused, timeout, script error)."""


class CooldownStore(Protocol):
    async def acquire(self, key: str, cooldown_s: float) -> bool:
        """``True`` if no cooldown runs for ``key`` (and start one of ``cooldown_s`` seconds)."""
        ...

    async def aclose(self) -> None: ...


class MemoryCooldownStore:
    """In-process store, at most ``capacity`` keys (least recently used dropped first)."""

    backend = "memory"

    def __init__(self, *, capacity: int = DEFAULT_MEMORY_CAPACITY, clock: Clock = time.time):
        if capacity < 1:
            raise ValueError("capacity must be >= 1")
        self._capacity = capacity
        self._clock = clock
        self._deadlines: OrderedDict[str, float] = OrderedDict()

    def __len__(self) -> int:
        return len(self._deadlines)

    async def acquire(self, key: str, cooldown_s: float) -> bool:
        now = self._clock()
        deadline = self._deadlines.get(key)
        if deadline is not None and deadline > now:
            self._deadlines.move_to_end(key)
            return False
        self._deadlines[key] = now + cooldown_s
        self._deadlines.move_to_end(key)
        while len(self._deadlines) > self._capacity:
            self._deadlines.popitem(last=False)
        return True

    async def aclose(self) -> None:
        self._deadlines.clear()


def _lua_source() -> str:
    return resources.files(__package__).joinpath("cooldown_acquire.lua").read_text(encoding="utf-8")


class RedisCooldownStore:
    """Redis-backed store. ``client`` is a ``redis.asyncio.Redis``; keys get ``prefix``."""

    backend = "redis"

    def __init__(self, client: Any, *, prefix: str = "kvwarm", clock: Clock = time.time):
        self._client = client
        self._prefix = prefix
        self._clock = clock
        self._script = client.register_script(_lua_source())

    async def acquire(self, key: str, cooldown_s: float) -> bool:
        now = self._clock()
        deadline = now + cooldown_s
        ttl_ms = int(cooldown_s * 1000) + REDIS_EXPIRY_SLACK_MS
        try:
            result = await self._script(keys=[f"{self._prefix}:{key}"], args=[repr(now), repr(deadline), ttl_ms])
        except Exception as exc:  # redis-py raises many types (ConnectionError, TimeoutError, ResponseError, OSError)
            raise CooldownStoreError(f"redis cooldown store: {exc!r}") from exc
        return int(result) == 1

    async def aclose(self) -> None:
        try:
            await self._client.aclose()
        except Exception:  # closing a broken connection must not raise at shutdown
            logger.debug("closing redis client failed", exc_info=True)


class FallbackCooldownStore:
    """``primary`` (Redis) with a bounded in-memory ``fallback``; never raises."""

    def __init__(
        self,
        primary: CooldownStore,
        fallback: MemoryCooldownStore,
        *,
        retry_after_s: float = DEFAULT_RETRY_AFTER_S,
        clock: Clock = time.monotonic,
        on_fallback: Callable[[str], None] | None = None,
    ):
        self._primary = primary
        self._fallback = fallback
        self._retry_after_s = retry_after_s
        self._clock = clock
        self._on_fallback = on_fallback
        self._primary_down_until: float | None = None

    @property
    def backend(self) -> str:
        """``"redis"`` while the primary answers, ``"memory"`` while falling back."""
        return "memory" if self._primary_down_until is not None else getattr(self._primary, "backend", "primary")

    async def acquire(self, key: str, cooldown_s: float) -> bool:
        now = self._clock()
        if self._primary_down_until is None or now >= self._primary_down_until:
            try:
                acquired = await self._primary.acquire(key, cooldown_s)
            except CooldownStoreError as exc:
                if self._primary_down_until is None:
                    logger.warning("[KV-WARM] cooldown store unavailable, using memory for %.0fs: %s", self._retry_after_s, exc)
                self._primary_down_until = now + self._retry_after_s
                if self._on_fallback:
                    self._on_fallback(type(exc.__cause__ or exc).__name__)
            else:
                if self._primary_down_until is not None:
                    logger.info("[KV-WARM] cooldown store is back")
                self._primary_down_until = None
                return acquired
        return await self._fallback.acquire(key, cooldown_s)

    async def aclose(self) -> None:
        await self._primary.aclose()
        await self._fallback.aclose()
