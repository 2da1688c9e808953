"""POST /agent_api/v1/workspaces/{workspace_public_id}/conversations/{conversation_public_id}/memory/edit"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("conversation_memory_edit")
