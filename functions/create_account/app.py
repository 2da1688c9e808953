"""POST /agent_api/v1/accounts"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("create_account")
