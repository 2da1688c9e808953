"""POST /agent_api/v1/memories/promote"""

from agent_memory.web.lambda_entry import entry

handler = entry("promote_memory")
