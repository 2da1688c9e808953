"""POST /agent_api/v1/workspaces/{workspace_public_id}/records/search"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("records_search")
