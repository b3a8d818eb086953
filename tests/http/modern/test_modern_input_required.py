"""2026-07-28 input-required results: elicitation, sampling and roots round trips, and the sealed
request state (tampering, binding to method, params and expiry).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp_http import (
    Reply,
    Running,
    error_of,
    modern_meta,
    result_of,
    running,
    tool_text,
)

from tornado_mcp import Context, InputRequired, RequestStateCodec, Server, elicitation

pytestmark = pytest.mark.timeout(60)

# -- input-required results -----------------------------------------------------------------------

async def call_tool(srv: Running, name: str, caps: dict[str, Any] | None = None,
                    **extra: Any) -> Reply:
    params: dict[str, Any] = {"name": name, "arguments": extra.pop("arguments", {})}
    params.update(extra)
    return await srv.modern("tools/call", params, meta=modern_meta(caps or {}))


async def test_elicitation_round_trip(srv: Running) -> None:
    caps = {"elicitation": {}}
    first = result_of(await call_tool(srv, "test_input_required_result_elicitation", caps))
    assert first["resultType"] == "input_required"
    req = first["inputRequests"]["user_name"]
    assert req["method"] == "elicitation/create"
    assert req["params"]["mode"] == "form"
    assert "content" not in first
    second = result_of(await call_tool(
        srv, "test_input_required_result_elicitation", caps,
        inputResponses={"user_name": {"action": "accept", "content": {"name": "Ada"}}}))
    assert second["resultType"] == "complete"
    assert tool_text(second) == "Hello, Ada!"


async def test_sampling_round_trip(srv: Running) -> None:
    caps = {"sampling": {}}
    first = result_of(await call_tool(srv, "test_input_required_result_sampling", caps))
    assert first["inputRequests"]["capital_question"]["method"] == "sampling/createMessage"
    second = result_of(await call_tool(
        srv, "test_input_required_result_sampling", caps,
        inputResponses={"capital_question": {"role": "assistant", "model": "m",
                                             "content": {"type": "text", "text": "Paris"}}}))
    assert tool_text(second) == "Sampling said: Paris"


async def test_roots_round_trip(srv: Running) -> None:
    caps = {"roots": {}}
    first = result_of(await call_tool(srv, "test_input_required_result_list_roots", caps))
    assert first["inputRequests"]["client_roots"]["method"] == "roots/list"
    second = result_of(await call_tool(
        srv, "test_input_required_result_list_roots", caps,
        inputResponses={"client_roots": {"roots": [{"uri": "file:///a"},
                                                   {"uri": "file:///b"}]}}))
    assert tool_text(second) == "Client roots: file:///a, file:///b"


async def test_prompt_and_resource_input_required(srv: Running) -> None:
    caps = {"elicitation": {}}
    r = await srv.modern("prompts/get", {"name": "test_input_required_result_prompt"},
                         meta=modern_meta(caps))
    first = result_of(r)
    assert first["resultType"] == "input_required"
    again = result_of(await srv.modern(
        "prompts/get", {"name": "test_input_required_result_prompt",
                        "inputResponses": {"user_context": {"action": "accept",
                                                            "content": {"context": "ctx!"}}}},
        meta=modern_meta(caps)))
    assert again["resultType"] == "complete"
    assert "ctx!" in json.dumps(again["messages"])


async def test_request_state_round_trip(srv: Running) -> None:
    caps = {"elicitation": {}}
    first = result_of(await call_tool(srv, "test_input_required_result_request_state", caps))
    state = first["requestState"]
    assert isinstance(state, str) and "request-state-nonce" not in state  # sealed, opaque
    answer = {"confirm": {"action": "accept", "content": {"ok": True}}}
    done = result_of(await call_tool(srv, "test_input_required_result_request_state", caps,
                                     inputResponses=answer, requestState=state))
    assert tool_text(done) == "state-ok: request-state-nonce"


def tamper(state: str) -> list[str]:
    """Forgeries of a sealed state: a flipped ciphertext character, a cut tag, another
    prefix, the bare body, garbage (the client cannot read it, so cannot rewrite it)."""
    prefix, body = state[:3], state[3:]
    flipped = body[:-5] + ("A" if body[-5] != "A" else "B") + body[-4:]
    return [prefix + flipped, state[:-2], "s0." + body, body, "garbage"]


async def test_tampered_request_state_is_refused(srv: Running) -> None:
    caps = {"elicitation": {}}
    name = "test_input_required_result_tampered_state"
    state = result_of(await call_tool(srv, name, caps))["requestState"]
    answer = {"confirm": {"action": "accept", "content": {"ok": True}}}
    for bad in tamper(state):
        r = await call_tool(srv, name, caps, inputResponses=answer, requestState=bad)
        assert r.status == 400, (bad, r.body)
        err = error_of(r)
        assert err["code"] == -32602
        assert "requestState" in err["message"]
    ok = await call_tool(srv, name, caps, inputResponses=answer, requestState=state)
    assert tool_text(result_of(ok)) == "state-ok"


async def test_request_state_is_bound_to_method_and_params(srv: Running) -> None:
    caps = {"elicitation": {}}
    answer = {"confirm": {"action": "accept", "content": {"ok": True}}}
    state = result_of(await call_tool(srv, "test_input_required_result_tampered_state",
                                      caps))["requestState"]
    replayed = await call_tool(srv, "test_input_required_result_request_state", caps,
                               inputResponses=answer, requestState=state)
    assert replayed.status == 400
    assert error_of(replayed)["code"] == -32602
    assert "another request" in error_of(replayed)["message"]


async def test_request_state_bound_to_arguments_and_expiry() -> None:
    key = b"k" * 32
    server = Server("stateful", request_state_key=key)

    @server.tool()
    def greet(who: str, ctx: Context) -> str | InputRequired:
        state = ctx.open_state()
        if state is None:
            return InputRequired({"ok": elicitation("ok?", {"type": "object", "properties": {}})},
                                 request_state=ctx.seal_state({"who": who}))
        return f"hi {state['who']}"

    async with running(server) as srv:
        caps = {"elicitation": {}}
        answer = {"ok": {"action": "accept", "content": {}}}
        first = result_of(await call_tool(srv, "greet", caps, arguments={"who": "ann"}))
        state = first["requestState"]
        good = await call_tool(srv, "greet", caps, arguments={"who": "ann"},
                               inputResponses=answer, requestState=state)
        assert tool_text(result_of(good)) == "hi ann"
        other_args = await call_tool(srv, "greet", caps, arguments={"who": "bob"},
                                     inputResponses=answer, requestState=state)
        assert other_args.status == 400 and error_of(other_args)["code"] == -32602
        # Expired: sealed with the server's key, bound correctly, but past its expiry.
        expired = RequestStateCodec(key, ttl=-5).seal(
            {"who": "ann"}, "tools/call", {"name": "greet", "arguments": {"who": "ann"}})
        late = await call_tool(srv, "greet", caps, arguments={"who": "ann"},
                               inputResponses=answer, requestState=expired)
        assert late.status == 400
        assert error_of(late)["code"] == -32602
        assert "expired" in error_of(late)["message"]
        # The same codec with a live expiry is accepted: the refusal above was the expiry.
        fresh = RequestStateCodec(key).seal(
            {"who": "ann"}, "tools/call", {"name": "greet", "arguments": {"who": "ann"}})
        ok = await call_tool(srv, "greet", caps, arguments={"who": "ann"},
                             inputResponses=answer, requestState=fresh)
        assert tool_text(result_of(ok)) == "hi ann"
        # Another server key cannot forge it.
        foreign = RequestStateCodec(b"x" * 32).seal(
            {"who": "ann"}, "tools/call", {"name": "greet", "arguments": {"who": "ann"}})
        forged = await call_tool(srv, "greet", caps, arguments={"who": "ann"},
                                 inputResponses=answer, requestState=foreign)
        assert forged.status == 400 and error_of(forged)["code"] == -32602


async def test_only_declared_capability_kinds_are_kept(srv: Running) -> None:
    name = "test_input_required_result_multiple_inputs"
    only_elicit = result_of(await call_tool(srv, name, {"elicitation": {}}))
    assert set(only_elicit["inputRequests"]) == {"user_name"}
    assert "requestState" in only_elicit
    two = result_of(await call_tool(srv, name, {"sampling": {}, "roots": {}}))
    assert set(two["inputRequests"]) == {"greeting", "client_roots"}
    everything = result_of(await call_tool(srv, name, {"elicitation": {}, "sampling": {},
                                                       "roots": {}}))
    assert set(everything["inputRequests"]) == {"user_name", "greeting", "client_roots"}
    # Nothing declared, but a requestState: the client may simply retry.
    none = result_of(await call_tool(srv, name, {}))
    assert none["resultType"] == "input_required"
    assert "inputRequests" not in none and "requestState" in none


async def test_input_required_without_the_capability_or_state_is_32021(srv: Running) -> None:
    r = await call_tool(srv, "test_input_required_result_elicitation", {})
    assert r.status == 400
    assert error_of(r)["code"] == -32021
    assert error_of(r)["data"]["requiredCapabilities"] == {"elicitation": {}}


@pytest.mark.parametrize("responses", [["x"], "x", 3, {"user_name": "accept"},
                                       {"user_name": [1]}],
                         ids=["list", "string", "number", "value-string", "value-list"])
async def test_input_responses_must_map_to_objects(srv: Running, responses: Any) -> None:
    r = await call_tool(srv, "test_input_required_result_elicitation", {"elicitation": {}},
                        inputResponses=responses)
    assert r.status == 400, r.body
    assert error_of(r)["code"] == -32602
    assert "inputResponses" in error_of(r)["message"]
