"""Real material that agents put in tool results, found offline on this machine (I/O).

Every document records where it came from (``Doc.source``: a path, a commit, a language
folder). Kinds (:data:`AGENT_KINDS`) and their sources:

* ``code``: ``.py`` files of the installed packages (``.venv`` site-packages), ``.js`` files
  shipped in packages, C headers and sources under ``/usr``, Go files under ``/usr/share/doc``,
  and ``dataset-build``'s ``coding/`` samples (Rust, TypeScript, Go, Java, Kotlin, …), with
  their indentation as written.
* ``json``: LiteLLM's bundled JSON files and other package ``.json`` files, and BFCL v4 data
  and function docs (``bfcl_eval/data``), each re-serialised pretty (indent 2 or 4) or
  compact, chosen by a hash of the document id.
* ``logs``: ``/var/log`` text logs (dpkg, apt history/term, alternatives, fontconfig) and
  the session's install log, in :data:`LOG_CHUNK_LINES`-line chunks.
* ``diff``: ``git log -p`` of this repository, one commit per document.
* ``table``: Markdown files shipped in packages and under ``/usr/share/doc`` (READMEs, tables).
* ``prose``, ``cjk``, ``cyrillic``, ``arabic``, ``thai/other``: ``dataset-build`` prose
  (English; Chinese/Japanese/Korean; Russian/Ukrainian/Bulgarian/Serbian; Arabic/Hebrew;
  Thai/Hindi/Bengali) in :data:`PROSE_CHUNK_CHARS`-character chunks.
* ``symbols``: ``tree``-style listings (box drawing) of real directories, and seeded runs of
  Braille, arrows/math operators and emoji (what spinners, progress bars and chat text emit).
"""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .multilingual import prose_data_dir

__all__ = ["AGENT_KINDS", "Doc", "documents", "site_packages"]

AGENT_KINDS = ("code", "json", "logs", "diff", "table", "prose", "cjk", "cyrillic", "arabic", "thai/other", "symbols")
PROSE_LANGUAGES = {
    "prose": ("eng",), "cjk": ("zho", "jpn", "kor"), "cyrillic": ("rus", "ukr", "bul", "srp"),
    "arabic": ("ara", "heb"), "thai/other": ("tha", "hin", "ben"),
}
LOG_FILES = ("/var/log/dpkg.log", "/var/log/apt/history.log", "/var/log/apt/term.log", "/var/log/alternatives.log",
             "/var/log/fontconfig.log", "/tmp/install.log")
LOG_CHUNK_LINES = 150
PROSE_CHUNK_CHARS = 6000
#: CJK text packs ~3x the tokens per character: shorter chunks give as many documents to split.
CJK_CHUNK_CHARS = 2000
MIN_CHARS, MAX_CHARS = 400, 120_000
#: Documents kept per kind and source group (every n-th of the sorted candidates).
PER_GROUP = 80
REPO = Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class Doc:
    """One source document: ``kind`` (of :data:`AGENT_KINDS`), ``source`` (where it came from), text."""

    kind: str
    source: str
    text: str


def site_packages() -> Path:
    import sysconfig

    return Path(sysconfig.get_paths()["purelib"])


