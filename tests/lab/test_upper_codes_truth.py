"""Lists of short upper-case codes in agent tool results against real token counts (estimator breaker, agent
shapes): a PDB file's ``SEQRES`` records (three-letter residue codes), a watchlist of ticker symbols, gene
symbols, airport pairs, and realistic lists: the S&P 100's tickers (``BRK.B`` too), IATA and ICAO airport codes,
ISO 4217 currency codes and FX quotes, chemical formulas, upper-case hex IDs, ``HTTP_404_NOT_FOUND``-style enum
names. Each body is sent as LiteLLM sends it (``litellm_bridge.chat_payload``) and rendered in the family's chat
template; the truth is each family's own tokenizer (``truth_support.readings``). Every tokenizer parametrized here
is a lab dependency (``scripts/install.sh``).

Short upper-case words are not words a vocabulary holds whole: ``ALA``, ``KRAS``, ``JFK`` cost about a token per
two letters, while the safe weights price a letter at 0.2-0.35 tokens (fitted on lower-case words) and the ``dense``
score (more than 5 letters per separator) never sees a run of 3-4. Safe ÷ truth at 5-13k tokens before
``token_upper_codes``: random tickers 0.76-0.82 in every family, the S&P 100's 0.81-0.91, ICAO codes 0.66-0.76,
currency codes 0.87-0.96 (but DeepSeek), airport pairs 0.87-0.98, gene symbols 0.88-0.99. A per-pair price for an
upper-case letter after an upper-case letter covered them but raised all-caps prose, SQL and constants 1.4-1.7x;
``token_upper_codes`` prices upper-case letters where vowels are few among them (codes 0.18-0.23, words 0.32-0.39):
the code lists read 1.03-1.6 now (the *any* weights, for an untold family, 1.03-1.7 of the largest truth), and all-caps prose, shouted chat, all-caps SQL and C constants read what they read
before (the upper bounds below: their measured safe ÷ truth, which the price must not raise). Routing is unchanged
(safe only) and leans low on all of them (0.4-0.93)."""

from __future__ import annotations

import random
import re
import string

import pytest

from litellm_kvwarm.tokens import calibrated_estimator, estimate_request
from truth_support import readings
_RNG = random.Random(96)
_RESIDUES = "ALA ARG ASN ASP CYS GLN GLU GLY HIS ILE LEU LYS MET PHE PRO SER THR TRP TYR VAL".split()
_GENES = ["BRCA1", "TP53", "EGFR", "KRAS", "MYC", "PTEN", "APC", "CDKN2A", "PIK3CA", "BRAF", "ERBB2", "ALK", "RET", "MET",
          "NRAS", "IDH1", "JAK2", "FLT3"]


def _seqres(chains: int, length: int) -> str:
    lines = []
    for chain in string.ascii_uppercase[:chains]:
        residues = [_RNG.choice(_RESIDUES) for _ in range(length)]
        for serial, at in enumerate(range(0, length, 13), 1):
            lines.append(f"SEQRES {serial:3d} {chain} {length:4d}  " + " ".join(residues[at:at + 13]))
    return "\n".join(lines)


def _code(n: int) -> str:
    return "".join(_RNG.choice(string.ascii_uppercase) for _ in range(n))


TEXTS = {
    "pdb_seqres": _seqres(8, 600),
    "tickers": " ".join(_code(_RNG.randint(1, 4)) for _ in range(5800)),
    "airport_pairs": " ".join(f"{_code(3)}-{_code(3)}" for _ in range(2500)),
    "gene_symbols": " ".join(_RNG.choice(_GENES) for _ in range(4000)),
}
_REAL = random.Random(97)
# The S&P 100's tickers (2024), IATA codes of the busiest airports, ICAO codes of the busiest, ISO 4217 codes.
_TICKERS = ("AAPL MSFT NVDA GOOGL GOOG AMZN META BRK.B TSLA AVGO LLY JPM V UNH XOM MA JNJ PG HD COST MRK ABBV CVX CRM BAC "
            "NFLX AMD PEP KO TMO WMT ADBE LIN MCD DIS CSCO ACN ABT ORCL WFC INTU CMCSA QCOM DHR VZ IBM TXN AMGN PFE NOW CAT "
            "PM GE UNP SPGI ISRG NEE HON AMAT LOW RTX BKNG T GS COP PLD ELV SBUX BLK MDT TJX DE SYK ADP LMT AXP VRTX REGN "
            "MDLZ GILD ADI CB SCHW MMC BA CI ZTS LRCX PGR TMUS PANW ETN BX MU SO AMT FI SNPS CDNS BSX MO DUK ICE SHW CME "
            "KLAC EQIX CL APD ITW CSX SLB WM NOC MCK").split()
_IATA = ("ATL DFW DEN ORD LAX JFK LAS MCO MIA CLT SEA PHX EWR SFO IAH BOS FLL MSP LGA DTW PHL SLC BWI DCA SAN IAD TPA BNA "
         "AUS MDW HNL DAL PDX STL RDU HOU SMF MSY SJC SNA MCI OAK SAT RSW CLE IND PIT CVG CMH LHR CDG AMS FRA MAD BCN FCO "
         "MUC IST DXB DOH HKG NRT HND ICN PEK PVG SIN BKK SYD MEL YYZ YVR MEX GRU").split()
