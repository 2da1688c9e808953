"""Content safety: what every stored version is scanned for (pii.py: personal data found and masked;
injection.py: text that resembles prompt injection)."""
