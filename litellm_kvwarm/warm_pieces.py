"""Warms in pieces: a warm whose uncached part is large is sent as successive prefixes of its
conversation, each ``max_tokens=1``, the next only after the previous returned, so a live request
that reaches the server meanwhile waits for at most one piece instead of the whole warm.

Why: vLLM V1 schedules RUNNING requests before WAITING ones and preempts only when KV blocks run
out (``Scheduler.schedule()`` in ``vllm/v1/core/sched/scheduler.py``, 0.8 to 0.11); a request's
``priority`` (``--scheduling-policy priority``) orders the waiting queue only. A 12k-token warm
whose prefill has started keeps the step budget for all of its 12k tokens, whatever its priority;
cut into pieces of ``piece_tokens``, it holds the server for one piece at a time, and between two
pieces a live request (priority 0, or simply there first) is scheduled ahead of the next piece. The
prefix cache joins the pieces: each one prefills only what the pieces before it did not.

Cuts (:func:`~litellm_kvwarm.warm_prefixes.cut_points`): at message boundaries (before a user, tool or
assistant message, a Responses ``function_call_output`` item), so every piece is a conversation the
template renders as the start of the whole one; and inside a long text that ends an item (a message's text, the last text
block or part of a content list, an Anthropic ``tool_result``, a Responses ``function_call_output``: a pasted
document, a tool result) at whitespace half a piece apart: the piece ends with that much of the text, and
renders as the whole one up to the cut (the block holding the cut is prefilled again by the next piece). No
piece leaves a tool call unanswered (between an assistant's calls and their results, parallel ones included:
OpenAI and Anthropic refuse such a conversation), nor ends with an assistant message of an Anthropic body that
has ``thinking`` on (a prefill, refused with thinking). A template that renders a turn differently once more
follows (Qwen3's reasoning after the last user message) loses that piece's tail; the final warm is the whole body. For those families no piece ends inside an
assistant message (the template gives a last assistant message a ``<think>`` block). Text completions
(``prompt``), a Responses ``input`` string, a part that is not text (an image) at the end of an item and text
without whitespace are not cut inside; the request's tools and system prompt are in every piece (the first
piece holds them whole).

What a session already warmed (:class:`~litellm_kvwarm.warm_prefixes.WarmedPrefixes`): checkpoints of its
last warm, kept per (session hash, target), bounded; a later warm of the same conversation starts its pieces
after the longest prefix it shares, so a reply-warm of 12k tokens whose first 11k are warmed is one request,
not 22, and a decode warm whose last message grew skips what the one before sent of it. Sizes are the ratio
estimate's routing tokens of each item (:func:`item_tokens`), no server count.

:class:`PieceSender` wraps the warm's sender (the runner's ``send``): pieces first, then the whole
body. A piece the server refuses as sent (400/404/422) leaves the whole body, sent as it would have been
without pieces; a piece that meets a server in trouble (429, 5xx, a timeout) ends the warm there, as the
whole warm would have ended. A body with a malformed item (LiteLLM refuses the whole) is not cut. The
runner's ``timeout_s`` bounds all of it together; a warm whose session's live request reached the target with at least
its items first sends nothing more (:mod:`~litellm_kvwarm.warm_arrivals`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .config_defaults import DEFAULT_WARM_MAX_PIECES, DEFAULT_WARM_PIECE_TOKENS
from .reply_warm import drops_past_reasoning
from .warm_arrivals import LiveArrivals
from .warm_body import METADATA_FIELDS
from .warm_piece_tokens import Estimate, bridged_routing_tokens, item_tokens, routing_tokens  # noqa: F401  (re-exported)
from .warm_prefixes import (  # noqa: F401  (re-exported)
    DEFAULT_CAPACITY, ITEMS_FIELD, Warmed, WarmedPrefixes, closed_prefixes, cut_points, item_text, prefix_digest, role,
    thinking_on, well_formed, with_text,
)

__all__ = ["DEFAULT_PIECE_TOKENS", "ITEMS_FIELD", "Piece", "PieceSender", "Warmed", "WarmedPrefixes", "cut_points",
           "item_tokens", "plan_pieces", "prefix_digest"]

logger = logging.getLogger("litellm_kvwarm.warm")

#: Pieces of one warm at most (``KVWARM_WARM_MAX_PIECES``; 0 = no bound). The proxy handles each piece's whole body
#: (~10 ms of proxy CPU for a 16k-token body, measured here), so n pieces of S tokens cost it ~n·S/2 tokens of work,
#: quadratic in S for a fixed size: at most 64 cost ~32.5 whole warms; a piece is max(its size, uncached ÷ 65) tokens.
DEFAULT_MAX_PIECES = DEFAULT_WARM_MAX_PIECES
#: Tokens a piece adds at most (``KVWARM_WARM_PIECE_TOKENS``; 0 = whole warms; less where :mod:`.warm_piece_size` says).
DEFAULT_PIECE_TOKENS = DEFAULT_WARM_PIECE_TOKENS
#: Roles of messages whose long text may be cut inside (every template renders their content as sent).
_SPLIT_ROLES = frozenset({"system", "developer", "user", "tool", "assistant"})

Send = Callable[[str, dict[str, Any]], Awaitable[Any]]
@dataclass(frozen=True)
class Piece:
    """One prefix of a warm: its first ``items`` items, ``tokens`` their estimated size (with the
    context: system, tools), and the body sent for it."""

    items: int
    tokens: int
    body: dict[str, Any]


def _prefix_body(kind: str, body: Mapping[str, Any], field: str, items: Sequence[object], k: int,
                 chars: int | None = None) -> dict[str, Any]:
    out = dict(body)
    head = list(items[:k])
    if chars is not None:  # and item k with the first ``chars`` characters of its text
        head.append(with_text(kind, items[k], chars))  # type: ignore[arg-type]
    out[field] = head
    for meta in METADATA_FIELDS:  # LiteLLM's Router writes into a request's metadata: one dict per request
        if isinstance(out.get(meta), Mapping):
            out[meta] = dict(out[meta])
    return out


def _text_cuts(kind: str, item: object, size: int, piece_tokens: int, roles: frozenset[str]) -> list[tuple[int, int]]:
    """Inside an item longer than a piece whose text ends it (:func:`~litellm_kvwarm.warm_prefixes.item_text`;
    a message of one of ``roles``, or a Responses tool output): ``(chars, tokens)`` offsets into that text half a
    piece apart, each at a whitespace (the text before it tokenizes as it does in the whole, but for its last
    word). Tokens are counted from the item's start, the text assumed to hold all of its size."""
    if size <= piece_tokens or not isinstance(item, Mapping):
        return []
    if item.get("role") not in roles and not (kind == "responses" and item.get("type") == "function_call_output"):
        return []
    text = item_text(kind, item)
    if text is None:
        return []
    per_token, step = len(text) / size, max(piece_tokens // 2, 1)
    out: list[tuple[int, int]] = []
    for j in range(1, -(-size // step)):
        at = text.rfind(" ", 0, int(j * step * per_token))
        if at > 0 and (not out or at > out[-1][0]):
            out.append((at, int(at / per_token)))
    return out


def _walk(candidates: list[tuple[int, int | None, int]], last: int, total: int, piece_tokens: int) -> list[tuple[int, int | None, int]]:
    """The cuts taken from ``candidates`` (in order; the whole body last): the farthest within a piece of the last
    taken, a stretch under half a piece never alone, an item that cannot be cut an oversized piece."""
    taken: list[tuple[int, int | None, int]] = []
    best: tuple[int, int | None, int] | None = None
    for candidate in candidates:
        while candidate[2] - last > piece_tokens and best is not None and best[2] - last >= piece_tokens / 2:
            taken.append(best)  # not a stretch under half a piece: then the candidate beyond makes one piece
            last, best = best[2], None
        if candidate[2] - last > piece_tokens and candidate[2] < total:
            taken.append(candidate)  # no cut within a piece (an item that cannot be cut): an oversized piece
            last, best = candidate[2], None
        elif candidate[2] > last:
            best = candidate
    return taken


def refused_as_sent(error: BaseException) -> bool:
    """Whether a piece's error is the server refusing that request as sent (HTTP 400/404/422: a prefix it takes
    differently from the whole, e.g. one that ends with a tool call), not the server in trouble (429, 5xx, a
    timeout, a dropped connection). Reads the ``status_code`` LiteLLM's exceptions carry."""
    return getattr(error, "status_code", None) in (400, 404, 422)


def plan_pieces(kind: str, body: Mapping[str, Any], piece_tokens: int, *, warmed_items: int = 0, warmed_chars: int = 0,
                estimate: Estimate = routing_tokens, split_assistant: bool = True,
                max_pieces: int = DEFAULT_WARM_MAX_PIECES, on_enlarged: Callable[[int], None] | None = None) -> list[Piece]:
    """The prefixes of the warm ``body`` to send before it, in order, each adding at most ``piece_tokens``
    tokens (estimated) over the one before (or over what was warmed: the first ``warmed_items`` items and
    ``warmed_chars`` characters of the next one's text), as few as that allows: the farthest candidate cut within
    a piece is taken. Candidate cuts: at message boundaries (:func:`cut_points`), and inside the text that ends
    an item longer than a piece (:func:`~litellm_kvwarm.warm_prefixes.item_text`), at whitespace half a piece
    apart (the prefix ends with that much of the text: it renders as the start of the whole one up to the cut);
    so a piece adds half a piece to a piece, except past what cannot be cut (an image, text without
    whitespace, the tools): then one piece holds it. Never where a tool call would be left unanswered
    (:func:`~litellm_kvwarm.warm_prefixes.closed_prefixes`), nor, in an Anthropic body with ``thinking`` on, after
    or inside an assistant message (a prefill, refused there). A cut is taken only when the next one is more than a piece past the last taken, so no piece
    adds a few tokens before the whole body. ``[]`` when ``piece_tokens`` ≤ 0, for a kind or
    body without items, or when the uncached part is at most a piece. ``split_assistant=False``: no cut inside an assistant
    message (the target's template renders a last assistant message differently:
    :func:`~litellm_kvwarm.reply_warm.drops_past_reasoning`). ``max_pieces`` (> 0): at most that many pieces; where
    ``piece_tokens`` would take more, larger pieces (at least ``uncached ÷ (max_pieces + 1)`` tokens, see
    :data:`DEFAULT_MAX_PIECES`), and ``on_enlarged`` (if given) is called with the piece size used (tokens,
    > ``piece_tokens``); a warm the bound did not change is not reported."""
    field = ITEMS_FIELD.get(kind)
    items = body.get(field) if field else None
    if piece_tokens <= 0 or not isinstance(items, list) or not items or not well_formed(kind, items):
        return []
    sizes = item_tokens(kind, items, estimate)
    context = estimate(kind, {k: v for k, v in body.items() if k != field})
    prefix = [context]
    for size in sizes:
        prefix.append(prefix[-1] + size)
    total, last = prefix[-1], prefix[min(warmed_items, len(items))]
    if warmed_chars and warmed_items < len(items):
        text = item_text(kind, items[warmed_items])
        if text:
            last += int(sizes[warmed_items] * min(warmed_chars / len(text), 1.0))
    asked = piece_tokens
    starts, closed = set(cut_points(kind, items)), closed_prefixes(kind, items)
    roles = _SPLIT_ROLES if split_assistant else _SPLIT_ROLES - {"assistant"}
    prefill_refused = kind == "messages" and thinking_on(body)  # Anthropic: no assistant prefill with thinking on
    while True:  # larger pieces until at most max_pieces (ends: a piece of the whole uncached part takes none)
        candidates: list[tuple[int, int | None, int]] = []  # (items whole, chars of the next one, tokens)
        for k in range(max(warmed_items, 0), len(items)):
            if k in starts and k > warmed_items and closed[k] and not (prefill_refused and role(items[k - 1]) == "assistant"):
                candidates.append((k, None, prefix[k]))
            if not closed[k + 1] or (prefill_refused and role(items[k]) == "assistant"):
                continue  # a piece ending inside this item would leave a call unanswered, or be a refused prefill
            skip = warmed_chars if k == warmed_items else 0
            candidates += [(k, chars, prefix[k] + tokens) for chars, tokens
                           in _text_cuts(kind, items[k], sizes[k], piece_tokens, roles) if chars > skip]
        taken = _walk(candidates + [(len(items), None, total)], last, total, piece_tokens)
        if max_pieces <= 0 or len(taken) <= max_pieces:
            break  # the proxy handles each piece's whole body: their number is bounded, not only their size
        piece_tokens = max(piece_tokens + piece_tokens // 8 + 1, -(-(total - last) // (max_pieces + 1)))
    if piece_tokens > asked and on_enlarged is not None:  # only a warm the bound really cut larger
        on_enlarged(piece_tokens)
    return [Piece(k, tokens, _prefix_body(kind, body, field, items, k, chars)) for k, chars, tokens in taken]  # type: ignore[arg-type]


class PieceSender:
    """Sends a warm in pieces (module docstring).

    Args:
        piece_tokens: tokens a piece adds at most (``KVWARM_WARM_PIECE_TOKENS``); 0: every warm whole.
        send: sends one request, ``await send(kind, body)`` (the proxy: the priority-aware Router call).
        on_piece: ``(target, outcome)`` per piece, outcome ``"succeeded"``, ``"failed"`` or ``"superseded"`` (not
            sent: ``arrivals`` covers the warm); or a counter with those labels (``kvwarm_warm_pieces_total``).
        estimate: tokens of a body (default: the ratio estimator's routing tokens).
        capacity: (session, target) pairs :class:`WarmedPrefixes` keeps.
        served_model: a model group's served model name: no cut inside an assistant message where its
            template drops past reasoning (:func:`~litellm_kvwarm.reply_warm.drops_past_reasoning`).
        max_pieces: pieces of one warm at most (``KVWARM_WARM_MAX_PIECES``; 0: no bound).
        on_enlarged: ``(target)`` per warm whose pieces that bound made larger than ``piece_tokens``; or a counter
            with that label (``kvwarm_warm_pieces_enlarged_total``). The first such warm of each target is logged.
        piece_size: ``(target, piece_tokens)`` → the piece size (tokens) for warms of that group (default ``piece_tokens``).
        bridged: ``(target, kind)`` → whether that group renders only what its bridge sends
            (:meth:`~litellm_kvwarm.facts_groups.GroupFacts.bridged`); then the default ``estimate`` sizes
            pieces by :func:`bridged_routing_tokens`, as the route decision does.
        arrivals: the live requests sent to each warm's target (:class:`~litellm_kvwarm.warm_arrivals.LiveArrivals`).
    """

    def __init__(self, piece_tokens: int, send: Send, *, on_piece: Any = None, estimate: Estimate = routing_tokens,
                 capacity: int = DEFAULT_CAPACITY, served_model: Callable[[str], str | None] = lambda group: None,
                 max_pieces: int = DEFAULT_WARM_MAX_PIECES, on_enlarged: Any = None,
                 piece_size: Callable[[str, int], int] = lambda target, configured: configured,
                 bridged: Callable[[str, str], bool] = lambda target, kind: False, arrivals: LiveArrivals | None = None):
        self.piece_tokens, self.max_pieces = piece_tokens, max_pieces
        self.arrivals = arrivals if arrivals is not None else LiveArrivals()
        self._bridged = bridged
        self._piece_size = piece_size
        self._send = send
        self._served_model = served_model
        self._on_piece = _per_label(on_piece) or (lambda target, outcome: None)
        self._on_enlarged = _per_label(on_enlarged) or (lambda target: None)
        self._enlarged_logged: set[str] = set()
        self._estimate = estimate
        self.warmed = WarmedPrefixes(capacity)

    def plan(self, kind: str, body: Mapping[str, Any]) -> list[Piece]:
        """The pieces of ``body`` after what its session already warmed; ``[]`` if planning fails (logged)."""
        if self.piece_tokens <= 0 or kind not in ITEMS_FIELD:
            return []
        try:
            held, target = self.warmed.held(kind, body), str(body.get("model"))
            size = self._piece_size(target, self.piece_tokens)
            estimate = bridged_routing_tokens if self._estimate is routing_tokens and self._bridged(target, kind) else self._estimate
            return plan_pieces(kind, body, size, warmed_items=held.items, warmed_chars=held.chars,
                               estimate=estimate, split_assistant=not drops_past_reasoning(self._served_model(target)),
                               max_pieces=self.max_pieces, on_enlarged=lambda size: self._enlarged(target, size))
        except Exception:  # a body the planner cannot read is warmed whole, as without pieces
            logger.debug("warm pieces not planned", exc_info=True)
            return []

    def _enlarged(self, target: str, size: int) -> None:
        with contextlib.suppress(Exception):  # a metric's failure never changes how the warm is sent
            self._on_enlarged(target)
        if target not in self._enlarged_logged and len(self._enlarged_logged) < 1024:  # once per target, bounded
            self._enlarged_logged.add(target)
            logger.info("[KV-WARM] a warm of %r was cut into pieces of about %d estimated tokens, not KVWARM_WARM_PIECE_TOKENS=%d: "
                        "KVWARM_WARM_MAX_PIECES=%d bounds their number (expected with the defaults when a warm is over "
                        "%d × %d tokens; a live request may wait for one such piece: raise the bound, or 0, to keep the "
                        "size)", target, size, self.piece_tokens, self.max_pieces, self.max_pieces, self.piece_tokens)

    async def send(self, kind: str, body: dict[str, Any]) -> Any:
        """The pieces of ``body`` one after another, then ``body`` itself; returns what the whole warm
        returned. A piece the server refuses as sent (:func:`refused_as_sent`) ends the pieces and the whole
        body goes at once; any other error of a piece ends the warm (raised: the runner counts it failed, and
        the server in trouble gets no second request). Raises what the sender raises (cancellation included). Returns
        ``None``, sending nothing more, once a live request of the session reached the target with at least ``body``'s items."""
        send, pieces, target = self._send, self.plan(kind, body), str(body.get("model"))
        done: Piece | None = None  # the last piece that returned (remembered once: a digest reads the whole prefix)
        try:
            for sent, piece in enumerate([*pieces, None]):
                if self.arrivals.covers_warm(kind, body):  # the session's live request got there first
                    for _ in range(len(pieces) - sent):
                        self._on_piece(target, "superseded")
                    return None
                if piece is None:
                    break
                try:
                    await send(kind, piece.body)
                except Exception as exc:
                    self._on_piece(target, "failed")
                    if not refused_as_sent(exc):
                        raise  # the server is in trouble (429, 5xx, a timeout): the whole warm would fail as well
                    logger.info("[KV-WARM] warm piece of %r refused (%s): sending the whole warm", target, type(exc).__name__)
                    break  # a prefix the server would not take as the whole: the whole warm, as without pieces
                self._on_piece(target, "succeeded")
                done = piece
            result = await send(kind, body)
            done = Piece(0, 0, body)
            return result
        finally:  # also when the whole warm failed or the runner's timeout cancelled it
            if done is not None and kind in ITEMS_FIELD:
                self.warmed.remember(kind, done.body)  # all of what it sent: a piece cut inside a message too


def _per_label(counter: Any) -> Callable[..., None] | None:
    """A callback from a prometheus counter (``counter.labels(*labels).inc()``), or the callback itself."""
    return (lambda *labels: counter.labels(*labels).inc()) if hasattr(counter, "labels") else counter
