"""Personal data in document text, found by pattern (no model) and masked for exports.

Six kinds, each a shape plus whatever check the number itself carries:

- `email`: ASCII local@domain.tld with at least one dot in the domain and a TLD of 2+ letters; local part
  up to 64 characters, up to 8 domain labels.
- `card`: 13-19 digits, plain or grouped the way cards are printed (4-4-4-4, 4-4-4-4-3, 4-4-4-1, 4-6-5,
  4-6-4) with one kind of separator (single spaces or single dashes), first digit 2-6 (the major
  industry identifiers of banking and travel cards: a 13-digit millisecond timestamp or a snowflake id
  starts with 1 and is not a card) and Luhn-valid.
- `iban`: a country of the table below, two check digits and the BBAN, exactly that country's length,
  plain or in groups of four separated by single spaces, mod-97 == 1; letters in either case.
- `tr_national_id`: 11 plain digits, first not 0, both check digits right.
- `us_ssn`: AAA-GG-SSSS with dashes or single spaces, area not 000, 666 or 900-999, group not 00, serial
  not 0000. Nine plain digits count only right after a label ("SSN", "SSN#", "social security number:"):
  unlabelled, nine digits are far more often an order or account number than an SSN.
- `phone`: delimited numbers only, see below.

Numbers are read as tokens. A token is digit groups joined by `-`, `.` or parentheses, with an optional
leading `+`, and it must stand alone: not glued to letters, `@`, `_` or more digits, and not a piece of
a date, time, ratio or address written with `/` or `:` (`12/28`, `10:30`, `10.0.0.1:80`), so a digit
inside a longer run of digits or letters is never a match. Tokens one space apart may belong together:
- plain digit runs one space apart are one number, read whole (`4111 1111 1111 1111`, `123 45 6789`,
  `0532 123 45 67`): a card, an SSN, a phone or nothing, never a piece of one, so neither a Luhn-valid
  part of a longer grouped number nor a phone-shaped part of a list of numbers is a match;
- after `+country`, `(area)` or a trunk digit before `(area)`, a phone runs on over the tokens that follow
  (`+90 532 123 45 67`, `+1 (415) 555-0123`): the longest stretch of up to 7 tokens that is a phone;
- every other token stands alone. Reading resumes after each match, and after each plain run.

A phone is 7-15 digits in at least three groups (two separators; a parenthesised group counts as one):
- every group of 2+ digits, except a first group `0` or `1` (`1-800-...`) or a trunk digit before
  `(area)`, a `+country` code of up to 3 digits and the digit after it (`+33 1 ...`), and a
  parenthesised trunk `(0)`; groups before the last of at most 5 digits, the last of at most 8;
- at most one parenthesised group, first or right after the country code or trunk digit;
- dots never mixed with other separators;
- no date inside: three groups with the same separator reading as YYYY-MM-DD, DD-MM-YYYY or MM-DD-YYYY
  (`2026-12-01`, `01.12.2026`; versions fail the group rules, and times and ISO timestamps are not
  tokens at all);
- without `+` or parentheses: one kind of separator throughout; not the SSN shape 3-2-4; not shaped like
  thousands or ranges (first group up to 3 digits and every other exactly 3: `1 234 567`, `200-210-220`);
  not all pairs (`01 02 03`, `10-20-30-40`) unless five of them after a 0, as French numbers are written;
  not the dotted shape of an IPv4 address; and when spaces are the separator, starting with a trunk 0
  (not 00, which dials abroad) and 9-12 digits long (`0532 123 45 67`), or North American
  (`415 555 0123`, `1 800 555 0199`): bare numbers between single spaces are how tables and lists are
  written, so they need that much more evidence.

Overlaps: one kind's matches never overlap each other, but two kinds can claim the same text (the digits
of an IBAN, an e-mail's local part). The longer span wins; between equal lengths the first of card, iban,
us_ssn, tr_national_id, phone, email (then, only for determinism, the earlier start). The loser is
dropped whole, never trimmed.

Cost: every repeat in the patterns is counted, and possessive where giving characters back could not
produce a match, and each pattern turns a start position down within its first character or two, so a
scan is linear in the text. The checks in Python run once per candidate, and a token opens at most 7
candidates.
"""

from __future__ import annotations

import re
import threading
from typing import Any, Final

from agent_memory.core.lazy_dataclass import dataclass

PII_KINDS: tuple[str, ...] = ("card", "email", "iban", "phone", "tr_national_id", "us_ssn")

