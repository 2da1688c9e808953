"""POST /agent_api/v1/humans/{human_public_id}/credentials/rotate"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("rotate_human_credentials")
