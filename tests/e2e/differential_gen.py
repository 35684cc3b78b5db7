"""Seeded generator of request bodies for the differential suite (pure: no I/O, no clock).

Contract: :func:`make_case` ``(seed, index)`` → one :class:`Case`, the same for the same
arguments on every machine (one ``random.Random`` per case, seeded from both), so any body of a
run can be rebuilt from its seed and index alone; :func:`generate` yields ``count`` of them.

About a third of the cases are agent cases (``/v1/messages``, ``/v1/responses``), chosen and
built by :mod:`differential_agents` from their own random streams, so every other index keeps
the body it had before they existed.

A case is what one client sends: an endpoint (``/v1/chat/completions`` or ``/v1/completions``),
a JSON body (or, rarely, raw bytes that are not valid JSON), extra headers, and ``tags`` naming
every choice made (for reports). Bodies are weighted so most are valid requests; the rest carry
one or two mutations from the malformed set. What varies:

* size of the main text, in approximate tokens of cl100k (the emulator's tokenizer): tiny to
  ~140k, with extra weight near 60% of the fast window (warm-ahead), near the fast window
  (clamp, exact count), just over it and between the fast and slow windows (routing), and a
  few beyond the slow window; text in English, code, CJK, emoji, RTL, zero-width and
  combining marks, lone surrogates (sent JSON-escaped), or a mix;
* chat structure: system / developer first, multi-turn, assistant ``tool_calls`` + ``tool``
  results, legacy ``function`` role, unknown roles, content as string / list of parts /
  ``None`` / number / dict, parts ``text`` / ``image_url`` / ``input_audio`` / unknown /
  missing fields, deep nesting;
* ``tools`` / ``functions`` valid, empty, huge, malformed; ``tool_choice``;
* output fields ``max_tokens`` / ``max_completion_tokens``: absent, 0, -5, 1, normal, huge,
  over the window, strings, floats, bools, null, both set;
* ``stream`` (+ ``stream_options``), ``n``; text-completion ``prompt`` as string, list of
  strings, token ids, list of token-id lists, empty;
* junk ``metadata`` (including ``kvwarm_*`` keys the plugin uses internally), junk
  ``x-litellm-session-id`` header values, unknown models, a client ``context_window_fallbacks``.

The harness adds its own marker field (``MARKER_FIELD``) to every dict body before sending.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CHAT",
    "COMPLETIONS",
    "FAST_WINDOW",
    "SLOW_WINDOW",
    "Case",
    "generate",
    "make_case",
]

CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"
FAST_WINDOW = 16_384
"""Window of the ``fast`` group (tokens); sizes are drawn relative to it."""
SLOW_WINDOW = 131_072
"""Window of the ``slow`` group, the escalation target (tokens)."""

# ------------------------------------------------------------------ text pools

_ENGLISH = (
    "the of and to in is that it was for on are as with his they at be this from have or by one had not "
    "but what all were when we there can an your which their said if do will each about how up out them "
    "then she many some so these would other into has more her two like him see time could no make than "
    "first been its who now people my made over did down only way find use may water long little very "
    "after words called just where most know river mountain sentence question system answer context window "
    "token server request model cache prefix latency throughput deployment"
).split()
_CODE_LINES = (
    "def handler(request, *, timeout=30):",
    "    if not request.get('messages'):",
    "        raise ValueError(f'bad request: {request!r}')",
    "for (int i = 0; i < n; ++i) { acc += buf[i] * 0x1f; }",
    "const result = await fetch(`${base}/v1/models`, { headers });",
    "SELECT id, name FROM users WHERE created_at > NOW() - INTERVAL '1 day';",
    "    return {k: v for k, v in sorted(items.items()) if v is not None}",
    "fn main() -> Result<(), Box<dyn Error>> { let x = vec![1, 2, 3]; Ok(()) }",
    "<div class=\"row\"><span id='n'>{{ value | escape }}</span></div>",
    "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 42); return 0; }",
)
_CJK = "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立马命张活难神数件安表原车白应路期叫死常提感金何更反合放做系计或司利受光王果亲界及今京务制解各任至清物台象记边共风战干接它许八特觉望直服毛林题建南度统色字请交爱让认算论百吃义科怎元社术结六功指思非流每青管夫连远资队跟带花快条院变联言权往展该领传近留红治决周保达办运武半候七必城父强步完革深区即求品士转量空甚众技轻程告江语英基"
_EMOJI = "😀😃😄😁😆😅🤣😂🙂🙃😉😊😇🥰😍🤩😘😗☺😚😙🥲😋😛😜🤪😝🤑🤗🤭🤫🤔🤐🤨😐😑😶😏😒🙄😬🤥😌😔😪🤤😴😷🤒🤕🤢🤮🤧🥵🥶🥴😵🤯🤠🥳🥸😎🤓🧐👍🏽👨‍👩‍👧‍👦🏳️‍🌈🇯🇵🇫🇷"
_RTL = "مرحبا بالعالم هذا نص عربي طويل للاختبار שלום עולם זהו טקסט בעברית לבדיקה "
_ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u0301\u0308\u20dd"
_SURROGATES = "\ud800\udbff\udc00\udfff"

# approximate cl100k characters per token of each text kind (only sizes depend on it)
_CHARS_PER_TOKEN = {"english": 4.6, "code": 3.0, "cjk": 0.8, "emoji": 0.5, "rtl": 1.6, "zero_width": 0.6,
                    "surrogates": 1.0, "mixed": 1.6}
_TEXT_KINDS = (("english", 60), ("code", 10), ("cjk", 8), ("emoji", 4), ("rtl", 5), ("zero_width", 3),
               ("surrogates", 2), ("mixed", 8))

# main-text size classes: (name, weight, low, high) in approximate tokens
_SIZES = (
    ("tiny", 28, 1, 50),
    ("small", 22, 50, 2_000),
    ("medium", 10, 2_000, 9_000),
    ("warm_zone", 9, int(0.58 * FAST_WINDOW), int(0.75 * FAST_WINDOW)),
    ("near_window", 12, int(0.85 * FAST_WINDOW), FAST_WINDOW),
    ("just_over", 9, FAST_WINDOW, int(1.25 * FAST_WINDOW)),
    ("between", 8, int(1.25 * FAST_WINDOW), 60_000),
    ("beyond_slow", 2, SLOW_WINDOW, SLOW_WINDOW + 8_000),
)

UNKNOWN_MODELS = ("nope", "", "FAST", "fast ", "gpt-4o", "hosted_vllm/fast-8b", "slow/../fast", "模型")
SESSION_VALUES = ("", " ", "null", "0", "s" * 4096, "../../etc/passwd", "a,b", "\t", "%00", "ünïcödé", "😀")


@dataclass(frozen=True)
class Case:
    """One generated client request.

    ``body`` is the JSON value to send (usually a dict; ``None`` when ``raw`` is set), ``raw``
    bytes to send instead of JSON (invalid JSON on purpose), ``headers`` extra request headers
    (str → str, or str → bytes for values that are not ASCII), ``tags`` the generator's choices
    (``name`` or ``name=value``), ``size_tokens`` the drawn main-text size (approximate tokens).
    """

    seed: int
    index: int
    endpoint: str
    body: Any
    headers: dict[str, Any] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    size_tokens: int = 0
    raw: bytes | None = None

    @property
    def case_id(self) -> str:
        return f"{self.seed}:{self.index}"

    def to_json(self) -> dict[str, Any]:
        """A JSON-able record (for failure files): the body itself, headers as text."""
        return {
            "seed": self.seed, "index": self.index, "endpoint": self.endpoint, "tags": list(self.tags),
            "size_tokens": self.size_tokens,
            "headers": {k: (v.decode("latin-1") if isinstance(v, bytes) else v) for k, v in self.headers.items()},
            "body": self.body, "raw": None if self.raw is None else self.raw.decode("utf-8", "replace"),
        }


def _weighted(rng: random.Random, table: tuple[tuple[Any, ...], ...]) -> tuple[Any, ...]:
    total = sum(row[1] for row in table)
    pick = rng.uniform(0, total)
    for row in table:
        pick -= row[1]
        if pick <= 0:
            return row
    return table[-1]


def _text(rng: random.Random, kind: str, tokens: int) -> str:
    """About ``tokens`` cl100k tokens of ``kind`` text (whole pieces, so never empty for tokens ≥ 1)."""
    chars = max(1, int(tokens * _CHARS_PER_TOKEN[kind]))
    if kind == "english":
        words = rng.choices(_ENGLISH, k=chars // 5 + 1)
        return " ".join(words)[:chars].rstrip() or "hello"
    if kind == "code":
        lines = rng.choices(_CODE_LINES, k=chars // 45 + 1)
        return "\n".join(lines)[:chars] or "x = 1"
    if kind == "cjk":
        return "".join(rng.choices(_CJK, k=chars))
    if kind == "emoji":
        return "".join(rng.choices(_EMOJI, k=chars))
    if kind == "rtl":
        start = rng.randrange(len(_RTL))
        return ((_RTL[start:] + _RTL) * (chars // len(_RTL) + 2))[:chars]
    if kind == "zero_width":
        base = rng.choices(_ENGLISH, k=chars // 6 + 1)
        return "".join(w + rng.choice(_ZERO_WIDTH) for w in base)[:chars]
    if kind == "surrogates":
        base = rng.choices(_ENGLISH, k=chars // 6 + 1)
        return " ".join(w + (rng.choice(_SURROGATES) if rng.random() < 0.2 else "") for w in base)[:chars]
    # mixed: runs of each kind
    out, left = [], tokens
    while left > 0:
        sub = rng.choice(("english", "code", "cjk", "emoji", "rtl", "zero_width"))
        run = min(left, rng.randint(5, 400))
        out.append(_text(rng, sub, run))
        left -= run
    return " ".join(out)


# ------------------------------------------------------------------ building blocks

def _tool(rng: random.Random, name: str, description_tokens: int = 20) -> dict[str, Any]:
    props = {f"arg_{i}": {"type": rng.choice(["string", "integer", "boolean"]), "description": _text(rng, "english", 8)}
             for i in range(rng.randint(0, 4))}
    return {"type": "function", "function": {
        "name": name, "description": _text(rng, "english", description_tokens),
        "parameters": {"type": "object", "properties": props, "required": list(props)[:1]},
    }}


def _huge_tool(rng: random.Random, tokens: int) -> dict[str, Any]:
    fields = max(1, tokens // 60)
    return {"type": "function", "function": {
        "name": "huge_schema", "description": _text(rng, "english", 40),
        "parameters": {"type": "object", "properties": {
            f"field_{i}": {"type": "string", "description": _text(rng, "english", 50)} for i in range(fields)}},
    }}


def _tool_call(rng: random.Random, call_id: str) -> dict[str, Any]:
    args = json.dumps({"query": _text(rng, "english", 6), "limit": rng.randint(1, 50)})
    return {"id": call_id, "type": "function", "function": {"name": "search", "arguments": args}}


def _deep(depth: int, leaf: Any) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def _parts(rng: random.Random, text: str, tags: list[str]) -> list[Any]:
    """Content as a list of parts; mostly valid ``text`` / ``image_url`` / ``input_audio``."""
    chunks = [text] if len(text) < 200 or rng.random() < 0.5 else [text[: len(text) // 2], text[len(text) // 2:]]
    parts: list[Any] = [{"type": "text", "text": c} for c in chunks]
    roll = rng.random()
    if roll < 0.25:
        parts.append({"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUg=="}})
        tags.append("part=image_url")
    elif roll < 0.32:
        parts.append({"type": "image_url", "image_url": {"url": "https://example.invalid/cat.png", "detail": "low"}})
        tags.append("part=image_url_http")
    elif roll < 0.4:
        parts.append({"type": "input_audio", "input_audio": {"data": "UklGRiQAAABXQVZFZm10IBAAAAABAAEA", "format": "wav"}})
        tags.append("part=input_audio")
    rng.shuffle(parts)
    return parts


# ------------------------------------------------------------------ chat bodies

def _chat_messages(rng: random.Random, text: str, tags: list[str], *, spread: bool) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = []
    first = rng.random()
    if first < 0.35:
        msgs.append({"role": "system", "content": _text(rng, "english", rng.randint(5, 60))})
        tags.append("system")
    elif first < 0.45:
        msgs.append({"role": "developer", "content": _text(rng, "english", rng.randint(5, 40))})
        tags.append("developer")
    shape = rng.random()
    if spread and shape < 0.4:
        # multi-turn: the text spread over several turns
        turns = rng.randint(2, 6)
        step = max(1, len(text) // turns)
        pieces = [text[i * step:(i + 1) * step] for i in range(turns - 1)] + [text[(turns - 1) * step:]]
        for i, piece in enumerate(pieces):
            if i:
                msgs.append({"role": "assistant", "content": _text(rng, "english", rng.randint(3, 40))})
            msgs.append({"role": "user", "content": piece or "go on"})
        tags.append(f"turns={turns}")
    elif shape < 0.55:
        # tool round trip: the text is the tool result
        msgs.append({"role": "user", "content": _text(rng, "english", rng.randint(5, 30))})
        calls = [_tool_call(rng, f"call_{i}") for i in range(rng.randint(1, 3))]
        msgs.append({"role": "assistant", "content": None, "tool_calls": calls})
        for i, call in enumerate(calls):
            msgs.append({"role": "tool", "tool_call_id": call["id"], "content": text if i == 0 else "ok"})
        tags.append("tool_round_trip")
    elif shape < 0.6:
        msgs.append({"role": "user", "content": _text(rng, "english", 10)})
        msgs.append({"role": "assistant", "content": None, "function_call": {"name": "lookup", "arguments": "{}"}})
        msgs.append({"role": "function", "name": "lookup", "content": text})
        tags.append("function_role")
    elif shape < 0.72:
        msgs.append({"role": "user", "content": _parts(rng, text, tags)})
        tags.append("content=parts")
    else:
        msgs.append({"role": "user", "content": text})
    if msgs[-1]["role"] not in ("user", "tool", "function"):
        msgs.append({"role": "user", "content": "continue"})
    return msgs


def _budget(rng: random.Random, tags: list[str], size: int, endpoint: str) -> tuple[str | None, Any]:
    """(field name or None, value) of the output budget, valid values only (odd ones are a mutation).

    Budgets that overflow the fast window with this prompt are drawn near the window's edge;
    large budgets on small prompts are rare (every token is generated and relayed: slow)."""
    # max_completion_tokens is a chat field; on /v1/completions LiteLLM 1.108.7 answers 500 to it
    name = "max_tokens" if rng.random() < (0.75 if endpoint == CHAT else 0.97) else "max_completion_tokens"
    roll = rng.random()
    if roll < 0.3:
        return None, None
    if roll < 0.78:
        value = rng.choice((8, 16, 32, 64, 128, 256, 512, 1024))
    elif roll < 0.85:
        value = 1
    elif roll < 0.97:
        # overflow the fast window by a little or a lot, or just fit it
        value = max(1, FAST_WINDOW - size + rng.choice((-400, -50, 0, 1, 50, 300, 2_000)))
        value = min(value, rng.choice((2_048, 4_096, 8_192)))
    else:
        value = rng.choice((FAST_WINDOW, FAST_WINDOW - 100, 12_000))
    tags.append(f"{name}={value}")
    return name, value


def _odd_budget(rng: random.Random, tags: list[str]) -> Any:
    value = rng.choice((0, 0, -5, -5, -1, 100_000, 10**9, FAST_WINDOW + 1, SLOW_WINDOW + 1, "100", "many", 100.0, 12.5,
                        True, False, None, [16], {"n": 1}))
    tags.append(f"odd_budget={value!r}")
    return value


def _chat_body(rng: random.Random, text: str, size: int, tags: list[str]) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "fast", "messages": _chat_messages(rng, text, tags, spread=size > 200)}
    name, value = _budget(rng, tags, size, CHAT)
    if name:
        body[name] = value
    if rng.random() < 0.2:
        body["tools"] = [_tool(rng, f"tool_{i}") for i in range(rng.randint(1, 5))]
        tags.append(f"tools={len(body['tools'])}")
        if rng.random() < 0.4:
            body["tool_choice"] = rng.choice(("auto", "none", "required",
                                              {"type": "function", "function": {"name": "tool_0"}}))
            tags.append("tool_choice")
    if rng.random() < 0.15:
        body["temperature"] = rng.choice((0, 0.7, 1.0))
    return body


# ------------------------------------------------------------------ text-completion bodies

def _completion_body(rng: random.Random, text: str, size: int, tags: list[str]) -> dict[str, Any]:
    roll = rng.random()
    if roll < 0.82:
        prompt: Any = text
    elif roll < 0.95:
        prompt = [text]
        tags.append("prompt=list1")
    else:
        prompt = [rng.randrange(50_000) for _ in range(max(1, min(size, 20_000)))]
        tags.append("prompt=token_ids")
    body: dict[str, Any] = {"model": "fast", "prompt": prompt}
    name, value = _budget(rng, tags, size, COMPLETIONS)
    if name:
        body[name] = value
    if rng.random() < 0.1:
        body["echo"] = False
    return body


# ------------------------------------------------------------------ mutations (malformed or unusual)

def _last_message(body: dict[str, Any], endpoint: str) -> dict[str, Any] | None:
    """The last chat message when it is a dict (an earlier mutation may have broken the list)."""
    messages = body.get("messages")
    if endpoint != CHAT or not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
        return None
    return messages[-1]


def _m_content_none(rng, body, tags, endpoint):
    last = _last_message(body, endpoint)
    if last is None:
        return False
    last["content"] = None
    return True


def _m_content_number(rng, body, tags, endpoint):
    last = _last_message(body, endpoint)
    if last is None:
        return False
    last["content"] = rng.choice((42, 3.14, True, {"text": "hi"}, [], ""))
    return True


def _m_bad_parts(rng, body, tags, endpoint):
    last = _last_message(body, endpoint)
    if last is None:
        return False
    bad = rng.choice((
        {"type": "hologram", "data": 1},
        {"text": "no type"},
        {"type": "text"},
        {"type": "text", "text": 12345},
        {"type": "image_url"},
        {"type": "image_url", "image_url": "not-a-dict"},
        {"type": "input_audio", "input_audio": {}},
        "a bare string part",
        None,
        {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0x"}},
    ))
    content = last.get("content")
    parts = content if isinstance(content, list) else ([{"type": "text", "text": content}] if isinstance(content, str) else [])
    last["content"] = parts + [bad]
    tags.append(f"bad_part={json.dumps(bad)[:40]}")
    return True


def _m_unknown_role(rng, body, tags, endpoint):
    if endpoint != CHAT or not isinstance(body.get("messages"), list):
        return False
    role = rng.choice(("robot", "", None, "USER", "tool", "function", "assistant", 7))
    body["messages"].insert(rng.randrange(len(body["messages"]) + 1), {"role": role, "content": "odd turn"})
    tags.append(f"role={role!r}")
    return True


def _m_missing_role(rng, body, tags, endpoint):
    last = _last_message(body, endpoint)
    if last is None:
        return False
    last.pop("role", None)
    return True


def _m_messages_shape(rng, body, tags, endpoint):
    if endpoint != CHAT:
        return False
    choice = rng.choice(("string", "empty", "dict", "missing", "none", "list_of_strings", "nested"))
    if choice == "string":
        body["messages"] = "hello"
    elif choice == "empty":
        body["messages"] = []
    elif choice == "dict":
        body["messages"] = {"role": "user", "content": "hi"}
    elif choice == "missing":
        body.pop("messages", None)
    elif choice == "none":
        body["messages"] = None
    elif choice == "list_of_strings":
        body["messages"] = ["hi", "there"]
    else:
        body["messages"] = [[{"role": "user", "content": "hi"}]]
    tags.append(f"messages={choice}")
    return True


def _m_deep_nesting(rng, body, tags, endpoint):
    depth = rng.choice((50, 200, 500, 900, 1000))
    last = _last_message(body, endpoint)
    if last is not None:
        last["content"] = _deep(depth, {"type": "text", "text": "deep"})
    elif endpoint == COMPLETIONS:
        body["prompt"] = _deep(depth, "deep")
    else:
        return False
    tags.append(f"depth={depth}")
    return True


def _m_tools(rng, body, tags, endpoint):
    choice = rng.choice(("empty", "huge", "no_function", "retrieval", "params_string", "dict", "none", "nameless",
                         "functions_valid", "functions_junk", "many"))
    if choice == "empty":
        body["tools"] = []
    elif choice == "huge":
        body["tools"] = [_huge_tool(rng, rng.choice((2_000, 8_000, 20_000)))]
    elif choice == "no_function":
        body["tools"] = [{"type": "function"}]
    elif choice == "retrieval":
        body["tools"] = [{"type": "retrieval"}]
    elif choice == "params_string":
        body["tools"] = [{"type": "function", "function": {"name": "f", "parameters": "{not json"}}]
    elif choice == "dict":
        body["tools"] = {"type": "function", "function": {"name": "f"}}
    elif choice == "none":
        body["tools"] = None
    elif choice == "nameless":
        body["tools"] = [{"type": "function", "function": {"description": "no name"}}]
    elif choice == "functions_valid":
        body["functions"] = [{"name": "lookup", "description": "look up", "parameters": {"type": "object", "properties": {}}}]
    elif choice == "functions_junk":
        body["functions"] = rng.choice(("all", [1, 2], [{"no": "name"}], {}))
    else:
        body["tools"] = [_tool(rng, f"t{i}", 5) for i in range(64)]
    tags.append(f"tools={choice}")
    return True


def _m_output_fields(rng, body, tags, endpoint):
    choice = rng.choice(("max_tokens", "max_completion_tokens", "both", "both_conflict"))
    if choice in ("max_tokens", "max_completion_tokens"):
        body[choice] = _odd_budget(rng, tags)
    elif choice == "both":
        body["max_tokens"] = rng.choice((16, 4_096, 0, -5, 20_000))
        body["max_completion_tokens"] = rng.choice((16, 8_192, 0, 1, None))
        tags.append(f"both={body['max_tokens']},{body['max_completion_tokens']}")
    else:
        body["max_tokens"], body["max_completion_tokens"] = 1, rng.choice((4_096, FAST_WINDOW, 100_000))
        tags.append(f"both_conflict=1,{body['max_completion_tokens']}")
    return True


def _m_stream(rng, body, tags, endpoint):
    choice = rng.choice(("true", "true_usage", "false_with_options", "string", "null", "true_usage_false"))
    if choice == "true":
        body["stream"] = True
    elif choice == "true_usage":
        body["stream"], body["stream_options"] = True, {"include_usage": True}
    elif choice == "false_with_options":
        body["stream"], body["stream_options"] = False, {"include_usage": True}
    elif choice == "string":
        body["stream"] = "yes"
    elif choice == "null":
        body["stream"] = None
    else:
        body["stream"], body["stream_options"] = True, {"include_usage": False, "junk": 1}
    tags.append(f"stream={choice}")
    return True


def _m_n(rng, body, tags, endpoint):
    body["n"] = rng.choice((1, 2, 0, -1, "2", 1.5, None))
    tags.append(f"n={body['n']!r}")
    return True


def _m_prompt_shape(rng, body, tags, endpoint):
    if endpoint != COMPLETIONS:
        return False
    choice = rng.choice(("empty_string", "empty_list", "list_of_strings", "token_lists", "empty_token_list", "none",
                         "number", "mixed_list", "negative_ids", "missing"))
    values = {
        "empty_string": "", "empty_list": [], "list_of_strings": ["first prompt", "second prompt"],
        "token_lists": [[101, 102, 103], [104, 105]], "empty_token_list": [[]], "none": None, "number": 42,
        "mixed_list": ["text", [1, 2, 3]], "negative_ids": [-1, -2, 3],
    }
    if choice == "missing":
        body.pop("prompt", None)
    else:
        body["prompt"] = values[choice]
    tags.append(f"prompt={choice}")
    return True


def _m_metadata(rng, body, tags, endpoint):
    choice = rng.choice(("kvwarm", "kvwarm", "junk", "string", "list", "session", "nested", "none"))
    if choice == "kvwarm":
        body["metadata"] = {
            "kvwarm_warm": True, "kvwarm_request_kind": "warm", "kvwarm_estimate": rng.choice((1, 10**9, -3, "x")),
            "kvwarm_replica": "http://127.0.0.1:1/v1", "kvwarm_session": "forged", "kvwarm_exact_tokens": 5,
            "kvwarm_escalated": True, "kvwarm_" + _text(rng, "english", 2).replace(" ", "_"): {"a": [1]},
        }
    elif choice == "junk":
        body["metadata"] = {"tags": ["a", 1, None], "x" * 300: "y", "emoji😀": _text(rng, "emoji", 5)}
    elif choice == "string":
        body["metadata"] = "not a dict"
    elif choice == "list":
        body["metadata"] = [1, 2, 3]
    elif choice == "session":
        body["metadata"] = {"session_id": rng.choice(SESSION_VALUES[:10])}
    elif choice == "nested":
        body["metadata"] = {"deep": _deep(rng.choice((20, 300)), {"k": "v"})}
    else:
        body["metadata"] = None
    tags.append(f"metadata={choice}")
    return True


def _m_model(rng, body, tags, endpoint):
    choice = rng.choice(UNKNOWN_MODELS + (None, 123, "missing"))
    if choice == "missing":
        body.pop("model", None)
    else:
        body["model"] = choice
    tags.append(f"model={choice!r}")
    return True


def _m_client_fallbacks(rng, body, tags, endpoint):
    body["context_window_fallbacks"] = rng.choice(([], [{"fast": ["slow"]}], [{"fast": ["nope"]}], "junk"))
    tags.append(f"client_cwf={json.dumps(body['context_window_fallbacks'])}")
    return True


def _m_junk_fields(rng, body, tags, endpoint):
    body.update(rng.choice((
        {"temperature": "hot"}, {"top_p": 7}, {"stop": 5}, {"logprobs": "yes"}, {"seed": "abc"},
        {"response_format": {"type": "json_object"}}, {"user": 12345}, {"cache_salt": ""}, {"cache_salt": "client-salt"},
        {"frequency_penalty": None}, {"extra_body": {"x": 1}},
    )))
    tags.append("junk_fields")
    return True


_MUTATIONS = (
    (_m_content_none, 5), (_m_content_number, 4), (_m_bad_parts, 6), (_m_unknown_role, 5), (_m_missing_role, 2),
    (_m_messages_shape, 4), (_m_deep_nesting, 2), (_m_tools, 6), (_m_output_fields, 12), (_m_stream, 8),
    (_m_n, 3), (_m_prompt_shape, 5), (_m_metadata, 7), (_m_model, 4), (_m_client_fallbacks, 3),
    (_m_junk_fields, 4),
)

_RAW_BODIES = (b"{not json", b"", b"[1, 2, 3]", b"null", b'{"model": "fast", "messages": [', b"\xff\xfe\x00",
               b'"just a string"')


def _headers(rng: random.Random, seed: int, tags: list[str]) -> dict[str, Any]:
    roll = rng.random()
    if roll < 0.55:
        return {}
    if roll < 0.85:
        # a small pool of sessions per seed, so some sessions come back with more turns
        tags.append("session=pool")
        return {"x-litellm-session-id": f"sess-{seed}-{rng.randrange(24)}"}
    value = rng.choice(SESSION_VALUES)
    tags.append(f"session_header={value[:12]!r}")
    return {"x-litellm-session-id": value.encode("utf-8")}


def make_case(seed: int, index: int) -> Case:
    """The ``index``-th case of run ``seed`` (deterministic; see module docstring)."""
    from differential_agents import agent_endpoint, make_agent_case  # it builds on this module

    agent = agent_endpoint(seed, index)
    if agent is not None:
        return make_agent_case(seed, index, agent)
    rng = random.Random(f"kvwarm-differential:{seed}:{index}")
    tags: list[str] = []
    endpoint = CHAT if rng.random() < 0.75 else COMPLETIONS
    headers = _headers(rng, seed, tags)
    if rng.random() < 0.01:
        raw = rng.choice(_RAW_BODIES)
        return Case(seed, index, endpoint, None, headers, tuple(tags + ["raw_body"]), 0, raw)
    size_name, _, low, high = _weighted(rng, _SIZES)
    size = rng.randint(low, high)
    kind = _weighted(rng, _TEXT_KINDS)[0] if size < 20_000 or rng.random() < 0.3 else "english"
    tags += [f"size={size_name}", f"text={kind}"]
    text = _text(rng, kind, size)
    body = (_chat_body if endpoint == CHAT else _completion_body)(rng, text, size, tags)
    if rng.random() < 0.06:
        body["model"] = "slow"
        tags.append("model='slow'")
    if rng.random() < 0.2:  # valid streams are common in real traffic
        body["stream"] = True
        if rng.random() < 0.5:
            body["stream_options"] = {"include_usage": True}
        tags.append("stream")
    roll = rng.random()
    mutations = 0 if roll < 0.62 else 1 if roll < 0.9 else 2
    table = tuple((fn, w) for fn, w in _MUTATIONS)
    applied = 0
    for _ in range(mutations * 4):
        if applied >= mutations:
            break
        fn = _weighted(rng, table)[0]
        if fn(rng, body, tags, endpoint):
            applied += 1
            tags.append(f"mut={fn.__name__[3:]}")
    return Case(seed, index, endpoint, body, headers, tuple(tags), size)


def generate(seed: int, count: int, start: int = 0) -> Iterator[Case]:
    """Cases ``start`` … ``start + count - 1`` of run ``seed``."""
    for index in range(start, start + count):
        yield make_case(seed, index)
