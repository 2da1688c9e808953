"""POST /agent_api/v1/agents/{agent_public_id}/credentials/rotate"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("rotate_agent_credentials")
