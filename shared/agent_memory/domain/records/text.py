"""Text functions for records: what counts as the same content, how alike two texts are, how well a
text answers a query, and how raw conversation lines become typed clauses. Pure and deterministic (no
I/O, no model, no Python `hash()`), so a digest or band key computed in one process matches one stored
by another, and so the storage code above stays free of text rules.

Identity. `normalise` is what "identical content" means: Unicode NFC, `casefold()`, NFC again (case
folding can leave a few characters decomposed), every run of whitespace (anything `str.isspace` accepts)
made one space, ends stripped. Punctuation is kept: "PDF, not Excel" and "PDF not Excel" differ.
`content_digest` is the sha256 of that, the key an exact-duplicate check writes against.

Similarity. `words` are the `regex` `\\w+` runs of the folded text (letters, digits, marks, underscore).
`shingles` are adjacent word pairs; a one-word text is its own single shingle. Two texts are near
duplicates when the Jaccard index of their shingle sets is at least `NEAR_DUPLICATE` (0.7). Over n
words there are n-1 shingles, so one changed word inside a sentence removes two of them: a ten-word
sentence with one inner word changed scores 7/11 ≈ 0.64 and is not merged, while changing its first or
last word (one shingle) scores 8/10 and is; longer texts tolerate proportionally more edits.

Candidates. Finding texts to compare must not scan the store, so each shingle set gets `BANDS` MinHash
band keys of `ROWS` rows each; texts sharing any key are candidates, checked exactly with `jaccard`.
Two sets with Jaccard s share a key with probability `candidate_probability(s)` = 1-(1-s**2)**8:
0.9997 at 0.8, 0.995 at 0.7, 0.90 at 0.5, 0.53 at 0.3, 0.08 at 0.1. The scheme is tuned for recall
at the threshold and pays with false candidates lower down, which the exact check drops. Each shingle is
hashed once with blake2b to 64 bits; the 16 functions are (a*x + b) mod 2**61-1 with the fixed constants
below, and a band's key hashes its two minima. Changing a constant, the shingling or the folding changes
every key, so stored keys must then be rebuilt.

Relevance. `rank` is Okapi BM25 with k1 = 1.2, b = 0.75 and the non-negative IDF
ln(1 + (N - n + 0.5)/(n + 0.5)), over the documents it is given: every document is tokenised once and
only the query's terms are counted, so the cost is one pass over the text.

Index. A search must not read every record either, so each record's text is indexed by term: its first
`MAX_INDEXED_TERMS` distinct words (`index_terms`: the facet and labels first, then the content), each a
posting the record's own writes keep, carrying the term's *impact* in that text (`postings`): BM25's term
weight tf*(k1+1)/(tf + k1*(1-b+b*len/NOMINAL_LENGTH)), times 1000, rounded; the corpus's average length is
not known when a record is written, so a nominal one stands in. A search reads the postings of the query's
first `MAX_SEARCHED_TERMS` distinct words (`query_terms`) highest impact first, so a capped read keeps the
records BM25 would rank high for that word (not merely the newest), and ranks only the records they name,
with `rank`. Since a record's postings are computed from its text whenever it is written, changing these
rules (or the words) changes what an old record would be indexed under: bump `INDEX_VERSION` and set
`TERMS_SINCE` to it, which sends every workspace back to reading all its records until it is reindexed.
A version may also add postings without changing the words' (version 2 posts the records waiting for
review, domain/records/service.py): then only the searches that need the new postings wait for a reindex.

Clauses. A raw line loses one speaker prefix (`user:`, `assistant:` ... see `SPEAKERS`; "Note: x" is
not a speaker), then is cut at `;` and at sentence ends: a run of `.`, `!` or `?` (closing quotes or
brackets may follow) that is followed by whitespace or the end of the line. A dot right after a word
that needs it does not end a sentence: abbreviations in `_ABBREVIATIONS` ("e.g.", "vs.", "Dr."), dotted
single letters ("i.e.", "U.S.", "a.m."), and a number opening a sentence ("1. First", a list marker).
Dots inside a token never qualify ("v1.2", "3.14", "example.com"), because no whitespace follows them.
Commas never cut. A clause keeps its final punctuation (the `;` itself is dropped), loses surrounding
whitespace, and is dropped if it has no word character; a text gives at most `MAX_CLAUSES`.

Types. `classify` tries these rules in order and the first whose cue appears (as whole words, any case,
either apostrophe) wins:

1. correction: actually, correction, I meant, I was wrong, that's/that is wrong (not right, incorrect,
   not correct), instead of, rather it is / rather, that's, scratch that;
2. violation: must not, mustn't, never, not allowed, forbidden, prohibited, violat..., do not ever,
   don't ever, breach...; a cue right after "please" is a request, not a rule, and is left to (5);
3. decision: we decided, decided to, we chose / we've chosen, we'll go with, going with, agreed to, we
   agreed, let's use, we will use;
4. solution: fixed by (fixed it by), the fix is/was, solved, resolved by, workaround, solution;
5. preference: I want, I'd like / I would like (or prefer, or rather), I prefer, prefer(s/red), I like,
   I love, I hate, I don't like / want, please always, please never, please don't;
6. file: a token naming a file, a name with a common extension (`src/app.py`, `docs/x.md`, or `Makefile` and
   `README` as spelled), or a path starting `./`, `../` or `~/`; product names such as "Node.js" also look like
   this, which only turns a fact into a file;
7. fact: everything else.

Correction comes first because a correction usually restates the thing it corrects ("actually, we
decided on CSV"), and violation before preference because "never" states a rule whoever says it,
unless it is asked for with "please".

Bounds. Tokenising, clause splitting and classifying read at most `MAX_TEXT_CHARS` characters (twice
the 16 KiB content limit, room for tags searched with it), queries use at most `MAX_QUERY_TERMS`
distinct terms (a 1 KiB query cannot have more), and no pattern backtracks, so every call is linear in its
capped input. `normalise` and `content_digest` read everything: truncating an identity would make
different texts equal.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import operator
import unicodedata
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Final

import regex

MAX_TEXT_CHARS: Final = 32_768
MAX_QUERY_TERMS: Final = 512
MAX_CLAUSES: Final = 32

NEAR_DUPLICATE: Final[float] = 0.7

INDEX_VERSION: Final = 2
# The oldest index version whose word postings are today's: a workspace at it or later is searched by them.
TERMS_SINCE: Final = 1
MAX_INDEXED_TERMS: Final = 40
MAX_SEARCHED_TERMS: Final = 16
NOMINAL_LENGTH: Final = 16

BANDS: Final = 8
ROWS: Final = 2

K1: Final = 1.2
B: Final = 0.75

# The speaker names a consolidated raw line may open with. A closed list, because "Name: value" is
# also how people write notes, labels and key-value pairs, and those must keep their first word.
SPEAKERS: Final = frozenset(
    {
        "agent",
        "ai",
        "assistant",
        "bot",
        "chatbot",
        "client",
        "customer",
        "developer",
        "human",
        "model",
        "moderator",
        "operator",
        "support",
        "system",
        "tool",
        "user",
    }
)

_MERSENNE_61: Final = (1 << 61) - 1
# (a, b) of the 16 hash functions, drawn once at random and frozen: stored band keys depend on them.
_MINHASH: Final[tuple[tuple[int, int], ...]] = (
    (0x1F7BCAEC4B35CDAD, 0x194EC8F3D7F99D76),
    (0x329BCCF9473E073, 0x1E98FDAE4CC3C60F),
    (0x1DB9C44753421398, 0xC647CD34FEE0D4E),
    (0x4ABBBE297816927, 0xA8EE592403A2560),
    (0xBA22F15FC230393, 0x2B2BA0C087CBCDB),
    (0x17E0FC1E8167310, 0x7B3E53C663F942B),
    (0xCE8AD339527529A, 0xEE112D42157F865),
    (0x880386DE4845907, 0xBF5E00035B30780),
    (0x5DD4AFFE4F8FFA7, 0xB5C6BFD55239175),
    (0x1D5391F7FC91FBD3, 0x104686AF309EA7AE),
    (0x1609493F8F5E90CE, 0x1624A39C9EC8B6AD),
    (0x736DB21C5EBD9C3, 0x14818030C8597583),
    (0xC093DE5731A6AF4, 0xCC8092511832216),
    (0x1F774DF8C04E8767, 0x1E0D35BB5589D543),
    (0x15B6409D2F4442B0, 0x1441854A6B3A91AF),
    (0x1C1C59532A16C514, 0x16F1052DEAF914A7),
)
assert len(_MINHASH) == BANDS * ROWS

_WORD: Final = regex.compile(r"\w++")
_NON_ASCII_NON_WORD: Final = regex.compile(r"[^\x00-\x7f\w]")
# Byte table over UTF-8: ASCII word characters kept (letters lowered), other ASCII made a space, bytes of
# longer sequences untouched.
_ASCII_WORDS: Final = bytes(
    i if i >= 128 else ord(chr(i).lower()) if chr(i).isalnum() or chr(i) == "_" else ord(" ") for i in range(256)
)

# Possessive throughout: a name that fails is given up at once instead of being re-tried shorter.
_SPEAKER: Final = regex.compile(r"\s*+([^\W\d_][\w-]{0,31}+)[ \t]*+:\s*+")

# What may close a sentence after its last mark: quotes (typewriter, typographic, guillemet) and brackets.
_CLOSERS: Final = "\"'\u201d\u2019\u00bb)]"
_SENTENCE_END: Final = regex.compile(r"[.!?]++[\"'\u201d\u2019\u00bb)\]]*+(?=\s|\Z)")
# Words written with a dot that is not a full stop. "etc." is left out: it ends sentences as often as not.
_ABBREVIATIONS: Final = frozenset(
    {
        "al",
        "approx",
        "ca",
        "cf",
        "dr",
        "e.g",
        "eq",
        "fig",
        "i.e",
        "jr",
        "mr",
        "mrs",
        "ms",
        "prof",
        "sr",
        "st",
        "viz",
        "vs",
    }
)
_DOTTED_LETTERS: Final = regex.compile(r"[^\W\d_](?:\.[^\W\d_])++")
_LONGEST_ABBREVIATION: Final = 32


def _cues(*phrases: str) -> str:
    return r"\b(?:" + "|".join(phrases) + r")\b"


_APOS: Final = "['\u2019]"  # typewriter or typographic apostrophe
_RULES: Final[tuple[tuple[str, regex.Pattern[str]], ...]] = tuple(
    (kind, regex.compile(pattern, regex.IGNORECASE))
    for kind, pattern in (
        (
            "correction",
            _cues(
                "actually",
                "correction",
                r"i\s++meant",
                r"i\s++was\s++wrong",
                rf"that(?:{_APOS}s|\s++is|\s++was)\s++(?:wrong|not\s++right|incorrect|not\s++correct)",
                r"instead\s++of",
                rf"rather,?+\s++(?:it|that|this)(?:{_APOS}s|\s++is|\s++was)",
                r"scratch\s++that",
            ),
        ),
        (
            "violation",
            r"(?<!\bplease[\s,]{1,8})"
            + _cues(
                r"must\s++not",
                rf"mustn{_APOS}t",
                "never",
                r"not\s++allowed",
                "forbidden",
                "prohibited",
                r"violat\w*+",
                r"do\s++not\s++ever",
                rf"don{_APOS}t\s++ever",
                r"breach\w*+",
            ),
        ),
        (
            "decision",
            _cues(
                r"we\s++decided",
                r"decided\s++to",
                r"we\s++chose",
                rf"we(?:{_APOS}ve|\s++have)\s++chosen",
                rf"we(?:{_APOS}ll|\s++will)\s++go\s++with",
                r"going\s++with",
                r"agreed\s++to",
                r"we\s++agreed",
                rf"let{_APOS}s\s++use",
                r"let\s++us\s++use",
                rf"we(?:{_APOS}ll|\s++will)\s++use",
            ),
        ),
        (
            "solution",
            _cues(
                r"fixed\s++(?:it\s++|this\s++)?by",
                r"the\s++fix\s++(?:is|was)",
                "solved",
                r"resolved\s++by",
                r"work-?arounds?+",
                r"solutions?+",
            ),
        ),
        (
            "preference",
            _cues(
                r"i\s++want",
                rf"i(?:{_APOS}d|\s++would)\s++(?:like|prefer|rather)",
                r"i\s++prefer",
                r"prefer(?:s|red)?+",
                r"i\s++(?:really\s++)?(?:like|love|hate)",
                rf"i\s++(?:don{_APOS}t|do\s++not)\s++(?:like|want)",
                rf"please[\s,]++(?:always|never|don{_APOS}t|do\s++not)",
            ),
        ),
    )
)

# Extensions common enough in agent work that a name ending in one is almost always a file.
_FILE_EXTENSIONS: Final = frozenset(
    {
        "c", "cfg", "conf", "cpp", "cs", "css", "csv", "docx", "env", "gif", "go", "gz", "h", "hpp", "html",
        "ini", "ipynb", "java", "jpeg", "jpg", "js", "json", "jsx", "kt", "lock", "log", "md", "parquet", "pdf",
        "php", "png", "pptx", "proto", "py", "rb", "rs", "rst", "scss", "sh", "sql", "svg", "swift", "tar",
        "tf", "toml", "ts", "tsx", "txt", "vue", "xlsx", "xml", "yaml", "yml", "zip",
    }
)  # fmt: skip
# Extensionless names matched as spelled: "License" or "readme" in a sentence is a word, not a file.
_FILE_NAMES: Final = frozenset({"CHANGELOG", "Dockerfile", "Gemfile", "LICENSE", "Makefile", "Procfile", "README"})
_PATH_TOKEN: Final = regex.compile(r"[\w.~/-]++")


def _fold(text: str) -> str:
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).casefold())


def normalise(text: str) -> str:
    """The form two contents share exactly when they count as identical: folded case, NFC, single
    spaces, no surrounding whitespace; punctuation untouched."""
    return " ".join(_fold(text).split())


def content_digest(text: str) -> str:
    """The sha256 (hex) of the normalised text in UTF-8; lone surrogates are encoded, not refused."""
    return hashlib.sha256(normalise(text).encode("utf-8", "surrogatepass")).hexdigest()


def words(text: str) -> list[str]:
    """The folded word tokens of the first `MAX_TEXT_CHARS` characters, punctuation dropped."""
    text = text[:MAX_TEXT_CHARS]
    # Two shortcuts give the same tokens as `\w+` several times faster, and tokenising is most of what
    # `rank` spends. In ASCII, NFC changes nothing, casefold is lower, and the word characters are letters,
    # digits and underscore. When every non-ASCII character is a word character, only ASCII ones separate.
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_WORDS).decode("ascii").split()
    folded = _fold(text)
    if _NON_ASCII_NON_WORD.search(folded) is None:
        return folded.encode("utf-8").translate(_ASCII_WORDS).decode("utf-8").split()
    found: list[str] = _WORD.findall(folded)
    return found


def shingles(text: str) -> frozenset[str]:
    """Adjacent word pairs joined by one space; a one-word text gives that word, a wordless one nothing."""
    tokens = words(text)
    if len(tokens) == 1:
        return frozenset(tokens)
    return frozenset(f"{first} {second}" for first, second in itertools.pairwise(tokens))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Shared over combined members; two empty sets have nothing in common, so 0.0."""
    shared = len(a & b)
    union = len(a) + len(b) - shared
    return shared / union if union else 0.0


