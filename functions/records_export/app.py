"""GET /agent_api/v1/workspaces/{workspace_public_id}/records/export"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("records_export")
