"""The conversation's reads beside its memory verbs: the skills catalog, loading a skill, the memory block."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_memory.edges import services
from agent_memory.edges.http.glue import Request
from agent_memory.edges.http.handlers import parsed
from agent_memory.render import views

# Request models and domain modules are imported inside the verbs that use them: a route's Lambda loads
# only its own verb's (handlers/__init__.py).
if TYPE_CHECKING:
    pass


def list_skills(req: Request) -> object:
    from agent_memory.edges.requests.memory import Selector

    selector = parsed(req, Selector, {"speaker_public_id": req.query.get("skill[speaker_public_id]")}, "skill")
    ctx = services.resolver().door("conversation", req.token, req.params, speaker_selector=selector.speaker_public_id)
    return {"skills": [views.skill(s) for s in services.skills().catalog(ctx)]}


def load_skill(req: Request) -> object:
    from agent_memory.edges.requests.memory import SkillLoad

    s = parsed(req, SkillLoad).skill
    ctx = services.resolver().door("conversation", req.token, req.params, speaker_selector=s.speaker_public_id)
    return {"skill": views.skill(services.skills().load(ctx, s.name))}


def memory_block(req: Request) -> object:
    from agent_memory.edges.requests.memory import MemoryBlock, MemoryBlockFields

    # Every field has a default, so an empty body asks for the default block.
    b = parsed(req, MemoryBlock).memory_block if req.body or req.body_error else MemoryBlockFields()
    ctx = services.resolver().door("conversation", req.token, req.params, speaker_selector=b.speaker_public_id)
    block = services.block().assemble(ctx, b.budget_bytes, b.expected_context_revision)
    return {"memory_block": views.block(block)}
