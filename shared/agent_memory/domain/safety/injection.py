"""Prompt-injection flags: the rule set in `injection_rules.json` beside this module, and its matcher.

The rules are data so that changing what is caught is a reviewed edit of one file with a version bump,
not a code change; docs/injection-rules.md says what each rule is for. `flags(text)` answers the sorted
ids of the rules a text triggers. It is pure: it stores nothing and never rejects anything. What a flag
means (the version is quarantined until reviewed) is decided by whoever calls it.

It runs on every write, on up to 64 KiB, so its cost must not depend on what an attacker writes:

- Every quantifier in the rule set is bounded (the tests walk each pattern's parse tree to check), so a
  failed attempt at one position reads a bounded number of characters and a scan is linear in the text.
- Each alternative of a rule is its own compiled pattern, searched once over the text, so a scan costs
  about the same for prose and for text built to start many matches and finish none (at most ~1 ms of
  CPU per KiB here with the committed rules, for both; the tests print what they measure on 64 KiB).
- The whole scan has one deadline, `SCAN_DEADLINE_SECONDS`, handed to each search as `regex`'s timeout.
  A scan that runs out of time answers the rule set's `on_timeout` id (`scan_timeout`) beside whatever
  it had found: a text that was not read to the end is not known to be clean, so it goes to a reviewer
  rather than to a model. The committed rules stay far inside it; it is there for a rule added later
  that turns out slower than it looked, or a machine far slower than expected.
- Text that is pure ASCII (most notes) skips normalisation and the character rules, whose characters are
  all outside ASCII. NFKC can lengthen a text (at most 6 characters per UTF-8 byte, U+FDFA); 64 KiB of
  the worst such character scans in ~150 ms of CPU here, inside the deadline (the tests include it).

Regex rules read a normalised copy of the text: default-ignorable characters (zero-width, bidi controls,
tag characters, soft hyphens, variation selectors) are removed, then NFKC is applied, so neither a
zero-width space inside "ignore" nor the word in fullwidth letters slips past a phrase rule. Character
rules read the raw text, since those very characters are what they look for. Look-alike letters from
other scripts (a Cyrillic o in "ignore") are not folded: no set of phrases is complete, and quarantine
is a queue for a reviewer, not a proof that what passed is safe.

The JSON is read once, when this module is imported (`RULESET_VERSION` needs it). Compiling every pattern
costs ~75 ms of CPU, most of a writing Lambda's first write, so a pattern is compiled (under a lock, once
per process) the first time a text could match it: `injection_anchors.json`, written from the rules by
`.ci/injection_anchors.py`, gives each alternative sets of lowercase words every match contains one of,
and an alternative whose anchors the folded text lacks is neither compiled nor searched. Anchors written
for another version of the rule file are ignored. `rules()` compiles everything (a SnapStart hook may).
`regex` itself (~10 ms of a cold start) is imported with the first pattern compiled or the first non-ASCII
text normalised, so a write whose text holds no anchor word never loads it; the rule file's own shape is
checked at import with the standard library's `re`.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
import unicodedata
from collections.abc import Mapping
from dataclasses import field, replace
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import regex

from agent_memory.core.lazy_dataclass import dataclass

RULES_FILE = "injection_rules.json"
ANCHORS_FILE = "injection_anchors.json"  # written by .ci/injection_anchors.py
# Measured: the committed rules scan 64 KiB (prose or adversarial) in 25-65 ms of one core's CPU; a 512 MB
# Lambda has under a third of a core, so up to ~200 ms there. A second leaves room for a noisy neighbour and a
# slower rule added later, and a write that hits it is still stored (only flagged): it never fails a write.
SCAN_DEADLINE_SECONDS = 1.0
# Memory files go up to 1 MiB, sixteen times a document: a fixed second would send every large, clean file to a
# reviewer on a slow container. Each 64 KiB beyond the first adds a quarter second (5x its measured cost on
# a Lambda's share of a core), so the work stays bounded by the size limit: 4.75 s at 1 MiB.
SCAN_SECONDS_PER_64_KIB = 0.25

# `regex` takes the standard library's flag bits (tests/unit/test_injection.py checks).
_FLAG_BITS = {"ignorecase": int(re.IGNORECASE), "multiline": int(re.MULTILINE)}
_ID = re.compile(r"[a-z][a-z0-9_]{0,63}")
_VERSION = re.compile(r"\d{4}-\d{2}-\d{2}\.\d{1,4}")
_CODE_POINT = re.compile(r"U\+([0-9A-F]{4,6})(?:\.\.U\+([0-9A-F]{4,6}))?")
_FRAGMENT_REF = re.compile(r"\(\?&([A-Za-z_][A-Za-z0-9_]{0,31})\)")
_KEYS = {
    "regex": {"id", "description", "kind", "pattern", "flags", "text"},
    "chars": {"id", "description", "kind", "chars", "min_run"},
}


@cache
def _ignorable() -> regex.Pattern[str]:
    """What the regex rules' text has removed first: what renders as nothing can otherwise split a phrase."""
    import regex

    return regex.compile(r"\p{Default_Ignorable_Code_Point}+")


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule: its id (what a quarantine names) and the sentence a reviewer reads."""

    id: str
    description: str
    # One compiled pattern per alternative; the rule fires when any matches. Empty only for the timeout
    # rule, which no text matches: it is what a scan out of time answers.
    _matchers: tuple[regex.Pattern[str], ...] = field(default=(), repr=False, compare=False)
    # Regex rules read the normalised text unless they ask for the raw one; character rules read the raw text.
    _normalized: bool = field(default=False, repr=False, compare=False)
    # False when nothing ASCII can trigger the rule, so ASCII text need not be searched for it.
    _ascii_can_match: bool = field(default=True, repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class _RuleSet:
    version: str
    timeout: Rule
    fragments: Mapping[str, str]
    specs: tuple[Mapping[str, Any], ...]
    # Per rule id, per alternative: sets of lowercase strings, every match holding one of each set (None: always
    # searched). Only the committed rule file's own anchors (injection_anchors.json) are ever used.
    anchors: Mapping[str, list[Any]] | None = None


@dataclass(frozen=True, slots=True)
class _Alternative:
    source: str  # the pattern, fragments inlined
    flags: int
    anchors: tuple[tuple[str, ...], ...]  # empty: nothing known, always searched


@dataclass(frozen=True, slots=True)
class _Plan:
    """One rule before anything is compiled."""

    id: str
    description: str
    alternatives: tuple[_Alternative, ...]
    normalized: bool
    ascii_can_match: bool


class _Compiled:
    """The rule set's patterns, each compiled the first time a scan needs it (or all at once by `rules()`)."""

    def __init__(self, ruleset: _RuleSet) -> None:
        self.plans = tuple(_plan(spec, ruleset.fragments, ruleset.anchors) for spec in ruleset.specs)
        self.timeout = ruleset.timeout
        self._patterns: dict[tuple[int, int], regex.Pattern[str]] = {}
        self._lock = threading.Lock()
        self._all: tuple[Rule, ...] | None = None

    def patterns(self, wanted: list[tuple[int, int]]) -> list[regex.Pattern[str]]:
        """The compiled patterns of these (rule, alternative) positions, compiling the missing ones once."""
        have = self._patterns
        if any(key not in have for key in wanted):
            with self._lock:
                for rule, alternative in wanted:
                    if (rule, alternative) not in have:
                        plan = self.plans[rule]
                        have[rule, alternative] = _compile(plan.id, plan.alternatives[alternative])
        return [have[key] for key in wanted]

    @property
    def all(self) -> tuple[Rule, ...]:
        """Every rule with every pattern compiled (what rules() answers), built once."""
        ready = self._all
        if ready is None:
            rules = [
                Rule(
                    plan.id,
                    plan.description,
                    tuple(self.patterns([(r, a) for a in range(len(plan.alternatives))])),
                    plan.normalized,
                    plan.ascii_can_match,
                )
                for r, plan in enumerate(self.plans)
            ]
            ready = self._all = (*rules, self.timeout)
        return ready

    @property
    def matchers(self) -> tuple[Rule, ...]:
        return self.all[:-1]


