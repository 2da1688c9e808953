"""ANY $default"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("unknown_route")
