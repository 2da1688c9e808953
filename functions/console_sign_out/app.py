"""POST /console/api/session/delete"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("console_sign_out")