_ICAO = ("KATL KDFW KDEN KORD KLAX KJFK KLAS KMCO KMIA KCLT KSEA KPHX KEWR KSFO KIAH KBOS EGLL LFPG EHAM EDDF LEMD LEBL "
         "LIRF EDDM LTFM OMDB OTHH VHHH RJAA RJTT RKSI ZBAA ZSPD WSSS VTBS YSSY YMML CYYZ CYVR MMMX SBGR").split()
_CURRENCIES = ("USD EUR JPY GBP CNY AUD CAD CHF HKD SGD SEK KRW NOK NZD INR MXN TWD ZAR BRL DKK PLN THB ILS IDR CZK AED TRY "
               "HUF CLP SAR PHP MYR COP RUB RON").split()
_FORMULAS = ("H2O CO2 NaCl C6H12O6 H2SO4 NH3 CH4 C2H5OH CaCO3 HNO3 NaOH KMnO4 Fe2O3 C8H10N4O2 Al2O3 MgSO4 CuSO4 C9H8O4 "
             "SiO2 KCl").split()
_STATUSES = ("HTTP_200_OK HTTP_201_CREATED HTTP_204_NO_CONTENT HTTP_301_MOVED_PERMANENTLY HTTP_400_BAD_REQUEST "
             "HTTP_401_UNAUTHORIZED HTTP_403_FORBIDDEN HTTP_404_NOT_FOUND HTTP_405_METHOD_NOT_ALLOWED HTTP_409_CONFLICT "
             "HTTP_422_UNPROCESSABLE_ENTITY HTTP_429_TOO_MANY_REQUESTS HTTP_500_INTERNAL_SERVER_ERROR HTTP_502_BAD_GATEWAY "
             "HTTP_503_SERVICE_UNAVAILABLE HTTP_504_GATEWAY_TIMEOUT").split()


def _picks(items: list[str], n: int, sep: str = " ") -> str:
    return sep.join(_REAL.choice(items) for _ in range(n))


REAL_TEXTS = {
    "sp100_tickers": _picks(_TICKERS, 5000),
    "sp100_ticker_lines": _picks(_TICKERS, 4000, "\n"),
    "iata_pairs": " ".join(f"{_REAL.choice(_IATA)}-{_REAL.choice(_IATA)}" for _ in range(2500)),
    "icao_codes": _picks(_ICAO, 5000),
    "currency_codes": _picks(_CURRENCIES, 6000),
    "fx_quotes": " ".join(f"{_REAL.choice(_CURRENCIES)}/{_REAL.choice(_CURRENCIES)} {_REAL.uniform(0.5, 150):.4f}" for _ in range(1500)),
    "chemical_formulas": _picks(_FORMULAS, 5000),
    "hex_ids": " ".join("".join(_REAL.choice("0123456789ABCDEF") for _ in range(_REAL.choice((6, 8, 12)))) for _ in range(2500)),
    "http_statuses": _picks(_STATUSES, 2000, ", "),
}


