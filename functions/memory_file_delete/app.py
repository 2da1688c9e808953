"""POST /agent_api/v1/memories/{memory_id}/files/delete"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("memory_file_delete")
