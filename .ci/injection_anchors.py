"""Write the literal anchors of the injection rules (shared/agent_memory/domain/safety/injection_anchors.json).

Compiling the rule set costs a writing Lambda's cold start more than any other step of its first write:
`regex` parses the ~75 patterns in Python. Most texts hold none of the words a given pattern needs, so the
matcher reads, per alternative, a few lowercase ASCII strings one of which every match must contain (its
anchors), and compiles and searches an alternative only when the text holds one. This derives the anchors
from the parse tree `regex` itself builds of each pattern, so they follow the rules as written:

- a character (ASCII, simple case folding) is itself, and so is a caseless one outside ASCII (a CJK
  letter, a symbol, a format character), and a class of at most `MAX_CLASS` such characters is its
  members: no ASCII text holds one, so a text in English skips the rules written for other scripts and
  for invisible characters without loading `regex` at all, and one such character is anchor enough;
  a sequence's adjacent characters, and small branches of
  them, make words; a branch needs an anchor in every arm (the union); a repeat needs one at least once;
- lookarounds, classes, properties and anything not understood give no anchor: the alternative is
  then always compiled and searched. A wrong answer is only ever "no anchor", never a missing one.

The file records the rule file's SHA-256: the matcher ignores anchors written for another rule file (every
alternative is then searched, as before). `--check` fails when the file differs from what this would write
(tests/unit/test_injection.py runs it). Run `python .ci/injection_anchors.py` after editing the rules.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import sys
import unicodedata
from pathlib import Path
from typing import Any

from regex import _regex_core as core

ROOT = Path(__file__).resolve().parents[1]
SAFETY = ROOT / "shared" / "agent_memory" / "domain" / "safety"
RULES, OUT = SAFETY / "injection_rules.json", SAFETY / "injection_anchors.json"
# A word set larger than this stops growing (its product would be large and its words no rarer).
MAX_WORDS = 64
# Shorter words are in nearly every text; a few sets are enough to rule most texts out.
MIN_LENGTH, MAX_CLAUSES = 2, 4
# A class of caseless characters outside ASCII is an anchor set of its members up to this many (a text of
# ASCII or of another width is ruled out at once, whatever the set's size).
MAX_CLASS = 256

Words = frozenset[str] | None  # None: not known
# A conjunction: every match contains a word of each set. Empty: nothing known.
Clauses = list[frozenset[str]]


def _product(left: Words, right: Words) -> Words:
    if left is None or right is None or len(left) * len(right) > MAX_WORDS:
        return None
    return frozenset(a + b for a, b in itertools.product(left, right))


def _rank(words: frozenset[str]) -> tuple[int, int]:
    """The more selective set first: its shortest word longest, then the fewest words."""
    return (-min(map(len, words)), len(words))


def _usable(clauses: list[Words]) -> Clauses:
    found = {c for c in clauses if c and "" not in c}
    return sorted(found, key=lambda c: (_rank(c), sorted(c)))


def analyse(node: Any) -> tuple[Words, Clauses]:
    """(exact, clauses) of a parse-tree node: every string it can match, when a few; and sets of strings such
    that every match contains a word of each set. Words are lowercase."""
    if isinstance(node, core.Character):
        if not node.positive or node.zerowidth or node.case_flags & core.FULLCASE:
            return None, []
        char = chr(node.value)
        if node.value < 0x80:
            char = char.lower()
        elif not _caseless(char):
            return None, []
        word = frozenset({char})
        return word, [word]
    if isinstance(node, (core.Range, core.SetUnion)):
        members = _members(node)
        if members is None or len(members) > MAX_CLASS or node.case_flags & core.FULLCASE:
            return None, []
        if any(m.isascii() or not _caseless(m) for m in members):
            return None, []
        return None, [frozenset(members)]
    if isinstance(node, (core.ZeroWidthBase, core.LookAround)):
        return frozenset({""}), []  # consumes nothing; what a lookaround reads need not be in the match
    if isinstance(node, core.Sequence):
        exact: Words = frozenset({""})
        found: list[Words] = []
        run: Words = frozenset({""})
        for item in node.items:
            item_exact, item_clauses = analyse(item)
            found += item_clauses
            exact = _product(exact, item_exact)
            grown = _product(run, item_exact)
            if grown is None:
                found.append(run)
                run = item_exact if item_exact is not None else frozenset({""})
            else:
                run = grown
        found += [run, exact]
        return exact, _usable(found)
    if isinstance(node, core.Branch) and type(node) is core.Branch:
        parts = [analyse(b) for b in node.branches]
        exacts = [e for e, _ in parts]
        exact = frozenset().union(*exacts) if all(e is not None for e in exacts) else None  # type: ignore[arg-type]
        if exact is not None and len(exact) > MAX_WORDS:
            exact = None
        # An arm's own conjunction cannot be carried into a union: each arm gives its most selective set.
        arms = [_usable([e, *c]) for e, c in parts]
        if any(not a for a in arms):
            return exact, _usable([exact])
        return exact, _usable([exact, frozenset().union(*(a[0] for a in arms))])
    if type(node) in (core.Atomic, core.Group):
        return analyse(node.subpattern)
    if type(node) in (core.GreedyRepeat, core.LazyRepeat, core.PossessiveRepeat):
        inner_exact, inner_clauses = analyse(node.subpattern)
        exact = None
        if node.min_count == node.max_count:
            exact = frozenset({""})
            for _ in range(node.min_count):
                exact = _product(exact, inner_exact)
        if node.min_count == 0:
            return exact, _usable([exact])
        return exact, _usable([exact, inner_exact, *inner_clauses])
    return None, []


def _caseless(char: str) -> bool:
    """A character no case folding reaches or leaves: what the text holds is what the pattern reads."""
    cased = unicodedata.category(char) in ("Lu", "Ll", "Lt")
    return not cased and char.lower() == char == char.upper() == char.casefold()


def _members(node: Any) -> set[str] | None:
    """The characters a class matches, when it is a plain union of characters and ranges (else None)."""
    if not node.positive or node.zerowidth:
        return None
    if isinstance(node, core.Character):
        return {chr(node.value)}
    if isinstance(node, core.Range):
        if node.upper - node.lower >= MAX_CLASS:
            return None
        return {chr(c) for c in range(node.lower, node.upper + 1)}
    if type(node) is core.SetUnion:
        found: set[str] = set()
        for item in node.items:
            part = _members(item)
            if part is None:
                return None
            found |= part
        return found
    return None


def _enough(words: frozenset[str]) -> bool:
    """Selective enough to be worth checking: long enough, or wholly outside ASCII (no ASCII text holds it)."""
    return min(map(len, words)) >= MIN_LENGTH or not any(w.isascii() for w in words)


def anchors(pattern: str, flags: int) -> list[list[str]] | None:
    """One compiled alternative's anchors: sets of strings, every match holding a word of each (the most
    selective first); None when the alternative must always be searched."""
    source = core.Source(pattern)
    info = core.Info(flags, source.char_type, {})
    exact, clauses = analyse(core._parse_pattern(source, info))
    kept = [c for c in _usable([exact, *clauses]) if _enough(c)][:MAX_CLAUSES]
    return [sorted(c) for c in kept] or None


def generate() -> str:
    sys.path.insert(0, str(ROOT / "shared"))
    from agent_memory.domain.safety import injection

    raw = RULES.read_bytes()
    compiled = injection._compile_all(injection._parse(json.loads(raw)))
    document = {
        "about": "Written by .ci/injection_anchors.py from injection_rules.json: do not edit. Per rule, per "
        "alternative: lowercase strings one of which every match contains (null: always searched).",
        "rules_sha256": hashlib.sha256(raw).hexdigest(),
        "anchors": {rule.id: [anchors(m.pattern, m.flags) for m in rule._matchers] for rule in compiled.matchers},
    }
    return json.dumps(document, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    text = generate()
    if "--check" in argv:
        if not OUT.exists() or OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT.relative_to(ROOT)} is stale: run python .ci/injection_anchors.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
