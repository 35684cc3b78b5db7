"""What the handler does once when the proxy loads it: its own log handler, one line naming the
plugin and its effective settings (secrets redacted), and the key of its tenant/session hashes."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from urllib.parse import urlsplit, urlunsplit

from . import identity
from .config import Settings

logger = logging.getLogger("litellm_kvwarm")

#: Settings whose value is a secret: the start line says only whether they are set.
SECRET_WORDS = ("secret", "password", "token_key", "api_key")
REDACTED = "***"


def configure_logging(level: str) -> None:
    """Give the plugin's logger its own stderr handler (LiteLLM configures only its own loggers),
    unless the operator already attached one."""
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s - litellm_kvwarm:%(levelname)s - %(message)s"))
        logger.addHandler(handler)
        logger.propagate = False
    logger.setLevel(level)


def redact_url(url: str) -> str:
    """``url`` with the password of its user-info replaced by ``***`` (``redis://:pw@h`` → ``redis://:***@h``)."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        user = parts.username or ""
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port is not None else ""
        return urlunsplit((parts.scheme, f"{user}:{REDACTED}@{host}{port}", parts.path, parts.query, parts.fragment))
    except ValueError:  # not a URL we can read: say nothing of it
        return REDACTED


def _shown(name: str, value: object) -> object:
    if any(word in name for word in SECRET_WORDS):
        return REDACTED if value else "unset"
    if isinstance(value, str) and "://" in value:
        return redact_url(value)
    return value


def settings_line(settings: Settings, version: str) -> str:
    """``[KV-WARM] litellm-kvwarm <version> loaded: name=value ...`` over every setting, secrets
    (``*secret*``, passwords in URLs) redacted."""
    values = settings.model_dump()
    shown = " ".join(f"{name}={_shown(name, value)}" for name, value in values.items())
    return f"[KV-WARM] litellm-kvwarm {version} loaded: {shown}"


def hash_secret(settings: Settings, master_key: Callable[[], str | None], environ: Mapping[str, str] = os.environ) -> bytes:
    """Key of the tenant and session hashes kept in shared state: :func:`identity.resolve_hash_secret`
    over the environment, with the proxy's configured ``general_settings.master_key`` standing in
    for ``LITELLM_MASTER_KEY`` when the variable is not set. Warns when it falls back to a random
    key of this process."""
    if not environ.get("LITELLM_MASTER_KEY"):
        master = master_key()
        if master:
            environ = {**environ, "LITELLM_MASTER_KEY": master}
    secret, source = identity.resolve_hash_secret(settings.hash_secret, settings.cache_salt_secret, environ)
    if source == "random":
        logger.warning("[KV-WARM] no KVWARM_HASH_SECRET, KVWARM_CACHE_SALT_SECRET, LITELLM_SALT_KEY or master key: "
                       "tenant and session hashes use a random key of this process (replicas do not share cooldowns)")
    return secret
