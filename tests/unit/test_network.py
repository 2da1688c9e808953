"""Unit tests cannot reach the network (tests/unit/conftest.py)."""

from __future__ import annotations

import socket

import pytest

from .conftest import NetworkBlocked


def test_a_unit_test_cannot_open_a_connection() -> None:
    with pytest.raises(NetworkBlocked):
        socket.create_connection(("127.0.0.1", 9))
    with socket.socket() as s, pytest.raises(NetworkBlocked):
        s.connect(("127.0.0.1", 9))
