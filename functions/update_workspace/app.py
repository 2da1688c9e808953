"""PATCH /agent_api/v1/workspaces/{workspace_public_id}"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("update_workspace")
