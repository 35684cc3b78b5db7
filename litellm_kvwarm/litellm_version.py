"""The installed LiteLLM's version, read from its package metadata, without importing LiteLLM (pure
modules use it to follow a translation that changed between the LiteLLM versions this package supports).

:func:`installed` is ``None`` where LiteLLM is not installed or its version cannot be read;
:func:`at_least` is then true: the newest behaviour is assumed.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import metadata

__all__ = ["at_least", "installed"]


@lru_cache(maxsize=1)
def installed() -> tuple[int, ...] | None:
    """The leading numeric parts of LiteLLM's version (``"1.109.3"`` -> ``(1, 109, 3)``), or ``None``."""
    try:
        version = metadata.version("litellm")
    except Exception:  # not installed, or broken metadata: no version to follow
        return None
    parts: list[int] = []
    for part in version.split("."):
        digits = part[: len(part) - len(part.lstrip("0123456789"))]
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts) or None


def at_least(version: tuple[int, ...]) -> bool:
    """Whether the installed LiteLLM is ``version`` or newer (true when unknown: see the module docstring)."""
    found = installed()
    return found is None or found >= version
