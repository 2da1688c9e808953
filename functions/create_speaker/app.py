"""POST /agent_api/v1/speakers"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("create_speaker")
