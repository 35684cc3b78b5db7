"""Context-length error parsing (pure), a breaker's round of 2026-12-05: texts cut inside the words after a number,
and wordings the parser read as nothing (Volcengine Ark, LlamaEdge, Tencent Cloud, LMDeploy, Chinese gateways). Each case read wrongly before (the comment says how), checked bare and in the wrappers real
messages travel in; cut texts also with the marks a truncation leaves.

Numbers are as printed: W window, P prompt, C requested output, T total, L a printed limit that is not the window. A
number that ends the text (or a text trimmed back to it) may have been cut, so it is a lower bound there.
"""

from __future__ import annotations

import json
import time

import pytest

from context_error_view import expected as _expected, view as _view
from test_context_error_breaker_round import ROUND_CUT_WRAPPERS as CUT_WRAPPERS  # bare, "...", " [truncated]", JSON
from litellm_kvwarm.context_error_cuts import looks_cut, numbers_read, trims
from litellm_kvwarm.context_errors import Certainty, ErrorKind, Limit, LimitMeaning, Number, parse_context_error

EXACT, LB = Certainty.EXACT, Certainty.LOWER_BOUND
K = ErrorKind
M = LimitMeaning

VLLM_0_18 = ("This model's maximum context length is 16384 tokens. However, you requested 4096 output tokens and your "
             "prompt contains at least 12289 input tokens, for a total of at least 16385 tokens. Please reduce the "
             "length of the input prompt or the number of requested output tokens.")
VLLM_YOU_PASSED = ("You passed 12289 input tokens and requested 4096 output tokens. However, the model's context length "
                   "is only 16384 tokens, resulting in a maximum input length of 12288 tokens. Please reduce the length "
                   "of the input prompt.")


def _cut(text: str, after: str) -> str:
    """``text`` cut right after the first occurrence of ``after``."""
    return text[: text.index(after) + len(after)]


