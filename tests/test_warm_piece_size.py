"""LivePromptSizes: warm pieces sized from a group's live prompts (share × median, 16-token blocks,
within [floor, configured]); the configured size before enough live prompts, for another group, with
sizing off, and for whole warms; bounded groups; and PieceSender cutting at that size."""

from __future__ import annotations

import pytest

from litellm_kvwarm.warm_piece_size import LivePromptSizes
from litellm_kvwarm.warm_pieces import PieceSender


def test_pieces_follow_the_median_live_prompt_of_their_group():
    sizes = LivePromptSizes(0.05, min_samples=8)
    for tokens in (3_034, 3_500, 4_100, 4_300, 4_700, 5_200, 5_600, 90):  # one tiny outlier does not move the median
        sizes.observe("slow", tokens)
    # median of the 8 (upper middle): 4_300 → 5% = 215 → 208 (a 16-token block)
    assert sizes.piece_tokens("slow", 512) == 208
    assert sizes.piece_tokens("other", 512) == 512  # a group with no live traffic: the configured size


def test_before_enough_live_prompts_the_configured_size_holds():
    sizes = LivePromptSizes(0.05, min_samples=8)
    for _ in range(7):
        sizes.observe("slow", 4_000)
    assert sizes.piece_tokens("slow", 512) == 512
    sizes.observe("slow", 4_000)
    assert sizes.piece_tokens("slow", 512) == 192  # 200 → 192


def test_escalated_traffic_keeps_the_configured_size_and_tiny_prompts_the_floor():
    big, tiny = LivePromptSizes(0.05), LivePromptSizes(0.05)
    for _ in range(10):
        big.observe("slow", 20_000)  # 5% = 1,000 > the configured 512
        tiny.observe("slow", 300)  # 5% = 15 < the floor
    assert big.piece_tokens("slow", 512) == 512
    assert tiny.piece_tokens("slow", 512) == 128
    assert tiny.piece_tokens("slow", 100) == 100  # never above what the operator configured


def test_off_whole_warms_and_bad_observations():
    off = LivePromptSizes(0.0)
    on = LivePromptSizes(0.05)
    for _ in range(10):
        off.observe("slow", 4_000)
        on.observe("slow", 4_000)
        on.observe("slow", 0)  # ignored
        on.observe("slow", -5)  # ignored
    assert off.piece_tokens("slow", 512) == 512
    assert on.piece_tokens("slow", 512) == 192
    assert on.piece_tokens("slow", 0) == 0  # whole warms stay whole


def test_only_the_last_window_counts_and_groups_are_bounded():
    sizes = LivePromptSizes(0.05, window=8, min_samples=8, groups=2)
    for _ in range(8):
        sizes.observe("slow", 20_000)
    for _ in range(8):
        sizes.observe("slow", 4_000)  # the older 20k prompts left the window
    assert sizes.piece_tokens("slow", 512) == 192
    for _ in range(8):
        sizes.observe("a", 4_000)
        sizes.observe("b", 4_000)  # a third group drops the least recently observed ("slow")
    assert sizes.piece_tokens("slow", 512) == 512 and sizes.piece_tokens("b", 512) == 192


@pytest.mark.parametrize("kwargs", [{"share": -0.1}, {"share": 0.05, "window": 0}, {"share": 0.05, "min_samples": 0},
                                    {"share": 0.05, "groups": 0}])
def test_invalid_settings_are_refused(kwargs):
    with pytest.raises(ValueError):
        LivePromptSizes(**kwargs)


def _chat(turns: int, words: int) -> dict:
    text = " ".join(["word"] * words)
    messages = [{"role": "system", "content": "You are helpful."}]
    for i in range(turns):
        messages += [{"role": "user", "content": f"{i} {text}"}, {"role": "assistant", "content": f"{i} {text}"}]
    messages.append({"role": "user", "content": "next"})
    return {"model": "slow", "messages": messages, "max_tokens": 1}


def test_the_sender_cuts_at_the_size_for_its_target():
    body = _chat(40, 60)  # 81 messages of ~60 words: ~5k estimated tokens
    asked: list[tuple[str, int]] = []

    def size(target: str, configured: int) -> int:
        asked.append((target, configured))
        return 128

    async def send(kind, b):
        return None

    fixed = PieceSender(512, send, max_pieces=0).plan("chat", body)
    sized = PieceSender(512, send, max_pieces=0, piece_size=size).plan("chat", body)
    assert asked == [("slow", 512)]
    assert len(sized) > 2 * len(fixed) > 0
