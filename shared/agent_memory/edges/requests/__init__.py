"""Typed requests: HTTP bodies and tool inputs, one validation system (base.py). Each route imports only
the module of its own area, so a Lambda builds only the models it uses."""
