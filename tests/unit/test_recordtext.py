"""Record text functions on their own: what counts as identical, shingle overlap on examples small
enough to count by hand, MinHash band keys that are stable and find near duplicates, BM25 ordering,
clause splitting and typing of conversation lines, and inputs at and past the size limits."""

from __future__ import annotations

import hashlib
import math
import random
import unicodedata

import pytest
import regex
from agent_memory.domain.records import text as recordtext
from agent_memory.domain.records.text import (
    BANDS,
    MAX_CLAUSES,
    MAX_TEXT_CHARS,
    NEAR_DUPLICATE,
    SPEAKERS,
    band_keys,
    candidate_probability,
    classify,
    clauses,
    content_digest,
    jaccard,
    normalise,
    rank,
    shingles,
    strip_speaker,
    words,
)

SEED_LINE = "user: I want the reports as PDF every Monday, not Excel."
SEED_RECORD = "Invoice numbers are generated with a year prefix, sequentially per tenant"


# --- identity -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Invoice numbers are sequential", "  invoice   NUMBERS are\tsequential\n"),
        ("one two", "one\u00a0two"),  # no-break space
        ("one two", "one\u2003\u2028two"),  # em space, line separator
        ("café", "cafe\u0301"),  # composed and decomposed
        ("STRASSE", "straße"),  # full case folding, not lower()
    ],
)
def test_normalise_ignores_case_and_whitespace(a: str, b: str) -> None:
    assert normalise(a) == normalise(b)
    assert content_digest(a) == content_digest(b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("PDF, not Excel", "PDF not Excel"),
        ("done.", "done"),
        ("a-b", "a b"),
        ("it's", "its"),
    ],
)
def test_normalise_keeps_punctuation(a: str, b: str) -> None:
    assert normalise(a) != normalise(b)
    assert content_digest(a) != content_digest(b)


def test_normalise_output() -> None:
    assert normalise("  Hello,\n\n  World!  ") == "hello, world!"
    assert normalise("") == ""
    assert normalise(" \t\n") == ""


def test_content_digest_is_sha256_of_normalised_text() -> None:
    assert content_digest("Hello   World") == hashlib.sha256(b"hello world").hexdigest()
    # A lone surrogate is digested, not refused.
    assert len(content_digest("broken \ud800 text")) == 64


# --- words and shingles -----------------------------------------------------------------------------------


def test_words_drop_punctuation_and_fold_case() -> None:
    assert words("We chose X, because Y!") == ["we", "chose", "x", "because", "y"]
    assert words("snake_case v1.2 3.50") == ["snake_case", "v1", "2", "3", "50"]
    assert words("Straße CAFE\u0301") == ["strasse", "café"]
    assert words("... -- !!") == []


def test_words_ascii_shortcut_matches_the_unicode_rule() -> None:
    word = regex.compile(r"\w+")
    for code in range(128):
        char = chr(code)
        text = f"A{char}b {char} x{char}{char}Y_{char}9"
        assert words(text) == word.findall(unicodedata.normalize("NFC", text).casefold()), repr(char)


def test_words_shortcuts_match_the_unicode_rule_on_mixed_text() -> None:
    word = regex.compile(r"\w+")
    pieces = ["Straße", "ÇAĞRI", "İstanbul", "e\u0301", "日本語", "x²", "½", "Ⅻ", "a\u00a0b", "—", "\u2019s", "\u200d",
              "\ud800", "١٢٣", "ﬁ", "_", "-", ".", " ", "\t", "a", "Z9"]  # fmt: skip
    rng = random.Random(11)
    for _ in range(2000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
        expected = word.findall(unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).casefold()))
        assert words(text) == expected, repr(text)


def test_shingles_on_small_examples() -> None:
    assert shingles("Invoice numbers are sequential.") == {"invoice numbers", "numbers are", "are sequential"}
    assert shingles("a b a b") == {"a b", "b a"}
    assert shingles("Hello!") == {"hello"}
    assert shingles("") == frozenset()
    assert shingles("?!; --") == frozenset()


def test_jaccard_values() -> None:
    a = frozenset({"a b", "b c", "c d"})
    b = frozenset({"a b", "b c", "c e"})
    assert jaccard(a, b) == pytest.approx(2 / 4)
    assert jaccard(a, a) == 1.0
    assert jaccard(a, frozenset({"x y"})) == 0.0
    assert jaccard(a, frozenset()) == 0.0
    assert jaccard(frozenset(), frozenset()) == 0.0
    assert jaccard(shingles("one two three"), shingles("one two four")) == pytest.approx(1 / 3)


