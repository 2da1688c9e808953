"""POST /agent_api/v1/workspaces/{workspace_public_id}/memory/versions"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("workspace_memory_versions")
