"""Reading LiteLLM's model list: deployments of a group, their served models, escalation targets.

Pure functions over the shapes LiteLLM's Router exposes (``router.get_model_list(model_name=)``
entries and ``router.context_window_fallbacks``); nothing here imports LiteLLM, so the
logic is testable with plain dicts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

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
    and the window the operator set in ``model_info`` (tokens; ``None`` if not set)."""

    deployment: Deployment | None
    operator_window: int | None


def served_model_name(litellm_model: str) -> str:
    """``litellm_params.model`` without its provider prefix."""
    prefix, sep, rest = litellm_model.partition("/")
    if sep and prefix in OPENAI_COMPATIBLE_PREFIXES and rest:
        return rest
    return litellm_model


def operator_window(model_info: object) -> int | None:
    """The operator's ``model_info.max_input_tokens`` (it wins over discovery), else ``None``."""
    if isinstance(model_info, Mapping):
        value = model_info.get("max_input_tokens")
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def deployment_info(litellm_params: Mapping[str, object], model_info: object) -> DeploymentInfo:
    """Build :class:`DeploymentInfo` from one deployment's ``litellm_params`` and ``model_info``."""
    api_base = litellm_params.get("api_base")
    model = litellm_params.get("model")
    deployment = None
    if isinstance(api_base, str) and api_base and isinstance(model, str) and model:
        deployment = Deployment(api_base=api_base.rstrip("/"), served_model=served_model_name(model))
    return DeploymentInfo(deployment=deployment, operator_window=operator_window(model_info))


def group_deployments(model_list: Iterable[object]) -> list[DeploymentInfo]:
    """:class:`DeploymentInfo` of each well-formed entry of ``router.get_model_list(model_name=group)``."""
    infos = []
    for entry in model_list or ():
        if isinstance(entry, Mapping) and isinstance(entry.get("litellm_params"), Mapping):
            infos.append(deployment_info(entry["litellm_params"], entry.get("model_info")))
    return infos


def escalation_target(
    group: str, *, overrides: Mapping[str, str], context_window_fallbacks: Sequence[object] | None
) -> str | None:
    """Target group of ``group``: the plugin's override, else the first entry LiteLLM's
    ``router_settings.context_window_fallbacks`` (``[{"fast": ["slow"]}]``) lists for it.
    Dict-shaped fallback entries (``{"model": ..., "max_tokens": ...}``) name their ``model``."""
    if group in overrides:
        return overrides[group]
    for item in context_window_fallbacks or ():
        if not isinstance(item, Mapping) or group not in item:
            continue
        targets = item[group]
        if isinstance(targets, str):
            targets = [targets]
        for target in targets if isinstance(targets, Sequence) else ():
            if isinstance(target, Mapping):
                target = target.get("model")
            if isinstance(target, str) and target and target != group:
                return target
    return None


def combine_windows(windows: Iterable[int | None]) -> int | None:
    """Window of a group = the smallest known window of its deployments (any of them may be
    picked), ``None`` when none is known."""
    known = [w for w in windows if w is not None]
    return min(known) if known else None