# Who keeps contested text between two equally long matches. Checksummed kinds come first: a number that
# passes Luhn or mod-97 is far less likely to be there by chance than one that merely looks like a phone.
_RANK: Final[dict[str, int]] = {
    kind: rank for rank, kind in enumerate(("card", "iban", "us_ssn", "tr_national_id", "phone", "email"))
}
# The kinds whose mask keeps a tail: enough for a person to tell their own numbers apart, too little to use.
_KEEPS_TAIL: Final = frozenset({"card", "iban", "phone"})

# IBAN lengths from the SWIFT registry: SEPA members first, then the other countries in common use.
_IBAN_LENGTHS: Final[dict[str, int]] = {
    # SEPA
    "AD": 24, "AT": 20, "BE": 16, "BG": 22, "CH": 21, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "EE": 20,
    "ES": 24, "FI": 18, "FR": 27, "GB": 22, "GI": 23, "GR": 27, "HR": 21, "HU": 28, "IE": 22, "IS": 26,
    "IT": 27, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "MC": 27, "MT": 31, "NL": 18, "NO": 15, "PL": 28,
    "PT": 25, "RO": 24, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "VA": 22,
    # Elsewhere
    "AE": 23, "AL": 28, "AZ": 28, "BA": 20, "BH": 22, "BR": 29, "BY": 28, "CR": 22, "DO": 28, "EG": 29,
    "FO": 18, "GE": 22, "GL": 18, "GT": 28, "IL": 23, "IQ": 23, "JO": 30, "KW": 30, "KZ": 20, "LB": 28,
    "LC": 32, "LY": 25, "MD": 24, "ME": 22, "MK": 19, "MR": 27, "MU": 30, "PK": 24, "PS": 29, "QA": 29,
    "RS": 22, "RU": 33, "SA": 24, "SC": 31, "SD": 18, "ST": 25, "SV": 28, "TL": 23, "TN": 24, "TR": 26,
    "UA": 29, "VG": 24, "XK": 20,
}  # fmt: skip

# The most tokens one match may span: `+33 6 12 34 56 78` is six, a spaced card at most five, so a longer run
# of plain numbers (a row of a table) is none of the kinds.
_MAX_TOKENS: Final = 7
# How far before nine plain digits a label may start ("social security number: " is 25 characters).
_LABEL_REACH: Final = 40

# Whether a text holds a number at all: most do not, and then the patterns below are never needed.
_DIGIT: Final = re.compile(r"[0-9]")
_GROUP = r"(?:\([0-9]{1,5}\)|[0-9]{1,19}+)"


class _Patterns:
    """The patterns, compiled with `regex` the first time a text holds a digit or an @: importing `regex`
    and compiling them is ~15 ms of a cold start, which a write of plain words never pays."""

    def __init__(self) -> None:
        import regex

        self.token: Any = regex.compile(
            rf"""
            # The first character alone turns most positions down, before the costlier look behind them; a token
            # never starts inside a word, an address, a decimal or a time
            (?=[0-9+(])(?<![\w@+.\-)]|[0-9][:/])
            # Atomic: a token is read whole or not at all, so a shorter piece of a rejected token is never tried
            (?>\+?{_GROUP}(?:(?:[.\-]|(?<=\))|(?=\()){_GROUP}){{0,9}}+)
            (?![\w@]|[.\-/:][0-9])
            """,
            regex.VERBOSE,
        )
        self.part: Any = regex.compile(r"\(([0-9]+)\)|([0-9]+)|([.\-])")
        self.ssn_label: Any = regex.compile(
            r"(?i)(?<!\w)(?:ssn|social security(?: number| no\.?)?)(?: ?(?:#|no\.?|number))? ?[:=]? {0,2}\Z"
        )
        # Matched from the check digits, with the country code as a lookbehind: digits are rare in prose and letter
        # pairs are everywhere, so starting from the digits makes the scan several times faster.
        self.iban: Any = regex.compile(
            r"""
            (?<=(?<!\w)[A-Za-z]{2})[0-9]{2}
            (?>
                [A-Za-z0-9]{11,29}+(?!\w)
                # Grouped: more groups than any IBAN has may follow; the country's length decides where it ends
              | (?:[ ][A-Za-z0-9]{1,4}+(?!\w)){1,9}+
            )
            """,
            regex.VERBOSE,
        )
        # The local part may begin after a dot (an ellipsis, a file name) but not inside a run of its characters,
        # so a long run is tried once, not once per character.
        self.email: Any = regex.compile(
            r"""
            (?<![A-Za-z0-9_%+\-])[A-Za-z0-9_%+\-][A-Za-z0-9._%+\-]{0,63}+
            @(?:[A-Za-z0-9][A-Za-z0-9\-]{0,62}+\.){1,8}[A-Za-z]{2,24}+(?![A-Za-z0-9\-])
            """,
            regex.VERBOSE,
        )