def test_one_changed_word_is_not_a_near_duplicate_but_case_and_punctuation_are_identical() -> None:
    sentence = "invoice numbers are generated with a year prefix per tenant"
    assert len(words(sentence)) == 10
    changed = "invoice numbers are generated with a month prefix per tenant"
    assert jaccard(shingles(sentence), shingles(changed)) == pytest.approx(7 / 11)
    assert jaccard(shingles(sentence), shingles(changed)) < NEAR_DUPLICATE
    restyled = "Invoice numbers are generated, with a YEAR prefix; per tenant!"
    assert jaccard(shingles(sentence), shingles(restyled)) == 1.0


def test_a_small_edit_to_a_longer_text_is_a_near_duplicate() -> None:
    text = " ".join(f"word{i}" for i in range(30))
    edited = text.replace("word14", "other")
    assert jaccard(shingles(text), shingles(edited)) == pytest.approx(27 / 31)
    assert jaccard(shingles(text), shingles(edited)) >= NEAR_DUPLICATE


# --- band keys ---------------------------------------------------------------------------------------------

_KEY = regex.compile(r"[0-9]:[0-9a-f]{16}")


def test_band_keys_shape() -> None:
    keys = band_keys(shingles(SEED_RECORD))
    assert len(keys) == BANDS
    assert all(_KEY.fullmatch(key) for key in keys)
    assert [key.split(":")[0] for key in keys] == [str(band) for band in range(BANDS)]
    assert band_keys(frozenset()) == ()
    assert len(band_keys(shingles("single"))) == BANDS


def test_band_keys_are_fixed_across_processes() -> None:
    # Stored keys must match ones computed later by another process: any change here invalidates an index.
    assert band_keys(shingles(SEED_RECORD)) == (
        "0:62fae8d82eaa9316",
        "1:d88088b782fe9e91",
        "2:0176893a76418910",
        "3:99258b3ec701644c",
        "4:3e87e205fe1a9bd8",
        "5:cbdb0388b3ffb2dd",
        "6:593586e4209b07ab",
        "7:527ff00c5497208a",
    )


def test_band_keys_depend_only_on_the_set() -> None:
    members = sorted(shingles(SEED_RECORD))
    assert band_keys(frozenset(members)) == band_keys(frozenset(reversed(members)))
    assert band_keys(shingles(SEED_RECORD)) == band_keys(shingles(SEED_RECORD.upper() + "."))
    assert band_keys(shingles(SEED_RECORD)) != band_keys(shingles(SEED_RECORD + " monthly"))


def _random_text(rng: random.Random, vocabulary: list[str], length: int) -> list[str]:
    return [rng.choice(vocabulary) for _ in range(length)]


def test_similar_texts_share_a_band_key() -> None:
    rng = random.Random(20260112)
    vocabulary = [f"w{i}" for i in range(2000)]
    trials = 0
    shared = 0
    while trials < 400:
        base = _random_text(rng, vocabulary, rng.randint(20, 80))
        edited = list(base)
        for _ in range(rng.randint(1, 3)):
            edited[rng.randrange(len(edited))] = rng.choice(vocabulary)
        a, b = shingles(" ".join(base)), shingles(" ".join(edited))
        if jaccard(a, b) < 0.8:
            continue
        trials += 1
        shared += bool(set(band_keys(a)) & set(band_keys(b)))
    # At Jaccard 0.8 a pair is missed with probability 1 - candidate_probability(0.8), about 3 in 10,000.
    assert shared >= 396


def test_unrelated_texts_rarely_share_a_band_key() -> None:
    rng = random.Random(7)
    collisions = 0
    for trial in range(200):
        a = shingles(" ".join(f"a{trial}x{rng.randrange(10**6)}" for _ in range(30)))
        b = shingles(" ".join(f"b{trial}y{rng.randrange(10**6)}" for _ in range(30)))
        assert jaccard(a, b) == 0.0
        collisions += bool(set(band_keys(a)) & set(band_keys(b)))
    assert collisions <= 2


def test_candidate_probability() -> None:
    assert candidate_probability(0.0) == 0.0
    assert candidate_probability(1.0) == 1.0
    assert candidate_probability(0.8) == pytest.approx(1 - 0.36**8)
    assert candidate_probability(0.8) > 0.999
    assert candidate_probability(NEAR_DUPLICATE) > 0.99
    assert candidate_probability(0.1) < 0.1
    values = [candidate_probability(s / 10) for s in range(11)]
    assert values == sorted(values)


