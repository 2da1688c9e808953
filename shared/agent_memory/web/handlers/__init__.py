"""Route handlers, one module per area; the route contract (contract.py) names each one."""
