"""POST /agent_api/v1/memories/{memory_id}/delete"""

from agent_memory.web.lambda_entry import entry

handler = entry("delete_memory")
