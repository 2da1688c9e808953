"""POST /agent_api/v1/profile/memory/versions/show"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("profile_memory_version_show")
