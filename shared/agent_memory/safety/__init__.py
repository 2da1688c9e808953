"""Content safety: what is scanned in every stored version (PII tags, prompt-injection flags)."""