def _body(text: str) -> dict:
    return {"model": "m", "max_tokens": 4096,
            "messages": [{"role": "user", "content": "Which codes appear most often?"},
                         {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01", "name": "read_file",
                                                            "input": {"path": "data/codes.txt"}}]},
                         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": text}]}],
            "tools": [{"name": "read_file", "description": "Read a file.",
                       "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}]}


@pytest.mark.parametrize("text", sorted(TEXTS) + sorted(REAL_TEXTS))
def test_upper_case_code_lists_are_never_under_the_safe_estimate(text):
    body = _body({**TEXTS, **REAL_TEXTS}[text])
    found = readings(body, "messages")
    low = {name: round(r.safe / r.truth, 3) for name, r in found.items() if r.safe < r.truth}
    assert not low, low
    high = {name: round(r.routing / r.truth, 3) for name, r in found.items() if r.routing > 1.05 * r.truth}
    assert not high, high  # routing leans low (0.38-0.93 measured)
    unknown = estimate_request(body, call_kind="messages", estimator=calibrated_estimator("any"))  # the served family untold
    assert unknown.safe >= max(r.truth for r in found.values()), (unknown, {name: r.truth for name, r in found.items()})


# Text whose upper-case letters are words: the code price must leave it alone. Errno names from Linux's
# asm-generic/errno-base.h and errno.h; English prose: Python's own reference (pydoc_data.topics), upper-cased.
_ERRNO = (
    "EPERM ENOENT ESRCH EINTR EIO ENXIO E2BIG ENOEXEC EBADF ECHILD EAGAIN ENOMEM EACCES EFAULT ENOTBLK EBUSY "
    "EEXIST EXDEV ENODEV ENOTDIR EISDIR EINVAL ENFILE EMFILE ENOTTY ETXTBSY EFBIG ENOSPC ESPIPE EROFS EMLINK "
    "EPIPE EDOM ERANGE EDEADLK ENAMETOOLONG ENOLCK ENOSYS ENOTEMPTY ELOOP EWOULDBLOCK ENOMSG EIDRM ECHRNG "
    "EL2NSYNC EL3HLT EL3RST ELNRNG EUNATCH ENOCSI EL2HLT EBADE EBADR EXFULL ENOANO EBADRQC EBADSLT EDEADLOCK "
    "EBFONT ENOSTR ENODATA ETIME ENOSR ENONET ENOPKG EREMOTE ENOLINK EADV ESRMNT ECOMM EPROTO EMULTIHOP "
    "EDOTDOT EBADMSG EOVERFLOW ENOTUNIQ EBADFD EREMCHG ELIBACC ELIBBAD ELIBSCN ELIBMAX ELIBEXEC EILSEQ "
    "ERESTART ESTRPIPE EUSERS ENOTSOCK EDESTADDRREQ EMSGSIZE EPROTOTYPE ENOPROTOOPT EPROTONOSUPPORT "
    "ESOCKTNOSUPPORT EOPNOTSUPP EPFNOSUPPORT EAFNOSUPPORT EADDRINUSE EADDRNOTAVAIL ENETDOWN ENETUNREACH "
    "ENETRESET ECONNABORTED ECONNRESET ENOBUFS EISCONN ENOTCONN ESHUTDOWN ETOOMANYREFS ETIMEDOUT "
    "ECONNREFUSED EHOSTDOWN EHOSTUNREACH EALREADY EINPROGRESS ESTALE EUCLEAN ENOTNAM ENAVAIL EISNAM "
    "EREMOTEIO EDQUOT ENOMEDIUM EMEDIUMTYPE ECANCELED ENOKEY EKEYEXPIRED EKEYREVOKED EKEYREJECTED EOWNERDEAD "
    "ENOTRECOVERABLE ERFKILL EHWPOISON "
).split()
_SHOUTS = ["WHY IS MY ORDER STILL NOT HERE?? I PAID FOR EXPRESS SHIPPING AND IT HAS BEEN TWO WEEKS!!!",
           "PLEASE FIX THIS NOW. THE APP CRASHES EVERY TIME I OPEN IT AND I HAVE LOST ALL MY WORK.",
           "I AM SO DONE WITH THIS SERVICE. CANCEL MY SUBSCRIPTION IMMEDIATELY AND REFUND ME.",
           "CAN SOMEONE PLEASE EXPLAIN WHY THE DEPLOYMENT FAILED AGAIN? THIS IS THE THIRD TIME TODAY.",
           "URGENT: THE PRODUCTION DATABASE IS DOWN AND CUSTOMERS CANNOT LOG IN. NEED HELP ASAP."]
_TABLES = ["ORDERS", "CUSTOMERS", "LINE_ITEMS", "PRODUCTS", "INVOICES", "SHIPMENTS"]
_COLUMNS = ["CUSTOMER_ID", "ORDER_DATE", "TOTAL_AMOUNT", "STATUS", "REGION", "PRODUCT_NAME", "QUANTITY", "UNIT_PRICE"]


def _caps_prose() -> str:
    import pydoc_data.topics as topics

    text = "\n\n".join(topics.topics[k] for k in sorted(topics.topics))
    return re.sub(r"\n   .*", "", text)[:40000].upper()  # without its indented code


def _sql() -> str:
    rng, queries = random.Random(98), []
    for _ in range(300):
        a, b = rng.sample(_COLUMNS, 2)
        t1, t2 = rng.sample(_TABLES, 2)
        queries.append(f"SELECT {a}, COUNT(*) AS N, SUM({b}) AS TOTAL FROM {t1} JOIN {t2} ON {t1}.{a} = {t2}.{a} "
                       f"WHERE {b} > {rng.randint(1, 999)} AND STATUS = 'SHIPPED' GROUP BY {a} ORDER BY TOTAL DESC LIMIT 10;")
    return "\n".join(queries)


#: Text, and the most safe ÷ truth it read in any family before token_upper_codes (unchanged by it, measured).
WORD_TEXTS = {
    "caps_prose": (_caps_prose, 1.61),  # 1.35-1.60
    "shouted_chat": (lambda: "\n".join(random.Random(99).choice(_SHOUTS) for _ in range(350)), 1.69),  # 1.33-1.68
    "caps_sql": (_sql, 1.73),  # 1.46-1.72
    "c_errno_defines": (lambda: "\n".join(f"#define {name:<16} {i}" for i, name in enumerate(_ERRNO * 8, 1)), 1.62),  # 1.30-1.62
}


@pytest.mark.parametrize("text", sorted(WORD_TEXTS))
def test_upper_case_words_are_not_priced_as_codes(text):
    make, most = WORD_TEXTS[text]
    found = readings(_body(make()), "messages")
    ratios = {name: round(r.safe / r.truth, 3) for name, r in found.items()}
    assert min(ratios.values()) >= 1.0, ratios
    assert max(ratios.values()) <= most, ratios
