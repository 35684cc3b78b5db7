"""Warms at low priority: vLLM schedules by the request field ``priority`` when the server runs with
``--scheduling-policy priority`` (a lower value first; live requests carry the default 0), so a
warm's prefill waits behind live traffic instead of delaying it. A server without that policy
refuses any non-default priority with HTTP 400, "Got priority 10 but Priority scheduling is not
enabled." (vLLM 0.6.3 to 0.32, ``Processor``/``InputProcessor`` of the V1 engine), and a server that
knows no ``priority`` field refuses it as an unknown argument (OpenAI-compatible servers that reject
unknown fields: "Unrecognized request argument supplied: priority"); that deployment's
warms are then sent without the field, learned from the first refusal (the refused warm is resent
at once without it) and forgotten after ``ttl_s`` (a restarted server may have the policy).

Only warms ever carry the field (:func:`with_priority`, in ``extra_body``: LiteLLM's Router reads a
top-level ``priority`` as its own scheduler's). A refusal is recognised only in the error of the
plugin's own warm, and only when no field the warm sends holds that text (a server that quotes the
request back cannot teach it: the warm copies client-chosen fields beyond the prompt, and one tenant's
text must not turn priority off for every tenant's warms on that deployment). Clock injected; the store is in-process and bounded.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from .deep_json import strings
from .meta import WARM_MARKER
from .metrics import deployment_label

__all__ = ["PRIORITY_FIELD", "WarmPriority", "deployment_of", "is_priority_refusal", "model_id", "strip_priority",
           "with_priority", "without_priority"]

logger = logging.getLogger("litellm_kvwarm.warm")

#: vLLM's request field (``ChatCompletionRequest.priority``, ``CompletionRequest.priority``).
PRIORITY_FIELD = "priority"
_REFUSAL = re.compile(
    r"got priority -?\d+ but priority scheduling is not enabled"  # vLLM without --scheduling-policy priority
    # a server that knows no such field: OpenAI and strict OpenAI-compatible servers ("Unrecognized request
    # argument(s) supplied: cache_salt, priority"), serde's deny_unknown_fields (TGI's router: "unknown field
    # `priority`"), pydantic's extra="forbid" (FastAPI servers: JSON detail or the ValidationError text)
    r"|unrecognized request arguments? supplied:[^\n.]*?\bpriority\b"
    r"|unknown field [`'\"]priority[`'\"]"
    r"|extra_forbidden['\"]?\s*,\s*['\"]loc['\"]\s*:\s*[\[(]\s*['\"]body['\"]\s*,\s*['\"]priority['\"]"
    r"|(?:^|\n)\s*priority\s*\n\s*extra inputs are not permitted",
    re.IGNORECASE,
)
DEFAULT_CAPACITY = 1024


def is_priority_refusal(error: object) -> bool:
    """Whether ``error`` (an exception or its text) refuses the request's ``priority``: vLLM's refusal
    without the scheduling policy, or a server that knows no such field (see :data:`_REFUSAL`)."""
    return _REFUSAL.search(str(error)) is not None


def with_priority(body: Mapping[str, Any], priority: int) -> dict[str, Any]:
    """A copy of the warm ``body`` whose ``extra_body`` carries ``priority``; ``0``: without the field, also
    when the live request it was copied from carried its own (a warm never runs at a client's priority)."""
    if not priority:
        return without_priority(body)
    out = dict(body)
    extra = out.get("extra_body")
    out["extra_body"] = {**(extra if isinstance(extra, Mapping) else {}), PRIORITY_FIELD: priority}
    return out


def without_priority(body: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``body`` (a warm body or an attempt's kwargs) without the priority field."""
    out = dict(body)
    extra = out.get("extra_body")
    if isinstance(extra, Mapping) and PRIORITY_FIELD in extra:
        rest = {k: v for k, v in extra.items() if k != PRIORITY_FIELD}
        if rest:
            out["extra_body"] = rest
        else:
            out.pop("extra_body")
    return out


def strip_priority(kwargs: dict[str, Any]) -> None:
    """Remove the priority field from an attempt's ``kwargs`` in place (its ``extra_body`` replaced, not mutated)."""
    stripped = without_priority(kwargs)
    if "extra_body" in stripped:
        kwargs["extra_body"] = stripped["extra_body"]
    else:
        kwargs.pop("extra_body", None)


def model_id(model_info: object) -> str | None:
    """LiteLLM's deployment id (``model_info.id``) of an attempt, ``None`` when absent."""
    value = model_info.get("id") if isinstance(model_info, Mapping) else getattr(model_info, "id", None)
    return str(value) if value else None


def deployment_of(body: Mapping[str, Any]) -> str:
    """The deployment a sent warm reached: LiteLLM's ``model_info.id`` that the Router writes into
    the request's metadata (``_update_kwargs_with_deployment``, in place), else the model group."""
    for field in ("metadata", "litellm_metadata"):
        meta = body.get(field)
        info = meta.get("model_info") if isinstance(meta, Mapping) else None
        if isinstance(info, Mapping) and info.get("id"):
            return str(info["id"])
    return f"group:{body.get('model')}"


def label_of(body: Mapping[str, Any]) -> str:
    """A sent warm's deployment as the plugin's other metrics name one (``host:port/served-model``, from the
    ``api_base`` and ``deployment`` the Router writes into its metadata), else :func:`deployment_of`."""
    for field in ("metadata", "litellm_metadata"):
        meta = body.get(field)
        if isinstance(meta, Mapping) and isinstance(meta.get("api_base"), str) and isinstance(meta.get("deployment"), str):
            return deployment_label(meta["api_base"], meta["deployment"].split("/", 1)[-1])
    return deployment_of(body)


class WarmPriority:
    """Deployments known to refuse the priority field (``ttl_s`` seconds each, ``capacity`` at most).

    Args:
        priority: the warms' priority (``KVWARM_WARM_PRIORITY``; 0: the field is never sent).
        ttl_s: how long a refusal is remembered, seconds (the window TTL).
        on_refused: the counter of learned refusals (``labels(deployment).inc()``, the deployment named
            ``host:port/served-model`` where the Router said which it was), or a callable ``(deployment)``.
        clock: monotonic seconds.
    """

    def __init__(self, priority: int, ttl_s: float, *, on_refused: Any = None,
                 clock: Callable[[], float] = time.monotonic, capacity: int = DEFAULT_CAPACITY):
        self.priority = priority
        self._ttl_s, self._clock, self._capacity = ttl_s, clock, capacity
        counter = on_refused
        if counter is not None and hasattr(counter, "labels"):
            on_refused = lambda deployment: counter.labels(deployment).inc()  # noqa: E731
        self._on_refused = on_refused or (lambda deployment: None)
        self._refused: OrderedDict[str, float] = OrderedDict()

    def refuses(self, deployment: str | None) -> bool:
        """Whether ``deployment`` (``model_info.id``) refused the field within the last ``ttl_s``."""
        if deployment is None:
            return False
        until = self._refused.get(deployment)
        if until is None:
            return False
        if self._clock() >= until:
            self._refused.pop(deployment, None)
            return False
        return True

    def strip_if_refused(self, kwargs: dict[str, Any], model_info: object, metadata_field: str = "metadata") -> None:
        """In an attempt's ``kwargs``: remove the field from a warm bound for a deployment that refused it."""
        meta = kwargs.get(metadata_field)
        if isinstance(meta, Mapping) and meta.get(WARM_MARKER) and self.refuses(model_id(model_info)):
            strip_priority(kwargs)

    def learn(self, deployment: str, label: str | None = None) -> None:
        """``deployment`` (its id) refused the field; counted under ``label`` (default: the id)."""
        self._refused.pop(deployment, None)
        self._refused[deployment] = self._clock() + self._ttl_s
        while len(self._refused) > self._capacity:
            self._refused.popitem(last=False)
        self._on_refused(label or deployment)

    def body(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The warm body with the priority field (unchanged when ``priority`` is 0)."""
        return with_priority(body, self.priority)

    async def send(self, send: Callable[[str, dict[str, Any]], Awaitable[Any]], kind: str, body: dict[str, Any]) -> Any:
        """``await send(kind, body)``; on vLLM's refusal of the field (and only then): learn the
        deployment, resend once without the field. Raises what ``send`` raises otherwise."""
        try:
            return await send(kind, body)
        except Exception as exc:
            extra = body.get("extra_body")
            if not (isinstance(extra, Mapping) and PRIORITY_FIELD in extra) or not is_priority_refusal(exc) or _quoted(body):
                raise
            deployment = deployment_of(body)
            self.learn(deployment, label_of(body))
            logger.info("[KV-WARM] %s refused the warm's priority (no --scheduling-policy priority): its warms go without it",
                        label_of(body))
            return await send(kind, without_priority(body))


def _quoted(body: Mapping[str, Any]) -> bool:
    """Whether the warm's own request holds the refusal's text anywhere a server might quote back: every
    field it sends (prompt, system text, tools, and what else the warm copied from the live request:
    ``chat_template_kwargs``, ``response_format``, ``thinking``, ``reasoning``, ``extra_body``, ...; vLLM's
    400 for an invalid field quotes its input), all but the plugin's own metadata (never sent to a
    backend). Then an error quoting it is not a refusal; a body that cannot be serialised counts as quoting.
    Searched both as JSON (a server quoting the request's structure) and as its strings unescaped, one a line
    (a server quoting a value raw or as a Python repr, where ``"`` and line breaks stay as the client wrote
    them, which JSON escapes)."""
    sent = {k: v for k, v in body.items() if k not in _UNSENT}
    try:
        text = json.dumps(sent, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        return True
    return is_priority_refusal(text) or is_priority_refusal("\n".join(strings(sent, keys=True)))


#: Warm-body fields LiteLLM keeps to itself (its metadata: hashes, the caller's identity), never sent.
_UNSENT = frozenset({"metadata", "litellm_metadata"})
