"""POST /agent_api/v1/executions/{execution_public_id}/files/rename"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("execution_file_rename")