_compiled: _Patterns | None = None
_lock = threading.Lock()


def _patterns() -> _Patterns:
    global _compiled
    ready = _compiled
    if ready is None:
        with _lock:
            if _compiled is None:
                _compiled = _Patterns()
            ready = _compiled
    return ready


@dataclass(frozen=True, slots=True)
class Span:
    """One match: `text[start:end]` is personal data of `kind`."""

    kind: str
    start: int
    end: int


# Not frozen: a token is made for every number in the text, and frozen construction costs several times more.
@dataclass(slots=True)
class _Token:
    start: int
    end: int
    plus: bool
    groups: tuple[str, ...]
    parens: tuple[bool, ...]
    # Between consecutive groups: "-", ".", or "" where a parenthesis alone divides them
    seps: tuple[str, ...]
    digits: int
    # One plain digit run: the only token that joins a spaced card, SSN or phone
    bare: bool


def find(text: str) -> list[Span]:
    """Every match, non-overlapping, sorted by start (the module docstring gives the rules)."""
    spans: list[Span] = []
    if _DIGIT.search(text) is not None:
        spans.extend(_numbers(text))
        spans.extend(_ibans(text))
    if "@" in text:
        spans.extend(Span("email", match.start(), match.end()) for match in _patterns().email.finditer(text))
    return _resolve(spans)


def kinds(text: str) -> list[str]:
    """The distinct kinds `find` reports, sorted; `[]` for clean text."""
    return sorted({span.kind for span in find(text)})


def mask(text: str) -> str:
    """`text` with each match replaced by `[kind]`, or `[kind ****1234]` for the kinds that keep a tail."""
    pieces: list[str] = []
    pos = 0
    for span in find(text):
        pieces.append(text[pos : span.start])
        pieces.append(_placeholder(span.kind, text[span.start : span.end]))
        pos = span.end
    pieces.append(text[pos:])
    return "".join(pieces)


def _placeholder(kind: str, value: str) -> str:
    if kind not in _KEEPS_TAIL:
        return f"[{kind}]"
    tail = "".join(ch for ch in value if ch.isalnum())[-4:]
    return f"[{kind} ****{tail}]"


def _resolve(spans: list[Span]) -> list[Span]:
    """The overlap rule, settled cluster by cluster: spans that overlap nothing pass untouched, and a cluster
    (spans linked by overlaps) is small, so settling it by pairwise checks stays cheap."""
    spans.sort(key=lambda s: (s.start, s.end))
    kept: list[Span] = []
    cluster: list[Span] = []
    reach = 0
    for span in spans:
        if cluster and span.start >= reach:
            kept.extend(_settle(cluster))
            cluster = []
        cluster.append(span)
        reach = max(reach, span.end)
    if cluster:
        kept.extend(_settle(cluster))
    return kept


def _settle(cluster: list[Span]) -> list[Span]:
    if len(cluster) == 1:
        return cluster
    winners: list[Span] = []
    for span in sorted(cluster, key=lambda s: (s.start - s.end, _RANK[s.kind], s.start)):
        if all(span.end <= w.start or w.end <= span.start for w in winners):
            winners.append(span)
    return sorted(winners, key=lambda s: s.start)


# Numbers: cards, SSNs, Turkish IDs and phones share one tokenizer, so every kind sees the same tokens.


def _numbers(text: str) -> list[Span]:
    found: list[Span] = []
    line: list[_Token] = []
    for match in _patterns().token.finditer(text):
        token = _token(match)
        if line and (token.start != line[-1].end + 1 or text[line[-1].end] != " "):
            _read_line(text, line, found)
            line = []
        line.append(token)
    if line:
        _read_line(text, line, found)
    return found


def _token(match: Any) -> _Token:
    raw: str = match.group()
    start: int = match.start()
    plus = raw.startswith("+")
    body = raw[1:] if plus else raw
    if body.isdigit():
        return _Token(start, start + len(raw), plus, (body,), (False,), (), len(body), not plus)
    groups: list[str] = []
    parens: list[bool] = []
    seps: list[str] = []
    pending = ""
    parts: list[tuple[str, str, str]] = _patterns().part.findall(body)
    for bracketed, bare, sep in parts:
        if sep:
            pending = sep
            continue
        if groups:
            seps.append(pending)
        pending = ""
        groups.append(bracketed or bare)
        parens.append(bool(bracketed))
    digits = sum(len(g) for g in groups)
    return _Token(start, start + len(raw), plus, tuple(groups), tuple(parens), tuple(seps), digits, False)


