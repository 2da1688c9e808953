"""POST /agent_api/v1/workspaces/{workspace_public_id}/conversations"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("create_conversation")
