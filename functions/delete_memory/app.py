"""POST /agent_api/v1/memories/{memory_id}/delete"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("delete_memory")