def band_keys(sh: frozenset[str]) -> tuple[str, ...]:
    """`BANDS` keys "band:hex16" of a shingle set's MinHash signature; () for the empty set."""
    if not sh:
        return ()
    points = [int.from_bytes(hashlib.blake2b(s.encode("utf-8", "surrogatepass"), digest_size=8).digest()) for s in sh]
    p = _MERSENNE_61
    # min over (a*x + b) % p, composed from bound int methods: no Python frame per point, about a third faster.
    signature = [min(map(p.__rmod__, map(b.__add__, map(a.__mul__, points)))) for a, b in _MINHASH]
    keys = []
    for band in range(BANDS):
        rows = signature[band * ROWS : (band + 1) * ROWS]
        digest = hashlib.blake2b(b"".join(v.to_bytes(8) for v in rows), digest_size=8).hexdigest()
        keys.append(f"{band}:{digest}")
    return tuple(keys)


def index_terms(*texts: str) -> tuple[str, ...]:
    """The distinct words of `texts`, in the order given, at most `MAX_INDEXED_TERMS` of them."""
    found: dict[str, None] = {}
    for text in texts:
        for word in words(text):
            found[word] = None
            if len(found) == MAX_INDEXED_TERMS:
                return tuple(found)
    return tuple(found)


def postings(searched: str, *first: str) -> tuple[tuple[str, int], ...]:
    """(term, impact) of the text `searched` (as `rank` will read it) under its `index_terms`, those of the
    texts `first` (parts of it) before the rest."""
    tokens = words(searched)
    counts = Counter(tokens)
    norm = K1 * (1.0 - B + B * len(tokens) / NOMINAL_LENGTH)
    return tuple(
        (term, round(1000 * counts[term] * (K1 + 1.0) / (counts[term] + norm)))
        for term in index_terms(*first, searched)
    )


