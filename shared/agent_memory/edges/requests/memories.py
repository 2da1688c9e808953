"""Request bodies of organization Memories: the Memory itself, its files, promote, and agents' attachments."""

from __future__ import annotations

import re
from typing import Annotated, Any

from agent_memory.api.errors import CATALOGUE
from agent_memory.core.model import (
    MAX_ATTACHMENTS,
    MAX_DESCRIPTION_BYTES,
    Attachment,
    MemoryAccess,
    MemoryDefault,
    mode_respelled,
)
from agent_memory.core.paths import SCOPES, MemoryPath, parse_file_path, parse_file_prefix
from agent_memory.domain.memories.service import MEMORY_ID_RE
from agent_memory.edges.requests.base import (
    SURROGATE,
    Body,
    Content,
    Counter,
    Flag,
    OptionalCounter,
    OptionalUuid,
    PairRule,
    Uuid,
    api_error,
    coded,
    from_api_error,
    integer_schema,
    whole_number,
)
from agent_memory.edges.requests.memory import ConflictResolution, Cursor, GrepLimit, Nonempty, VersionsLimit
from agent_memory.edges.requests.validation import (
    AfterValidator,
    Field,
    PlainValidator,
    ValidationError,
    WithJsonSchema,
    model_validator,
)

MEMORY_ID_PATTERN = r"^mem_[0-9a-f]{32}$"
NAME_PATTERN = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"
# \Z, since Python's `$` would also accept a trailing newline (the schema's pattern is ECMA's, which has no \Z).
NAME_RE = re.compile(NAME_PATTERN[:-1] + r"\Z")
MAX_NAME = 64
DEPLOYMENT_RE = re.compile(r"^[a-z0-9](?:[a-z0-9_-]{0,62}[a-z0-9])?\Z")
# Files a Memory may be created with in the one transaction that creates it (two items each, beside the
# Memory's own five): more are written through the files routes, or come from a Git import.
MAX_CREATE_FILES = 32
MAX_PANEL_HUMANS = 32
MAX_PANEL_WORKSPACES = 16
_STRING = WithJsonSchema({"type": "string"})
FilePath = Annotated[MemoryPath, PlainValidator(from_api_error(parse_file_path)), _STRING]


def _optional_file_path(value: Any) -> MemoryPath | None:
    return None if value is None else parse_file_path(value)


def _file_prefix(value: Any) -> MemoryPath | None:
    return None if value is None else parse_file_prefix(value)


OptionalFilePath = Annotated[
    MemoryPath | None,
    PlainValidator(from_api_error(_optional_file_path)),
    WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "null"}]}),
]
FilePrefix = Annotated[
    MemoryPath | None,
    PlainValidator(from_api_error(_file_prefix)),
    WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "null"}]}),
]


def _text(code: str) -> Any:
    def check(value: Any) -> str:
        if not isinstance(value, str) or SURROGATE.search(value):
            raise coded(code, "must be a string of text")
        return value

    return PlainValidator(check)


def _memory_name(name: str) -> str:
    if len(name) > MAX_NAME or not NAME_RE.match(name):
        raise coded(
            "memory_name_invalid",
            f"{name[:80]!r} is not a Memory name: lowercase letters and digits in words joined by single "
            f"hyphens ('team-runbooks'), at most {MAX_NAME} characters.",
            whole=True,
        )
    if name in SCOPES:
        raise coded(
            "memory_name_invalid",
            f"{name!r} is reserved: it names one of the server's own memory scopes inside a session.",
            whole=True,
        )
    return name


def _memory_description(description: str) -> str:
    if len(description.encode("utf-8", "surrogatepass")) > MAX_DESCRIPTION_BYTES:
        raise coded(
            "memory_description_invalid",
            f"memory.description is longer than {MAX_DESCRIPTION_BYTES} bytes.",
            whole=True,
        )
    return description


MemoryName = Annotated[
    str,
    _text("memory_name_invalid"),
    AfterValidator(_memory_name),
    WithJsonSchema({"type": "string", "pattern": NAME_PATTERN, "maxLength": MAX_NAME}),
]
MemoryDescription = Annotated[
    str,
    _text("memory_description_invalid"),
    AfterValidator(_memory_description),
    WithJsonSchema({"type": "string", "x-maxBytes": MAX_DESCRIPTION_BYTES}),
]


