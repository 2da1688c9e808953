"""POST /agent_api/v1/memories/{memory_id}/archive"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("archive_memory")
