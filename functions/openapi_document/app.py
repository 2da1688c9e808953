"""GET /agent_api/v1/openapi.json"""

from agent_memory.edges.http.lambda_entry import entry

handler = entry("openapi_document")
