"""GET /console/console.js"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("console_script")
