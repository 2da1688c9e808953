"""POST /agent_api/v1/memories/{memory_id}/files/edit"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("memory_file_edit")
