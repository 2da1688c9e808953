"""Skills: resolving a skill name through a conversation's skill sources, and the catalog a model sees.

A skill is a document at `<root>/skills/<name>` carrying a description. For a conversation the sources
are tried in a fixed order and the first one holding a name wins, so a name shadowed further down the
order is neither listed nor loadable. The sources are the resolver's: a root the effective bindings
leave out, or one this caller cannot reach, contributes nothing.
"""

from __future__ import annotations

from agent_memory.api.errors import ApiError, quarantined
from agent_memory.core.context import Context, Source
from agent_memory.core.lazy_dataclass import dataclass
from agent_memory.core.model import Document
from agent_memory.core.paths import SKILL_NAME_MAX, valid_skill_name
from agent_memory.core.ports import Ref

# The service has no agent application announcing documents of its own, so the seed's first source is
# absent; the database sources follow in its order. user/ is a source only when explicitly bound, which
# the resolver already guarantees (it is never among the default roots).
SKILL_SOURCE_ORDER = ("agent", "workspace", "speaker", "user")
SKILLS_PREFIX = "skills/"


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    path: str
    document: Document
    content: str | None = None


def check_skill_name(name: object) -> str:
    if not isinstance(name, str):
        raise ApiError("parameter_invalid", "skill.name must be a string such as 'pdf-forms'.")
    if not valid_skill_name(name):
        raise ApiError(
            "skill_name_invalid",
            f"{name[:80]!r} is not a skill name: lowercase letters and digits with single hyphens, "
            f"at most {SKILL_NAME_MAX} characters.",
        )
    return name


def skill_sources(ctx: Context) -> list[Source]:
    """The sources a skill name is looked up in, in precedence order.

    Only the reserved root of each scope is a skill source: an alias binding (a second speaker subject,
    another conversation) names documents, not the answering pair's instructions.
    """
    out = []
    for root in SKILL_SOURCE_ORDER:
        src = ctx.sources.get(root)
        if src is not None and src.scope == root and src.anchor is not None:
            out.append(src)
    return out


def _skill_name_of(rest: str) -> str | None:
    if not rest.startswith(SKILLS_PREFIX):
        return None
    name = rest[len(SKILLS_PREFIX) :]
    # Rows are validated on write; the check keeps a malformed legacy row out of the catalog.
    return name if valid_skill_name(name) else None


class SkillService:
    def catalog(self, ctx: Context) -> list[Skill]:
        """Every skill the conversation resolves, first source winning, ordered by name."""
        sources = skill_sources(ctx)
        listed = ctx.store.list_many([s.anchor for s in sources if s.anchor is not None])
        chosen: dict[str, Skill] = {}
        for src in sources:
            for doc in listed[src.anchored]:
                name = _skill_name_of(doc.rest)
                if name is not None and name not in chosen:
                    chosen[name] = Skill(name, f"{src.name}/{doc.rest}", doc)
        # The catalog is what a model is told it may load: a quarantined skill (its text or its description
        # resembles prompt injection) waits for review outside it, and does not let a lower source win.
        chosen = {name: skill for name, skill in chosen.items() if not skill.document.hidden_from_models}
        return [chosen[name] for name in sorted(chosen)]

    def resolve(self, ctx: Context, name: str) -> Skill:
        """The winning document for one name: every source is fetched in one batch, then walked in order."""
        check_skill_name(name)
        sources = skill_sources(ctx)
        refs = [Ref.document(s.anchored, SKILLS_PREFIX + name) for s in sources]
        ctx.fetch(refs)
        for src, ref in zip(sources, refs, strict=True):
            doc: Document | None = ctx.loaded.get(ref)
            if doc is not None:
                return Skill(name, f"{src.name}/{doc.rest}", doc)
        raise ApiError(
            "memory_not_found",
            f"No skill named {name!r} in this conversation's skill sources "
            f"({', '.join(s.name + '/skills/' for s in sources) or 'none is bound'}).",
        )

    def load(self, ctx: Context, name: str) -> Skill:
        skill = self.resolve(ctx, name)
        if skill.document.hidden_from_models:
            # Refused before its text is fetched: loading a skill is how a model reads it.
            raise quarantined(skill.path)
        return Skill(skill.name, skill.path, skill.document, ctx.store.read_content(skill.document.held(skill.path)))
