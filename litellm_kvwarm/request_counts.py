"""What the token estimators read from one request (pure data)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .image_tokens import ImageRef
from .media_tokens import MediaRef

__all__ = ["RequestCounts"]


@dataclass(frozen=True)
class RequestCounts:
    """What the estimates are computed from.

    Attributes:
        chars: characters of rendered text (message text, tool calls/results, schemas).
        messages: number of chat messages (0 for a text completion).
        other_parts: content parts priced flat: neither text, images nor sized media (a file id or
            URL, an unknown block holding no text).
        exact_tokens: token ids sent as ``prompt`` (exact count), else ``None``.
        tools: tool / function schemas sent with a chat request.
        parts: the rendered text pieces, in order (their joined length is ``chars``), for the
            calibrated estimator; :attr:`text` joins them.
        images: the image parts, priced per family by :mod:`litellm_kvwarm.image_tokens`.
        media: the PDF, audio and video parts, priced from their bytes by :mod:`litellm_kvwarm.media_tokens` (video: :mod:`~litellm_kvwarm.video_tokens`).
        template_dependent: the request holds messages some chat templates drop or render
            differently (legacy ``function`` messages, roles outside system/developer/user/
            assistant/tool): its text may not reach the prompt at all (Qwen2.5's template drops
            ``function`` messages), so only an exact count can size it.
        format_parts: the JSON text of a structured-output schema (chat ``response_format``,
            Responses ``text.format``), not in ``parts`` nor ``chars``: vLLM, SGLang and llama.cpp
            enforce it by guided decoding and render none of it into the prompt, other servers may
            (LiteLLM's JSON-mode emulation for providers without one turns it into a tool), so the
            safe estimate counts it and the routing estimate does not
            (:func:`~litellm_kvwarm.token_estimators.estimate_request`).
        past_reasoning: the reasoning of assistant turns before the last user message, not in
            ``parts`` nor ``chars``: no known chat template renders it (:mod:`~litellm_kvwarm.token_reasoning`),
            so, like ``format_parts``, the safe estimate counts it and the routing estimate does not.
        folded_messages: of ``messages``, those LiteLLM's bridge folds into the assistant message before
            them (a Responses call after an assistant item: :func:`~.token_responses_items.folds_into_previous`);
            the routing estimate counts ``messages - folded_messages``, the safe estimate all.
    """

    chars: int
    messages: int
    other_parts: int = 0
    exact_tokens: int | None = None
    tools: int = 0
    parts: tuple[str, ...] | list[str] = field(default=(), repr=False, compare=False)
    images: tuple[ImageRef, ...] = ()
    media: tuple[MediaRef, ...] = ()
    template_dependent: bool = False
    format_parts: tuple[str, ...] = field(default=(), repr=False, compare=False)
    past_reasoning: tuple[str, ...] = field(default=(), repr=False, compare=False)
    folded_messages: int = 0

    @property
    def text(self) -> str:
        """The rendered text, joined (O(characters); the estimators never need it)."""
        return "".join(self.parts)
