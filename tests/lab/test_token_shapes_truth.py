"""The estimator against real token counts (every calibration tokenizer available offline) on the
agent-shaped text the breaker found mispriced: dense text (base64, PEM, JWT, data URIs, JSON with
base64 fields, hex, DNA, protein) under the safe estimate, runs of one character priced per
character, aligned tables under the safe estimate. Each text is one user message, rendered in the
family's chat template; ``any`` is checked against the largest count over the families."""

from __future__ import annotations

import base64
import inspect
import json
import json.decoder
import random

import pytest

import numpy  # noqa: F401  (the calibrate extra: scripts/install.sh installs it)

from litellm_kvwarm.lab.calibration.families import FAMILIES, TokenCounter
from litellm_kvwarm.lab.calibration.templates import render
from litellm_kvwarm.token_runs import MEASURED_FAMILIES, RUN_PRICES
from litellm_kvwarm.token_weights import DENSE_TOKENS_PER_CHAR, dense_references
from litellm_kvwarm.tokens import calibrated_estimator, estimate_request

AVAILABLE = [f for f in FAMILIES.values() if f.available()]
_COUNTERS: dict[str, TokenCounter] = {}


def counter(name: str) -> TokenCounter:
    if name not in _COUNTERS:
        _COUNTERS[name] = TokenCounter(FAMILIES[name])
    return _COUNTERS[name]


def truth(name: str, text: str) -> int:
    family = FAMILIES[name]
    return counter(name).count_all([render(family.template, [{"role": "user", "content": text}], None)])[0]


def estimate(weights: str, text: str):
    return estimate_request({"messages": [{"role": "user", "content": text}]}, estimator=calibrated_estimator(weights))


RNG = random.Random(7)


def _b64(n: int) -> str:
    return base64.b64encode(RNG.randbytes(n)).decode()


def _lines(text: str, width: int) -> str:
    return "\n".join(text[i:i + width] for i in range(0, len(text), width))


def _seq(alphabet: str, n: int) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(n))