def query_terms(query: str) -> tuple[str, ...]:
    """The distinct words of a query whose postings a search reads, at most `MAX_SEARCHED_TERMS`."""
    return tuple(dict.fromkeys(words(query)))[:MAX_SEARCHED_TERMS]


def candidate_probability(s: float) -> float:
    """The chance that two shingle sets with Jaccard `s` share at least one band key: 1-(1-s**ROWS)**BANDS."""
    return float(1.0 - (1.0 - s**ROWS) ** BANDS)


def rank(query: str, docs: Sequence[str]) -> list[tuple[int, float]]:
    """BM25 of the query's distinct words against each document, IDF taken over `docs`; (index, score)
    of every document scoring above zero, best first, ties by index."""
    terms = set(list(dict.fromkeys(words(query)))[:MAX_QUERY_TERMS])
    if not terms or not docs:
        return []
    lengths: list[int] = []
    hits: list[tuple[int, list[str], set[str]]] = []
    document_frequency = dict.fromkeys(terms, 0)
    for index, tokens in enumerate(map(words, docs)):
        lengths.append(len(tokens))
        if terms.isdisjoint(tokens):
            continue
        present = terms.intersection(tokens)
        hits.append((index, tokens, present))
        for term in present:
            document_frequency[term] += 1
    if not hits:
        return []
    n_docs = len(docs)
    average_length = sum(lengths) / n_docs
    idf = {term: math.log(1.0 + (n_docs - n + 0.5) / (n + 0.5)) for term, n in document_frequency.items()}
    scored: list[tuple[int, float]] = []
    for index, tokens, present in hits:
        # Documents with a hit have at least one token, so the average is positive here.
        norm = K1 * (1.0 - B + B * lengths[index] / average_length)
        score = 0.0
        for term in present:
            tf = tokens.count(term)
            score += idf[term] * tf * (K1 + 1.0) / (tf + norm)
        if score > 0.0:
            scored.append((index, score))
    # Hits are in index order and the sort is stable (also reversed), so ties stay by index.
    scored.sort(key=operator.itemgetter(1), reverse=True)
    return scored


