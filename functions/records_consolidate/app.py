"""POST /agent_api/v1/workspaces/{workspace_public_id}/records/consolidate"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("records_consolidate")
