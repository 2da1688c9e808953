"""POST /agent_api/v1/executions/{execution_public_id}/memory_block"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("execution_memory_block")