def _read_line(text: str, line: list[_Token], found: list[Span]) -> None:
    """Tokens one space apart, left to right; the module docstring says which of them join."""
    i = 0
    while i < len(line):
        token = line[i]
        hit: tuple[str | None, int] | None = None
        if token.plus or token.parens[0] or (token.digits == 1 and i + 1 < len(line) and line[i + 1].parens[0]):
            # `+country`, `(area)`, or a trunk digit and `(area)`: a phone that may mix separators
            hit = _read_opened(line, i)
        elif token.bare:
            hit = _read_spaced(text, line, i)
        elif token.digits >= 7:
            kind = _classify(text, [token])
            hit = None if kind is None else (kind, i)
        if hit is None:
            i += 1
            continue
        kind, last = hit
        if kind is not None:
            found.append(Span(kind, token.start, line[last].end))
        i = last + 1


def _read_opened(line: list[_Token], i: int) -> tuple[str, int] | None:
    last = i
    digits = line[i].digits
    while (
        last + 1 < len(line)
        and last + 1 - i < _MAX_TOKENS
        and not line[last + 1].plus
        and digits + line[last + 1].digits <= 15
    ):
        last += 1
        digits += line[last].digits
    for j in range(last, i - 1, -1):
        if digits >= 7 and _is_phone(*_flatten(line[i : j + 1])):
            return "phone", j
        digits -= line[j].digits
    return None


def _read_spaced(text: str, line: list[_Token], i: int) -> tuple[str | None, int] | None:
    """Plain digit runs one space apart are one number, read whole: `(kind or None, last token)`."""
    last = i
    while last + 1 < len(line) and line[last + 1].bare:
        last += 1
    if last == i:
        # Most numbers in a text stand alone, and most of those are too short to be anything
        digits = line[i].digits
        if digits in (9, 11) or 13 <= digits <= 19:
            kind = _classify(text, [line[i]])
            return None if kind is None else (kind, i)
        return None
    if last - i >= _MAX_TOKENS:
        return None, last
    return _classify(text, line[i : last + 1]), last


def _north_american(groups: list[str]) -> bool:
    """NPA NXX XXXX, optionally after a 1."""
    if groups[0] == "1":
        groups = groups[1:]
    return [len(g) for g in groups] == [3, 3, 4] and groups[0][0] in "23456789" and groups[1][0] in "23456789"


def _flatten(window: list[_Token]) -> tuple[bool, list[str], list[bool], list[str]]:
    first = window[0]
    groups, parens, seps = list(first.groups), list(first.parens), list(first.seps)
    for token in window[1:]:
        seps.append(" ")
        groups.extend(token.groups)
        parens.extend(token.parens)
        seps.extend(token.seps)
    return first.plus, groups, parens, seps


def _classify(text: str, window: list[_Token]) -> str | None:
    """The first kind, in the overlap order, that the whole stretch is."""
    plus, groups, parens, seps = _flatten(window)
    digits = sum(len(g) for g in groups)
    if not plus and not any(parens):
        if 13 <= digits <= 19 and _is_card(groups, seps):
            return "card"
        if digits == 9 and _is_ssn(text, window[0].start, groups, seps):
            return "us_ssn"
        if digits == 11 and len(groups) == 1 and _is_tr_national_id(groups[0]):
            return "tr_national_id"
    if 7 <= digits <= 15 and _is_phone(plus, groups, parens, seps):
        return "phone"
    return None


def _is_card(groups: list[str], seps: list[str]) -> bool:
    if seps:
        if seps[0] not in (" ", "-") or any(s != seps[0] for s in seps):
            return False
        sizes = [len(g) for g in groups]
        if not (all(s == 4 for s in sizes[:-1]) and sizes[-1] <= 4) and sizes not in ([4, 6, 5], [4, 6, 4]):
            return False
    number = "".join(groups)
    return number[0] in "23456" and _luhn(number)


def _luhn(number: str) -> bool:
    total = 0
    for position, ch in enumerate(reversed(number)):
        digit = ord(ch) - 48
        if position % 2:
            digit = digit * 2 - 9 if digit > 4 else digit * 2
        total += digit
    return total % 10 == 0


