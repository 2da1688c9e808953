"""POST /agent_api/v1/profile/agents/{agent_name}/memory"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("definition_memory_write")
