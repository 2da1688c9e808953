"""POST /agent_api/v1/memories/{memory_id}/sync"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("sync_memory")
