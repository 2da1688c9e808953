"""POST /agent_api/v1/humans"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("create_human")
