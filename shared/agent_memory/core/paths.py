"""The memory path grammar: `<root>/<rest>`, where the root is a binding name.

Syntax only lives here; which roots exist for a request is the resolver's business.
"""

from __future__ import annotations

import re
import unicodedata

from agent_memory.api.errors import ApiError
from agent_memory.core.lazy_dataclass import dataclass

SCOPES = ("conversation", "workspace", "user", "agent", "speaker")
# \Z, not $: `$` also matches before a trailing newline, which would let "conversation\n" through.
ROOT_RE = re.compile(r"^[a-z][a-z0-9_-]{0,31}\Z")
SKILL_NAME_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*\Z")
SKILL_NAME_MAX = 64
MAX_PATH_BYTES = 1024
# A document's sort key is `DOC#<rest>` (store/keys.py) and DynamoDB refuses a sort key past 1024 bytes,
# so the rest after the root gets what the key leaves: 1020 bytes (tests/unit/test_paths.py holds the
# two together). The partition key `ANCHOR#<scope>#<owner>[#<speaker>]` is built from a scope word and
# UUIDs only, far inside its own 2048 bytes, whatever the path.
MAX_REST_BYTES = 1024 - len("DOC#")
# C0/C1 controls and the Unicode line/paragraph separators never belong in a name a model types back;
# lone surrogates (JSON lets "\ud800" through) cannot even be stored as UTF-8.
_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\\]")
# Characters that render as nothing: zero-width spaces and joiners, word joiners and invisible operators,
# the byte order mark, and every bidi control (U+061C, U+200E/F, U+202A-E, U+2066-9). With them,
# `plan.md` and `pl\u200ban.md`, or a name reordered by U+202E, would be two documents that look alike.
_INVISIBLE = re.compile(r"[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")

# Characters that look like '.', '/' or '\\' and that NFKC leaves as they are (those it folds, such as the
# fullwidth full stop U+FF0E, the one dot leader U+2024, the small full stop U+FE52 or the fullwidth
# solidus U+FF0F, are caught by the NFKC rule): with them `a\u2215..\u2215b.md` reads as a path climbing out
# of its folder, and `plan\u2024md` as `plan.md`.
_LOOKALIKES = frozenset(
    # dots
    "\u0660\u06d4\u06f0\u0701\u0702\u2e3c\ua4f8\U00010a50"
    # slashes
    "\u0337\u0338\u1735\u2044\u2215\u2571\u27cb\u29f8\u3033"
    # backslashes
    "\u20e5\u2216\u2572\u27cd\u29f5\u29f9"
)


def lookalike(segment: str) -> str | None:
    """Why one path segment could pass for another, naming the character, or None when it cannot.

    The one check every door's paths go through (documents, Memory files, session files and mounts, the
    tools): a segment holding a character that looks like a dot or a slash, or one NFKC would rewrite (a
    compatibility form such as a fullwidth letter or a ligature), would let two paths that are different
    documents look the same, or a folder look like `..`.
    """
    for ch in segment:
        folded = unicodedata.normalize("NFKC", ch)
        if ch in _LOOKALIKES or folded != ch:
            name = unicodedata.name(ch, "an unnamed character")
            shown = f"U+{ord(ch):04X} {name}"
            if ch in _LOOKALIKES:
                return f"it contains {shown}, which looks like '.', '/' or '\\' but is not"
            return f"it contains {shown}, which Unicode compatibility normalisation (NFKC) turns into {folded!r}"
    if unicodedata.normalize("NFKC", segment) != segment:
        return "a segment changes under Unicode compatibility normalisation (NFKC)"
    return None


# The root every path of an organization Memory's files resolves under: a Memory is one store, so its
# paths are relative and name no root of their own.
FILES_ROOT = "memory"


@dataclass(frozen=True, slots=True)
class MemoryPath:
    root: str
    rest: str  # "" only for a prefix that names a whole root
    # A file of an organization Memory: shown as its relative path, and never a skill.
    plain: bool = False

    @property
    def logical(self) -> str:
        return self.rest if self.plain else f"{self.root}/{self.rest}"

    @property
    def skill_name(self) -> str | None:
        """The skill name for a `skills/` path, None for any other path."""
        if self.plain:
            return None
        if self.rest == "skills" or self.rest.startswith("skills/"):
            return self.rest[len("skills/") :]
        return None


def _invalid(path: object, why: str) -> ApiError:
    return ApiError("memory_path_invalid", f"The memory path {path!r} is not valid: {why}.")


def _normal(path: str) -> str:
    """The one spelling of a path: NFC, so `café` typed composed or decomposed names one document.

    Everything after this sees (and stores, and answers) the NFC text; the byte bounds are counted on it,
    since NFC can make a text longer."""
    return unicodedata.normalize("NFC", path)