def _invalid(where: str, what: str) -> ValueError:
    return ValueError(f"{RULES_FILE}: {where}: {what}")


def _text(value: object, where: str, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _invalid(where, f"{what} must be a non-empty string")
    return value


def _parse(document: object) -> _RuleSet:
    """The rule set's shape checked without compiling anything; every mistake names where it is."""
    if not isinstance(document, dict):
        raise _invalid("top level", "must be an object")
    unknown = set(document) - {"about", "version", "on_timeout", "fragments", "rules"}
    if unknown:
        raise _invalid("top level", f"unknown keys {sorted(unknown)}")
    _text(document.get("about"), "top level", "about")
    version = _text(document.get("version"), "top level", "version")
    if not _VERSION.fullmatch(version):
        raise _invalid("top level", "version must read YYYY-MM-DD.N")

    fragments = document.get("fragments", {})
    if not isinstance(fragments, dict):
        raise _invalid("fragments", "must be an object")
    for name, body in fragments.items():
        _text(body, f"fragment {name}", "its pattern")
        if _FRAGMENT_REF.search(body):
            # One level only: inlining stays a plain substitution that cannot loop.
            raise _invalid(f"fragment {name}", "may not refer to another fragment")

    on_timeout = document.get("on_timeout")
    if not isinstance(on_timeout, dict) or set(on_timeout) != {"id", "description"}:
        raise _invalid("on_timeout", "must be an object with exactly id and description")
    timeout = Rule(
        _rule_id(on_timeout["id"], "on_timeout"), _text(on_timeout["description"], "on_timeout", "description")
    )

    specs = document.get("rules")
    if not isinstance(specs, list) or not specs:
        raise _invalid("rules", "must be a non-empty list")
    seen = {timeout.id}
    for index, spec in enumerate(specs):
        where = f"rules[{index}]"
        if not isinstance(spec, dict):
            raise _invalid(where, "must be an object")
        rule_id = _rule_id(spec.get("id"), where)
        where = f"rule {rule_id}"
        if rule_id in seen:
            raise _invalid(where, "id is used twice (the timeout id included)")
        seen.add(rule_id)
        _text(spec.get("description"), where, "description")
        kind = spec.get("kind")
        if kind not in _KEYS:
            raise _invalid(where, f"kind must be one of {sorted(_KEYS)}")
        unknown = set(spec) - _KEYS[kind]
        if unknown:
            # A misspelt "flag" would otherwise be dropped silently and change what the rule matches.
            raise _invalid(where, f"unknown keys {sorted(unknown)} for kind {kind}")
        if kind == "regex":
            _alternatives(spec.get("pattern"), where)
            flags = spec.get("flags", [])
            if not isinstance(flags, list) or any(f not in _FLAG_BITS for f in flags):
                raise _invalid(where, f"flags must be a list drawn from {sorted(_FLAG_BITS)}")
            if spec.get("text", "normalized") not in ("normalized", "raw"):
                raise _invalid(where, "text must be 'normalized' (the default) or 'raw'")
        else:
            _ranges(spec.get("chars"), where)
            min_run = spec.get("min_run", 1)
            if not isinstance(min_run, int) or isinstance(min_run, bool) or not 1 <= min_run <= 64:
                raise _invalid(where, "min_run must be an integer from 1 to 64")
    return _RuleSet(version, timeout, dict(fragments), tuple(specs))


def _rule_id(value: object, where: str) -> str:
    if not isinstance(value, str) or not _ID.fullmatch(value):
        raise _invalid(where, "id must be snake_case: a lowercase letter, then up to 63 of a-z, 0-9, _")
    return value


def _alternatives(pattern: object, where: str) -> list[str]:
    parts = [pattern] if isinstance(pattern, str) else pattern
    if not isinstance(parts, list) or not parts or not all(isinstance(p, str) and p for p in parts):
        raise _invalid(where, "pattern must be a non-empty string or a non-empty list of them")
    return [p for p in parts if isinstance(p, str)]


def _ranges(chars: object, where: str) -> list[tuple[int, int]]:
    if not isinstance(chars, list) or not chars:
        raise _invalid(where, "chars must be a non-empty list")
    ranges = []
    for item in chars:
        m = _CODE_POINT.fullmatch(item) if isinstance(item, str) else None
        if m is None:
            raise _invalid(where, f"{item!r} is not 'U+XXXX' or 'U+XXXX..U+YYYY'")
        low = int(m.group(1), 16)
        high = int(m.group(2), 16) if m.group(2) else low
        if not low <= high <= 0x10FFFF:
            raise _invalid(where, f"{item!r} is not an ascending range of code points")
        ranges.append((low, high))
    return ranges


def _expand(pattern: str, fragments: Mapping[str, str], where: str) -> str:
    def inline(m: Any) -> str:
        name = m.group(1)
        if name not in fragments:
            raise _invalid(where, f"refers to undefined fragment {name!r}")
        return f"(?:{fragments[name]})"

    return str(_FRAGMENT_REF.sub(inline, pattern))


def _plan(spec: Mapping[str, Any], fragments: Mapping[str, str], anchors: Mapping[str, list[Any]] | None) -> _Plan:
    rule_id, where = spec["id"], f"rule {spec['id']}"
    if spec["kind"] == "regex":
        flags = 0
        for name in spec.get("flags", []):
            flags |= _FLAG_BITS[name]
        # Each alternative is its own pattern: joined into one, they cost the engine its fast scan for what a
        # match must start with, and a 64 KiB scan several times longer (measured).
        sources = [_expand(p, fragments, where) for p in _alternatives(spec["pattern"], where)]
        known = (anchors or {}).get(rule_id) or [None] * len(sources)
        alternatives = tuple(
            _Alternative(source, flags, tuple(tuple(words) for words in found or ()))
            for source, found in zip(sources, known, strict=True)
        )
        return _Plan(rule_id, spec["description"], alternatives, spec.get("text", "normalized") == "normalized", True)
    ranges = _ranges(spec["chars"], where)
    members = "".join(f"\\U{low:08X}" if low == high else f"\\U{low:08X}-\\U{high:08X}" for low, high in ranges)
    run = _Alternative(f"[{members}]{{{spec.get('min_run', 1)}}}", 0, ())
    return _Plan(rule_id, spec["description"], (run,), False, any(low < 0x80 for low, _ in ranges))


def _compile(rule_id: str, alternative: _Alternative) -> regex.Pattern[str]:
    # Compiled patterns are held by _Compiled, never in `regex`'s module cache: grep purges that cache after
    # every user pattern, and these must outlive it.
    import regex

    try:
        return regex.compile(alternative.source, alternative.flags, cache_pattern=False)
    except regex.error as exc:
        raise _invalid(f"rule {rule_id}", f"pattern does not compile: {exc}") from exc


def _compile_all(ruleset: _RuleSet) -> _Compiled:
    """The rule set with every pattern compiled: a pattern that does not compile is refused here."""
    compiled = _Compiled(ruleset)
    compiled.all  # noqa: B018 - compiles every pattern
    return compiled


def _load() -> _RuleSet:
    here = resources.files(__package__ or __name__)
    source = here.joinpath(RULES_FILE).read_bytes()
    ruleset = _parse(json.loads(source))
    anchors_file = here.joinpath(ANCHORS_FILE)
    if not anchors_file.is_file():
        return ruleset
    written = json.loads(anchors_file.read_bytes())
    if written.get("rules_sha256") != hashlib.sha256(source).hexdigest():
        # Anchors of another rule file could skip a pattern that now matches: every alternative is searched.
        return ruleset
    return replace(ruleset, anchors=written["anchors"])


# Read (and its shape checked) at import: a broken rule set must stop the Lambda from starting, never let
# it write unscanned content.
_RULESET = _load()
RULESET_VERSION: str = _RULESET.version

_lock = threading.Lock()
_compiled: _Compiled | None = None
_lazy: _Compiled | None = None


def _get() -> _Compiled:
    global _compiled
    # Read once without the lock (an assignment of a finished object is atomic); compile under it, once.
    ready = _compiled
    if ready is not None:
        return ready
    with _lock:
        if _compiled is None:
            _compiled = _compile_all(_RULESET)
        return _compiled


def rules() -> tuple[Rule, ...]:
    """Every id `flags` may answer, in the file's order, with the timeout rule last."""
    return _get().all


def _table() -> _Compiled:
    """What a scan reads: the fully compiled set once rules() built it, else one compiled as scans need it."""
    global _lazy
    ready = _compiled or _lazy
    if ready is not None:
        return ready
    with _lock:
        if _compiled is not None:
            return _compiled
        if _lazy is None:
            _lazy = _Compiled(_RULESET)
        return _lazy


def flags(text: str) -> list[str]:
    """The sorted, distinct ids of the rules `text` triggers; `[]` when it triggers none."""
    extra = max(0, len(text) - 1) // 65_536
    return _scan(text, _table(), SCAN_DEADLINE_SECONDS + extra * SCAN_SECONDS_PER_64_KIB)


def _normalize(text: str) -> str:
    return unicodedata.normalize("NFKC", _ignorable().sub("", text))


# The only characters outside ASCII that `regex`, ignoring case, takes for an ASCII letter (a unit test checks
# every code point): folded to it before lowercasing, so an anchor is found wherever a pattern could match.
_ASCII_TWINS = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})