# (text, family, kind, {field: expected})
CUT_FAULTS = [
    # vLLM 0.18-0.31 cut inside "input tokens" after the prompt: read as a bare window (prompt and output lost)
    (_cut(VLLM_0_18, "12289 input tok"), "vllm-0.18-0.31", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(16384), "prompt_tokens": Number(12289, LB), "output_tokens": Number(4096)}),
    (_cut(VLLM_0_18, "12289 i"), "vllm-0.18-0.31", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(16384), "prompt_tokens": Number(12289, LB), "output_tokens": Number(4096)}),
    # ... before the prompt: the requested output was lost, and the kind (this wording is prompt + output)
    (_cut(VLLM_0_18, "4096 output tok"), "vllm-0.18-0.31", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(16384), "output_tokens": Number(4096)}),
    (_cut(VLLM_0_18, "prompt contains at le"), "vllm-0.18-0.31", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(16384), "output_tokens": Number(4096)}),
    # ... inside the total's "tokens": the total was lost
    (_cut(VLLM_0_18, "16385 t"), "vllm-0.18-0.31", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(16384), "prompt_tokens": Number(12289, LB), "output_tokens": Number(4096),
      "total_tokens": Number(16385, LB)}),
    # vLLM 0.32+: the prompt lost the same way
    ("This model's maximum context length is 16384 tokens. However, your prompt contains at least 16385 inp",
     "vllm-0.32+", K.PROMPT_OVER_WINDOW, {"window": Number(16384), "prompt_tokens": Number(16385, LB)}),
    # vLLM 0.10-0.17 "You passed ...": anything cut before the window's "tokens" read as nothing at all
    # (12289 = 16384 - 4096 + 1: vLLM's truncated tokenization, a floor, as the whole message reads it)
    (_cut(VLLM_YOU_PASSED, "context length is only 16384"), "vllm-you-passed", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(16384, LB), "prompt_tokens": Number(12289, LB), "output_tokens": Number(4096)}),
    # ... before the window: prompt and output kept; the kind needs the window (the wording is printed for a prompt
    # over it alone too: "You passed 8193 input tokens and requested 256 output tokens ... only 8192 tokens")
    (_cut(VLLM_YOU_PASSED, "However, the mod"), "vllm-you-passed", K.UNKNOWN,
     {"prompt_tokens": Number(12289, LB), "output_tokens": Number(4096)}),
    # OpenAI: cut inside "tokens" after the prompt or the total: a bare window
    ("This model's maximum context length is 4097 tokens. However, your messages resulted in 4619 tok",
     "openai-messages-resulted", K.PROMPT_OVER_WINDOW, {"window": Number(4097), "prompt_tokens": Number(4619, LB)}),
    ("This model's maximum context length is 128000 tokens. However, you requested 130415 t",
     "openai-requested-cut", K.UNKNOWN, {"window": Number(128000), "total_tokens": Number(130415, LB)}),
    # ... cut inside "in the messages": DeepSeek's total-only wording, the prompt lost and prompt + output asserted
    ("This model's maximum context length is 128000 tokens. However, you requested 130415 tokens (126415 i",
     "openai-requested-cut", K.UNKNOWN,
     {"window": Number(128000), "total_tokens": Number(130415), "prompt_tokens": Number(126415, LB)}),
    # vLLM 0.4-0.6 "you requested P tokens in the messages" cut inside "messages": read as DeepSeek's total, prompt +
    # output asserted ("tokens?(?! in)" gave back its "s"); P is the prompt there, so only the window is read
    ("This model's maximum context length is 128000 tokens. However, you requested 130415 tokens in the mes",
     "generic", K.UNKNOWN, {"window": Number(128000)}),
    # Anthropic cut inside "maximum": no number at all
    ("prompt is too long: 208310 tokens > 200000 maxim", "anthropic-prompt-too-long", K.PROMPT_OVER_WINDOW,
     {"prompt_tokens": Number(208310), "window": Number(200000, LB)}),
    # TGI cut inside its second sentence: nothing at all (its first sentence alone keeps W)
    ("Input validation error: `inputs` tokens + `max_new_tokens` must be <= 8192. Given: 70", "tgi-total",
     K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {"window": Number(8192)}),
    # Gemini cut inside its limit: the limit dropped (other wordings keep a cut limit as a floor)
    ("The input token count (2551556) exceeds the maximum number of tokens allowed (1048", "gemini",
     K.PROMPT_OVER_WINDOW, {"prompt_tokens": Number(2551556), "printed_limit": Limit(1048, M.INPUT_LIMIT, LB)}),
]

# Read as nothing before (None), each seen in a public issue or a server's source (the docstring of
# context_error_wordings names them).
NEW_WORDINGS = [
    ("Input length 203743 exceeds the maximum length 202752. Request id: 021770", "ark-input-length",
     K.PROMPT_OVER_WINDOW, {"prompt_tokens": Number(203743), "printed_limit": Limit(202752, M.INPUT_LIMIT)}),
    ("Total tokens of image and text exceed max message tokens.", "generic", K.UNKNOWN, {}),
    ("input length too long", "generic", K.UNKNOWN, {}),
    ("exceed session max length. Please end the session.", "generic", K.UNKNOWN, {}),
    ("[WASI-NN] GGML backend: Error: prompt too long (570 tokens, max 508)", "wasmedge", K.PROMPT_OVER_WINDOW,
     {"prompt_tokens": Number(570), "printed_limit": Limit(508, M.INPUT_LIMIT)}),
    ("token数量超过上限。对话历史+问题的字数太多，需要精简输入", "generic", K.UNKNOWN, {}),
    ("输入内容过长，请减少 Prompt 中的 token 数量后重试 (cch_session_id: 1b2f73a9-f879-4ec4-b392-63b2fedf91f6)",
     "generic", K.UNKNOWN, {}),
    ("上下文长度超出限制", "generic", K.UNKNOWN, {}),
    ("输入 token 超出限制", "generic", K.UNKNOWN, {}),
    ("输入长度超过模型最大上下文长度 32768，请缩短输入", "zh-context-window", K.UNKNOWN, {"window": Number(32768)}),
    ("该模型的最大上下文长度为 16384 个token，但您的请求超出了上下文长度", "zh-context-window", K.UNKNOWN,
     {"window": Number(16384)}),
]

