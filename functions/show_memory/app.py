"""GET /agent_api/v1/memories/{memory_id}"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("show_memory")
