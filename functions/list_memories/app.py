"""GET /agent_api/v1/memories"""

from agent_memory.web.lambda_entry import entry

handler = entry("list_memories")
