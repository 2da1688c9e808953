"""GET /agent_api/v1/tools/schemas"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("tool_schemas")
