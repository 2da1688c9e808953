"""PATCH /agent_api/v1/agents/{agent_public_id}"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("update_agent")
