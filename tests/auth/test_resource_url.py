"""The endpoint's canonical URL (RFC 8707 resource, RFC 9728 ``resource``) is
configuration: an OAuth resource without one refuses to start, and the audience a token
must name never follows the request's ``Host`` header."""

from __future__ import annotations

import pytest
from mcp_http import modern_meta, rpc
from oauth_support import mint, oauth_setup

from tornado_mcp.auth import OAuthResource
from tornado_mcp.auth.token_introspection import IntrospectionVerifier

pytestmark = pytest.mark.timeout(60)


def test_a_resource_without_a_configured_url_refuses_to_start() -> None:
    with pytest.raises(ValueError, match="needs its canonical URL"):
        OAuthResource.jwt("https://as.example", "https://as.example/jwks")
    verifier = IntrospectionVerifier("https://as.example/introspect", "rs", "secret")
    with pytest.raises(ValueError, match="needs its canonical URL"):
        OAuthResource(verifier, authorization_servers=["https://as.example"])
    for bad in ("mcp.example.com/mcp", "ftp://mcp.example.com/mcp",
                "https://mcp.example.com/mcp#frag", "https:///mcp"):
        with pytest.raises(ValueError, match="absolute http"):
            OAuthResource(verifier, authorization_servers=["https://as.example"], resource=bad)


def test_the_resource_defaults_to_the_audience_and_the_other_way_round() -> None:
    by_audience = OAuthResource.jwt("https://as.example", "https://as.example/jwks",
                                    audience="https://mcp.example.com/mcp")
    assert by_audience.resource == "https://mcp.example.com/mcp"
    by_resource = OAuthResource.jwt("https://as.example", "https://as.example/jwks",
                                    resource="https://mcp.example.com/mcp")
    assert by_resource.resource_url() == "https://mcp.example.com/mcp"


async def test_a_token_for_the_host_the_client_names_is_refused() -> None:
    async with oauth_setup() as s:
        own = s.srv.url
        for host in ("localhost:9999", f"127.0.0.1:{s.srv.port + 1}", f"localhost:{s.srv.port}"):
            token = mint(s.authz, f"http://{host}/mcp")
            r = await s.srv.post(rpc("tools/call", {"name": "whoami", "arguments": {},
                                                    "_meta": modern_meta()}),
                                 headers={"MCP-Protocol-Version": "2026-07-28",
                                          "Mcp-Method": "tools/call", "Mcp-Name": "whoami",
                                          "Host": host, "Authorization": f"Bearer {token}"})
            assert r.status == 401, (host, r.body)
            assert "token audience is not this resource" in r.json["error"]["message"]
            # the metadata, asked for under that Host, still names the configured URL
            doc = await s.srv.client.fetch(
                f"http://127.0.0.1:{s.srv.port}/.well-known/oauth-protected-resource/mcp",
                headers={"Host": host})
            assert b'"resource":"' + own.encode() + b'"' in doc.body.replace(b" ", b"")
        ok = await s.srv.post(rpc("tools/call", {"name": "whoami", "arguments": {},
                                                 "_meta": modern_meta()}),
                              headers={"MCP-Protocol-Version": "2026-07-28",
                                       "Mcp-Method": "tools/call", "Mcp-Name": "whoami",
                                       "Authorization": f"Bearer {mint(s.authz, own)}"})
        assert ok.status == 200
