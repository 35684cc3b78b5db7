"""The emulator's request log: one JSON object per request received, errors included.

Contract: :meth:`RequestLog.append` keeps the entry in memory (served by the emulator-only
``GET /emulator/requests``) and, when a path is configured, appends it as one JSON line to
that file. Entries never hold prompt text or a raw ``cache_salt``: the salt is stored as
:func:`salt_fingerprint`. Keys of an entry (see :func:`make_entry`):

``ts`` (unix seconds), ``endpoint``, ``model``, ``prompt_tokens``, ``max_tokens`` (as
received, ``null`` if absent), ``cached_tokens``, ``completion_tokens``, ``status`` (HTTP),
``error`` (message or ``null``), ``stream``, ``cache_salt`` (fingerprint or ``null``),
``ttft_s`` (seconds from arrival to first token, ``null`` if none), ``fault`` (the injected
fault the request met, e.g. ``"status:429"``, ``"hang"``, ``"delay:2s"``; ``null`` if none),
``priority`` (the request's scheduling ``priority`` as received, 0 when absent),
``queue_wait_s`` (seconds its prefill waited for the GPU, all chunks; ``null`` if not prefilled).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["RequestLog", "make_entry", "salt_fingerprint"]

#: Hex characters of sha256 kept as a salt's fingerprint.
SALT_FINGERPRINT_CHARS = 16


def salt_fingerprint(salt: object) -> str | None:
    """First 16 hex chars of sha256(salt), or ``None`` without a salt; never the salt itself."""
    if salt is None:
        return None
    return hashlib.sha256(str(salt).encode("utf-8")).hexdigest()[:SALT_FINGERPRINT_CHARS]


def make_entry(
    *,
    endpoint: str,
    model: object = None,
    prompt_tokens: int | None = None,
    max_tokens: object = None,
    cached_tokens: int | None = None,
    completion_tokens: int | None = None,
    status: int = 200,
    error: str | None = None,
    stream: bool = False,
    cache_salt: object = None,
    ttft_s: float | None = None,
    fault: str | None = None,
    priority: object = 0,
    queue_wait_s: float | None = None,
    ts: float | None = None,
) -> dict[str, Any]:
    """One log entry with every documented key present."""
    return {
        "ts": time.time() if ts is None else ts,
        "endpoint": endpoint,
        "model": model,
        "prompt_tokens": prompt_tokens,
        "max_tokens": max_tokens,
        "cached_tokens": cached_tokens,
        "completion_tokens": completion_tokens,
        "status": status,
        "error": error,
        "stream": stream,
        "cache_salt": salt_fingerprint(cache_salt),
        "ttft_s": ttft_s,
        "fault": fault,
        "priority": priority,
        "queue_wait_s": queue_wait_s,
    }


class RequestLog:
    """In-memory list of entries, mirrored to a JSONL file when ``path`` is given."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path else None
        self._entries: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def append(self, entry: dict[str, Any]) -> None:
        line = json.dumps(entry, separators=(",", ":"))
        with self._lock:
            self._entries.append(entry)
            if self.path is not None:
                # One short append per request; cheaper than handing it to a thread.
                with self.path.open("a", encoding="utf-8") as handle:
                    handle.write(line + "\n")

    def entries(self) -> list[dict[str, Any]]:
        """A copy of the entries, oldest first."""
        with self._lock:
            return list(self._entries)

    def clear(self) -> None:
        """Forget the in-memory entries (the JSONL file is left as written)."""
        with self._lock:
            self._entries.clear()
