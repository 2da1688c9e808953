"""Deployment settings (core/settings.py): a plain dataclass read from the environment, its bounds checked."""

from __future__ import annotations

import pytest
from agent_memory.core.model import DEFAULT_VERSIONS_KEPT, MAX_VERSIONS_KEPT
from agent_memory.core.settings import Settings, settings


def test_the_environment_is_read_once_with_the_shipped_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given an environment naming only the table and bucket,
    for name in ("AGENT_MEMORY_WRITES_PER_MINUTE", "AGENT_MEMORY_VERSIONS_KEPT", "AGENT_MEMORY_AWS_READ_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TABLE_NAME", "t")
    monkeypatch.setenv("BUCKET_NAME", "b")
    monkeypatch.setenv("AGENT_MEMORY_ORIGIN_WRITES_PER_MINUTE", "off")
    settings.cache_clear()
    try:
        s = settings()
        # Then the defaults hold, "off" turns a budget off, and the same object answers every later call.
        assert (s.table_name, s.bucket_name, s.writes_per_minute) == ("t", "b", 600)
        assert s.origin_writes_per_minute is None
        assert s.versions_kept == DEFAULT_VERSIONS_KEPT and s.aws_read_timeout_seconds == 10.0
        assert settings() is s
    finally:
        settings.cache_clear()


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("table_name", "", "table_name: at least 1 character"),
        ("writes_per_minute", 0, "writes_per_minute: at least 1, or off"),
        ("versions_kept", MAX_VERSIONS_KEPT + 1, f"versions_kept: from 1 to {MAX_VERSIONS_KEPT}"),
        ("aws_read_timeout_seconds", 61.0, "aws_read_timeout_seconds: above 0, at most 60"),
        ("execution_ttl_seconds", 0, "execution_ttl_seconds: at least 1"),
    ],
)
def test_a_setting_out_of_bounds_is_refused_by_name(field: str, value: object, says: str) -> None:
    # Given one setting outside its bounds, Then the settings refuse to exist and say which and why.
    with pytest.raises(ValueError, match=says):
        Settings(**{"table_name": "t", "bucket_name": "b", field: value})  # type: ignore[arg-type]


def test_settings_are_frozen() -> None:
    s = Settings(table_name="t", bucket_name="b")
    with pytest.raises(AttributeError):
        s.table_name = "other"  # type: ignore[misc]
