"""Sealed 2026-07-28 ``requestState``: AES-GCM with a key ring.  The client cannot read it;
tampering, a key outside the ring, expiry and replay to another method or other params
are -32602; a retry that reaches another server sharing the ring completes.
"""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pytest
from mcp_http import Running, assert_refused, example_server, modern_meta, result_of, running

from tornado_mcp import RequestStateCodec
from tornado_mcp.protocol.errors import MCPError
from tornado_mcp.server.request_state import MAX_STATE_CHARS

K1, K2, K3 = (bytes([n]) * 32 for n in (1, 2, 3))
PARAMS = {"name": "book", "arguments": {"city": "Lyon"}}
DATA = {"secret": "plaintext-marker", "step": 2}


def refused(codec: RequestStateCodec, token: Any, method: str = "tools/call",
            params: dict[str, Any] | None = None) -> str:
    with pytest.raises(MCPError) as info:
        codec.open(token, method, params if params is not None else PARAMS)
    assert info.value.code == -32602
    return info.value.message


def test_the_client_cannot_read_the_state() -> None:
    token = RequestStateCodec(keys=[K1]).seal(DATA, "tools/call", PARAMS)
    assert token.startswith("s1.")
    raw = base64.urlsafe_b64decode(token[3:] + "=" * (-len(token[3:]) % 4))
    for text in (token.encode(), raw):
        for plain in (b"plaintext-marker", b"secret", b"tools/call", b"Lyon"):
            assert plain not in text
    # Two seals of the same data differ (a fresh nonce each time).
    assert RequestStateCodec(keys=[K1]).seal(DATA, "tools/call", PARAMS) != token


def test_round_trip_and_what_is_refused() -> None:
    codec = RequestStateCodec(keys=[K1])
    token = codec.seal(DATA, "tools/call", PARAMS)
    retry = {**PARAMS, "inputResponses": {"x": {}}, "requestState": token, "_meta": {"a": 1}}
    assert codec.open(token, "tools/call", retry) == DATA
    integrity = "Invalid requestState: integrity check failed"
    flipped = token[:10] + ("A" if token[10] != "A" else "B") + token[11:]
    assert refused(codec, flipped) == integrity
    assert refused(codec, token[:-2]) == integrity
    assert refused(codec, "s1.") == integrity
    assert refused(codec, 42) == integrity
    assert refused(RequestStateCodec(keys=[K2]), token) == integrity
    other = "Invalid requestState: it belongs to another request"
    assert refused(codec, token, "prompts/get") == other
    assert refused(codec, token, params={"name": "book", "arguments": {"city": "Nice"}}) == other
    expired = RequestStateCodec(keys=[K1], ttl=-1).seal(DATA, "tools/call", PARAMS)
    assert refused(codec, expired) == "Invalid requestState: expired"


def test_an_hmac_era_token_is_refused() -> None:
    payload = base64.urlsafe_b64encode(json.dumps({"d": 1}).encode()).decode()
    assert refused(RequestStateCodec(keys=[K1]), f"{payload}.c2ln") == \
        "Invalid requestState: integrity check failed"


def sealed_of_length(codec: RequestStateCodec, length: int) -> str:
    """A genuine token exactly ``length`` characters long."""
    for n in range(length * 3 // 4 - 200, length * 3 // 4):
        token = codec.seal("x" * n, "tools/call", PARAMS)
        if len(token) == length:
            return token
    raise AssertionError(length)


def test_state_length_bound() -> None:
    codec = RequestStateCodec(keys=[K1])
    # Unpadded base64 never has a length of 4k + 1, and "s1." adds 3: the longest token
    # within MAX_STATE_CHARS (65536) is 65535 characters, the shortest over it 65537.
    at_bound = sealed_of_length(codec, MAX_STATE_CHARS - 1)
    opened = codec.open(at_bound, "tools/call", PARAMS)
    assert isinstance(opened, str) and set(opened) == {"x"}
    over = sealed_of_length(codec, MAX_STATE_CHARS + 1)
    assert refused(codec, over) == "Invalid requestState: integrity check failed"


def test_rotation_first_key_seals_every_key_opens() -> None:
    old = RequestStateCodec(keys=[K1])
    rotated = RequestStateCodec(keys=[K2, K1])
    from_old = old.seal(DATA, "tools/call", PARAMS)
    from_new = rotated.seal(DATA, "tools/call", PARAMS)
    assert rotated.open(from_old, "tools/call", PARAMS) == DATA
    assert rotated.open(from_new, "tools/call", PARAMS) == DATA
    assert refused(old, from_new) == "Invalid requestState: integrity check failed"
    assert rotated.key == K2


def test_key_arguments() -> None:
    assert RequestStateCodec(key=K3).keys == [K3]
    assert RequestStateCodec("a passphrase of 16+ chars").key == b"a passphrase of 16+ chars"
    assert len(RequestStateCodec().key) == 32
    with pytest.raises(ValueError, match="at least 16 bytes"):
        RequestStateCodec(key=b"short")
    with pytest.raises(ValueError, match="at least one key"):
        RequestStateCodec(keys=[])
    with pytest.raises(TypeError):
        RequestStateCodec(key=K1, keys=[K2])


TOOL = "test_input_required_result_request_state"
CAPS = {"elicitation": {}}
ANSWER = {"confirm": {"action": "accept", "content": {"ok": True}}}


async def call(srv: Running, **extra: Any) -> Any:
    return await srv.modern("tools/call", {"name": TOOL, "arguments": {}, **extra},
                            meta=modern_meta(CAPS))


async def test_a_retry_reaching_another_server_with_the_ring_completes() -> None:
    first_server, second_server, stranger = example_server(), example_server(), example_server()
    first_server.request_state = RequestStateCodec(keys=[K1])
    second_server.request_state = RequestStateCodec(keys=[K2, K1])  # rotated, still opens K1
    stranger.request_state = RequestStateCodec(keys=[K3])
    async with running(first_server) as a, running(second_server) as b, \
            running(stranger) as c:
        first = result_of(await call(a))
        assert first["resultType"] == "input_required"
        state = first["requestState"]
        assert b"request-state-nonce" not in state.encode()
        done = result_of(await call(b, inputResponses=ANSWER, requestState=state))
        assert done["content"][0]["text"] == "state-ok: request-state-nonce"
        r = await call(c, inputResponses=ANSWER, requestState=state)
        assert_refused(r, 400, -32602, "Invalid requestState: integrity check failed", 1)


def test_expiry_is_checked_against_the_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    codec = RequestStateCodec(keys=[K1], ttl=60)
    token = codec.seal(DATA, "tools/call", PARAMS)
    now = time.time()
    monkeypatch.setattr(time, "time", lambda: now + 59)
    assert codec.open(token, "tools/call", PARAMS) == DATA
    monkeypatch.setattr(time, "time", lambda: now + 62)
    assert refused(codec, token) == "Invalid requestState: expired"


def test_the_params_key_order_does_not_matter_but_the_caller_does() -> None:
    codec = RequestStateCodec(keys=[b"k" * 32])
    params = {"name": "t", "arguments": {"a": 1, "b": 2}}
    sealed = codec.seal({"n": 1}, "tools/call", params, "bearer:alice")
    reordered = {"arguments": {"b": 2, "a": 1}, "name": "t"}  # the same JSON, re-serialised
    assert codec.open(sealed, "tools/call", reordered, "bearer:alice") == {"n": 1}
    for caller in ("bearer:mallory", "host:alice", ""):  # another caller's retry
        with pytest.raises(MCPError) as info:
            codec.open(sealed, "tools/call", params, caller)
        assert info.value.code == -32602