def _is_ssn(text: str, start: int, groups: list[str], seps: list[str]) -> bool:
    if seps:
        if [len(g) for g in groups] != [3, 2, 4] or seps[0] != seps[1] or seps[0] not in (" ", "-"):
            return False
        area, group, serial = groups
    else:
        if _patterns().ssn_label.search(text, max(0, start - _LABEL_REACH), start) is None:
            return False
        number = groups[0]
        area, group, serial = number[:3], number[3:5], number[5:]
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


def _is_tr_national_id(number: str) -> bool:
    if number[0] == "0":
        return False
    d = [ord(ch) - 48 for ch in number]
    tenth = (7 * (d[0] + d[2] + d[4] + d[6] + d[8]) - (d[1] + d[3] + d[5] + d[7])) % 10
    return tenth == d[9] and sum(d[:10]) % 10 == d[10]


def _is_phone(plus: bool, groups: list[str], parens: list[bool], seps: list[str]) -> bool:
    count = len(groups)
    if count < 3:
        return False
    sizes = [len(g) for g in groups]
    bracketed = [i for i, p in enumerate(parens) if p]
    if len(bracketed) > 1 or (plus and (sizes[0] > 3 or parens[0])):
        return False
    # An area code in parentheses opens the number, or follows a country code or a trunk digit
    if bracketed and bracketed[0] > (1 if plus or sizes[0] == 1 else 0):
        return False
    for i, size in enumerate(sizes):
        lone = parens[i] or (i == 0 and (plus or groups[0] in ("0", "1") or parens[1])) or (i == 1 and plus)
        if (size == 1 and not lone) or size > (8 if i == count - 1 else 5):
            return False
    separators = set(seps)
    if "." in separators and len(separators) > 1:
        return False
    if not plus and not bracketed:
        if len(separators) > 1:
            return False
        sep = seps[0]
        if sizes == [3, 2, 4] or (sizes[0] <= 3 and all(s == 3 for s in sizes[1:])):
            # The SSN's shape, and the shape of thousands (1 234 567) and of ranges (200-210-220)
            return False
        if all(s == 2 for s in sizes) and (count != 5 or groups[0][0] != "0"):
            # Pairs are how lists are written (01 02 03, 10-20-30-40); as a phone, only a French 01 23 45 67 89
            return False
        trunk_led = groups[0][0] == "0" and groups[0][1:2] != "0" and 9 <= sum(sizes) <= 12
        if sep == " " and not (trunk_led or _north_american(groups)):
            return False
        if sep == "." and count == 4 and max(sizes) <= 3:
            return False
    return not any(
        _holds_date(groups[k : k + 3])
        for k in range(count - 2)
        if seps[k] == seps[k + 1] and not (parens[k] or parens[k + 1] or parens[k + 2])
    )


def _holds_date(three: list[str]) -> bool:
    """Whether three groups read as a date: YYYY-MM-DD, or DD-MM-YYYY / MM-DD-YYYY."""
    shape = tuple(len(g) for g in three)
    if shape == (4, 2, 2):
        year, month, day = (int(g) for g in three)
        valid = 1 <= month <= 12 and 1 <= day <= 31
    elif shape == (2, 2, 4):
        a, b, year = (int(g) for g in three)
        valid = (1 <= a <= 31 and 1 <= b <= 12) or (1 <= a <= 12 and 1 <= b <= 31)
    else:
        return False
    return valid and 1900 <= year <= 2099


# IBANs


def _ibans(text: str) -> list[Span]:
    found: list[Span] = []
    pos = 0
    iban = _patterns().iban
    while (match := iban.search(text, pos)) is not None:
        start: int = match.start() - 2
        end = _iban_end(text[start : match.end()], start)
        if end is None:
            # A rejected candidate may hold a real IBAN among its groups, so look again just past its start
            pos = match.start() + 1
        else:
            found.append(Span("iban", start, end))
            pos = end
    return found


def _iban_end(candidate: str, start: int) -> int | None:
    length = _IBAN_LENGTHS.get(candidate[:2].upper())
    if length is None:
        return None
    if candidate[4] != " ":
        if len(candidate) != length:
            return None
        compact = candidate
        end = start + length
    else:
        parts = [candidate[:4]]
        need = length - 4
        taken = 4
        for group in candidate[5:].split(" "):
            if not need:
                break
            # Full groups of four until the last, which holds exactly what is left
            if len(group) > need or (len(group) < 4 and len(group) != need):
                return None
            parts.append(group)
            need -= len(group)
            taken += 1 + len(group)
        if need:
            return None
        compact = "".join(parts)
        end = start + taken
    rearranged = compact[4:] + compact[:4]
    return end if int("".join(str(int(ch, 36)) for ch in rearranged)) % 97 == 1 else None
