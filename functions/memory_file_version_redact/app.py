"""POST /agent_api/v1/memories/{memory_id}/files/versions/redact"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("memory_file_version_redact")
