"""Warm admission state shared by every proxy process: per-session cooldowns and per-tenant
warm rates. One store contract, memory / Redis / fallback backends.

Contract (every backend, one test suite):

* ``await store.admit(cooldown_key, cooldown_s, rate_key, rate_limit, rate_window_s)`` →
  :class:`Admission`. ``COOLDOWN`` while a cooldown started less than ``cooldown_s`` seconds
  ago runs for ``cooldown_key``; else ``RATE`` when ``rate_limit`` > 0 and ``rate_key`` already
  took ``rate_limit`` admissions in the last ``rate_window_s`` seconds (a sliding window);
  else ``ADMITTED``, and only then are both taken: the cooldown starts and the admission is
  counted in the tenant's window. Atomic: several proxy workers or replicas sharing a Redis
  admit a session exactly once per cooldown and a tenant at most ``rate_limit`` times per
  window. A refused admission takes nothing.
* ``await store.acquire(key, cooldown_s)`` → ``True`` exactly when ``admit(key, cooldown_s)``
  (no rate) is ``ADMITTED``.

Keys are built by :func:`litellm_kvwarm.identity.scoped_key` (tenant-scoped hashes).
* :class:`MemoryCooldownStore`: bounded (default 256 cooldown keys, fair between tenants, and 256 tenant
  windows of at most ``rate_limit`` timestamps; least recently used dropped), one process only; the embedded
  default when no Redis is configured. Clock injected (wall-clock seconds, ``time.time``, by default).
* :class:`RedisCooldownStore`: every time is Redis's own, so replicas' clocks never meet.
  A cooldown is one key, taken with Redis's native atomic ``SET key <deadline> NX PX <cooldown_ms>``:
  the key exists exactly while the cooldown runs (its expiry is the deadline, on Redis's
  clock; the value, the deadline in epoch seconds, is read only by replicas of the release
  before, which compared it with their clock, so a rolling upgrade keeps one warm per cooldown). Without a tenant rate that one command is the whole admission. With a tenant rate
  (``KVWARM_WARM_TENANT_RATE``) a Lua script (``cooldown_admit.lua``, shipped with the
  package) is still needed: the cooldown and the tenant's window must be taken both or
  neither, and whether the window has room is a read (trim the sorted set of admission times
  to the window, count it) that must gate two writes (the ``SET ... NX PX`` and the ``ZADD``).
  A ``MULTI``/``EXEC`` block cannot make a write depend on a read inside it, and
  ``WATCH``-and-retry would cost round trips and retries under exactly the contention the
  rate is for; a script runs the reads and both writes as one atomic step. The script reads
  the time with Redis's ``TIME`` (not the caller's clock) for the window. Errors are raised as
  :class:`CooldownStoreError`. Both keys of one admission are used by one script: on Redis
  Cluster they would need one hash slot.
* :class:`FallbackCooldownStore`: Redis first; on a Redis error it logs, calls
  ``on_fallback`` and answers from memory, so warms never wait on a broken Redis; it tries
  Redis again after ``retry_after_s``.
"""

from __future__ import annotations

import logging
import math
import secrets
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from importlib import resources
from typing import Any, Protocol

from cachetools import FIFOCache

from .fair_lru import FairLRU
from .identity import key_tenant

logger = logging.getLogger("litellm_kvwarm.cooldown")

DEFAULT_MEMORY_CAPACITY = 256
DEFAULT_RETRY_AFTER_S = 30.0
#: The tenant warm rate setting is per minute.
RATE_PERIOD_S = 60.0

Clock = Callable[[], float]


class Admission(str, Enum):
    """Answer of :meth:`CooldownStore.admit`."""

    ADMITTED = "admitted"
    COOLDOWN = "cooldown"
    RATE = "rate"


@dataclass(frozen=True)
class TenantRate:
    """At most ``limit`` admissions in any ``window_s`` seconds."""

    limit: int
    window_s: float

    @classmethod
    def per_minute(cls, rate: float) -> TenantRate | None:
        """The window for ``rate`` warms per minute (``None`` for 0 = no cap). Fractional rates
        keep their long-run value: 0.5/min → 1 per 120 s, 1.5/min → 1 per 40 s, 120/min → 120 per 60 s.

        Raises:
            ValueError: ``rate`` is negative or not finite.
        """
        if not math.isfinite(rate) or rate < 0:
            raise ValueError(f"tenant warm rate must be a finite number >= 0, got {rate!r}")
        if rate == 0:
            return None
        limit = max(1, math.floor(rate))
        return cls(limit=limit, window_s=RATE_PERIOD_S * limit / rate)


class CooldownStoreError(Exception):
    """A backend could not answer (connection refused, timeout, script error)."""


class CooldownStore(Protocol):
    async def admit(
        self,
        cooldown_key: str,
        cooldown_s: float,
        rate_key: str | None = None,
        rate_limit: int = 0,
        rate_window_s: float = RATE_PERIOD_S,
    ) -> Admission:
        """See the module docstring. Raises :class:`CooldownStoreError` (Redis backend only)."""
        ...

    async def acquire(self, key: str, cooldown_s: float) -> bool:
        """``True`` if no cooldown runs for ``key`` (and start one of ``cooldown_s`` seconds)."""
        ...

    async def aclose(self) -> None: ...


def _rate_applies(rate_key: str | None, rate_limit: int) -> bool:
    return rate_key is not None and rate_limit > 0


