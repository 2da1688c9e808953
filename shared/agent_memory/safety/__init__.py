"""Content safety: pure, pattern-based checks on what is written (pii.py: personal data found and masked)."""