DENSE = {
    "base64": _b64(24_000),
    "pem": "-----BEGIN CERTIFICATE-----\n" + _lines(_b64(24_000), 64) + "\n-----END CERTIFICATE-----\n",
    "jwt": ".".join(base64.urlsafe_b64encode(RNG.randbytes(2400)).decode().rstrip("=") for _ in range(10)),
    "css_data_uri": "".join(f".i{i}{{background:url(data:image/png;base64,{_b64(600)})}}\n" for i in range(40)),
    "html_data_uri": "".join(f'<img src="data:image/jpeg;base64,{_b64(900)}" alt="x{i}">\n' for i in range(25)),
    "json_base64_field": json.dumps({"files": [{"name": f"f{i}.bin", "data": _b64(1500)} for i in range(20)]}, indent=2),
    "notebook_png": json.dumps({"cells": [{"outputs": [{"data": {"image/png": _lines(_b64(3000), 76) + "\n"}}]} for _ in range(8)]},
                               indent=1),
    "hex": RNG.randbytes(15_000).hex(),
    "sha256_list": "\n".join(RNG.randbytes(32).hex() for _ in range(450)),
    "dna_fasta": "".join(f">seq{i}\n" + _lines(_seq("ACGT", 1200), 60) + "\n" for i in range(25)),
    "protein_fasta": "".join(f">sp|P{i:05d}|PROT_HUMAN\n" + _lines(_seq("ACDEFGHIKLMNPQRSTVWY", 800), 60) + "\n" for i in range(30)),
    "api_keys": "\n".join("sk-" + _seq("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 48) for _ in range(500)),
}


@pytest.mark.parametrize("kind", sorted(DENSE))
def test_dense_text_is_never_under_the_safe_estimate(kind):
    """Breaker 2, item 2: base64 read 0.66–0.93 of the truth (o200k weights 0.66), DNA/protein 0.58."""
    text = DENSE[kind]
    counts = {f.name: truth(f.name, text) for f in AVAILABLE}
    for name, count in counts.items():
        assert estimate(name, text).safe >= count, (kind, name)
    assert estimate("any", text).safe >= max(counts.values()), kind


@pytest.mark.parametrize("family", [f.name for f in AVAILABLE if f.name in MEASURED_FAMILIES])
def test_dense_rates_table_holds_what_the_tokenizers_spend(family):
    """DENSE_TOKENS_PER_CHAR is what each tokenizer spends on the floor's reference texts (rounded up)."""
    for kind, text in dense_references().items():
        rate = counter(family).count_texts([text])[0] / len(text)
        assert rate <= DENSE_TOKENS_PER_CHAR[kind][family] <= rate + 0.002, (kind, family)


@pytest.mark.parametrize("family", [f.name for f in AVAILABLE if f.name in MEASURED_FAMILIES])
def test_run_prices_bound_what_each_measured_tokenizer_spends(family):
    """RUN_PRICES: a run of n (12..600, 2,048) characters costs at most ``per_run + n × safe_per_char``
    tokens in every measured family, alone or after a letter, a space, a line break or ``": "``."""
    contexts = [("", ""), ("x", "\n"), (" ", " a"), ("a", "b"), ("\n", "\n"), (": ", ".")]
    lengths = list(range(12, 140, 7)) + [255, 256, 257, 511, 600, 2048]
    for char, price in RUN_PRICES.items():
        texts = [a + b for a, b in contexts] + [a + char * n + b for a, b in contexts for n in lengths]
        counts = counter(family).count_texts(texts)
        base, runs = counts[: len(contexts)], counts[len(contexts):]
        for i, (a, b) in enumerate(contexts):
            for j, n in enumerate(lengths):
                spent = runs[i * len(lengths) + j] - base[i]
                assert spent <= price.per_run + n * price.safe_per_char, (family, repr(char), n, repr(a))


def _pytest_log() -> str:
    lines = ["=" * 29 + " test session starts " + "=" * 30, "platform linux -- Python 3.11.7", "collected 1834 items", ""]
    lines += [f"tests/test_module_{i}.py " + "." * RNG.randint(10, 60) + f" [{min(100, i * 2):3d}%]" for i in range(60)]
    lines += ["", "=" * 35 + " FAILURES " + "=" * 35, "_" * 27 + " test_edge_case[param-3] " + "_" * 28,
              "E       assert 41 == 42", "=" * 16 + " 1 failed, 1833 passed, 12 warnings in 41.27s " + "=" * 16]
    return "\n".join(lines)


RUNS = {
    "rules": "pytest output\n" + ("=" * 78 + "\n") * 200,
    "pytest_log": _pytest_log(),
    "progress_bars": "\n".join(f"{i:3d}% |{'#' * (i // 2)}{' ' * (50 - i // 2)}| {i}/100 [00:{i:02d}<00:{100 - i:02d}]"
                               for i in range(0, 101)),
    "box_rules": "\n".join("\u2500" * 60 + f"\n  item {i}" for i in range(150)),
    # pip / uv / rich progress lines: a 40-character bar of '━' (U+2501)
    "pip_progress": "\n".join(f"Downloading pkg{i}-1.{i}.0-py3-none-any.whl (1.{i} MB)\n   " + "\u2501" * 40
                               + f" 1.{i}/1.{i} MB {i % 9 + 1}.2 MB/s eta 0:00:00" for i in range(80)),
    "double_rules": "\n".join("\u2550" * 72 + f"\n  Table {i}: results\n" + "\u2550" * 72 for i in range(60)),
    "block_bars": "\n".join(f"epoch {i:3d} |" + "\u2588" * (i % 50 + 16) + " " * (50 - i % 50) + f"| loss={1 / (i + 1):.4f}"
                             for i in range(150)),
    "dash_separators": "\n".join(f"Chapter {i}. The model reads this line of prose.\n" + "\u2014" * 60 for i in range(80)),
    "ellipsis_leaders": "\n".join(f"Section {i} " + "\u2026" * 32 + f" page {i * 3}" for i in range(120)),
    "markdown": "\n".join(f"## Section {i}\n\nSome prose the model reads.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n" + "-" * 40
                          for i in range(40)),
}


@pytest.mark.parametrize("kind", sorted(RUNS))
def test_runs_of_one_character_are_priced_near_the_truth(kind):
    """Breaker 2, item 11: 200 lines of 78 '=' read routing 11,620 against ~410 (28x); progress bars
    4-5.6x. Routing now stays within 0.5-1.4x of the truth (qwen3.6 spends 3 tokens per rule line,
    the others 2); safe stays above it."""
    text = RUNS[kind]
    counts = {f.name: truth(f.name, text) for f in AVAILABLE}
    for name, count in counts.items():
        est = estimate(name, text)
        assert est.safe >= count, (kind, name)
        if name in MEASURED_FAMILIES:
            assert 0.5 <= est.routing / count <= 1.4, (kind, name, est.routing, count)
    assert estimate("any", text).safe >= max(counts.values())


def test_a_long_space_run_is_under_the_safe_estimate():
    """Breaker 2, item 15: 30,000 spaces (inside text: templates that trim content would drop a
    message of spaces only) read ~15 safe tokens."""
    text = "Output:\n" + " " * 30_000 + "\nend"
    counts = {f.name: truth(f.name, text) for f in AVAILABLE}
    for name, count in counts.items():
        assert estimate(name, text).safe >= count, name
    assert estimate("any", text).safe >= max(counts.values())


TABLES = {
    "ps_aux": "USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND\n" + "\n".join(
        f"{RNG.choice(['root', 'www-data', 'postgres']):<10}{RNG.randint(1, 99999):>7} {RNG.random() * 50:4.1f} {RNG.random() * 10:4.1f} "
        f"{RNG.randint(1000, 9999999):>7} {RNG.randint(100, 999999):>6} ?        Ss   Jan{RNG.randint(1, 28):02d}   "
        f"{RNG.randint(0, 99)}:{RNG.randint(0, 59):02d} /usr/bin/python3 --flag={i}" for i in range(200)),
    "pandas": "       id      price   qty        name\n" + "\n".join(
        f"{i:<5}{i * 7:>6} {RNG.random() * 1000:>10.4f} {RNG.randint(0, 999):>5} {'item-' + str(i):>11}" for i in range(300)),
    "right_aligned_floats": "\n".join(f"{i:>10}{RNG.random():>20.8f}{'x' * (i % 9):>15}" for i in range(300)),
    "kubectl": "NAME                                READY   STATUS    RESTARTS   AGE\n" + "\n".join(
        f"{'api-' + RNG.randbytes(5).hex() + '-' + RNG.randbytes(3).hex():<36}{RNG.randint(0, 3)}/3     "
        f"{RNG.choice(['Running', 'Pending']):<10}{RNG.randint(0, 50):<11}{RNG.randint(1, 99)}d" for _ in range(250)),
}


@pytest.mark.parametrize("kind", sorted(TABLES))
def test_aligned_tables_are_never_under_the_safe_estimate(kind):
    """Runs of spaces between columns (gaps) cost a token each; priced ~0 they left ps/pandas/kubectl
    output at 0.85-0.90 of the truth (qwen2.5, any)."""
    text = TABLES[kind]
    counts = {f.name: truth(f.name, text) for f in AVAILABLE}
    for name, count in counts.items():
        assert estimate(name, text).safe >= count, (kind, name)
    assert estimate("any", text).safe >= max(counts.values()), kind


def test_prose_and_code_are_not_inflated():
    """The dense floor and the run and gap prices leave ordinary text where the fit put it."""
    import inspect

    import litellm_kvwarm.planner as planner

    prose = "The proxy sends the request to the model, and the model answers the user. " * 150
    code = inspect.getsource(planner)
    for name in [f.name for f in AVAILABLE]:
        for text in (prose, code):
            ratio = estimate(name, text).safe / truth(name, text)
            assert 1.0 <= ratio <= 2.0, (name, ratio)


# ------------------------------------------------------------------ agent-shaped sweep (breaker 3)

SW = random.Random(11)


def _sw_b64(n: int) -> str:
    return base64.b64encode(SW.randbytes(n)).decode()


def _sw_pick(words: list[str], n: int, sep: str = " ") -> str:
    return sep.join(SW.choice(words) for _ in range(n))


_IDCHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"
_INNER_JSON = json.dumps({"status": "ok", "items": [{"id": i, "path": f"/srv/app/file_{i}.py", "ok": True} for i in range(60)]})
_PEM = "-----BEGIN CERTIFICATE-----\n" + _lines(_sw_b64(3000), 64) + "\n-----END CERTIFICATE-----\n"
_CODE = inspect.getsource(json.decoder)  # real code, from the standard library

#: Fault kinds and agent-shaped tool results (``SWEEP``: content the routing estimate should price within
#: 10% for most kinds). Dense text cut by short punctuation; digits (Qwen: one token per digit, a space
#: before a digit and letters after one are whole tokens); repeated multi-character patterns; short
#: lines and whitespace (DeepSeek and Llama 3 price breaks and tabs at 0); escaped JSON-in-JSON.
SHAPES = {
    # 1. dense text interrupted by short punctuation
    "json_array_b64_lines": json.dumps({"data": _lines(_sw_b64(4500), 76).split("\n")}),
    "json_array_b64_lines_indent": json.dumps({"data": _lines(_sw_b64(4500), 76).split("\n")}, indent=2),
    "python_list_b64": "DATA = [\n" + "".join(f"    '{line}',\n" for line in _lines(_sw_b64(4500), 76).split("\n")) + "]\n",
    "pem_in_json": json.dumps({"cert": _PEM, "key": _PEM}),
    "b64_chunks_16": ",".join(_lines(_sw_b64(4500), 16).split("\n")),
    "b64_chunks_8": ",".join(_lines(_sw_b64(4500), 8).split("\n")),
    "youtube_ids_json": json.dumps({"ids": ["".join(SW.choice(_IDCHARS) for _ in range(11)) for _ in range(500)]}),
    "upper_random_lines": "\n".join(_seq("ABCDEFGHIJKLMNOPQRSTUVWXYZ", 40) for _ in range(150)),
    "uuids": "\n".join("-".join(SW.randbytes(k).hex() for k in (4, 2, 2, 2, 6)) for _ in range(250)),
    # 2. digits
    "digits_long": "".join(str(SW.randint(0, 9)) for _ in range(6000)),
    "csv_floats": "\n".join(",".join(f"{SW.uniform(-1000, 1000):.6f}" for _ in range(8)) for _ in range(120)),
    "csv_floats_space": "\n".join(", ".join(f"{SW.uniform(-1000, 1000):.4f}" for _ in range(8)) for _ in range(120)),
    "timestamps": "\n".join(f"2024-{SW.randint(1, 12):02d}-{SW.randint(1, 28):02d}T{SW.randint(0, 23):02d}:{SW.randint(0, 59):02d}:"
                            f"{SW.randint(0, 59):02d}.{SW.randint(0, 999999):06d}Z" for _ in range(250)),
    "ids": "\n".join(str(SW.randint(10 ** 15, 10 ** 18)) for _ in range(350)),
    "json_numbers": json.dumps([[SW.randint(0, 10 ** 9) for _ in range(10)] for _ in range(50)]),
    "json_floats": json.dumps({"values": [SW.random() for _ in range(350)]}),
    "numpy_print": "array([" + ",\n       ".join(", ".join(f"{SW.gauss(0, 1): .8e}" for _ in range(4)) for _ in range(100)) + "])",
    "space_digits_table": "\n".join(" ".join(str(SW.randint(0, 99)) for _ in range(20)) for _ in range(100)),
    "ip_addrs": "\n".join(".".join(str(SW.randint(0, 255)) for _ in range(4)) + f":{SW.randint(1, 65535)}" for _ in range(350)),
    # 3. repeated multi-character patterns
    "abc_repeat": "abc" * 3000,
    "eqdash": "-=" * 4000,
    "br_repeat": "<br>" * 2000,
    "nbsp_repeat": "&nbsp;" * 1500,
    "xml_empty_tags": "<a/>" * 2000,
    "hexdump_00": ", ".join(["0x00"] * 2000),
    "hexdump_rand": ",\n".join(", ".join(f"0x{SW.randint(0, 255):02x}" for _ in range(12)) for _ in range(150)),
    "hexdump_upper": ",\n".join(", ".join(f"0x{SW.randint(0, 255):02X}" for _ in range(12)) for _ in range(150)),
    "tab_aligned_kv": "\n".join(f"key_{i}:\t\t\tvalue {i}" for i in range(400)),
    "tabs_in_text": "header\n" + "\t \t\n" * 2000 + "footer",
    "blank_lines_space": "start" + "\n \n" * 2000 + "end",
    "trailing_space_lines": "\n".join(f"value = {i}   " for i in range(600)),
    # short lines
    "word_per_line": "\n".join(SW.choice(["TODO", "done", "pending", "error", "OK", "skip"]) for _ in range(1500)),
    "ls_one_per_line": "\n".join(f"{SW.choice(['main', 'util', 'test', 'config'])}_{SW.choice(['a', 'core', 'io'])}."
                                 f"{SW.choice(['py', 'md', 'json'])}" for _ in range(600)),
    "tsv_words": "\n".join(_sw_pick(["alpha", "beta", "gamma", "delta", "eps"], 6, "\t") for _ in range(300)),
}
SWEEP = {
    "minified_js": "".join(f"function {SW.choice('abcdefghnprstu')}{SW.choice('eilost')}({SW.choice('abcde')},{SW.choice('nrst')})"
                           f"{{var {SW.choice('iou')}={SW.choice('abcde')}.{SW.choice(['length', 'map', 'push', 'call'])}"
                           f"({SW.randint(0, 99)});return {SW.choice('iou')}?{SW.choice('abcde')}+{SW.randint(0, 9)}:void 0}};"
                           for _ in range(250)),
    "json_unicode_escapes": json.dumps([{"name": "Ren\u00e9e Caf\u00e9 M\u00fcller", "city": "Z\u00fcrich \u00e0 Orl\u00e9ans",
                                         "note": "na\u00efve fa\u00e7ade \u2014 \u201cquoted\u201d"} for _ in range(80)]),
    "json_cjk_escapes": json.dumps([{"title": "数据库连接失败，请检查配置文件", "msg": "エラーが発生しました"} for _ in range(60)]),
    "json_in_json": json.dumps({"role": "tool", "content": _INNER_JSON}),
    "json_in_json_in_json": json.dumps({"result": json.dumps({"content": _INNER_JSON})}),
    "diff": "\n".join(f"@@ -{i * 10},7 +{i * 10},8 @@ def f{i}(x):\n-    return x + {i}\n+    return x * {i}  # changed\n+    # note\n     pass"
                      for i in range(120)),
    "stack_trace": "Traceback (most recent call last):\n" + "".join(
        f'  File "/usr/lib/python3.11/site-packages/pkg{i}/module_{i}.py", line {SW.randint(1, 999)}, in handler_{i}\n'
        "    result = self._dispatch(request, *args, **kwargs)\n" for i in range(60)) + "ValueError: bad value\n",
    "java_trace": "java.lang.NullPointerException: null\n" + "".join(
        f"\tat com.example.service.impl.OrderServiceImpl$Inner{i}.process(OrderServiceImpl.java:{SW.randint(10, 900)})\n" for i in range(120)),
    "cjk_code_comments": "\n".join(f"def handler_{i}(request):\n    # 处理用户请求并返回结果，第{i}步\n    data = request.get('data')  # 获取数据\n"
                                   "    return data" for i in range(80)),
    "emoji_text": _sw_pick(["🚀 launch", "✅ done", "🔥 hot", "👍", "🎉🎉", "❌ failed", "⚠️ warning", "👨‍👩‍👧 family"], 600),
    "url_heavy": "\n".join(f"https://example-{i}.com/api/v2/users/{SW.randint(1000, 99999)}/orders?page={i}&sort=desc&token="
                           + base64.urlsafe_b64encode(SW.randbytes(12)).decode() for i in range(100)),
    "long_single_line": " ".join(_CODE.split()),
    "python_code": _CODE,
    "go_code": "\n".join(f"func (s *Server) Handle{i}(ctx context.Context, req *pb.Request) (*pb.Response, error) {{\n"
                         f"\tif err := s.validate(req); err != nil {{\n\t\treturn nil, fmt.Errorf(\"handle{i}: %w\", err)\n\t}}\n"
                         "\treturn &pb.Response{}, nil\n}\n" for i in range(60)),
    "git_log": "\n".join(f"{SW.randbytes(20).hex()} {SW.choice(['fix', 'feat', 'chore'])}: update module {i} ({SW.randint(1, 9)} files)"
                         for i in range(200)),
    "log_lines": "\n".join(f"2024-05-{SW.randint(1, 28):02d} {SW.randint(0, 23):02d}:{SW.randint(0, 59):02d}:{SW.randint(0, 59):02d},"
                           f"{SW.randint(0, 999):03d} INFO [worker-{SW.randint(1, 16)}] req_id={SW.randbytes(6).hex()} GET "
                           f"/api/v1/items/{SW.randint(1, 9999)} 200 {SW.randint(1, 900)}ms" for _ in range(150)),
    "html": "".join(f'<div class="row col-md-{i % 12}"><a href="/p/{i}" data-id="{SW.randint(1, 9999)}">Item {i}</a><br></div>\n'
                    for i in range(200)),
    "markdown_table": "| name | value | unit |\n|---|---|---|\n" + "\n".join(f"| metric_{i} | {SW.random() * 100:.3f} | ms |" for i in range(300)),
    "sql": "\n".join(f"INSERT INTO orders (id, user_id, amount, created_at) VALUES ({i}, {SW.randint(1, 999)}, {SW.random() * 500:.2f}, "
                     f"'2024-01-{SW.randint(1, 28):02d} 10:00:00');" for i in range(150)),
    "yaml": "\n".join(f"  - name: svc-{i}\n    image: registry.example.com/team/svc-{i}:v1.{i}.0\n    replicas: {SW.randint(1, 5)}\n"
                      f"    env:\n      - {{name: PORT, value: \"{8000 + i}\"}}" for i in range(80)),
    "jwt_headers": "\n".join(f"Authorization: Bearer {base64.urlsafe_b64encode(SW.randbytes(30)).decode()}."
                             f"{base64.urlsafe_b64encode(SW.randbytes(90)).decode()}" for _ in range(40)),
    "russian_log": "\n".join(f"Ошибка подключения к базе данных: таймаут {SW.randint(1, 99)} сек" for _ in range(200)),
    "camel_java": "\n".join(f"    private final OrderRepository orderRepository{i} = new OrderRepositoryImpl(dataSourceConfig, "
                            "cacheManagerFactory.getInstance());" for i in range(80)),
}
SHAPES.update(SWEEP)
REPEATS = ["abc_repeat", "eqdash", "br_repeat", "nbsp_repeat", "xml_empty_tags", "hexdump_00", "hexdump_rand", "tab_aligned_kv"]
NUMBERS = ["digits_long", "csv_floats_space", "timestamps", "ids", "json_numbers", "json_floats", "numpy_print", "ip_addrs"]
_TRUTH: dict[str, dict[str, int]] = {}


def _counts(kind: str) -> dict[str, int]:
    if kind not in _TRUTH:
        _TRUTH[kind] = {f.name: truth(f.name, SHAPES[kind]) for f in AVAILABLE}
    return _TRUTH[kind]


@pytest.mark.parametrize("kind", sorted(SHAPES))
def test_agent_shapes_are_never_under_the_safe_estimate(kind):
    """Breaker 3: base64 as quoted lines read 0.77-0.91 of the truth (safe), numbers on Qwen 0.87-0.95,
    hex dumps 0.85-0.93, one word per line 0.66-0.96 (DeepSeek, Llama 3, o200k), whitespace lines 0.27."""
    text = SHAPES[kind]
    counts = _counts(kind)
    for name, count in counts.items():
        assert estimate(name, text).safe >= count, (kind, name, estimate(name, text).safe, count)
    assert estimate("any", text).safe >= max(counts.values()), kind


@pytest.mark.parametrize("kind", REPEATS)
def test_repeated_patterns_routing_is_not_wildly_above_the_truth(kind):
    """``-=-=-=`` read routing 10-14x its tokens; every repeated pattern here now stays under 1.5x."""
    text = SHAPES[kind]
    for name, count in _counts(kind).items():
        if name in MEASURED_FAMILIES:
            assert estimate(name, text).routing <= 1.5 * count, (kind, name, estimate(name, text).routing, count)


@pytest.mark.parametrize("kind", NUMBERS)
def test_numbers_routing_is_near_the_truth(kind):
    """cl100k, o200k, DeepSeek and Llama 3 spend one token per three digits; routing priced 0.7-0.8 per
    digit and read number tables 1.3-2.4x their tokens. Qwen (one per digit) leans low as before."""
    text = SHAPES[kind]
    for name, count in _counts(kind).items():
        assert estimate(name, text).routing <= 1.2 * count, (kind, name, estimate(name, text).routing, count)


@pytest.mark.parametrize("family", [f.name for f in AVAILABLE if f.name in MEASURED_FAMILIES])
def test_sweep_routing_is_within_ten_percent_for_most_kinds(family):
    """Agent tool results (code, JSON, logs, traces, tables, escaped JSON-in-JSON): routing ≤ 1.10x the
    truth on at least 80% of the kinds, never above 1.4x (the rest: Cyrillic, emoji and markdown tables
    in some vocabularies, where the fitted class weights run high)."""
    ratios = {kind: estimate(family, SWEEP[kind]).routing / _counts(kind)[family] for kind in SWEEP}
    within = [kind for kind, r in ratios.items() if r <= 1.10]
    assert len(within) >= 0.8 * len(ratios), {k: round(r, 2) for k, r in ratios.items() if r > 1.10}
    assert max(ratios.values()) <= 1.4, ratios