def _memory_id(value: Any) -> str:
    if not isinstance(value, str) or not MEMORY_ID_RE.match(value):
        raise coded("validation_failed", "must be a Memory id: mem_ and 32 lowercase hex digits")
    return value


MemoryId = Annotated[
    str,
    PlainValidator(_memory_id),
    WithJsonSchema(
        {"type": "string", "pattern": MEMORY_ID_PATTERN, "examples": ["mem_0193f0c2a1b27c4e8f5d6a7b8c9d0e1f"]}
    ),
]


def _mode(value: Any) -> str:
    respelled = mode_respelled(value)
    if respelled is not None:
        raise coded("parameter_invalid", respelled)
    if value not in ("readwrite", "readonly"):
        raise coded("validation_failed", 'must be "readwrite" or "readonly"')
    return str(value)


Mode = Annotated[str, PlainValidator(_mode), WithJsonSchema({"enum": ["readwrite", "readonly"]})]


def _read_first(mode: str, given: bool | None) -> bool:
    # Preloading is the default for what an agent writes back, not for shared house knowledge.
    return given if given is not None else mode == "readwrite"


class NewFile(Body):
    path: FilePath
    content: Content


class GitSource(Body):
    url: Annotated[str, _text("memory_source_unavailable"), _STRING]
    ref: Annotated[str | None, PlainValidator(lambda v: _optional_text(v, "ref")), WithJsonSchema({})] = None
    path: Annotated[str | None, PlainValidator(lambda v: _optional_text(v, "path")), WithJsonSchema({})] = None


def _optional_text(value: Any, what: str) -> str | None:
    if value is not None and (not isinstance(value, str) or len(value) > 1024 or SURROGATE.search(value)):
        raise coded("memory_source_unavailable", f"must be a string (the {what} to read) or null")
    return value


class GitWrapper(Body):
    git: GitSource


def _source(value: Any) -> GitSource | None:
    if value is None or value == "native":
        return None
    if isinstance(value, dict) and "git" in value:
        wrapper: GitWrapper = _nested(GitWrapper, value, "memory.source")
        return wrapper.git
    raise coded("validation_failed", 'must be "native" or {"git": {"url", "ref", "path"}}')


Source = Annotated[GitSource | None, PlainValidator(_source), WithJsonSchema({})]


def _reach(value: Any) -> str:
    if value not in ("account", "deployment"):
        raise coded("validation_failed", 'must be "account" or "deployment"')
    return str(value)


class DefaultFields(Body):
    reach: Annotated[str, PlainValidator(_reach), WithJsonSchema({"enum": ["account", "deployment"]})]
    deployment: Annotated[
        str | None, PlainValidator(lambda v: _deployment_label(v, "memory.default.deployment")), WithJsonSchema({})
    ] = None
    mode: Mode = "readonly"
    read_first: Annotated[bool | None, PlainValidator(lambda v: _flag_or_none(v)), WithJsonSchema({})] = None

    @model_validator(mode="after")
    def _deployment(self) -> DefaultFields:
        if (self.reach == "deployment") != (self.deployment is not None):
            raise coded(
                "validation_failed",
                'default.deployment names the deployment when reach is "deployment", and only then',
                whole=True,
            )
        return self

    def value(self) -> MemoryDefault:
        mode: Any = self.mode
        reach: Any = self.reach
        return MemoryDefault(reach, self.deployment, mode, _read_first(self.mode, self.read_first))


def _flag_or_none(value: Any) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise coded("validation_failed", "must be true or false")
    return value


class AccessFields(Body):
    humans: list[Uuid] = []
    workspaces: list[Uuid] = []

    @model_validator(mode="after")
    def _bounded(self) -> AccessFields:
        panel = self.value()
        if len(panel.humans) > MAX_PANEL_HUMANS or len(panel.workspaces) > MAX_PANEL_WORKSPACES:
            raise coded(
                "validation_failed",
                f"memory.access names at most {MAX_PANEL_HUMANS} humans and {MAX_PANEL_WORKSPACES} workspaces.",
                whole=True,
            )
        return self

    def value(self) -> MemoryAccess:
        return MemoryAccess(tuple(dict.fromkeys(self.humans)), tuple(dict.fromkeys(self.workspaces)))


