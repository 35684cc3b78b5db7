"""Lists of short upper-case codes (ticker symbols, airport and ICAO codes, currency codes, gene symbols): what the
safe estimate adds for them (pure; counted on the estimator's sample at C speed).

Short upper-case codes are not words a vocabulary holds whole: ``KATL``, ``MSFT``, ``JPY`` cost 0.4-0.55 tokens per
letter in every measured family, while the safe weights price a letter at 0.2-0.36 tokens (0.10-0.17 in the English
regime), fitted on lower-case words, and the ``dense`` score (more than 5 letters per separator) never sees a run of
3-4. Measured with the calibration tokenizers (cl100k, o200k, Qwen 2.5, Qwen 3.6, DeepSeek, Llama 3; each body rendered
in the family's chat template, ``tests/lab/test_upper_codes_truth.py``), safe ÷ truth was: random 1-4-letter tickers
0.76-0.82, the S&P 100's tickers 0.81-0.91, ICAO airport codes 0.66-0.76, currency codes 0.87-0.96 (but DeepSeek),
gene symbols 0.88-0.99, random airport pairs 0.87-0.98.

What tells codes from upper-case words cheaply is their vowels: A, E, I, O and U are 0.18-0.23 of those lists' upper-case
letters (0.19 for random letters), but 0.37-0.39 of all-caps English prose, shouted chat messages and all-caps SQL, 0.32
of C ``#define`` names (Linux ``errno.h``, ``input-event-codes.h``), 0.28-0.35 of PDB ``SEQRES`` records, chemical
formulas, upper-case hex IDs and ``HTTP_404_NOT_FOUND``-style enum names (all of which the weights already cover).
Where a sample's upper-case letters are at least :data:`UPPER_CODES_MIN_SHARE` of its bytes and most of its letters
(:data:`UPPER_LETTERS_FULL`; base64 and mixed-case IDs, half upper-case, are the ``dense`` weight's), the safe
estimate prices each of them at :data:`UPPER_CODE_SAFE_TOKENS` (adding that less the family's letter weight), in full where vowels are
at most :data:`UPPER_VOWELS_FULL` of them, not at all from :data:`UPPER_VOWELS_NONE` (linearly between). A per-pair
price for every upper-case letter after an upper-case one covered the codes too but raised all-caps prose, SQL and
constants 1.4-1.7 × (safe); this leaves them as they were. Routing is unchanged (it leans low on codes: 0.4-0.7).

Cost: counted on every 11th and every 13th byte of the sample (≤ 8,192 characters): two slices and two
``bytes.translate`` over ~1,370 bytes (its letters, then its upper-case ones), one more over the upper-case letters where
they are many (5-13 µs measured on a 30,000-character request on the 2-core lab machine, 1-3% of its estimate)."""

from __future__ import annotations

__all__ = ["UPPER_CODES_MIN_SHARE", "UPPER_CODE_SAFE_TOKENS", "UPPER_LETTERS_FULL", "UPPER_LETTERS_NONE", "UPPER_VOWELS_FULL",
           "UPPER_VOWELS_NONE", "upper_codes_safe"]

#: Safe tokens of one upper-case letter in a list of codes: the most measured (ICAO codes and random tickers, 0.41-0.52 a
#: letter over the family's letter weight, 6 families) and a margin.
UPPER_CODE_SAFE_TOKENS = 0.55
#: Share of vowels among the upper-case letters at which the price applies in full, and from which not at all
#: (code lists 0.18-0.23, all-caps prose and SQL 0.37-0.39, C constants 0.32, enum names 0.30).
UPPER_VOWELS_FULL, UPPER_VOWELS_NONE = 0.24, 0.28
#: Upper-case letters per byte of the sample below which nothing is added (code lists hold 0.70-0.80, prose 0.01-0.03).
UPPER_CODES_MIN_SHARE = 0.125

#: Share of upper-case letters among the letters at which the price applies in full, and up to which not at all: code
#: lists hold 0.8-1.0 (chemical formulas 0.8), base64 and random mixed-case IDs 0.5, which the ``dense`` weight prices.
UPPER_LETTERS_NONE, UPPER_LETTERS_FULL = 0.65, 0.85

_NOT_LETTER = bytes(b for b in range(256) if not (0x41 <= b <= 0x5A or 0x61 <= b <= 0x7A))
_LOWER = bytes(range(0x61, 0x7B))
_VOWELS = b"AEIOU"
#: The glance: every 11th and every 13th byte of the sample (~1,370 of 8,192; the upper-case share and the vowel
#: share are read there and the count scaled up: a vowel share within ±0.03 at two standard deviations on a code list).
_STRIDES = (11, 13)


def upper_codes_safe(text: bytes, letter_weight: float) -> float:
    """Safe tokens to add for the upper-case letters of ``text`` (the sample's UTF-8 bytes) where they look like codes
    (see the module docstring); ``letter_weight`` is the family's safe weight of a letter (tokens) in the request's
    regime. 0 where they are few or vowel-rich."""
    price = UPPER_CODE_SAFE_TOKENS - letter_weight
    if price <= 0 or not text:
        return 0.0
    glance = text[::_STRIDES[0]] + text[5::_STRIDES[1]]  # two strides: a list of fixed period aliases with one at most
    letters = glance.translate(None, _NOT_LETTER)
    upper = letters.translate(None, _LOWER)
    if len(upper) < UPPER_CODES_MIN_SHARE * len(glance):
        return 0.0
    vowels = (len(upper) - len(upper.translate(None, _VOWELS))) / len(upper)
    weight = min(1.0, (UPPER_VOWELS_NONE - vowels) / (UPPER_VOWELS_NONE - UPPER_VOWELS_FULL),
                 (len(upper) / len(letters) - UPPER_LETTERS_NONE) / (UPPER_LETTERS_FULL - UPPER_LETTERS_NONE))
    return price * len(upper) * len(text) / len(glance) * weight if weight > 0 else 0.0
