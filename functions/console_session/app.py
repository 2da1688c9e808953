"""GET /console/api/session"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("console_session")
