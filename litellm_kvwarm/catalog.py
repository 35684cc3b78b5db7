"""Reading LiteLLM's model list: deployments of a group, their served models, keys and windows.

Pure functions over the shapes LiteLLM's Router exposes (a group's ``model_list`` entries, read
through :class:`~litellm_kvwarm.router_view.RouterView`); nothing here imports LiteLLM, so the
logic is testable with plain dicts.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .litellm_model_info import model_id_of
from .windows import Deployment

#: Provider prefixes of ``litellm_params.model`` that are stripped to get the served model
#: name the backend's ``/v1/models`` lists (``hosted_vllm/Qwen/Qwen3-8B`` → ``Qwen/Qwen3-8B``).
#: Only OpenAI-compatible self-hosted providers are listed: they are the ones with ``/v1/models``.
OPENAI_COMPATIBLE_PREFIXES = frozenset(
    {"hosted_vllm", "openai", "openai_like", "text-completion-openai", "custom_openai", "vllm", "lm_studio", "llamafile", "sglang"}
)


@dataclass(frozen=True)
class DeploymentInfo:
    """One entry of a model group: the endpoint (``deployment``; ``None`` without ``api_base``),
    the window the operator set in ``model_info`` (tokens, :func:`operator_window`; ``None`` if not set), LiteLLM's id
    of the deployment (``model_info.id``: the key of what LiteLLM discovered for it, see
    :mod:`~litellm_kvwarm.litellm_model_info`; ``None`` when absent), and the operator's limit on the prompt alone
    (``model_info.max_input_tokens``, tokens; ``None`` if not set), also the window where none is stated nor discovered."""

    deployment: Deployment | None
    operator_window: int | None
    model_id: str | None = None
    operator_input: int | None = None

    @property
    def stated_window(self) -> int | None:
        """The window the operator's ``model_info`` states (:attr:`operator_window`), else its prompt limit
        (:attr:`operator_input`: the window where nothing is discovered); ``None`` when it sets neither."""
        return self.operator_window if self.operator_window is not None else self.operator_input


#: Environment variable LiteLLM 1.108.7 falls back to for a provider's key when the deployment
#: sets no ``api_key`` (``HOSTED_VLLM_API_KEY`` in ``llms/hosted_vllm/chat/transformation.py``,
#: ``OPENAI_API_KEY`` in ``main.py``'s OpenAI branches, ...).
PROVIDER_KEY_ENV = {
    "hosted_vllm": "HOSTED_VLLM_API_KEY",
    "openai_like": "OPENAI_LIKE_API_KEY",
    "lm_studio": "LM_STUDIO_API_KEY",
    "llamafile": "LLAMAFILE_API_KEY",
    "openai": "OPENAI_API_KEY",
    "text-completion-openai": "OPENAI_API_KEY",
}
#: LiteLLM's reference to a secret in a config value: ``os.environ/NAME``.
SECRET_REFERENCE = "os.environ/"

#: Resolves ``"os.environ/NAME"`` to its value, ``None`` when unset. In the proxy:
#: ``litellm.get_secret_str`` (it honours the configured secret manager, as LiteLLM does).
SecretResolver = Callable[[str], str | None]


def environ_secret(reference: str) -> str | None:
    """Default :data:`SecretResolver`: ``os.environ/NAME`` → ``os.environ["NAME"]``, else ``None``."""
    name = reference[len(SECRET_REFERENCE) :] if reference.startswith(SECRET_REFERENCE) else reference
    return os.environ.get(name)


def resolve_api_key(litellm_params: Mapping[str, object], *, secret: SecretResolver | None = None) -> str | None:
    """The key LiteLLM sends to this deployment: ``litellm_params.api_key`` (an ``os.environ/NAME``
    reference resolved with ``secret``; the Router resolves config references when it loads the
    model list, but deployments added later, e.g. from the database, may still hold one), else
    the provider's environment variable (:data:`PROVIDER_KEY_ENV`). ``None`` when there is no
    non-blank key; surrounding whitespace is stripped. Never raises."""
    resolve = secret or environ_secret
    key = litellm_params.get("api_key")
    try:
        if isinstance(key, str) and key.startswith(SECRET_REFERENCE):
            key = resolve(key)
        if not (isinstance(key, str) and key.strip()):
            model = litellm_params.get("model")
            provider = litellm_params.get("custom_llm_provider")
            if not isinstance(provider, str) or not provider:
                provider = model.partition("/")[0] if isinstance(model, str) and "/" in model else None
            env = PROVIDER_KEY_ENV.get(provider) if provider else None
            key = resolve(SECRET_REFERENCE + env) if env else None
    except Exception:  # a failing secret manager leaves the key unset, as a missing one would
        return None
    return key.strip() if isinstance(key, str) and key.strip() else None


def served_model_name(litellm_model: str) -> str:
    """``litellm_params.model`` without its provider prefix."""
    prefix, sep, rest = litellm_model.partition("/")
    if sep and prefix in OPENAI_COMPATIBLE_PREFIXES and rest:
        return rest
    return litellm_model


def _positive(model_info: object, key: str) -> int | None:
    value = model_info.get(key) if isinstance(model_info, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def operator_input(model_info: object) -> int | None:
    """The operator's ``model_info.max_input_tokens`` (tokens): a limit on the prompt alone, as LiteLLM reads it (its
    pre-call check compares the prompt with it, 1.108.7 ``router.py``; ``max_output_tokens`` is a limit of its own);
    ``None`` if not set."""
    return _positive(model_info, "max_input_tokens")


def operator_window(model_info: object) -> int | None:
    """The window (prompt + output, tokens) the operator's ``model_info`` states, which wins over discovery:
    ``max_input_tokens`` set alone (a server without ``max_model_len`` in its ``/v1/models``). With ``max_output_tokens``
    set as well it states no window: LiteLLM's own model map means the whole window by ``max_input_tokens`` (gpt-4o:
    128,000 and 16,384, a 128k window), an operator may mean a split of it (12,288 + 4,096 on a 16,384-token server); read
    as the one, a breaker's answer that fit was cut to 2,401, as the other, a budget was "clamped" over the real window.
    The window is then discovered (:mod:`~litellm_kvwarm.facts_windows`, ``max_input_tokens`` where nothing is), and
    ``max_input_tokens`` limits the prompt (:func:`operator_input`). ``None`` otherwise."""
    return operator_input(model_info) if _positive(model_info, "max_output_tokens") is None else None


def deployment_info(
    litellm_params: Mapping[str, object], model_info: object, *, secret: SecretResolver | None = None
) -> DeploymentInfo:
    """Build :class:`DeploymentInfo` from one deployment's ``litellm_params`` and ``model_info``;
    its key is :func:`resolve_api_key`'s (``secret`` as there)."""
    api_base = litellm_params.get("api_base")
    model = litellm_params.get("model")
    deployment = None
    if isinstance(api_base, str) and api_base and isinstance(model, str) and model:
        deployment = Deployment(
            api_base=api_base.rstrip("/"),
            served_model=served_model_name(model),
            api_key=resolve_api_key(litellm_params, secret=secret),
        )
    return DeploymentInfo(deployment=deployment, operator_window=operator_window(model_info), model_id=model_id_of(model_info),
                          operator_input=operator_input(model_info))


def group_deployments(model_list: Iterable[object], *, secret: SecretResolver | None = None) -> list[DeploymentInfo]:
    """:class:`DeploymentInfo` of each well-formed ``model_list`` entry (e.g. a group's, :meth:`RouterView.deployments`)."""
    infos = []
    for entry in model_list or ():
        if isinstance(entry, Mapping) and isinstance(entry.get("litellm_params"), Mapping):
            infos.append(deployment_info(entry["litellm_params"], entry.get("model_info"), secret=secret))
    return infos


def combine_windows(windows: Iterable[int | None]) -> int | None:
    """Window of a group = the smallest known window of its deployments (any of them may be
    picked), ``None`` when none is known."""
    known = [w for w in windows if w is not None]
    return min(known) if known else None


def deployment_by_id(model_list: Iterable[object], model_id: object) -> Mapping[str, Any] | None:
    """The ``model_list`` entry whose ``model_info.id`` is ``model_id`` (LiteLLM's id of a deployment,
    as its Router records a failed attempt in ``previous_models``), ``None`` when none is."""
    if not isinstance(model_id, str) or not model_id:
        return None
    for entry in model_list or ():
        if isinstance(entry, Mapping) and model_id_of(entry.get("model_info")) == model_id:
            return entry
    return None