# Look-alikes (never a context error), each wrongly read as one by a first version of this change (a breaker's round):
NOT_ERRORS = [
    # throttling and quotas worded with "token" and "over the limit"
    "授权错误：日流控超限。服务调用次数超过每日限制",  # iFlytek Spark 11201
    "请求过于频繁，token 数量超过上限，请稍后重试",
    "今日token用量超过上限",
    "已达到最大令牌数量限制 (1000)",  # new-api: 令牌 are API keys there
    # other counts "over the limit" beside the word context or input: cached contexts, an id's expiry, images,
    # messages, turns, retrieved chunks, pages, batch items, a content filter's length
    "上下文缓存数量超过限制",
    "上下文缓存 TTL 超过最大值 604800",
    "context_id 超过有效期，请重新创建",
    "上下文中的图片数量超过上限 10",
    "群聊上下文消息超过 100 条",
    "上下文轮数超过最大限制 20 轮",
    "知识库上下文超过最大检索数量 10",
    "文件上下文超出解析限制，最大 100 页",
    "输入超过25条，请减少批量大小",
    "用户输入超过了敏感词检测长度",
    # (Hugging Face generate()'s "Input length of input_ids is P, but `max_length` is set to L" is read since round 4,
    # its prompt only, never L as a window: tests/test_context_error_breaker_round4.py)
    # a per-request limit cut inside "per request": the trim to "... max 300000 tokens" would read Groq's window
    "Requested 400000 tokens, max 300000 tokens per",
    "Requested 400000 tokens, max 300000 tokens per requ",
    # vLLM's character pre-check cut inside "characters": characters, never input tokens
    "You passed 74655 input characters and requested 32000 output tok",
    "You passed 74655 input characters and requested 32000 output tokens. However, the mod",
    # (a second breaker round) Chinese: a field, a file, audio or a content filter "too long"; retry later; a warning
    "用户名输入过长",
    "搜索关键词输入过长",
    "输入文本过长，最多 2000 字",
    "prompt 过长，最多 4000 个字符",
    "输入长度超过限制：文件大小不能超过 10MB",
    "音频输入过长，最长支持 60 秒",
    "系统检测到敏感内容，输入过长",
    "Invalid parameter: messages[0].content contains sensitive words: 上下文过长",
    "请求 token 数超过上限，请稍后",
    "输入过长，已截断至 4096 tokens",
    "警告：上下文过长，已自动压缩历史消息",
    # Ark's wording with another unit or subject: a field's length, not the prompt's tokens
    "Input length 5000 exceeds the maximum length 4096 characters",
    "Input length 12 exceeds the maximum length 10 of field name",
    # (a third breaker round) the same, with other joints and units
    "Input length 12 exceeds the maximum length 10, field name",
    "Input length 12 exceeds the maximum length 10 tokens of field name",
    "Input length 5000 exceeds the maximum length 4096 letters",
    "Input length 5000 exceeds the maximum length 4096 KiB",
    # Chinese rates, quotas, plans and load worded with tokens over the limit (TPM between Chinese words too)
    "输入token超过TPM限制",
    "每月 token 数量超过上限",
    "本周 token 数量超过上限",
    "账户 token 数量已超过上限，请充值",
    "输入 tokens 超出套餐限制",
    "token数超过上限，请联系管理员提升限额",
    "当前分组上游负载已饱和，token 数量超过上限",
]

