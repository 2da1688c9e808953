"""POST /agent_api/v1/workspaces/{workspace_public_id}/conversations/{conversation_public_id}/executions"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("create_execution")
