"""Context-length error parsing (pure), a breaker's round on transport and quoting: HTML error pages, locale digit
grouping, conversation messages quoted back, texts that print two windows, OpenAI's breakdown cut short, and wordings
not seen before (each with its source).

Each row is (text, family, kind, {field: expected}); a field not named must be ``None``; family ``None``: not a
context error. Each comment says what the parser read before the fix.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from context_error_view import expected as _expected, view as _view
from litellm_kvwarm.context_errors import Certainty, ErrorKind, Limit, LimitMeaning, Number, parse_context_error
from litellm_kvwarm.learned_limits import LimitKind, Observed, limit_from_error
from litellm_kvwarm.limit_learning import echoes_client

EXACT, LB = Certainty.EXACT, Certainty.LOWER_BOUND
K = ErrorKind
M = LimitMeaning

OPENAI_TEXT = ("This model's maximum context length is 8192 tokens. However, you requested 10000 tokens (9000 in the "
               "messages, 1000 in the completion). Please reduce the length of the messages or completion.")
OPENAI_READ = ("openai-requested", K.PROMPT_OVER_WINDOW,
               {"window": Number(8192), "total_tokens": Number(10000), "prompt_tokens": Number(9000),
                "output_tokens": Number(1000)})

MARKUP = [
    # an HTML error page with the numbers in inline tags: the breakdown was lost ("generic", the window only)
    ("<html><body><pre>This model&#x27;s maximum context length is 8192 tokens. However, you requested <b>10000</b> "
     "tokens (<b>9000</b> in the messages, <code>1000</code> in the completion).</pre></body></html>", *OPENAI_READ),
    # the same with the tags JSON-escaped (\u003c) inside a JSON body
    (json.dumps({"error": {"message": "<p>This model's maximum context length is 8192 tokens. However, you requested "
                                      "<strong>10000</strong> tokens (<em>9000</em> in the messages, 1000 in the "
                                      "completion).</p>"}}), *OPENAI_READ),
    # block tags between sentences become a space, never glue two words
    ("<!DOCTYPE html><html><head><title>400</title></head><body><h1>Bad Request</h1><p>prompt is too long: "
     "<span class=\"n\">250000</span> tokens &gt; 200000 maximum</p><br/><p>try again</p></body></html>",
     "anthropic-prompt-too-long", K.PROMPT_OVER_WINDOW, {"window": Number(200000), "prompt_tokens": Number(250000)}),
    # Markdown emphasis around the numbers (a chat front end or bot relaying the error): no number was read ("generic")
    ("This model's maximum context length is **8192** tokens. However, you requested **10000** tokens (*9000* in the "
     "messages, __1000__ in the completion).", *OPENAI_READ),
    # underscore-grouped counts are no emphasis, though the text has some
    ("This model's maximum context length is 16_384 tokens. However, your messages resulted in 20_000 tokens. *Please* "
     "reduce the length of the messages.", "openai-messages-resulted", K.PROMPT_OVER_WINDOW,
     {"window": Number(16384), "prompt_tokens": Number(20000)}),
    # a "<" that opens no tag is kept ("<=" of OpenAI's parameter bound)
    ("Invalid 'max_output_tokens': integer above maximum value. Expected a value <= 128000, but got 200000 instead.",
     "openai-max-output-above-maximum", K.OUTPUT_OVER_LIMIT,
     {"output_tokens": Number(200000), "printed_limit": Limit(128000, M.OUTPUT_LIMIT)}),
]

GROUPING = [
    # Indian grouping (lakh): no number was read at all ("generic")
    ("This model's maximum context length is 1,63,840 tokens. However, your prompt contains at least 1,70,001 input "
     "tokens, which exceeds this limit even without any output tokens.",
     "vllm-0.32+", K.PROMPT_OVER_WINDOW, {"window": Number(163840), "prompt_tokens": Number(170001, LB)}),
    # crore grouping
    ("prompt is too long: 1,04,85,761 tokens > 1,04,85,760 maximum",
     "anthropic-prompt-too-long", K.PROMPT_OVER_WINDOW, {"window": Number(10485760), "prompt_tokens": Number(10485761)}),
    # the Arabic thousands separator (U+066C) and Arabic-Indic digits: no number was read ("generic")
    ("This model's maximum context length is \u0661\u0666\u066c\u0663\u0668\u0664 tokens. However, your prompt "
     "contains at least 16385 input tokens, which exceeds this limit even without any output tokens.",
     "vllm-0.32+", K.PROMPT_OVER_WINDOW, {"window": Number(16384), "prompt_tokens": Number(16385, LB)}),
    # the middle dot (Catalan "16·384"): no number was read ("generic")
    ("Input length (20\u00b7000 tokens) exceeds the maximum allowed length (16\u00b7000 tokens)",
     "sglang-max-allowed", K.PROMPT_OVER_WINDOW,
     {"prompt_tokens": Number(20000), "printed_limit": Limit(16000, M.KV_CAPACITY)}),
    # the minus sign (U+2212) of a typesetting front end: not recognised (None)
    ('{"detail":"max_tokens must be at least 1, got \u2212512, the room left by the prompt"}', "vllm-output-below-one",
     K.OUTPUT_BELOW_ONE, {"output_tokens": Number(-512)}),
    # a bracketed range written without spaces is the range's bounds, not one Indian-grouped number ("1,30,720")
    ("Range of input length should be [1,30,720]", "dashscope", K.PROMPT_OVER_WINDOW,
     {"printed_limit": Limit(30720, M.INPUT_LIMIT)}),
]

QUOTED = [
    # a request logged with the error: the conversation's quoted context error was read as the server's
    (json.dumps({"error": {"message": "Invalid value for 'temperature': 5", "request": {"messages": [
        {"role": "user", "content": "yesterday I got: This model's maximum context length is 4096 tokens. However, "
                                    "your messages resulted in 5000 tokens"}]}}}), None, None, {}),
    ("Error code: 400 - " + str({"error": "bad tool call", "messages": [
        {"role": "assistant", "content": "The server said: prompt is too long: 250000 tokens > 200000 maximum"},
        {"role": "user", "content": "ok"}]}), None, None, {}),
    # content before role (a stream delta), content as Anthropic blocks, a cut text ending inside the content
    (json.dumps({"error": "stream failed", "last": {"delta": {"content": "This model's maximum context length is "
                 "4096 tokens. However, your request has 5000 input tokens", "role": "assistant"}}}), None, None, {}),
    (json.dumps({"error": "bad", "messages": [{"role": "user", "content": [{"type": "text", "text":
                 "see {error:{message: prompt is too long: 250000 tokens > 200000 maximum}}"}]}]}), None, None, {}),
    ("{'error': 'invalid tool_choice', 'messages': [{'role': 'user', 'content': 'This model\\'s maximum context length "
     "is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the comp", None, None, {}),
    # a tool message (its tool_call_id between role and content) and a Responses API tool output: a sub-agent's own
    # context error returned as a tool's result was read as the server's
    (json.dumps({"error": "bad request", "messages": [{"role": "tool", "tool_call_id": "call_1", "content": "sub-agent "
                 "failed: This model's maximum context length is 4096 tokens. However, your messages resulted in 5000 "
                 "tokens"}]}), None, None, {}),
    (json.dumps({"error": "bad request", "input": [{"type": "function_call_output", "call_id": "call_1", "output":
                 "sub-agent failed: prompt is too long: 250000 tokens > 200000 maximum"}]}), None, None, {}),
    # a tool call's arguments (chat and Responses) and Anthropic's tool_result / tool_use blocks
    (json.dumps({"error": "invalid tool_choice", "messages": [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "report", "arguments": json.dumps(
            {"error": "This model's maximum context length is 4096 tokens. However, your messages resulted in 5000 "
                      "tokens"})}}]}]}), None, None, {}),
    (json.dumps({"error": "bad", "input": [{"type": "function_call", "call_id": "c1", "name": "report", "arguments":
                 json.dumps({"text": "prompt is too long: 250000 tokens > 200000 maximum"})}]}), None, None, {}),
    (json.dumps({"type": "error", "error": {"type": "invalid_request_error", "message": "tool_use ids must be unique"},
                 "blocks": [{"type": "tool_result", "tool_use_id": "t1", "content": "prompt is too long: 250000 tokens "
                             "> 200000 maximum"}, {"type": "tool_use", "id": "t2", "name": "f", "input": {"q": "input "
                             "length and max_tokens exceed context limit: 195000 + 21333 > 200000"}}]}), None, None, {}),
    # Gemini contents (role, parts) and Cohere v1 chat history (role CHATBOT, message)
    (json.dumps({"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": "Invalid value at 'generation_config'"},
                 "request": {"contents": [{"role": "model", "parts": [{"text": "The input token count (1200000) "
                 "exceeds the maximum number of tokens allowed (1048575)."}]}]}}), None, None, {}),
    (json.dumps({"message": "invalid request: temperature must be between 0 and 5", "chat_history": [
        {"role": "CHATBOT", "message": "too many tokens: size limit exceeded by 1234 tokens"}]}), None, None, {}),
    # the server's own error after a logged message is still read, with its own numbers
    (json.dumps({"messages": [{"role": "user", "content": "hello"}], "error": {"message": OPENAI_TEXT}}), *OPENAI_READ),
    ("litellm.BadRequestError: messages=[{'role': 'user', 'content': 'hi'}] Hosted_vllmException - " + OPENAI_TEXT,
     *OPENAI_READ),
]

TWO_WINDOWS = [
    # a model's window and a deployment's: 131072 was read as the exact window (a clamp to it is refused again); now
    # the smaller, as a floor
    ("This model's maximum context length is 131072 tokens, but the deployment's max_model_len is 32768. However, "
     "your request has 40000 input tokens.", "generic", K.UNKNOWN, {"window": Number(32768, LB)}),
    # a gateway listing two deployments' refusals: the first window was read as the only one
    ("All deployments failed. fast-a: This model's maximum context length is 8192 tokens. However, you requested "
     "10000 tokens (9000 in the messages, 1000 in the completion). fast-b: This model's maximum context length is "
     "16384 tokens. However, you requested 20000 tokens (19000 in the messages, 1000 in the completion).",
     "openai-requested", K.UNKNOWN, {"window": Number(8192, LB), "total_tokens": Number(10000),
                                     "prompt_tokens": Number(9000), "output_tokens": Number(1000)}),
    # a wrapper adding its configured window to a llama.cpp refusal
    ('{"error":{"code":400,"message":"request (9000 tokens) exceeds the available context size (8192 tokens), try '
     'increasing it","type":"exceed_context_size_error"},"config":{"context_window":32768}}',
     "llamacpp-request", K.PROMPT_OVER_WINDOW, {"window": Number(8192, LB), "prompt_tokens": Number(9000)}),
    # the window a wrapper or gateway adds beside the server's own message, larger or smaller: a floor, the smaller
    ("Error from provider DeepInfra (context window 65536): This model's maximum context length is 32768 tokens. "
     "However, you requested 40000 tokens (39000 in the messages, 1000 in the completion).",
     "openai-requested", K.UNKNOWN, {"window": Number(32768, LB), "total_tokens": Number(40000),
                                     "prompt_tokens": Number(39000), "output_tokens": Number(1000)}),
    # the same window printed twice (a body and its message, OpenRouter's raw copy) is one window
    ('{"error":{"message":"request (9000 tokens) exceeds the available context size (8192 tokens)",'
     '"n_prompt_tokens":9000,"n_ctx":8192}}',
     "llamacpp-request", K.PROMPT_OVER_WINDOW, {"window": Number(8192), "prompt_tokens": Number(9000)}),
    # a total after "context window:" is the row's own number, never a second window
    ("context window: 9000 > 8192 tokens", "generic-count-over-window", K.UNKNOWN,
     {"window": Number(8192), "total_tokens": Number(9000)}),
    # text-generation-webui's "available context length" is the room left, not a window
    ("Context length: 4096, max_new_tokens: 512, available context length: 3584 tokens",
     "textgen-truncated", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(4096), "output_tokens": Number(512), "printed_limit": Limit(3584, M.INPUT_BUDGET)}),
]

CUT_BREAKDOWN = [
    # cut inside the breakdown: read as deepseek-requested-total, no prompt, and prompt + output over the window
    # although the prompt alone (39000) is over it
    ("This model's maximum context length is 32768 tokens. However, you requested 40000 tokens (39000 in the mess",
     "openai-requested-cut", K.PROMPT_OVER_WINDOW,
     {"window": Number(32768), "total_tokens": Number(40000), "prompt_tokens": Number(39000, LB)}),
    ("This model's maximum context length is 32768 tokens. However, you requested 40000 tokens (39000",
     "openai-requested-cut", K.PROMPT_OVER_WINDOW,
     {"window": Number(32768), "total_tokens": Number(40000), "prompt_tokens": Number(39000, LB)}),
    # the completion part present: the prompt is whole
    ("This model's maximum context length is 32768 tokens. However, you requested 40000 tokens (30000 in the "
     "messages, 10000 in the compl", "openai-requested-cut", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(32768), "total_tokens": Number(40000), "prompt_tokens": Number(30000),
      "output_tokens": Number(10000)}),
    # the messages part of a functions breakdown is only a floor: below the window it tells nothing
    ("This model's maximum context length is 32768 tokens. However, you requested 40000 tokens (30000 in the "
     "messages, 5000 in the functions, and 5000 in the comp", "openai-requested-cut", K.UNKNOWN,
     {"window": Number(32768), "total_tokens": Number(40000), "prompt_tokens": Number(30000, LB)}),
    # cut right after the total: no breakdown known, so no kind (was read as DeepSeek's prompt + output)
    ("This model's maximum context length is 32768 tokens. However, you requested 40000", "openai-requested-cut",
     K.UNKNOWN, {"window": Number(32768), "total_tokens": Number(40000, LB)}),
    # no breakdown at all stays DeepSeek's wording
    ("This model's maximum context length is 32768 tokens. However, you requested 40000 tokens.",
     "deepseek-requested-total", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(32768), "total_tokens": Number(40000)}),
]

CUT_AFTER_NUMBER = [
    # a text cut right after its last number, before "tokens"/"maximum": the number was lost (generic, the window
    # only, or nothing); it is now read, as a floor (it may have been cut mid-digits)
    ("This model's maximum context length is 8192 tokens. However, your messages resulted in 9000",
     "openai-messages-resulted", K.PROMPT_OVER_WINDOW, {"window": Number(8192), "prompt_tokens": Number(9000, LB)}),
    ("This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 [truncated]",
     "openai-messages-resulted", K.PROMPT_OVER_WINDOW, {"window": Number(8192), "prompt_tokens": Number(9000, LB)}),
    ("This model's maximum context length is 8192 tokens. However, your request has 9000\u2026",
     "vllm-request-has", K.UNKNOWN, {"window": Number(8192, LB), "prompt_tokens": Number(9000, LB)}),
    ("This model's maximum context length is 8192 tokens. However, your prompt contains at least 8193",
     "vllm-0.32+", K.PROMPT_OVER_WINDOW, {"window": Number(8192), "prompt_tokens": Number(8193, LB)}),
    ("This model's maximum context length is 8192 tokens. However, you requested 1000 output tokens and your prompt "
     "contains at least 7193", "vllm-0.18-0.31", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(8192), "output_tokens": Number(1000), "prompt_tokens": Number(7193, LB)}),
    ("This model's maximum context length is 8192 tokens. However, you requested 1000 output tokens and your prompt "
     "contains at least 7193 input tokens, for a total of at least 8193", "vllm-0.18-0.31",
     K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {"window": Number(8192), "output_tokens": Number(1000),
                                        "prompt_tokens": Number(7193, LB), "total_tokens": Number(8193, LB)}),
    ('{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 250000 tokens > 200000',
     "anthropic-prompt-too-long", K.PROMPT_OVER_WINDOW,
     {"window": Number(200000, LB), "prompt_tokens": Number(250000)}),
    # a word after the number that is not "tokens" is no cut: the number is not read
    ("This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 words.",
     "generic", K.UNKNOWN, {"window": Number(8192)}),
]

MARKERS = ["[truncated 512 chars]", "... [512 characters truncated]", "(output truncated)", "... (+512 bytes)",
           "\u2026 (truncated, 512 more bytes)", "...truncated", '(truncated)"}}', "[TRUNCATED]\n"]


@pytest.mark.parametrize("marker", MARKERS)
def test_a_number_before_any_truncation_mark_is_only_a_floor(marker):
    """A number cut mid-digits before a truncation mark with a count or other words ("[truncated 512 chars]",
    "(+512 bytes)", a mark then the wrapper's closing braces) was read as EXACT: a window of 4 for 4096."""
    result = parse_context_error("max_tokens=100 cannot be greater than max_model_len=4 " + marker)
    assert (result.family, result.window, result.output_tokens) == (
        "vllm-max-tokens-over-window", Number(4, LB), Number(100))
    whole = parse_context_error('{"message":"max_tokens=100 cannot be greater than max_model_len=4096"}')
    assert whole.window == Number(4096)


OUTPUT_OVER_WINDOW = [
    # the requested output alone over the window, its subject an output parameter: read as a bare window (generic,
    # UNKNOWN), or not at all; never the output count as a prompt or total
    ("max_completion_tokens (100000) exceeds the model's maximum context length of 32768 tokens",
     "generic-output-over-window", K.OUTPUT_OVER_WINDOW, {"window": Number(32768), "output_tokens": Number(100000)}),
    ("max_tokens (100000) is greater than the model's context length (32768)",
     "generic-output-over-window", K.OUTPUT_OVER_WINDOW, {"window": Number(32768), "output_tokens": Number(100000)}),
    ("Requested max_tokens 100000 exceeds model context window 32768 tokens.",
     "generic-output-over-window", K.OUTPUT_OVER_WINDOW, {"window": Number(32768), "output_tokens": Number(100000)}),
    ("The requested output length (100000 tokens) exceeds the context window (32768 tokens)",
     "generic-output-over-window", K.OUTPUT_OVER_WINDOW, {"window": Number(32768), "output_tokens": Number(100000)}),
    ("max_tokens too large: 100000 > 32768 (context length)",
     "generic-output-over-window", K.OUTPUT_OVER_WINDOW, {"window": Number(32768), "output_tokens": Number(100000)}),
    # a prompt plus the output over the window is no output-alone refusal (this round's row first read it as one,
    # output 1000 over 8192): prompt, output and window, the kind from the numbers
    ("Your prompt (9000 tokens) plus max_tokens (1000) exceeds the model context length of 8192.",
     "generic-prompt-plus-output", K.PROMPT_OVER_WINDOW,
     {"window": Number(8192), "prompt_tokens": Number(9000), "output_tokens": Number(1000)}),
    ("Input length 7000 + max_new_tokens 2000 exceeds the maximum context length of 8192 tokens",
     "generic-prompt-plus-output", K.PROMPT_PLUS_OUTPUT_OVER_WINDOW,
     {"window": Number(8192), "prompt_tokens": Number(7000), "output_tokens": Number(2000)}),
    ("Request exceeds context window: 7000 + 2000 > 8192 tokens", "generic-prompt-plus-output",
     K.PROMPT_PLUS_OUTPUT_OVER_WINDOW, {"window": Number(8192), "prompt_tokens": Number(7000),
                                        "output_tokens": Number(2000)}),
    # "model context window" without the possessive: not recognised at all (None)
    ("messages: total length exceeds model context window", "generic", K.UNKNOWN, {}),
]

DETAIL_LIST = [
    # pydantic's output-cap check in a FastAPI 422 detail list names its field only in loc: not recognised (None),
    # though its str() form ("max_tokens\n  Input should be less than or equal to 4096") was
    ('{"detail":[{"type":"less_than_equal","loc":["body","max_tokens"],"msg":"Input should be less than or equal to '
     '4096","input":100000,"ctx":{"le":4096}}]}', "max-tokens-cap", K.OUTPUT_OVER_LIMIT,
     {"printed_limit": Limit(4096, M.OUTPUT_LIMIT)}),
    ("litellm.BadRequestError: Error code: 422 - {'detail': [{'type': 'less_than_equal', 'loc': ('body', "
     "'max_completion_tokens'), 'msg': 'Input should be less than or equal to 8192', 'input': 100000, 'ctx': {'le': "
     "8192}}]}", "max-tokens-cap", K.OUTPUT_OVER_LIMIT, {"printed_limit": Limit(8192, M.OUTPUT_LIMIT)}),
    # the same check on another field is no output cap, and no context error
    ('{"detail":[{"type":"less_than_equal","loc":["body","top_k"],"msg":"Input should be less than or equal to 100",'
     '"input":1000}]}', None, None, {}),
]

REWORDED = [
    # the sentence joint without "However": the request's numbers were lost (generic, the window only)
    ("This model's maximum context length is 8192 tokens, you requested 10000 tokens (9000 in the messages, 1000 in "
     "the completion).", "openai-requested", K.PROMPT_OVER_WINDOW,
     {"window": Number(8192), "total_tokens": Number(10000), "prompt_tokens": Number(9000),
      "output_tokens": Number(1000)}),
    ("This model's maximum context length is 8192 tokens; your messages resulted in 9000 tokens.",
     "openai-messages-resulted", K.PROMPT_OVER_WINDOW, {"window": Number(8192), "prompt_tokens": Number(9000)}),
]

NEW_WORDINGS = [
    # xAI's gRPC INVALID_ARGUMENT since 2026 (UKGovernmentBEIS/inspect_ai PR #5208, 2026-09): not recognised (None)
    ('status = StatusCode.INVALID_ARGUMENT details = "Failed to start sampling: [input_too_large] Current message '
     '(1149677 tokens) exceeds budget (975424 tokens)"', "xai-input-too-large", K.PROMPT_OVER_WINDOW,
     {"prompt_tokens": Number(1149677), "printed_limit": Limit(975424, M.INPUT_LIMIT)}),
    ("litellm.BadRequestError: XaiException - Failed to start sampling: [input_too_large]", "generic", K.UNKNOWN, {}),
]

CASES = {"markup": MARKUP, "grouping": GROUPING, "quoted": QUOTED, "two-windows": TWO_WINDOWS,
         "cut-breakdown": CUT_BREAKDOWN, "cut-after-number": CUT_AFTER_NUMBER,
         "output-over-window": OUTPUT_OVER_WINDOW, "detail-list": DETAIL_LIST,
         "reworded": REWORDED, "new-wordings": NEW_WORDINGS}
ALL = [(name, *row) for name, rows in CASES.items() for row in rows]


@pytest.mark.parametrize(("group", "text", "family", "kind", "fields"), ALL,
                         ids=[f"{r[0]}-{i}" for i, r in enumerate(ALL)])
def test_markup_grouping_quotes_and_windows_read_as_meant(group, text, family, kind, fields):
    assert _view(parse_context_error(text)) == _expected(family, kind, fields)


def test_a_client_message_quoting_a_context_error_still_counts_as_an_echo():
    """The limit learner's echo check reads the client's texts one by one: a conversation holding an old context
    error is still the client's echo, though the parser no longer reads a quoted chat message's content."""
    request = {"messages": [{"role": "user", "content": "This model's maximum context length is 300 tokens. "
                                                        "However, your messages resulted in 5000 tokens"}]}
    observed = Observed(LimitKind.TOTAL, 4096, "openai-messages-resulted")
    assert echoes_client(observed, request) is True
    assert echoes_client(observed, {"messages": [{"role": "user", "content": "hello"}]}) is False


@pytest.mark.parametrize("text", [text for text, family, *_ in TWO_WINDOWS[:3]])
def test_a_window_another_printed_window_contradicts_is_never_learned(text):
    result = parse_context_error(text)
    assert result.window.certainty is LB
    assert limit_from_error(result) is None


@pytest.mark.parametrize("text", [
    "<!--" * 5000, "<b " + "x" * 20000, "<a<b<c" * 4000, "*1*" * 7000, "_1_" * 7000, "1,11," * 4000,
    "{role: user, " * 3000, '{"role":"user","content":"' + "a, " * 7000, "type: function_call_output, " * 800,
    "context length is 1 " * 999,
], ids=["comments", "open-tag", "lt-runs", "stars", "underscores", "indian-runs", "roles", "open-content", "outputs",
        "window-phrases"])
def test_markup_echo_and_window_scans_stay_linear_on_hostile_text(text):
    """A bound, not a speed target (this process's CPU seconds). "indian-runs" took ~0.8 s before its trims kept a
    bounded tail in a text without spaces (each of eight trims parsed the whole 20,000 characters), ~0.1 s after."""
    start = time.process_time()
    assert parse_context_error(text) is None
    assert time.process_time() - start < 1.0


QUOTINGS = {
    "logged-request-json": lambda m: json.dumps({"error": {"message": "Invalid value for 'temperature': 5"}, "request": {
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": m}]}}),
    "logged-request-repr": lambda m: "Error code: 400 - " + str({"error": "invalid tool_choice", "messages": [
        {"role": "assistant", "content": m}, {"role": "user", "content": "go on"}]}),
    "tool-result-json": lambda m: json.dumps({"error": "messages must alternate", "messages": [
        {"role": "tool", "tool_call_id": "c1", "content": m}]}),
    "function-call-output": lambda m: json.dumps({"error": {"message": "unknown call_id"}, "input": [
        {"type": "function_call_output", "call_id": "c9", "output": m}]}),
}


@pytest.mark.parametrize("quoting", sorted(QUOTINGS))
def test_every_shared_sample_quoted_in_a_conversation_is_not_the_servers(quoting):
    """Each context error of the shared corpus, quoted as a message's or a tool's content beside an unrelated error,
    is not the server's refusal (it read as one before this round)."""
    data = json.loads((Path(__file__).resolve().parent / "data" / "context_errors.json").read_text(encoding="utf-8"))
    positives = [e["message"] for e in data if e["kind"] in ("numbers", "no_numbers")]
    misread = [m[:100] for m in positives if parse_context_error(QUOTINGS[quoting](m)) is not None]
    assert len(positives) >= 100 and not misread, misread[:5]


def test_every_shared_window_beside_another_window_is_a_floor_and_beside_itself_stays():
    """Each exact window of the shared corpus, with a gateway's note of another window after the message, reads as a
    floor (the smaller of the two), every other number kept; with a note of the same window, it reads as before."""
    data = json.loads((Path(__file__).resolve().parent / "data" / "context_errors.json").read_text(encoding="utf-8"))
    checked, wrong = 0, []
    for entry in (e for e in data if e["kind"] == "numbers"):
        base = parse_context_error(entry["message"] + " (request id r1)")
        if base is None or base.window is None or base.window.certainty is not EXACT:
            continue
        w = base.window.value
        same = parse_context_error(entry["message"] + f" (deployment context window: {w} tokens)")
        other = parse_context_error(entry["message"] + f" (deployment context window: {w * 2} tokens)")
        smaller = parse_context_error(entry["message"] + f" (deployment max_model_len={w // 2})")
        checked += 1
        if _view(same) != _view(base):
            wrong.append(("same", entry["message"][:80]))
        for got, floor in ((other, w), (smaller, w // 2)):
            rest = [getattr(got, f) == getattr(base, f) for f in ("prompt_tokens", "output_tokens", "total_tokens",
                                                                   "printed_limit", "family")]
            if got.window != Number(floor, LB) or not all(rest):
                wrong.append((floor, entry["message"][:80]))
    assert checked >= 50 and not wrong, wrong[:5]