# (a third breaker round) A Chinese gateway's note around a genuine English error: the Chinese words of rates, quotas
# and filters keep only the Chinese wordings from reading, never the English one they wrap.
WRAPPED_IN_CHINESE = [
    ("上游返回错误，请稍后重试：This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 "
     "tokens. Please reduce the length of the messages.", "openai-messages-resulted", K.PROMPT_OVER_WINDOW,
     {"window": Number(8192), "prompt_tokens": Number(9000)}),
    ("prompt is too long: 208310 tokens > 200000 maximum (当前并发: 3)", "anthropic-prompt-too-long",
     K.PROMPT_OVER_WINDOW, {"window": Number(200000), "prompt_tokens": Number(208310)}),
    ("prompt is too long: 208310 tokens > 200000 maximum [剩余额度: $12.50]", "anthropic-prompt-too-long",
     K.PROMPT_OVER_WINDOW, {"window": Number(200000), "prompt_tokens": Number(208310)}),
    ("This model's maximum context length is 4097 tokens. However, your messages resulted in 4619 tokens. Please reduce "
     "the length of the messages. 提示：模型名称大小写敏感", "openai-messages-resulted", K.PROMPT_OVER_WINDOW,
     {"window": Number(4097), "prompt_tokens": Number(4619)}),
]


@pytest.mark.parametrize(("text", "family", "kind", "fields"), WRAPPED_IN_CHINESE,
                         ids=[f"zh-note-{i}" for i in range(len(WRAPPED_IN_CHINESE))])
def test_a_chinese_note_around_an_english_error_keeps_its_reading(text, family, kind, fields):
    assert _view(parse_context_error(text)) == _expected(family, kind, fields)

# (a second breaker round) Whole texts and cuts whose trims read a count of another unit as tokens, a window from
# turns, messages, seconds or characters, or a rounded count: never a prompt, total or window from those.
NO_COUNT_READ = [
    "This model's maximum context length is 128000 tokens. However, your messages resulted in 135,217 characters. "
    "Request id: abc",
    "This model's maximum context length is 128000 tokens. However, your messages resulted in 9000 字符。",
    "This model's maximum context length is 128000 tokens, however you requested 9000 images. Request id: abc",
    "This model's maximum context length is 8192 tokens. Your request has 12000 characters",
    "对话上下文超长，最大上下文长度为 20 轮",
    "上下文过长，最大上下文 20 条消息",
    "用户输入过长，最大上下文长度为 1000 字",
    "输入过长，最大上下文长度为 32768 字节",
    "输入过长，最大上下文窗口为 8 千 tokens",
    # (a third breaker round) other counts and magnitudes after the Chinese window
    "上下文长度超出限制，最大上下文长度为 20 次对话",
    "上下文长度超出限制，最大上下文长度为 5 分钟",
    "上下文长度超出限制，最大上下文长度为 32768 汉字",
    "上下文长度超出限制，最大上下文长度为 8 百万",
    "上下文长度超出限制，最大上下文长度为 128 Ki",
    "上下文长度超出限制，最大上下文长度为 10 messages",
]


@pytest.mark.parametrize("text", NO_COUNT_READ)
def test_no_count_of_another_unit_is_read_as_tokens(text):
    result = parse_context_error(text)
    known = {"window": Number(128000)} if "128000" in text else {"window": Number(8192)} if "8192" in text else {}
    assert result is not None and result.family == "generic"
    assert (result.window, result.prompt_tokens, result.total_tokens) == (known.get("window"), None, None)


def test_a_cut_prompt_count_that_may_be_characters_keeps_the_rest_of_vllm_s_wording():
    for cut in ("1228", "70000 c"):
        result = parse_context_error("This model's maximum context length is 16384 tokens. However, you requested 4096 "
                                     "output tokens and your prompt contains " + cut)
        assert (result.family, result.kind, result.window, result.output_tokens, result.prompt_tokens) == (
            "vllm-0.18-0.31", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, Number(16384), Number(4096), None)
    several = ("litellm._pre_call_checks: Context Window exceeded for given call. No models have context window large "
               "enough for this call.\nModel=gpt-4, Max Input Tokens=8192, Got=9000M")
    assert parse_context_error(several).printed_limit is None

