"""POST /agent_api/v1/profile/memory/edit"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("profile_memory_edit")
