"""POST /agent_api/v1/executions/{execution_public_id}/tools/{tool_name}"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("call_tool")