WRAPPERS = {
    "bare": lambda t: t,
    "json-body": lambda t: json.dumps({"error": {"message": t, "type": "invalid_request_error", "param": None}},
                                      ensure_ascii=False),
    "json-ascii": lambda t: json.dumps({"error": {"message": t, "code": "InvalidParameter"}}),
    "litellm-context": lambda t: "litellm.BadRequestError: OpenAIException - " + t,
}


@pytest.mark.parametrize("wrapper", sorted(CUT_WRAPPERS))
@pytest.mark.parametrize(("text", "family", "kind", "fields"), CUT_FAULTS,
                         ids=[f"cut-{i}-{c[1]}" for i, c in enumerate(CUT_FAULTS)])
def test_a_text_cut_inside_a_word_reads_what_it_printed(text, family, kind, fields, wrapper):
    assert _view(parse_context_error(CUT_WRAPPERS[wrapper](text))) == _expected(family, kind, fields)


@pytest.mark.parametrize("wrapper", sorted(WRAPPERS))
@pytest.mark.parametrize(("text", "family", "kind", "fields"), NEW_WORDINGS,
                         ids=[f"{i}-{c[1]}" for i, c in enumerate(NEW_WORDINGS)])
def test_new_wording_parses_with_its_meaning(text, family, kind, fields, wrapper):
    assert _view(parse_context_error(WRAPPERS[wrapper](text))) == _expected(family, kind, fields)


@pytest.mark.parametrize("wrapper", sorted(WRAPPERS))
@pytest.mark.parametrize("text", NOT_ERRORS)
def test_look_alikes_are_not_context_errors(text, wrapper):
    assert parse_context_error(WRAPPERS[wrapper](text)) is None


FULL_MESSAGES = [
    VLLM_0_18,
    VLLM_YOU_PASSED,
    "This model's maximum context length is 16384 tokens. However, your prompt contains at least 16385 input tokens, "
    "which exceeds this limit even without any output tokens. Please reduce the length of the input prompt.",
    "This model's maximum context length is 4097 tokens. However, your messages resulted in 4619 tokens. Please reduce "
    "the length of the messages.",
    "This model's maximum context length is 4096 tokens. However, you requested 4118 tokens (3118 in the messages, "
    "1000 in the completion). Please reduce the length of the messages or completion.",
    "prompt is too long: 202609 tokens > 200000 maximum",
    "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 8192. Given: 7000 `inputs` tokens and 2000 "
    "`max_new_tokens`",
    "This endpoint's maximum context length is 131072 tokens. However, you requested about 140000 tokens (136000 of "
    "text input, 4000 in the output). Please reduce the length of either one.",
    "The input token count (2551556) exceeds the maximum number of tokens allowed (1048576).",
]


@pytest.mark.parametrize("full", FULL_MESSAGES, ids=[m[:30] for m in FULL_MESSAGES])
def test_cutting_a_message_later_never_reads_fewer_numbers(full):
    """Cut at every length past its first number, a message reads at least the numbers it read cut earlier: the
    characters after a number never make the parser forget it (the kind of fault above, at every position)."""
    first = next(i for i, ch in enumerate(full) if ch.isdigit())
    best, losses = -1, []
    for end in range(first, len(full) + 1):
        read = numbers_read(parse_context_error(full[:end]))
        if read < best:
            losses.append(full[max(0, end - 30):end])
        best = max(best, read)
    assert losses == []
    assert best >= 2


def test_trims_end_at_word_breaks_longest_first_and_only_cut_texts_are_trimmed():
    # a number is a trim's end only where one cut word followed it ("202609" had "tokens > 200000 maxim")
    assert trims("prompt is too long: 202609 tokens > 200000 maxim") == [
        "prompt is too long: 202609 tokens > 200000", "prompt is too long: 202609 tokens >",
        "prompt is too long: 202609 tokens", "prompt is too long:", "prompt is too long", "prompt is too", "prompt is",
        "prompt"]
    # never past a finished sentence, and the sentence end itself is one trim
    assert trims("Max context length is 8192 tokens. Your input has 9000 charac")[-1] == \
        "Max context length is 8192 tokens."
    assert trims("limit 8192. Request id: abc") == ["limit 8192. Request id:", "limit 8192. Request id",
                                                     "limit 8192. Request", "limit 8192."]
    assert looks_cut("your messages resulted in 4619 tok")
    assert looks_cut('{"error": {"message": "... 4619 tokens. Please red [truncated]"}}')
    assert not looks_cut("Please reduce the length of the messages.")
    assert not looks_cut('{"error": {"message": "the prompt (4619 tokens)"}}')


