"""Exact prompt-token counts from the backend's own ``POST /tokenize`` (vLLM).

vLLM serves ``/tokenize`` at the server root (not under ``/v1``). With ``messages`` (and
``tools``) it applies the model's chat template and answers
``{"count": N, "max_model_len": W, "tokens": [...]}`` (vLLM ≥ 0.5). The count is the
prompt the server will see, so a clamp on it cannot overflow and does not over-cut.

Used only when the safe estimate would cut the requested output: a count costs one
round trip and a template render on the backend. A backend that answers 404/405 is
remembered as not offering ``/tokenize`` and not asked again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

import httpx

logger = logging.getLogger("litellm_kvwarm.exact")

#: Request-body keys that change the rendered prompt and are forwarded to /tokenize.
TOKENIZE_KEYS = ("messages", "tools", "chat_template", "chat_template_kwargs", "add_generation_prompt")


def tokenize_url(api_base: str) -> str:
    """``http://h:p/v1`` → ``http://h:p/tokenize`` (vLLM serves it at the root)."""
    base = api_base.rstrip("/")
    if base.endswith("/v1"):
        base = base[: -len("/v1")]
    return base + "/tokenize"


class ExactCounter:
    """Counts prompt tokens with a backend's ``/tokenize``, within a time budget.

    Args:
        client: shared ``httpx.AsyncClient``.
        budget_s: longest a request waits for the count (seconds); past it, ``None``.
    """

    def __init__(self, client: httpx.AsyncClient, *, budget_s: float):
        self._client = client
        self._budget_s = budget_s
        self._unsupported: set[str] = set()

    async def count(self, api_base: str, served_model: str, payload: Mapping[str, object]) -> int | None:
        """Exact prompt tokens of a chat ``payload`` on that backend, or ``None`` (unsupported,
        not a chat request, error, or over budget). Never raises."""
        url = tokenize_url(api_base)
        if url in self._unsupported or not isinstance(payload.get("messages"), list) or self._budget_s <= 0:
            return None
        body: dict[str, object] = {"model": served_model}
        body.update({key: payload[key] for key in TOKENIZE_KEYS if payload.get(key) is not None})
        body.setdefault("add_generation_prompt", True)
        try:
            response = await asyncio.wait_for(self._client.post(url, json=body), timeout=self._budget_s)
        except (asyncio.TimeoutError, httpx.HTTPError) as exc:
            logger.debug("exact count via %s failed: %r", url, exc)
            return None
        if response.status_code in (404, 405):
            self._unsupported.add(url)
            return None
        try:
            count = response.json().get("count") if response.status_code == 200 else None
        except ValueError:
            count = None
        return count if isinstance(count, int) and not isinstance(count, bool) and count >= 0 else None
