"""grep's substring shortcut for literal patterns must find exactly the lines the regex engine finds."""

from __future__ import annotations

import regex
from agent_memory.domain.memory.matching import plain_search
from hypothesis import example, given, settings
from hypothesis import strategies as st

# Letters that fold in surprising ways (Kelvin sign, long s, sharp s, dotted I) next to plain ASCII and
# the characters that make a pattern a regex.
ALPHABET = "abkKsSiI \t.-#*()[]{}?+|^$\\é\u212a\u017f\u00df\u0130"
texts = st.text(alphabet=ALPHABET, max_size=12)


@settings(max_examples=600, deadline=None)
@given(pattern=texts.filter(bool), line=texts, ignore_case=st.booleans())
@example(pattern="k", line="\u212a", ignore_case=True)
@example(pattern="s", line="\u017f", ignore_case=True)
@example(pattern="ss", line="\u00df", ignore_case=True)
@example(pattern="a b", line="xa by", ignore_case=False)
def test_the_shortcut_agrees_with_the_regex_engine(pattern: str, line: str, ignore_case: bool) -> None:
    # Given a pattern the shortcut accepts and any line
    plain = plain_search(pattern, ignore_case)
    if plain is None:
        return
    answer = plain(line)
    if answer is None:
        return
    # Then it answers exactly as a regex search would
    compiled = regex.compile(pattern, regex.IGNORECASE if ignore_case else 0)
    assert answer == (compiled.search(line) is not None)


def test_special_characters_leave_matching_to_the_regex_engine() -> None:
    # Given patterns with regex syntax, or non-ASCII text matched without regard to case
    # Then no shortcut is offered, and the engine (with its timeout) decides
    assert plain_search("a.b", False) is None
    assert plain_search("(a|a)+$", False) is None
    assert plain_search("caf\u00e9", True) is None
    # And a case-blind literal still hands non-ASCII lines to the engine
    plain = plain_search("kelvin", True)
    assert plain is not None and plain("\u212aelvin") is None and plain("KELVIN") is True