# --- ranking -----------------------------------------------------------------------------------------------


def test_rare_term_outranks_common_term() -> None:
    docs = [
        "the invoice is sent on monday",
        "the report is sent on monday",
        "the tenant is billed on monday",
        "the refund is sent on friday",
    ]
    ranked = rank("invoice monday", docs)
    assert ranked[0][0] == 0
    assert {index for index, _ in ranked} == {0, 1, 2}
    assert rank("refund monday", docs)[0][0] == 3


def test_shorter_document_wins_at_equal_term_frequency() -> None:
    docs = [
        "invoice numbers carry a year prefix and are assigned in sequence for each tenant of the system",
        "invoice prefix rules",
        "nothing relevant here",
    ]
    ranked = rank("prefix", docs)
    assert [index for index, _ in ranked] == [1, 0]
    assert ranked[0][1] > ranked[1][1] > 0


def test_rank_score_matches_the_formula() -> None:
    docs = ["apple banana", "banana cherry cherry", "date"]
    ((index, score),) = rank("cherry", docs)
    lengths = [2, 3, 1]
    average = sum(lengths) / 3
    idf = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
    tf = 2
    expected = idf * tf * (1.2 + 1) / (tf + 1.2 * (1 - 0.75 + 0.75 * 3 / average))
    assert index == 1
    assert score == pytest.approx(expected)


def test_rank_edge_cases() -> None:
    docs = ["pdf report", "pdf report", "excel sheet", ""]
    ranked = rank("PDF", docs)
    assert [index for index, _ in ranked] == [0, 1]  # ties by index
    assert ranked[0][1] == ranked[1][1]
    assert rank("pdf pdf PDF!", docs) == ranked  # query terms count once
    assert [index for index, _ in rank("pdf", ["pdf a", "b", "pdf a", "pdf pdf a", "pdf c"])] == [3, 0, 2, 4]
    assert rank("", docs) == []
    assert rank("?!", docs) == []
    assert rank("pdf", []) == []
    assert rank("missing", docs) == []
    assert rank("pdf", ["", ""]) == []


# --- speakers and clauses ---------------------------------------------------------------------------------


def test_seed_line_is_one_preference_clause() -> None:
    assert clauses(SEED_LINE) == ["I want the reports as PDF every Monday, not Excel."]
    assert classify(clauses(SEED_LINE)[0]) == "preference"


@pytest.mark.parametrize(
    ("line", "stripped"),
    [
        ("user: hello", "hello"),
        ("USER:hello", "hello"),
        ("  Assistant :  sure thing", "sure thing"),
        ("ai: x", "x"),
        ("customer: my order", "my order"),
        ("user: assistant: twice", "assistant: twice"),
        ("Note: keep the Note", "Note: keep the Note"),
        ("Time: 10:30", "Time: 10:30"),
        ("username: bob", "username: bob"),
        ("user is here", "user is here"),
        ("http://example.com", "http://example.com"),
    ],
)
def test_strip_speaker(line: str, stripped: str) -> None:
    assert strip_speaker(line) == stripped


def test_speakers_listed() -> None:
    assert {"user", "assistant", "agent", "system", "human", "ai", "bot", "customer", "support", "model"} <= SPEAKERS
    assert all(name == name.casefold() for name in SPEAKERS)


def test_clauses_split_at_sentence_ends_and_semicolons() -> None:
    text = "We chose CSV. It is smaller! Is it fast? Yes; very fast"
    assert clauses(text) == ["We chose CSV.", "It is smaller!", "Is it fast?", "Yes", "very fast"]


def test_clauses_per_line_with_speakers() -> None:
    text = "user: Send PDF.\nassistant: Noted. Will do.\r\n\nsystem:\n  Note: ok"
    assert clauses(text) == ["Send PDF.", "Noted.", "Will do.", "Note: ok"]


@pytest.mark.parametrize(
    "sentence",
    [
        "Use a vector format, e.g. SVG, for charts.",
        "Pick one, i.e. the cheaper plan.",
        "Upgrade to v1.2 before Friday.",
        "The rate is 3.75 percent.",
        "Ask Dr. Smith vs. the team.",
        "Deploy to the U.S. region first.",
        "Read docs.example.com/setup first.",
    ],
)
def test_dots_that_do_not_end_a_sentence(sentence: str) -> None:
    assert clauses(sentence) == [sentence]


