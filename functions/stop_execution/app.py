"""POST /agent_api/v1/executions/{execution_public_id}/stop"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("stop_execution")
