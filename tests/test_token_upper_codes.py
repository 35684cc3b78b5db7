"""``token_upper_codes``: the safe price of short upper-case codes, on the glance it reads (no tokenizer needed; the
truth it is set against is ``tests/lab/test_upper_codes_truth.py``)."""

from __future__ import annotations

import base64
import random
import string

import pytest

from litellm_kvwarm.token_upper_codes import UPPER_CODE_SAFE_TOKENS, upper_codes_safe

_RNG = random.Random(5)
_CONSONANTS = "BCDFGHJKLMNPQRSTVWXZ"


def _codes(width: int, n: int, sep: str = " ") -> bytes:
    return sep.join("".join(_RNG.choice(_CONSONANTS) for _ in range(width)) for _ in range(n)).encode()


def _full_price(text: bytes, letter_weight: float) -> float:
    """What the price would be counted on every byte (all letters upper-case consonants: weight 1)."""
    return (UPPER_CODE_SAFE_TOKENS - letter_weight) * sum(65 <= b <= 90 for b in text)


@pytest.mark.parametrize("width", [3, 4, 6, 10, 12])  # periods 4, 5, 7, 11 (one stride's), 13 (the other's)
def test_fixed_width_code_lists_are_priced_whatever_their_period(width):
    text = _codes(width, 8192 // (width + 1))
    assert upper_codes_safe(text, 0.3) == pytest.approx(_full_price(text, 0.3), rel=0.08)


def test_random_tickers_are_priced_over_the_letter_weight():
    text = " ".join("".join(_RNG.choice(string.ascii_uppercase) for _ in range(_RNG.randint(1, 4))) for _ in range(1800)).encode()
    upper = sum(65 <= b <= 90 for b in text)
    assert 0.2 * upper < upper_codes_safe(text, 0.3) <= (UPPER_CODE_SAFE_TOKENS - 0.3) * upper * 1.1


@pytest.mark.parametrize("text", [
    b"THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG AND THEN RUNS AWAY INTO THE FOREST NEAR THE OLD HOUSE. " * 80,
    b"SELECT CUSTOMER_ID, SUM(TOTAL_AMOUNT) AS TOTAL FROM ORDERS WHERE STATUS = 'SHIPPED' GROUP BY CUSTOMER_ID;\n" * 80,
    b"The quick brown fox jumps over the lazy dog, and the NASA report says so. " * 100,
    base64.b64encode(random.Random(6).randbytes(6000)),  # half upper-case: the dense weight's
    b"",
])
def test_words_prose_and_base64_are_not_priced(text):
    assert upper_codes_safe(text, 0.3) == 0.0


def test_no_price_where_the_letter_weight_covers_it():
    assert upper_codes_safe(_codes(4, 1600), UPPER_CODE_SAFE_TOKENS) == 0.0
    assert upper_codes_safe(_codes(4, 1600), 0.1) > upper_codes_safe(_codes(4, 1600), 0.3) > 0