class CreateMemoryFields(Body):
    name: MemoryName
    description: MemoryDescription = ""
    files: list[NewFile] = []
    source: Source = None
    default: DefaultFields | None = None
    access: AccessFields | None = None

    @model_validator(mode="after")
    def _files(self) -> CreateMemoryFields:
        if self.source is not None and self.files:
            raise coded("validation_failed", "memory.files and memory.source.git exclude each other.", whole=True)
        if len(self.files) > MAX_CREATE_FILES:
            raise coded(
                "validation_failed",
                f"memory.files holds at most {MAX_CREATE_FILES} files at creation; write the rest through "
                "the Memory's files route.",
                whole=True,
            )
        seen: set[str] = set()
        for index, f in enumerate(self.files):
            if f.path.rest in seen:
                raise coded("validation_failed", f"memory.files[{index}].path repeats {f.path.rest!r}.", whole=True)
            seen.add(f.path.rest)
        return self


class CreateMemory(Body):
    memory: CreateMemoryFields


class PatchMemoryFields(Body):
    description: MemoryDescription | None = None
    default: DefaultFields | None = None
    access: AccessFields | None = None

    def given(self, name: str) -> bool:
        return name in self.model_fields_set


class PatchMemory(Body):
    memory: PatchMemoryFields


ListLimit = Annotated[int, whole_number(1, 100), integer_schema(1, 100)]
FilesLimit = Annotated[int, whole_number(1, 1000), integer_schema(1, 1000)]


def _query_int(low: int, high: int, default: int) -> Any:
    def check(value: Any) -> int:
        if value is None:
            return default
        if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) < 8:
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise coded("parameter_invalid", f"must be a whole number from {low} to {high}")
        return value

    return PlainValidator(check)


def _listing_cursor(value: Any) -> str | None:
    # The listing's cursor is the last Memory id it showed.
    if value is not None and (not isinstance(value, str) or not MEMORY_ID_RE.match(value)):
        raise coded("parameter_invalid", "cursor is not a cursor this listing gave out.", whole=True)
    return value


class MemoriesQuery(Body):
    limit: Annotated[int, _query_int(1, 100, 20), integer_schema(1, 100)] = 20
    cursor: Annotated[
        str | None,
        PlainValidator(_listing_cursor),
        WithJsonSchema({"anyOf": [{"type": "string", "pattern": MEMORY_ID_PATTERN}, {"type": "null"}]}),
    ] = None


class FilesQuery(Body):
    prefix: FilePrefix = None
    limit: Annotated[int, _query_int(1, 1000, 100), integer_schema(1, 1000)] = 100
    cursor: Cursor = None


# ---- the files door ------------------------------------------------------------------------------------


class FileShowFields(Body):
    path: FilePath


class FileWriteFields(PairRule):
    path: FilePath
    content: Content
    expected_public_id: OptionalUuid
    expected_lock_version: OptionalCounter
    conflict_resolution: ConflictResolution = None


class FileEditFields(PairRule):
    path: FilePath
    old_text: Nonempty
    new_text: Content
    expected_public_id: OptionalUuid
    expected_lock_version: OptionalCounter


class FileDeleteFields(PairRule):
    path: FilePath
    expected_public_id: OptionalUuid
    expected_lock_version: OptionalCounter


class FileGrepFields(Body):
    pattern: Nonempty
    path: FilePrefix = None
    ignore_case: Flag = False
    limit: GrepLimit = 100


class FileVersionsFields(Body):
    path: FilePath
    limit: VersionsLimit = 20
    cursor: Cursor = None


class FileVersionShowFields(Body):
    path: FilePath
    lock_version: Counter


class FileRollbackFields(PairRule):
    path: FilePath
    lock_version: Counter
    expected_public_id: OptionalUuid
    expected_lock_version: OptionalCounter


LeaseSeconds = Annotated[int, whole_number(1, 60), integer_schema(1, 60)]


class FileLeaseFields(Body):
    path: FilePath
    seconds: LeaseSeconds


class FileShow(Body):
    file: FileShowFields


class FileWrite(Body):
    file: FileWriteFields


class FileEdit(Body):
    file: FileEditFields


class FileDelete(Body):
    file: FileDeleteFields


class FileGrep(Body):
    file: FileGrepFields


class FileVersions(Body):
    file: FileVersionsFields


class FileVersionShow(Body):
    file: FileVersionShowFields


class FileRollback(Body):
    file: FileRollbackFields