def test_a_count_that_may_be_characters_or_a_magnitude_is_not_read_as_tokens():
    # vLLM's character pre-check "your prompt contains N characters" cut inside its unit: no prompt (N is characters);
    # the window and the kind (the prompt alone over it) stand
    chars = parse_context_error("This model's maximum context length is 16384 tokens. However, your prompt contains "
                                "70000 c")
    assert (chars.family, chars.kind, chars.window, chars.prompt_tokens) == (
        "vllm-0.32+", K.PROMPT_OVER_WINDOW, Number(16384), None)
    # "12.8万" (128,000) and "3万" are rounded counts, like "128K": no number read, never a window of 12 or 3
    for text in ("上下文长度超出限制，最大上下文长度为 12.8万 tokens", "最大上下文长度为 3万，当前输入已超出上下文长度"):
        result = parse_context_error(text)
        assert (result.family, result.window) == ("generic", None)


def test_a_trimmed_reading_never_overrides_a_wording_that_declined_a_number():
    # "(P t" may go on "tokens > W)": the generic fallback reads no window from a trimmed "(P" either
    assert parse_context_error("Input exceeded maximum context length (40000 t").window is None
    # LiteLLM's pre-call check for several deployments reports no limit, also when its tail looks cut
    several = ("litellm.ContextWindowExceededError: litellm._pre_call_checks: Context Window exceeded for given call. "
               "No models have context window large enough for this call.\nModel=gpt-4, Max Input Tokens=8192, "
               "Got=9000Model=gpt-3.5-turbo, Max Input Tokens=4096, Got=9000 LiteLLM Retried: 1 times")
    assert parse_context_error(several).printed_limit is None


# (a fourth breaker round) Texts that made a first version backtrack for seconds to minutes: a run of dots or "…"
# (NFKC makes each "..."), or a long run of closing braces, brackets or quotes, before a character that ends nothing.
SLOW_BEFORE = {
    "dots after a number": "This model's maximum context length is 4096" + "." * 45 + "x",
    "dotted leader": "Invalid request: table of contents 1. Intro " + "." * 39 + " 5",
    "ellipses in Chinese": "上下文长度超出限制" + "\u2026" * 13 + "好",
    "ellipses after a wording": "This model's maximum context length is 4096 tokens. However, you requested 10000 tokens "
                                + "\u2026" * 15 + "x",
    "braces": "}" * 19_999 + "x",
    "quotes": "'" * 19_999 + "x",
    "truncation marks": ("[truncated] " * 1_700)[:19_999] + "x",
}


@pytest.mark.parametrize("text", list(SLOW_BEFORE.values()), ids=list(SLOW_BEFORE))
def test_runs_of_dots_or_closers_parse_in_linear_time(text):
    """A bound, not a speed target: these took 0.7-24 s each (exponential or quadratic backtracking in the closers and
    truncation-mark patterns); linear, each is well under 0.1 s here."""
    started = time.process_time()  # this process's CPU seconds: other work on the machine does not count
    parse_context_error(text)
    assert time.process_time() - started < 1.0


def test_vllm_prompt_alone_cut_in_its_count_keeps_its_kind():
    # "your prompt contains 8" may go on "192 input tokens" or "... characters": no prompt, but either is the prompt
    # alone over the window
    for cut in ("8", "70000 cha"):
        result = parse_context_error("This model's maximum context length is 4096 tokens. However, your prompt contains "
                                     + cut)
        assert (result.family, result.kind, result.window, result.prompt_tokens) == (
            "vllm-0.32+", K.PROMPT_OVER_WINDOW, Number(4096), None)
