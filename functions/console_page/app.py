"""GET /console"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("console_page")