def _fold(text: str) -> str:
    return text.lower() if text.isascii() else text.translate(_ASCII_TWINS).lower()


def _scan(text: str, compiled: _Compiled, budget: float) -> list[str]:
    started = time.monotonic()
    ascii_only = text.isascii()
    # ASCII is already NFKC and holds no default-ignorable character: no copy to make.
    normalized = text if ascii_only else _normalize(text)
    folded: dict[bool, str] = {}
    # An alternative whose anchors are not all in the text cannot match it: it is neither compiled nor searched.
    wanted: list[tuple[int, int]] = []
    for r, plan in enumerate(compiled.plans):
        if ascii_only and not plan.ascii_can_match:
            continue
        for a, alternative in enumerate(plan.alternatives):
            if alternative.anchors:
                if plan.normalized not in folded:
                    folded[plan.normalized] = _fold(normalized if plan.normalized else text)
                lowered = folded[plan.normalized]
                if not all(any(word in lowered for word in words) for words in alternative.anchors):
                    continue
            wanted.append((r, a))
    before = time.monotonic()
    matchers = compiled.patterns(wanted)
    # Compiling is a start-up cost, paid once per process: it does not count against this text's time.
    deadline = started + budget + (time.monotonic() - before)
    found: set[str] = set()
    for (r, _), matcher in zip(wanted, matchers, strict=True):
        plan = compiled.plans[r]
        if plan.id in found:
            continue  # one alternative is enough; the rest of this rule need not be searched
        subject = normalized if plan.normalized else text
        remaining = deadline - time.monotonic()
        # Checked here, not left to `regex`: it reads a negative timeout as "no timeout at all".
        if remaining <= 0:
            found.add(compiled.timeout.id)
            return sorted(found)
        try:
            hit = matcher.search(subject, timeout=remaining) is not None
        except TimeoutError:
            found.add(compiled.timeout.id)
            return sorted(found)
        if hit:
            found.add(plan.id)
    return sorted(found)