def _check_bytes(path: str, rest: str) -> None:
    if len(path.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
        raise _invalid(path[:64] + "...", f"it is longer than {MAX_PATH_BYTES} bytes")
    if len(rest.encode("utf-8", "surrogatepass")) > MAX_REST_BYTES:
        raise _invalid(
            path[:64] + "...",
            f"the part after the root is longer than {MAX_REST_BYTES} bytes, the most a stored key can hold",
        )


def _check_rest(path: str, rest: str, *, prefix: bool) -> None:
    if _FORBIDDEN.search(rest):
        raise _invalid(path, "it contains a control character, a backslash or a lone surrogate")
    if _INVISIBLE.search(rest):
        raise _invalid(
            path,
            "it contains an invisible character (a zero-width or bidi control character), "
            "which would let two different paths look the same",
        )
    segments = rest.split("/")
    if prefix and segments and segments[-1] == "":
        segments = segments[:-1]
    for seg in segments:
        if seg == "":
            raise _invalid(path, "it has an empty segment ('//' or a trailing '/')")
        if seg in (".", ".."):
            raise _invalid(path, "'.' and '..' segments are not allowed")
        if seg != seg.strip():
            raise _invalid(path, "a segment starts or ends with white space")
        why = lookalike(seg)
        if why is not None:
            raise _invalid(path, why)


def parse_document_path(path: object) -> MemoryPath:
    """A path naming one document, such as `conversation/plan.md`, in NFC."""
    if not isinstance(path, str):
        raise ApiError("memory_path_invalid", "The memory path must be a string such as 'conversation/plan.md'.")
    path = _normal(path)
    root, sep, rest = path.partition("/")
    _check_bytes(path, rest)
    if not sep or not rest:
        raise _invalid(
            path,
            "it needs a scope first, such as 'conversation/notes.md' or 'workspace/notes.md' "
            "(a bare name is never defaulted)",
        )
    if not ROOT_RE.match(root):
        raise _invalid(path, f"{root!r} is not a root name")
    mp = MemoryPath(root, rest)
    if mp.skill_name is not None:
        # A skills/ path answers to the stricter skill grammar, and with its own code: `skills/`, `skills/a/b`
        # and `skills/PDF` are skill_name_invalid on every verb, not memory_path_invalid.
        _check_skill_name(mp)
        return mp
    _check_rest(path, rest, prefix=False)
    return mp


def parse_prefix(path: object) -> MemoryPath:
    """A grep/list filter: a root (`workspace/` or `workspace`), a folder or a document path."""
    if not isinstance(path, str):
        raise ApiError("parameter_invalid", "memory.path must be a string such as 'workspace/'.")
    # A prefix is matched against stored keys (begins_with on DOC#<rest>): the same spelling and bounds.
    path = _normal(path)
    root, _, rest = path.partition("/")
    _check_bytes(path, rest)
    if not ROOT_RE.match(root):
        raise _invalid(path, f"{root!r} is not a root name")
    if rest:
        _check_rest(path, rest, prefix=True)
    return MemoryPath(root, rest.rstrip("/"))


def parse_file_path(path: object) -> MemoryPath:
    """A path naming one file of an organization Memory, relative to the Memory (`runbooks/deploy.md`)."""
    if not isinstance(path, str):
        raise ApiError("memory_path_invalid", "file.path must be a string such as 'runbooks/deploy.md'.")
    path = _normal(path)
    _check_bytes(path, path)
    if path == "":
        raise _invalid(path, "it is empty")
    if path.startswith("/"):
        raise _invalid(path, "a file's path is relative to its Memory: leave out the leading '/'")
    _check_rest(path, path, prefix=False)
    return MemoryPath(FILES_ROOT, path, plain=True)


def parse_file_prefix(path: object) -> MemoryPath:
    """A folder (or file) of a Memory to list or search under; "" is the whole Memory."""
    if not isinstance(path, str):
        raise ApiError("parameter_invalid", "The prefix must be a string such as 'runbooks/'.")
    path = _normal(path)
    _check_bytes(path, path)
    if path.startswith("/"):
        raise _invalid(path, "a file's path is relative to its Memory: leave out the leading '/'")
    if path:
        _check_rest(path, path, prefix=True)
    return MemoryPath(FILES_ROOT, path.rstrip("/"), plain=True)


def prefix_matches(prefix_rest: str, rest: str) -> bool:
    """True when a document `rest` lies at or under the folder/document `prefix_rest` of the same root."""
    return not prefix_rest or rest == prefix_rest or rest.startswith(prefix_rest + "/")


def check_skill_path(scope: str, mp: MemoryPath) -> None:
    """Refuse a skills/ path that can never hold a skill."""
    name = mp.skill_name
    if name is None:
        return
    if scope == "conversation":
        raise ApiError(
            "skill_scope_unavailable",
            "Skills live in workspace/, agent/, speaker/ or user/, never in a conversation: a fork would copy them.",
        )
    _check_skill_name(mp)


def valid_skill_name(name: str) -> bool:
    # fullmatch: `$` would accept a trailing newline, which no runner directory name carries.
    return 0 < len(name) <= SKILL_NAME_MAX and SKILL_NAME_RE.fullmatch(name) is not None


def _check_skill_name(mp: MemoryPath) -> None:
    name = mp.skill_name
    if name is not None and not valid_skill_name(name):
        raise ApiError(
            "skill_name_invalid",
            f"{mp.logical[:120]!r} does not name a skill: after 'skills/' comes one name of lowercase letters "
            f"and digits with single hyphens, at most {SKILL_NAME_MAX} characters.",
        )
