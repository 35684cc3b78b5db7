"""litellm-kvwarm: context-window-aware routing, output clamping and prefix-cache warm-ahead
for the LiteLLM proxy.

Add one line to the LiteLLM config::

    litellm_settings:
      callbacks: ["litellm_kvwarm.proxy_handler_instance"]

``proxy_handler_instance`` is created on first access (importing the package stays cheap
and does not import LiteLLM); settings come from ``KVWARM_*`` environment variables and an
invalid one raises :class:`~litellm_kvwarm.config.SettingsError`, which stops the proxy at start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import Settings, SettingsError
    from .hook import KVWarmHandler

__all__ = ["KVWarmHandler", "Settings", "SettingsError", "proxy_handler_instance"]
__version__ = "0.1.0"

_instance: KVWarmHandler | None = None


def __getattr__(name: str) -> Any:
    global _instance
    if name == "proxy_handler_instance":
        if _instance is None:
            from .hook import KVWarmHandler

            _instance = KVWarmHandler()
        return _instance
    if name in ("Settings", "SettingsError"):  # lazy too: `python -m litellm_kvwarm.config` runs it fresh, no warning
        from . import config

        return getattr(config, name)
    if name == "KVWarmHandler":
        from .hook import KVWarmHandler

        return KVWarmHandler
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