def test_clause_edges() -> None:
    assert clauses("Version 1.2. Then stop.") == ["Version 1.2.", "Then stop."]
    assert clauses('He said "go." Then left.') == ['He said "go."', "Then left."]
    assert clauses("She said \u201cgo.\u201d Then (quietly.) left.") == [
        "She said \u201cgo.\u201d",
        "Then (quietly.)",
        "left.",
    ]
    assert clauses("Wait... what?!") == ["Wait...", "what?!"]
    assert clauses("1. Export as PDF. 2. Send it.") == ["1. Export as PDF.", "2. Send it."]
    assert clauses("... ; !! ;\n - \n") == []
    assert clauses("") == []


def test_clauses_are_capped() -> None:
    text = " ".join(f"Fact number {i}." for i in range(100))
    found = clauses(text)
    assert len(found) == MAX_CLAUSES
    assert found[0] == "Fact number 0."
    assert found[-1] == f"Fact number {MAX_CLAUSES - 1}."


# --- classification ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("clause", "kind"),
    [
        ("Actually, the deadline is Friday.", "correction"),
        ("That's not right, the limit is 10.", "correction"),
        ("Use PostgreSQL instead of MySQL.", "correction"),
        ("Never commit secrets to the repository.", "violation"),
        ("The agent violated the retention policy.", "violation"),
        ("Pushing to main is not allowed.", "violation"),
        ("We decided to use PostgreSQL.", "decision"),
        ("We'll go with weekly releases.", "decision"),
        ("Fixed by pinning the driver version.", "solution"),
        ("The workaround is to restart the worker.", "solution"),
        ("I prefer short answers.", "preference"),
        ("Please never send Excel files.", "preference"),
        ("I\u2019d like a summary first.", "preference"),
        ("The handler lives in src/app.py.", "file"),
        ("See docs/x.md for the format.", "file"),
        ("Update the Makefile target.", "file"),
        ("Run ./scripts/deploy with care.", "file"),
        ("Invoice numbers carry a year prefix.", "fact"),
        ("The license is MIT.", "fact"),
        ("Version 1.2 shipped e.g. yesterday.", "fact"),
    ],
)
def test_classify(clause: str, kind: str) -> None:
    assert classify(clause) == kind


def test_classify_order() -> None:
    # Earlier rules win: a correction often restates a decision, and a rule outranks a wish.
    assert classify("Actually, we decided to use CSV.") == "correction"
    assert classify("I want that we never deploy on Friday.") == "violation"
    assert classify("We decided to keep config in settings.toml.") == "decision"
    assert classify("") == "fact"


# --- bounds -------------------------------------------------------------------------------------------------


def test_full_size_content_and_query() -> None:
    rng = random.Random(3)
    vocabulary = [f"term{i}" for i in range(3000)]
    content = " ".join(rng.choice(vocabulary) for _ in range(4000))[:16384]
    assert len(words(content)) > 1500
    assert len(band_keys(shingles(content))) == BANDS
    assert len(clauses(content)) == 1
    assert classify(content) == "fact"
    query = " ".join(rng.choice(vocabulary) for _ in range(300))[:1024]
    docs = [" ".join(rng.choice(vocabulary) for _ in range(30)) for _ in range(500)]
    ranked = rank(query, docs)
    assert ranked
    assert all(score > 0 for _, score in ranked)


@pytest.mark.parametrize(
    "text",
    [
        "a. " * 20_000,
        "e.g." * 20_000,
        ";" * 50_000,
        "user:" * 20_000,
        "x" * 100_000,
        "src/" * 20_000 + "app.py",
        "." * 50_000 + " x",
        "ü " * 40_000,
    ],
)
def test_hostile_and_oversized_text(text: str) -> None:
    assert len(words(text)) <= MAX_TEXT_CHARS
    assert len(clauses(text)) <= MAX_CLAUSES
    assert classify(text) in {"correction", "violation", "decision", "solution", "preference", "file", "fact"}
    assert len(band_keys(shingles(text))) in {0, BANDS}
    assert isinstance(rank(text, [text, "x"]), list)
    assert len(content_digest(text)) == 64


def test_words_read_only_the_capped_prefix() -> None:
    text = "alpha " * MAX_TEXT_CHARS
    assert len(words(text)) == len(words(text[: recordtext.MAX_TEXT_CHARS]))
