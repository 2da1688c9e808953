"""Rules: the access policy (access.py). Pure functions over rows, no I/O."""
