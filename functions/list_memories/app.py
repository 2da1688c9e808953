"""GET /agent_api/v1/memories"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("list_memories")
