"""POST /agent_api/v1/executions/{execution_public_id}/files/show"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("execution_file_show")
