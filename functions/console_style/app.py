"""GET /console/console.css"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("console_style")
