"""Tenant prefix-cache isolation on each backend attempt: which attempts carry the tenant's ``cache_salt``
(vLLM ≥ 0.9 and SGLang read it; CVE-2025-46570), and a warning, once per deployment, where isolation is on
but the deployment's provider cannot take the field, so its tenants share that server's prefix cache.

A vLLM server reached as ``openai/...``, ``openai_like/...`` or ``custom_openai/...`` is such a deployment:
LiteLLM cannot tell it from OpenAI's own API, which refuses unknown fields, so it gets no salt. Configure it as
``hosted_vllm/...`` (LiteLLM's vLLM provider) to isolate its tenants.
"""

from __future__ import annotations

import logging
from typing import Any

from .identity import set_cache_salt

__all__ = ["SALTED_KINDS", "SALTED_PROVIDERS", "CacheSalter"]

logger = logging.getLogger("litellm_kvwarm")

#: LiteLLM providers whose servers accept vLLM's ``cache_salt`` (vLLM ≥ 0.9, SGLang): only
#: requests to these get it; OpenAI, Anthropic and other strict APIs reject unknown fields.
SALTED_PROVIDERS = frozenset({"hosted_vllm", "vllm", "sglang"})
#: Call kinds whose attempts carry ``cache_salt`` (vLLM's chat, completion and Responses requests
#: read it). An Anthropic Messages attempt gets it on its bridged chat attempt.
SALTED_KINDS = frozenset({"chat", "completion", "responses"})
#: Deployments warned about per process, at most (a model list is bounded; so is this memory).
MAX_WARNED = 256


class CacheSalter:
    """Puts a tenant's salt on the attempts that can carry it; warns once per (provider, model) about those that cannot."""

    def __init__(self) -> None:
        self._warned: set[tuple[str, str]] = set()

    def apply(self, kwargs: dict[str, Any], salt: str, kind: str, provider: str | None, model: object) -> bool:
        """Set ``salt`` on the attempt ``kwargs`` (:func:`~litellm_kvwarm.identity.set_cache_salt`) when ``kind``
        is one of :data:`SALTED_KINDS` and ``provider`` one of :data:`SALTED_PROVIDERS`; returns whether it was set.
        A chat, completion or Responses attempt to any other provider is logged once per (provider, model):
        tenant isolation is on, yet that deployment's tenants share its prefix cache. Never raises."""
        if kind not in SALTED_KINDS:
            return False
        if provider in SALTED_PROVIDERS:
            return set_cache_salt(kwargs, salt)
        key = (str(provider), str(model))
        if key not in self._warned and len(self._warned) < MAX_WARNED:
            self._warned.add(key)
            logger.warning("[CONTEXT-ROUTE] tenant cache isolation: %r (provider %s) gets no cache_salt, only %s take it: "
                           "its tenants share its prefix cache (a vLLM server: configure it as hosted_vllm/...)",
                           model, provider, "/".join(sorted(SALTED_PROVIDERS)))
        return False

    @property
    def warned(self) -> frozenset[tuple[str, str]]:
        """The (provider, model) pairs warned about so far."""
        return frozenset(self._warned)
