"""POST /agent_api/v1/workspaces/{workspace_public_id}/records/{record_public_id}"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("record_update")
