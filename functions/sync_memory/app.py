"""POST /agent_api/v1/memories/{memory_id}/sync"""

from agent_memory.web.lambda_entry import entry

handler = entry("sync_memory")