def strip_speaker(line: str) -> str:
    """The line without one leading "<speaker>:" (and the whitespace around it) when the name is one of
    `SPEAKERS`, in any case; otherwise the line unchanged."""
    match = _SPEAKER.match(line)
    if match is None or match.group(1).casefold() not in SPEAKERS:
        return line
    return line[match.end() :]


def _ends_sentence(piece: str, end: regex.Match[str], sentence_start: int) -> bool:
    if end.group().rstrip(_CLOSERS) != ".":
        return True
    # Walk back over the word the dot is attached to; bounded, and words of separate matches never overlap.
    start = end.start()
    limit = max(0, start - _LONGEST_ABBREVIATION)
    while start > limit and (piece[start - 1].isalnum() or piece[start - 1] in "._"):
        start -= 1
    word = piece[start : end.start()]
    if word.casefold() in _ABBREVIATIONS or _DOTTED_LETTERS.fullmatch(word):
        return False
    # "1. Do this" opens a numbered item; the number is a marker, not a sentence.
    return not (word.isdigit() and not piece[sentence_start:start].strip())


def _sentences(piece: str) -> Iterator[str]:
    start = 0
    for end in _SENTENCE_END.finditer(piece):
        if _ends_sentence(piece, end, start):
            yield piece[start : end.end()]
            start = end.end()
    yield piece[start:]


