"""What the handler does once when the proxy loads it: its own log handler, one line naming the
plugin and its effective settings (secrets redacted), the imports its HTTP client would otherwise make
on a request, and the key of its tenant/session hashes."""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable, Mapping

from . import identity
from .config import Settings
from .config_render import describe

logger = logging.getLogger("litellm_kvwarm")

#: Modules the plugin's HTTP client imports on its first request: httpcore asks anyio for its event-loop backend,
#: and anyio imports ``anyio._backends._asyncio`` then. On a cold proxy that import held the event loop 0.4–0.6 s
#: inside the first request's exact count (2026-12-06, 2-core machine, httpx 0.28 / anyio 4), past the 300 ms
#: request budget: the plugin failed open and the first overflowing request went to the fast group to be refused.
FIRST_USE_IMPORTS = ("anyio._backends._asyncio",)


def on_load(settings: Settings, version: str) -> None:
    """Once, when the proxy loads the handler: :func:`configure_logging`, the :func:`settings_line`, and
    :data:`FIRST_USE_IMPORTS` (a module that cannot be imported is left to its first use)."""
    configure_logging(settings.log_level)
    logger.info(settings_line(settings, version))
    for name in FIRST_USE_IMPORTS:
        try:
            importlib.import_module(name)
        except ImportError:  # another anyio layout: imported on first use, as before
            logger.debug("[KV-WARM] %s not preloaded", name)


def configure_logging(level: str) -> None:
    """Give the plugin's logger its own stderr handler (LiteLLM configures only its own loggers),
    unless the operator already attached one."""
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s - litellm_kvwarm:%(levelname)s - %(message)s"))
        logger.addHandler(handler)
        logger.propagate = False
    logger.setLevel(level)


def settings_line(settings: Settings, version: str) -> str:
    """``[KV-WARM] litellm-kvwarm <version> loaded: name=value ...`` over every setting, as
    :func:`litellm_kvwarm.config_render.describe` writes them (secrets and URL passwords redacted)."""
    return f"[KV-WARM] litellm-kvwarm {version} loaded: " + describe(settings).removeprefix("litellm-kvwarm settings: ")


def hash_secret(settings: Settings, master_key: Callable[[], str | None], environ: Mapping[str, str] = os.environ) -> bytes:
    """Key of the tenant and session hashes kept in shared state: :func:`identity.resolve_hash_secret`
    over the environment, with the proxy's configured ``general_settings.master_key`` standing in
    for ``LITELLM_MASTER_KEY`` when the variable is not set. Warns when it falls back to a random
    key of this process, and logs an error when tenant cache isolation is on without a master key (no virtual
    keys, so no request names a tenant and every one is refused with HTTP 403)."""
    if not environ.get("LITELLM_MASTER_KEY"):
        master = master_key()
        if master:
            environ = {**environ, "LITELLM_MASTER_KEY": master}
        elif settings.cache_salt_secret:
            logger.error("[KV-WARM] KVWARM_CACHE_SALT_SECRET is set but the proxy has no master key (LITELLM_MASTER_KEY or "
                         "general_settings.master_key): without virtual keys no request names a tenant, and tenant cache "
                         "isolation refuses every request (HTTP 403). Set a master key, or unset KVWARM_CACHE_SALT_SECRET")
    secret, source = identity.resolve_hash_secret(settings.hash_secret, settings.cache_salt_secret, environ)
    if source == "random":
        logger.warning("[KV-WARM] no KVWARM_HASH_SECRET, KVWARM_CACHE_SALT_SECRET, LITELLM_SALT_KEY or master key: "
                       "tenant and session hashes use a random key of this process (replicas do not share cooldowns)")
    return secret