def _read(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return text if MIN_CHARS <= len(text) <= MAX_CHARS else None


def _spread(paths: list[Path], n: int = PER_GROUP) -> list[Path]:
    paths = sorted(paths)
    step = max(1, len(paths) // n)
    return paths[::step][:n]


def _files(kind: str, roots: list[Path], patterns: tuple[str, ...], n: int = PER_GROUP) -> Iterator[Doc]:
    found = [p for root in roots if root.is_dir() for pattern in patterns for p in root.rglob(pattern)
             if "node_modules" not in p.parts and p.is_file()]
    for path in _spread(found, 4 * n)[: 4 * n]:
        text = _read(path)
        if text is not None:
            yield Doc(kind, str(path), text)


def _hash(text: str) -> int:
    return hashlib.sha256(text.encode()).digest()[1]


def code_docs() -> Iterator[Doc]:
    sp = site_packages()
    yield from _take(_files("code", [sp], ("*.py",)), PER_GROUP)
    yield from _take(_files("code", [sp], ("*.js",)), PER_GROUP // 2)
    yield from _take(_files("code", [Path("/usr/include")], ("*.h",)), PER_GROUP // 2)
    yield from _take(_files("code", [Path("/usr/share"), Path("/usr/lib")], ("*.c", "*.go")), PER_GROUP // 2)
    coding = (prose_data_dir() or Path("/nonexistent")) / "coding"
    yield from _files("code", [coding], ("*.txt",))


def _take(docs: Iterator[Doc], n: int) -> Iterator[Doc]:
    for number, doc in enumerate(docs):
        if number >= n:
            return
        yield doc


def json_docs() -> Iterator[Doc]:
    sp = site_packages()
    candidates = sorted((sp / "litellm").glob("*.json")) + _spread(
        [p for p in sp.rglob("*.json") if "litellm" not in p.parts[-2:]], PER_GROUP)
    bfcl = sp / "bfcl_eval" / "data"
    candidates += sorted(bfcl.glob("BFCL_v4_*.json")) + sorted((bfcl / "multi_turn_func_doc").glob("*.json"))
    for path in candidates:
        try:
            raw = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        try:
            values = [json.loads(raw)]
        except ValueError:  # JSON lines: documents of 40 lines
            lines = [json.loads(line) for line in raw.splitlines() if line.strip()][:400]
            values = [lines[i : i + 40] for i in range(0, len(lines), 40)]
        for number, value in enumerate(values):
            source = f"{path}#{number}"
            style = _hash(source) % 3
            text = json.dumps(value, indent=(None, 2, 4)[style], ensure_ascii=bool(_hash(source) & 8))
            for start in range(0, min(len(text), 3 * MAX_CHARS), MAX_CHARS):  # huge files: first slices
                if len(text) - start >= MIN_CHARS:
                    yield Doc("json", f"{source}@{start}", text[start : start + MAX_CHARS])


def log_docs() -> Iterator[Doc]:
    for name in LOG_FILES:
        try:
            lines = Path(name).read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
        except OSError:
            continue
        for start in range(0, len(lines), LOG_CHUNK_LINES):
            text = "".join(lines[start : start + LOG_CHUNK_LINES])
            if len(text) >= MIN_CHARS:
                yield Doc("logs", f"{name}:{start + 1}", text)


def diff_docs() -> Iterator[Doc]:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "log", "-p", "--no-color", "--format=%x00commit %H%n%an%n%s", "-n", "200"],
                             capture_output=True, text=True, check=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return
    for chunk in out.split("\x00")[1:]:
        commit = chunk.split("\n", 1)[0].removeprefix("commit ")
        # one document per file of the commit: a tool result holds one file's diff, not a whole history
        for number, part in enumerate(chunk.split("\ndiff --git ")[1:]):
            text = "diff --git " + part
            if MIN_CHARS <= len(text) <= MAX_CHARS and not text.lstrip().startswith("diff --git a/tests/data"):
                yield Doc("diff", f"git:{commit[:12]}:{number}", text)


def table_docs() -> Iterator[Doc]:
    yield from _files("table", [site_packages(), Path("/usr/share/doc")], ("*.md",), 2 * PER_GROUP)


def prose_docs() -> Iterator[Doc]:
    directory = prose_data_dir()
    if directory is None:
        return
    for kind, languages in PROSE_LANGUAGES.items():
        for language in languages:
            text = "\n\n".join(f.read_text(encoding="utf-8") for f in sorted((directory / language).glob("*.txt")))
            size = CJK_CHUNK_CHARS if kind == "cjk" else PROSE_CHUNK_CHARS
            for start in range(0, len(text), size):
                if len(text) - start >= MIN_CHARS:
                    yield Doc(kind, f"dataset-build:{language}:{start}", text[start : start + size])


_RUNS = {
    "braille": (0x2800, 0x28FF), "arrows": (0x2190, 0x21FF), "math": (0x2200, 0x22FF), "blocks": (0x2580, 0x259F),
    "emoji": (0x1F300, 0x1F64F), "emoji2": (0x1F680, 0x1F6FF),
}


def symbol_docs() -> Iterator[Doc]:
    """Box-drawing ``tree`` listings of real folders, and seeded symbol runs of each block in :data:`_RUNS`."""
    roots = sorted(p for p in site_packages().iterdir() if p.is_dir() and not p.name.endswith("-info"))
    for root in _spread(roots, 40):
        lines = [root.name]
        _tree(root, "", lines, depth=0)
        text = "\n".join(lines[:3000])
        if len(text) >= MIN_CHARS:
            yield Doc("symbols", f"tree:{root}", text)
    for name, (lo, hi) in _RUNS.items():
        for number in range(12):
            rng = random.Random(f"{name}:{number}")
            size = int(300 * 1.6 ** rng.randint(0, 8))
            width = rng.choice((40, 60, 80))
            chars = "".join(chr(rng.randint(lo, hi)) for _ in range(size))
            text = "\n".join(chars[i : i + width] for i in range(0, size, width))
            yield Doc("symbols", f"seeded:{name}:{number}", text)


def _tree(folder: Path, prefix: str, lines: list[str], depth: int) -> None:
    if depth > 4 or len(lines) > 3000:
        return
    try:
        entries = sorted(folder.iterdir())[:40]
    except OSError:
        return
    for i, entry in enumerate(entries):
        last = i == len(entries) - 1
        lines.append(f"{prefix}{'└── ' if last else '├── '}{entry.name}")
        if entry.is_dir() and not entry.is_symlink():
            _tree(entry, prefix + ("    " if last else "│   "), lines, depth + 1)


def documents() -> list[Doc]:
    """Every document of every kind, in a stable order."""
    out: list[Doc] = []
    for source in (code_docs, json_docs, log_docs, diff_docs, table_docs, prose_docs, symbol_docs):
        out.extend(source())
    return out
