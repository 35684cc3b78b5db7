"""Rendering an official Jinja chat template the way a server does (pure, no tokenizer).

:func:`render` follows Hugging Face ``transformers``' ``apply_chat_template(tokenize=False)``
(``transformers/utils/chat_template_utils.py``), which vLLM's ``/v1/chat/completions`` calls:

* an ``ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)`` with the
  ``loopcontrols`` extension;
* ``tojson`` replaced by ``json.dumps(x, ensure_ascii=False, indent=…, separators=…,
  sort_keys=False)`` (Jinja's own filter would HTML-escape);
* globals ``raise_exception`` (raises :class:`jinja2.TemplateError`) and ``strftime_now``;
* the template rendered with ``messages``, ``tools`` (``None`` when the request sends none),
  ``add_generation_prompt=True``, ``bos_token``/``eos_token`` from the tokenizer config and any
  extra keyword (vLLM's ``chat_template_kwargs``).

:func:`server_messages` first normalises an OpenAI request as vLLM does before templating
(``vllm/entrypoints/chat_utils.py``): content lists become one string (text parts joined with
``"\\n"``, its "string" content format), ``None`` content becomes ``""``, and assistant
``tool_calls[].function.arguments`` given as a JSON string are parsed into objects (``{}``
when empty; left as the string when it is not JSON).

:func:`split_specials` turns a rendered prompt into :data:`.handwritten.Segment` s: the text
between special tokens, and how many special tokens follow it. A tokenizer splits its added
tokens out before BPE, so counting segment by segment is exact.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from .handwritten import parsed_arguments

__all__ = ["render", "server_messages", "split_specials"]

Segment = tuple[str, int]


def _tojson(x: Any, ensure_ascii: bool = False, indent: int | None = None, separators: Any = None,
            sort_keys: bool = False) -> str:
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _raise_exception(message: str) -> None:
    from jinja2.exceptions import TemplateError

    raise TemplateError(message)


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


@functools.lru_cache(maxsize=1)
def _environment():
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env


@functools.lru_cache(maxsize=16)
def _compiled(source: str):
    return _environment().from_string(source)


def render(
    source: str,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None = None,
    *,
    bos_token: str | None = None,
    eos_token: str | None = None,
    add_generation_prompt: bool = True,
    **template_kwargs: Any,
) -> str:
    """The prompt text ``source`` (a Jinja chat template) renders for these messages.

    Raises :class:`jinja2.TemplateError` where the template refuses the conversation (its
    ``raise_exception``) or cannot render it (e.g. ``str + dict``); a server answers 400 there.
    """
    return _compiled(source).render(
        messages=list(messages),
        tools=list(tools) if tools else None,
        add_generation_prompt=add_generation_prompt,
        bos_token=bos_token,
        eos_token=eos_token,
        **template_kwargs,
    )


def _content(content: Any, media_text: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        pieces = []
        for part in content:
            if isinstance(part, str):
                pieces.append(part)
            elif isinstance(part, Mapping) and part.get("type", "text") in ("text", "input_text", "output_text"):
                pieces.append(str(part.get("text") or ""))
            else:
                pieces.append(media_text)
        return "\n".join(pieces)
    return str(content)


def _arguments(arguments: Any) -> Any:
    return parsed_arguments(arguments) if arguments else {}


def server_messages(messages: Iterable[Mapping[str, Any]], *, media_text: str = "") -> list[dict[str, Any]]:
    """Copies of ``messages`` as vLLM hands them to the template (see the module docstring).

    ``media_text`` stands in for each non-text content part (image, audio, file); the
    emulator passes its fixed-cost placeholder, calibration data has none.
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        copy = dict(message)
        copy["content"] = _content(message.get("content"), media_text)
        if message.get("role") == "assistant" and isinstance(message.get("tool_calls"), list):
            calls = []
            for call in message["tool_calls"]:
                call = dict(call)
                if isinstance(call.get("function"), Mapping):
                    function = dict(call["function"])
                    function["arguments"] = _arguments(function.get("arguments"))
                    call["function"] = function
                calls.append(call)
            copy["tool_calls"] = calls
        out.append(copy)
    return out


@functools.lru_cache(maxsize=16)
def _pattern(specials: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(s) for s in sorted(specials, key=len, reverse=True)))


def split_specials(text: str, specials: Sequence[str]) -> list[Segment]:
    """``text`` as segments: each piece of plain text and the count of special tokens after it.

    ``"".join`` of the texts is ``text`` without the specials; the counts add up to the
    number of special-token occurrences (longest match first, as a tokenizer's trie does).
    """
    out: list[Segment] = []
    position = 0
    for match in _pattern(tuple(specials)).finditer(text):
        piece = text[position : match.start()]
        if piece or not out:
            out.append((piece, 1))
        else:
            out[-1] = (out[-1][0], out[-1][1] + 1)
        position = match.end()
    tail = text[position:]
    if tail:
        out.append((tail, 0))
    return out