def clauses(text: str) -> list[str]:
    """The text's clauses, line by line with speakers stripped, cut at sentence ends and `;`, at most
    `MAX_CLAUSES`; see the module docstring for what ends a sentence."""
    found: list[str] = []
    for line in text[:MAX_TEXT_CHARS].splitlines():
        for piece in strip_speaker(line).split(";"):
            for sentence in _sentences(piece):
                clause = sentence.strip()
                if _WORD.search(clause):
                    found.append(clause)
                    if len(found) == MAX_CLAUSES:
                        return found
    return found


def _names_file(text: str) -> bool:
    for match in _PATH_TOKEN.finditer(text):
        token = match.group().rstrip(".")
        if token.startswith(("./", "../", "~/")) and len(token) > 3:
            return True
        name = token.rpartition("/")[2]
        stem, dot, extension = name.rpartition(".")
        if dot and extension.casefold() in _FILE_EXTENSIONS and _WORD.search(stem):
            return True
        if name in _FILE_NAMES:
            return True
    return False


def classify(clause: str) -> str:
    """The record type a clause suggests by the ordered cue rules of the module docstring; "fact" when
    none applies."""
    text = clause[:MAX_TEXT_CHARS]
    for kind, pattern in _RULES:
        if pattern.search(text):
            return kind
    return "file" if _names_file(text) else "fact"
