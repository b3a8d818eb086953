"""The 2026-07-28 requestState key is shared through the cluster: an input-required retry
can reach another process.  Two servers in this process, each joined to one real Redis."""

from __future__ import annotations

from mcp_http import running
from redis_proc import RedisProc, redis_fixture  # noqa: F401 - the redis fixture

from tornado_mcp import Context, InputRequired, Server, Transport, elicitation
from tornado_mcp.cluster import Cluster


def booking_server() -> Server:
    server = Server("booking")

    @server.tool()
    def book(city: str, ctx: Context) -> str | InputRequired:
        answer = ctx.input_response("confirm")
        if answer is None:
            ask = elicitation(f"Book {city}?", {"type": "object", "properties": {}})
            return InputRequired({"confirm": ask}, request_state=ctx.seal_state({"city": city}))
        return f"booked {ctx.open_state()['city']}"

    return server


async def test_an_input_required_retry_reaches_another_process(redis: RedisProc) -> None:
    one, two = booking_server(), booking_server()
    t_one, t_two = Transport(one), Transport(two)
    c_one, c_two = Cluster(t_one, redis.url), Cluster(t_two, redis.url)
    await c_one.start()
    await c_two.start()
    try:
        assert one.request_state.key == two.request_state.key
        async with running(one, transport=t_one) as a, running(two, transport=t_two) as b:
            first = await a.modern("tools/call", {"name": "book", "arguments": {"city": "Oslo"}})
            result = first.messages[-1]["result"]
            assert result["resultType"] == "input_required"
            retry = await b.modern("tools/call", {
                "name": "book", "arguments": {"city": "Oslo"},
                "inputResponses": {"confirm": {"action": "accept", "content": {}}},
                "requestState": result["requestState"]})
            assert retry.status == 200
            assert retry.messages[-1]["result"]["content"][0]["text"] == "booked Oslo"
    finally:
        await c_one.close()
        await c_two.close()
