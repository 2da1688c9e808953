"""POST /agent_api/v1/workspaces/{workspace_public_id}/members"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("add_member")
