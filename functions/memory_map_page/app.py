"""GET /agent_api/v1/memory_map.html"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("memory_map_page")
