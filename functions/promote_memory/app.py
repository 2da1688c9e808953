"""POST /agent_api/v1/memories/promote"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("promote_memory")