class FileVersionRedact(Body):
    """The same fields as a rollback: the version to scrub and the pair the file must still be at."""

    file: FileRollbackFields


class FileLease(Body):
    file: FileLeaseFields


# ---- promote ----------------------------------------------------------------------------------------------


class PromoteOrigin(Body):
    workspace_public_id: OptionalUuid = Field(default=None, examples=["0193f0c2-a1b2-7c4e-8f5d-6a7b8c9d0e1f"])
    conversation_public_id: OptionalUuid = None
    memory_id: Annotated[
        str | None, PlainValidator(lambda v: None if v is None else _memory_id(v)), WithJsonSchema({})
    ] = None
    path: Annotated[str, _text("memory_path_invalid"), _STRING]
    lock_version: Counter

    @model_validator(mode="after")
    def _one(self) -> PromoteOrigin:
        if (self.memory_id is None) == (self.workspace_public_id is None):
            raise coded(
                "parameter_invalid",
                "promote.source names either workspace_public_id (and conversation_public_id for a "
                "conversation's document) or memory_id",
                whole=True,
            )
        if self.memory_id is not None and self.conversation_public_id is not None:
            raise coded("parameter_invalid", "promote.source.conversation_public_id goes with a workspace", whole=True)
        return self


class PromoteToMemoryFields(Body):
    source: PromoteOrigin
    name: MemoryName
    description: MemoryDescription = ""
    file_path: OptionalFilePath = None
    default: DefaultFields | None = None


class PromoteToMemory(Body):
    promote: PromoteToMemoryFields


# ---- agents ------------------------------------------------------------------------------------------------


class AttachmentFields(Body):
    memory_id: MemoryId
    mode: Mode
    read_first: Annotated[bool | None, PlainValidator(lambda v: _flag_or_none(v)), WithJsonSchema({})] = None

    def value(self) -> Attachment:
        mode: Any = self.mode
        return Attachment(self.memory_id, mode, _read_first(self.mode, self.read_first))


def _attachments(value: Any) -> list[AttachmentFields]:
    if not isinstance(value, list):
        raise coded("validation_failed", "must be a list of {memory_id, mode, read_first}")
    if len(value) > 64:
        raise coded("validation_failed", "holds too many Memories")
    out = [_nested(AttachmentFields, v, f"agent.memories[{i}]") for i, v in enumerate(value)]
    if len(out) > MAX_ATTACHMENTS:
        raise coded("validation_failed", f"agent.memories holds at most {MAX_ATTACHMENTS} Memories.", whole=True)
    if len({a.memory_id for a in out}) != len(out):
        raise coded("validation_failed", "agent.memories names a Memory twice.", whole=True)
    return out


def _nested(model: Any, value: Any, where: str) -> Any:
    """A nested model validated inside a field validator, its first refusal kept with its code."""
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        err = api_error(exc, where, model)
        # An unknown field is parameter_invalid through every door; the Memories' own field rules keep theirs.
        errors = exc.errors(include_url=False)
        first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
        # Pydantic's own refusals (missing, not an object) are the Memories' validation_failed; an unknown
        # field, and the refusals the field types name, keep their codes.
        native = first["type"] not in CATALOGUE and first["type"] != "extra_forbidden"
        code = "validation_failed" if native else err.code
        raise coded(code, err.message, whole=True) from None


class AgentPatchFields(Body):
    memories: Annotated[list[AttachmentFields] | None, PlainValidator(_attachments), WithJsonSchema({})] = None
    deployment: Annotated[
        str | None, PlainValidator(lambda v: _deployment_label(v, "agent.deployment")), WithJsonSchema({})
    ] = None

    def given(self, name: str) -> bool:
        return name in self.model_fields_set


def _deployment_label(value: Any, where: str) -> str | None:
    """A deployment label, as agents' are spelt and a tenant default reaching a deployment names it."""
    if value is not None and (not isinstance(value, str) or len(value) > 64):
        raise coded("validation_failed", "must be a deployment label (a string of at most 64 characters) or null")
    if value is not None and not DEPLOYMENT_RE.match(value):
        raise coded(
            "validation_failed",
            f"{where} must be a deployment label: lowercase letters, digits, '-' and '_', at most 64 characters.",
            whole=True,
        )
    return value


class PatchAgent(Body):
    agent: AgentPatchFields
