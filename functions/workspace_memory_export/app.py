"""GET /agent_api/v1/workspaces/{workspace_public_id}/memory/export"""

from agent_memory.web.lambda_entry import entry

handler = entry("workspace_memory_export")