class MemoryCooldownStore:
    """In-process store: at most ``capacity`` cooldown keys and ``rate_capacity`` tenant windows
    (default: ``capacity``), least recently used dropped first; a cooldown key: the oldest of the tenant holding
    the most (:class:`~litellm_kvwarm.fair_lru.FairLRU`). A use is a write (a read never reorders): a cooldown taken
    or found running, a tenant window checked.

    Raises:
        ValueError: a capacity below 1.
    """

    backend = "memory"

    def __init__(self, *, capacity: int = DEFAULT_MEMORY_CAPACITY, rate_capacity: int | None = None, clock: Clock = time.time):
        if capacity < 1 or (rate_capacity is not None and rate_capacity < 1):
            raise ValueError("capacity and rate_capacity must be >= 1")
        self._clock = clock
        self._deadlines: FairLRU[str, float] = FairLRU(capacity, key_tenant)
        self._windows: FIFOCache[str, deque[float]] = FIFOCache(maxsize=rate_capacity if rate_capacity is not None else capacity)

    def __len__(self) -> int:
        return len(self._deadlines)

    async def admit(
        self,
        cooldown_key: str,
        cooldown_s: float,
        rate_key: str | None = None,
        rate_limit: int = 0,
        rate_window_s: float = RATE_PERIOD_S,
    ) -> Admission:
        now = self._clock()
        deadline = self._deadlines.get(cooldown_key)
        if deadline is not None and deadline > now:
            self._deadlines[cooldown_key] = deadline  # found running: a use
            return Admission.COOLDOWN
        if _rate_applies(rate_key, rate_limit):
            assert rate_key is not None
            window = self._windows.get(rate_key)
            if window is None:
                window = deque()
            while window and window[0] <= now - rate_window_s:
                window.popleft()
            full = len(window) >= rate_limit
            if not full:
                window.append(now)
            self._windows[rate_key] = window
            if full:
                return Admission.RATE
        self._deadlines[cooldown_key] = now + cooldown_s
        return Admission.ADMITTED

    async def acquire(self, key: str, cooldown_s: float) -> bool:
        return await self.admit(key, cooldown_s) is Admission.ADMITTED

    async def aclose(self) -> None:
        self._deadlines.clear()
        self._windows.clear()


def _lua_source() -> str:
    return resources.files(__package__).joinpath("cooldown_admit.lua").read_text(encoding="utf-8")


_SCRIPT_RESULTS = {1: Admission.ADMITTED, 0: Admission.COOLDOWN, 2: Admission.RATE}


def _ms(seconds: float) -> int:
    """``seconds`` as whole milliseconds, rounded up (a cooldown lasts at least what was asked), at least 1."""
    return max(1, math.ceil(seconds * 1000))


class RedisCooldownStore:
    """Redis-backed store. ``client`` is a ``redis.asyncio.Redis``; keys get ``prefix``. Reads no
    clock of its own: a cooldown ends when its key expires on Redis's clock, and the tenant
    window is read with Redis's ``TIME`` (see the module docstring)."""

    backend = "redis"

    def __init__(self, client: Any, *, prefix: str = "kvwarm"):
        self._client = client
        self._prefix = prefix
        self._script = client.register_script(_lua_source())

    async def admit(
        self,
        cooldown_key: str,
        cooldown_s: float,
        rate_key: str | None = None,
        rate_limit: int = 0,
        rate_window_s: float = RATE_PERIOD_S,
    ) -> Admission:
        key = f"{self._prefix}:{cooldown_key}"
        try:
            if not _rate_applies(rate_key, rate_limit):
                # the value (deadline, epoch s) is read only by replicas of an earlier release (rolling upgrade)
                taken = await self._client.set(key, f"{time.time() + cooldown_s:.3f}", nx=True, px=_ms(cooldown_s))
                return Admission.ADMITTED if taken else Admission.COOLDOWN
            result = await self._script(
                keys=[key, f"{self._prefix}:{rate_key}"],
                args=[_ms(cooldown_s), rate_limit, repr(float(rate_window_s)), _ms(rate_window_s), secrets.token_hex(8)],
            )
        except Exception as exc:  # redis-py raises many types (ConnectionError, TimeoutError, ResponseError, OSError)
            raise CooldownStoreError(f"redis cooldown store: {exc!r}") from exc
        try:
            return _SCRIPT_RESULTS[int(result)]
        except (KeyError, TypeError, ValueError):
            raise CooldownStoreError(f"redis cooldown store: unexpected script result {result!r}") from None

    async def acquire(self, key: str, cooldown_s: float) -> bool:
        return await self.admit(key, cooldown_s) is Admission.ADMITTED

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

    async def admit(
        self,
        cooldown_key: str,
        cooldown_s: float,
        rate_key: str | None = None,
        rate_limit: int = 0,
        rate_window_s: float = RATE_PERIOD_S,
    ) -> Admission:
        args = (cooldown_key, cooldown_s, rate_key, rate_limit, rate_window_s)
        now = self._clock()
        if self._primary_down_until is None or now >= self._primary_down_until:
            try:
                admission = await self._primary.admit(*args)
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
                return admission
        return await self._fallback.admit(*args)

    async def acquire(self, key: str, cooldown_s: float) -> bool:
        return await self.admit(key, cooldown_s) is Admission.ADMITTED

    async def aclose(self) -> None:
        await self._primary.aclose()
        await self._fallback.aclose()
