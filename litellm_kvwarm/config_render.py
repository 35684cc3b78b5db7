"""The settings as text: the README's table, and the one line the plugin logs at start (pure).

:func:`settings_table` renders every setting's variable, default and meaning from the
fields of :class:`~litellm_kvwarm.config.Settings` (``python -m litellm_kvwarm.config`` prints
it; ``tests/test_readme.py`` checks the README carries it). :func:`describe` renders the
effective values of one :class:`~litellm_kvwarm.config.Settings` on one line with every secret
redacted, so an operator can see the plugin loaded and with what.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .config_env import env_name

if TYPE_CHECKING:
    from .config import Settings

__all__ = ["REDACTED", "describe", "redact_url", "settings_table"]

#: What :func:`describe` prints instead of a secret.
REDACTED = "***"
#: Settings printed as :data:`REDACTED` when set (any field named ``*_secret`` is one too).
SECRET_FIELDS = frozenset({"hash_secret", "cache_salt_secret"})
#: Settings that are URLs which may carry a password (``redis://user:password@host``).
URL_FIELDS = frozenset({"redis_url"})
_SECRET_QUERY_KEYS = frozenset({"password", "pass", "pwd", "secret", "token"})


def settings_table() -> str:
    """The README's settings table (Markdown): variable, default, meaning."""
    from .config import Settings  # here, not at import: config imports this module

    rows = ["| environment variable | default | meaning |", "| --- | --- | --- |"]
    for name, field in Settings.model_fields.items():
        default = field.default_factory() if field.default_factory is not None else field.default
        if default == "":
            default = "(unset)"
        if isinstance(default, dict):
            default = ",".join(f"{k}={v}" for k, v in default.items()) or "(from context_window_fallbacks)"
        rows.append(f"| `{env_name(name)}` | `{default}` | {field.description} |")
    return "\n".join(rows)


def describe(settings: Settings) -> str:
    """One line of ``settings``' effective values, e.g.
    ``litellm-kvwarm settings: proactive_routing=True ... redis_url=redis://:***@cache:6379/0
    hash_secret=*** cache_salt_secret=(unset) ...``.

    Every field, in declaration order, as ``name=value``. Secrets (``hash_secret``,
    ``cache_salt_secret``, any ``*_secret``) print :data:`REDACTED` when set; a password in
    ``redis_url`` (user info or a ``password=`` query parameter) is replaced by :data:`REDACTED`;
    an empty string prints ``(unset)``; ``escalation_targets`` prints ``a=b,c=d``. Never raises
    on any string.
    """
    parts = []
    for name in type(settings).model_fields:
        value = getattr(settings, name)
        if value == "":
            text = "(unset)"
        elif name in SECRET_FIELDS or name.endswith("_secret"):
            text = REDACTED
        elif name in URL_FIELDS:
            text = redact_url(str(value))
        elif isinstance(value, dict):
            text = ",".join(f"{k}={v}" for k, v in value.items()) or "(from context_window_fallbacks)"
        else:
            text = str(value)
        parts.append(f"{name}={text}")
    return "litellm-kvwarm settings: " + " ".join(parts)


def redact_url(url: str) -> str:
    """``url`` with its password replaced by :data:`REDACTED`: ``redis://user:pw@host`` ->
    ``redis://user:***@host``; user info without a colon (``redis://pw@host``, which some clients
    read as a password) is redacted whole; ``password``/``token``-like query values too.
    Everything else is kept character for character (string surgery, no re-encoding)."""
    base, hashmark, fragment = url.partition("#")
    base, qmark, query = base.partition("?")
    authority = base.find("//")
    start = authority + 2 if authority != -1 else 0  # no "//": a bare "user:pw@host:port"
    end = base.find("/", start)
    end = len(base) if end == -1 else end
    userinfo, at, hostport = base[start:end].rpartition("@")
    if at:
        user, colon, _password = userinfo.partition(":")
        netloc = f"{user}:{REDACTED}@{hostport}" if colon else f"{REDACTED}@{hostport}"
        base = base[:start] + netloc + base[end:]
    if query:
        pairs = []
        for pair in query.split("&"):
            key, eq, _value = pair.partition("=")
            pairs.append(f"{key}={REDACTED}" if eq and key.lower() in _SECRET_QUERY_KEYS else pair)
        query = "&".join(pairs)
    return base + qmark + query + hashmark + fragment
