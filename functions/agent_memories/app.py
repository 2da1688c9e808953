"""GET /agent_api/v1/agents/{agent_public_id}/memories"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("agent_memories")
