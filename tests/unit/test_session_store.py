"""Legacy sessions and their store: what a session retains, admission under
``max_sessions``, idle expiry (on access and by reaping), and the one way a session ends."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tornado_mcp.server.session import Session, SessionStore


class Store:
    """A SessionStore with adjustable bounds that records what it removed."""

    def __init__(self, max_sessions: int | None = 2, idle: float | None = 60.0) -> None:
        self.max_sessions = max_sessions
        self.idle = idle
        self.removed: list[str] = []
        self.store = SessionStore(lambda: self.max_sessions, lambda: self.idle,
                                  lambda s: self.removed.append(s.id))


def session(sid: str | None = None, client_info: Any = None, caps: Any = None) -> Session:
    return Session(sid or SessionStore.new_id(), "2025-11-25",
                   client_info if client_info is not None else {"name": "c", "version": "1"},
                   caps if caps is not None else {}, 5)


def idle(s: Session, seconds: float) -> Session:
    s.last_active = time.monotonic() - seconds
    return s


# -- Session -----------------------------------------------------------------------------------

def test_session_keeps_the_client_and_its_initialize_as_compact_json() -> None:
    s = session("a", {"name": "client", "version": "2.0", "x": [1]}, {"roots": {}})
    assert (s.id, s.protocol_version, s.retained_values) == ("a", "2025-11-25", 5)
    assert (s.client_name, s.client_version) == ("client", "2.0")
    assert s.client_info == {"name": "client", "version": "2.0", "x": [1]}
    assert s.client_capabilities == {"roots": {}}
    expected = (b'{"clientInfo":{"name":"client","version":"2.0","x":[1]},'
                b'"capabilities":{"roots":{}}}')
    assert s.retained_bytes == len(expected)


@pytest.mark.parametrize("info", [{"name": 5, "version": None}, "not an object", []])
def test_session_with_odd_client_info(info: Any) -> None:
    s = session("a", info, ["not", "an", "object"])
    assert (s.client_name, s.client_version) == (None, None)
    assert s.client_info == (info if isinstance(info, dict) else None)
    assert s.client_capabilities == {}


def test_new_ids_are_128_bit_hex_and_distinct() -> None:
    ids = {SessionStore.new_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids)


def test_a_session_with_a_request_in_flight_is_never_idle() -> None:
    s = idle(session(), 100)
    assert s.idle_for(time.monotonic()) >= 100
    s.in_flight[1] = object()  # type: ignore[assignment]
    assert s.idle_for(time.monotonic()) == 0.0


def test_touch_resets_idleness() -> None:
    s = idle(session(), 100)
    s.touch()
    assert s.idle_for(time.monotonic()) < 1


def test_notifications_without_a_notifier_are_not_sent() -> None:
    s = session()
    assert s.send_notification("notifications/message", {"level": "info"}) is False
    assert s.notify_resources_updated("test://a") is False
    calls: list[tuple[str, Any]] = []
    s.notifier = lambda sess, method, params: calls.append((method, params)) is None
    assert s.send_notification("notifications/message") is True
    assert s.notify_resources_updated("test://a") is True  # this session only
    assert calls == [("notifications/message", None),
                     ("notifications/resources/updated", {"uri": "test://a"})]


# -- SessionStore --------------------------------------------------------------------------------

def test_admit_up_to_max_sessions_then_refuse() -> None:
    st = Store(max_sessions=2)
    a, b, c = session("a"), session("b"), session("c")
    assert st.store.admit(a) and st.store.admit(b)
    assert st.store.admit(c) is False
    assert len(st.store) == 2 and st.store.get("c") is None
    assert {s.id for s in st.store} == {"a", "b"}
    assert st.removed == []


def test_no_max_sessions_admits_any_number() -> None:
    st = Store(max_sessions=None)
    for i in range(500):
        assert st.store.admit(session(str(i)))
    assert len(st.store) == 500


def test_a_full_store_reclaims_an_expired_session_to_admit() -> None:
    st = Store(max_sessions=2, idle=60)
    st.store.admit(idle(session("old"), 61))
    st.store.admit(session("fresh"))
    assert st.store.admit(session("new")) is True
    assert st.removed == ["old"]
    assert {s.id for s in st.store} == {"fresh", "new"}


def test_a_lowered_max_sessions_refuses_new_and_keeps_existing() -> None:
    st = Store(max_sessions=3)
    for sid in "abc":
        st.store.admit(session(sid))
    st.max_sessions = 1
    assert st.store.admit(session("d")) is False
    assert len(st.store) == 3 and st.removed == []


def test_get_evicts_an_expired_session() -> None:
    st = Store(idle=60)
    st.store.admit(idle(session("a"), 61))
    st.store.admit(idle(session("b"), 59))
    assert st.store.get("a") is None
    assert st.removed == ["a"]
    assert st.store.get("b") is not None
    assert st.store.get("unknown") is None


def test_no_idle_timeout_never_expires() -> None:
    st = Store(idle=None)
    st.store.admit(idle(session("a"), 10**6))
    assert st.store.get("a") is not None
    assert st.store.reap() == 0


def test_reap_removes_exactly_the_expired_ones() -> None:
    st = Store(max_sessions=None, idle=60)
    for i in range(3):
        st.store.admit(idle(session(f"old{i}"), 61))
    st.store.admit(session("fresh"))
    busy = idle(session("busy"), 61)
    busy.in_flight["r"] = object()  # type: ignore[assignment]
    st.store.admit(busy)
    assert st.store.reap() == 3
    assert sorted(st.removed) == ["old0", "old1", "old2"]
    assert {s.id for s in st.store} == {"fresh", "busy"}
    assert st.store.reap() == 0


def test_remove_is_the_one_way_out_and_is_idempotent() -> None:
    st = Store()
    a = session("a")
    st.store.admit(a)
    assert st.store.remove(a) is True
    assert st.store.remove(a) is False
    assert st.removed == ["a"]
    assert len(st.store) == 0


def test_remove_ignores_a_different_session_with_the_same_id() -> None:
    st = Store()
    st.store.admit(session("a"))
    assert st.store.remove(session("a")) is False
    assert len(st.store) == 1 and st.removed == []
