"""POST /agent_api/v1/humans/{human_public_id}/credentials/revoke"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("revoke_human_credentials")
