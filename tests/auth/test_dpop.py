"""DPoP-bound tokens (RFC 9449) at our OAuth endpoint, over real HTTP.

Tokens come from the real authorization server's signing key with ``cnf.jkt`` naming the
client's key; proofs are made with joserfc (not PyJWT, which the endpoint verifies with),
so the two libraries have to agree on every byte.  Each refusal changes one property of an
otherwise good proof and gets a 401 with the ``DPoP`` challenge naming the error, and
leaves nothing in the replay cache.
"""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pytest
from joserfc import jwt as jose_jwt
from joserfc.jwk import OctKey
from mcp_http import LEGACY, MODERN, Running, init_msg, modern_meta, result_of, rpc
from oauth_support import ADMIN, TOOLS, Holder, OAuthSetup, mint, oauth_setup
from tornado.httputil import HTTPHeaders

from tornado_mcp.auth import DPoP
from tornado_mcp.auth.dpop import DEFAULT_DPOP_ALGORITHMS, normalise_url, token_hash

OUT_OF_BOUNDS = ("DPoP proof jwk is outside the accepted key sizes (RSA 2048-4096 bits with "
                 "an exponent of at most 32 bits, EC on its algorithm's curve, Ed25519 or "
                 "Ed448)")

pytestmark = [pytest.mark.timeout(60),  # joserfc prefers RFC 9864's "Ed25519" to "EdDSA"
              pytest.mark.filterwarnings("ignore:EdDSA is deprecated")]

ALGS = " ".join(DEFAULT_DPOP_ALGORITHMS)


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def bound_token(s: OAuthSetup, holder: Holder, **claims: Any) -> str:
    audience = claims.pop("aud", s.srv.url)
    claims.setdefault("cnf", {"jkt": holder.jkt})
    return mint(s.authz, audience, **claims)


async def call(srv: Running, authorization: str | None, proofs: list[str] | None = None,
               name: str = "whoami") -> Any:
    """A modern-era tools/call with ``authorization`` and one ``DPoP`` header per proof."""
    hdrs = HTTPHeaders({"Content-Type": "application/json",
                        "Accept": "application/json, text/event-stream",
                        "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call",
                        "Mcp-Name": name})
    if authorization is not None:
        hdrs.add("Authorization", authorization)
    for proof in proofs or []:
        hdrs.add("DPoP", proof)
    body = json.dumps(rpc("tools/call", {"name": name, "arguments": {},
                                         "_meta": modern_meta()})).encode()
    return await srv.request("POST", body, hdrs)  # type: ignore[arg-type]


def metadata_url(srv: Running) -> str:
    return f"http://127.0.0.1:{srv.port}/.well-known/oauth-protected-resource/mcp"


def challenge(srv: Running, error: str | None = None, description: str | None = None, *,
              on_dpop: bool = True, required: bool = False, scope: str = TOOLS) -> str:
    params = [f'resource_metadata="{metadata_url(srv)}"', f'scope="{scope}"']
    errors = [] if error is None else [f'error="{error}"', f'error_description="{description}"']
    dpop = f'DPoP algs="{ALGS}", ' + ", ".join([*params, *(errors if on_dpop else [])])
    if required:
        return dpop
    return "Bearer " + ", ".join([*params, *([] if on_dpop else errors)]) + ", " + dpop


def assert_refused(reply: Any, status: int, www: str, message: str,
                   request_id: Any = None) -> None:
    """A refusal; ``request_id`` once the request was read (a tool's scope), else null."""
    assert reply.status == status, (reply.status, reply.body)
    assert reply.headers.get("Www-Authenticate") == www
    assert reply.json == {"jsonrpc": "2.0", "id": request_id,
                          "error": {"code": -32600, "message": message}}


def dpop_of(s: OAuthSetup) -> DPoP:
    oauth = s.srv.transport.oauth
    assert oauth is not None and oauth.dpop is not None
    return oauth.dpop


@pytest.mark.parametrize("alg", ["ES256", "RS256", "PS256", "EdDSA"])
async def test_a_bound_token_with_a_good_proof_is_accepted(alg: str) -> None:
    async with oauth_setup(dpop=DPoP()) as s:
        holder = Holder(alg)
        token = bound_token(s, holder)
        reply = await call(s.srv, f"DPoP {token}", [holder.proof(s.srv.url, token)])
        assert reply.status == 200, reply.body
        who = result_of(reply)["structuredContent"]
        assert (who["subject"], who["method"]) == ("alice", "bearer")
        # the query and fragment of htu and the case of its scheme make no difference
        for htu in (s.srv.url + "?x=1#f", f"HTTP://127.0.0.1:{s.srv.port}/mcp"):
            assert (await call(s.srv, f"DPoP {token}", [holder.proof(htu, token)])).status == 200
        assert len(dpop_of(s).replays) == 3
        assert s.srv.transport.snapshot().refusals["auth_dpop"] == 0


async def test_the_metadata_names_the_proof_algorithms_and_whether_dpop_is_required() -> None:
    for required in (False, True):
        async with oauth_setup(dpop=DPoP(algorithms=["ES256", "EdDSA"],
                                         required=required)) as s:
            r = await s.srv.client.fetch(metadata_url(s.srv), raise_error=False)
            doc = json.loads(r.body)
            assert doc["dpop_signing_alg_values_supported"] == ["ES256", "EdDSA"]
            assert doc.get("dpop_bound_access_tokens_required") is (True if required else None)


async def test_no_token_gets_both_challenges() -> None:
    async with oauth_setup(dpop=DPoP()) as s:
        assert_refused(await call(s.srv, None), 401, challenge(s.srv),
                       "Unauthorized: authentication required")


async def test_the_dpop_scheme_is_no_credential_where_dpop_is_off() -> None:
    async with oauth_setup() as s:
        holder = Holder()
        token = bound_token(s, holder)
        reply = await call(s.srv, f"DPoP {token}", [holder.proof(s.srv.url, token)])
        assert reply.status == 401
        assert reply.headers["Www-Authenticate"] == \
            f'Bearer resource_metadata="{metadata_url(s.srv)}", scope="{TOOLS}"'
        assert s.srv.transport.snapshot().refusals["auth_missing"] == 1


@pytest.mark.parametrize("dpop", [None, DPoP()], ids=["dpop_off", "dpop_on"])
async def test_a_bound_token_sent_as_bearer_is_refused(dpop: DPoP | None) -> None:
    async with oauth_setup(dpop=dpop) as s:
        holder = Holder()
        token = bound_token(s, holder)
        description = ("DPoP-bound token presented as a Bearer token "
                       "(send Authorization: DPoP with a proof)")
        reply = await call(s.srv, f"Bearer {token}", [holder.proof(s.srv.url, token)])
        assert reply.status == 401
        www = reply.headers["Www-Authenticate"]
        assert www.startswith(f'Bearer resource_metadata="{metadata_url(s.srv)}", '
                              f'scope="{TOOLS}", error="invalid_token", '
                              f'error_description="{description}"')
        assert s.srv.transport.snapshot().refusals["auth_invalid"] == 1
        # an unbound token is still fine as Bearer
        assert (await call(s.srv, f"Bearer {mint(s.authz, s.srv.url)}")).status == 200


async def test_when_dpop_is_required_plain_bearer_is_refused() -> None:
    async with oauth_setup(dpop=DPoP(required=True)) as s:
        assert_refused(await call(s.srv, None), 401, challenge(s.srv, required=True),
                       "Unauthorized: authentication required")
        description = "this resource requires DPoP-bound tokens (Authorization: DPoP)"
        assert_refused(await call(s.srv, f"Bearer {mint(s.authz, s.srv.url)}"), 401,
                       challenge(s.srv, "invalid_token", description, required=True),
                       f"Unauthorized: {description}")
        holder = Holder()
        token = bound_token(s, holder)
        assert (await call(s.srv, f"DPoP {token}",
                           [holder.proof(s.srv.url, token)])).status == 200


def _bad_proofs(holder: Holder, url: str, token: str) -> dict[str, tuple[list[str], str]]:
    stranger = Holder()
    good = holder.proof(url, token)
    head, body, _sig = good.split(".")
    oct_key = OctKey.generate_key(256)
    unsigned_head = b64(json.dumps({"alg": "none", "typ": "dpop+jwt",
                                    "jwk": holder.key.as_dict(private=False)}).encode())
    private = holder.key.as_dict(private=True)
    return {
        "missing": ([], "DPoP proof missing (send a DPoP header)"),
        "two_headers": ([good, holder.proof(url, token)], "more than one DPoP header"),
        "malformed": (["not.a-jwt"], "malformed DPoP proof"),
        "typ": ([holder.proof(url, token, header={"typ": "JWT"})],
                "DPoP proof typ must be dpop+jwt"),
        "alg_none": ([f"{unsigned_head}.{body}."], "DPoP proof algorithm not allowed"),
        "hs256": ([jose_jwt.encode({"alg": "HS256", "typ": "dpop+jwt",
                                    "jwk": holder.key.as_dict(private=False)},
                                   {"jti": "j", "htm": "POST", "htu": url,
                                    "iat": int(time.time()), "ath": token_hash(token)},
                                   oct_key, algorithms=["HS256"])],
                  "DPoP proof algorithm not allowed"),
        "no_jwk": ([holder.proof(url, token, header={"jwk": None})],
                   "DPoP proof has no jwk header"),
        "private_key": ([holder.proof(url, token, header={"jwk": private})],
                        "DPoP proof jwk holds private key material"),
        "key_type": ([holder.proof(url, token, header={"jwk": {"kty": "oct", "x": "a"}})],
                     OUT_OF_BOUNDS),
        "other_signer": ([f"{head}.{body}.{stranger.proof(url, token).split('.')[2]}"],
                         "DPoP proof signature does not verify"),
        "no_jti": ([holder.proof(url, token, jti=None)],
                   "DPoP proof needs a jti of 1 to 256 characters"),
        "htm": ([holder.proof(url, token, htm="GET")],
                "DPoP proof htm does not match the request method"),
        "htu_path": ([holder.proof(url + "/other", token)],
                     "DPoP proof htu does not match the request URL"),
        "htu_host": ([holder.proof(url.replace("127.0.0.1", "localhost"), token)],
                     "DPoP proof htu does not match the request URL"),
        "stale_iat": ([holder.proof(url, token, iat=time.time() - 66)],
                      "DPoP proof is too old (iat)"),
        "future_iat": ([holder.proof(url, token, iat=time.time() + 30)],
                       "DPoP proof iat is in the future"),
        "no_iat": ([holder.proof(url, token, iat="now")],
                   "DPoP proof needs a numeric iat"),
        "nan_iat": ([holder.proof(url, token, iat=float("nan"))],
                    "DPoP proof needs a numeric iat"),
        "huge_iat": ([holder.proof(url, token, iat=10**400)],
                     "DPoP proof iat is in the future"),
        "bad_public_key": ([holder.proof(url, token, header={"jwk": {
            "kty": "EC", "crv": "P-256", "x": "AAAA", "y": "!!"}})],
            OUT_OF_BOUNDS),
        "ath": ([holder.proof(url, token, ath=token_hash(token + "x"))],
                "DPoP proof ath does not match the access token"),
        "no_ath": ([holder.proof(url, token, ath=None)],
                   "DPoP proof ath does not match the access token"),
        "non_ascii_ath": ([holder.proof(url, token, ath="\u00e9t\u00e9")],
                          "DPoP proof ath does not match the access token"),
    }


BAD_PROOFS = ["missing", "two_headers", "malformed", "typ", "alg_none", "hs256", "no_jwk",
              "private_key", "key_type", "other_signer", "no_jti", "htm", "htu_path",
              "htu_host", "stale_iat", "future_iat", "no_iat", "nan_iat", "huge_iat",
              "bad_public_key", "ath", "no_ath", "non_ascii_ath"]


@pytest.mark.parametrize("case", BAD_PROOFS)
async def test_a_bad_proof_is_401_invalid_dpop_proof(case: str) -> None:
    async with oauth_setup(dpop=DPoP()) as s:
        holder = Holder()
        token = bound_token(s, holder)
        proofs, description = _bad_proofs(holder, s.srv.url, token)[case]
        assert_refused(await call(s.srv, f"DPoP {token}", proofs), 401,
                       challenge(s.srv, "invalid_dpop_proof", description),
                       f"Unauthorized: {description}")
        assert len(dpop_of(s).replays) == 0
        refusals = s.srv.transport.snapshot().refusals
        assert (refusals["auth_dpop"], refusals["auth_invalid"]) == (1, 0)


async def test_a_token_bound_to_another_key_or_to_none_is_refused() -> None:
    async with oauth_setup(dpop=DPoP()) as s:
        holder, thief = Holder(), Holder()
        token = bound_token(s, holder)
        description = "token is bound to another key than the DPoP proof's"
        assert_refused(await call(s.srv, f"DPoP {token}", [thief.proof(s.srv.url, token)]),
                       401, challenge(s.srv, "invalid_token", description),
                       f"Unauthorized: {description}")
        odd = bound_token(s, holder, cnf={"jkt": "\u00e9t\u00e9"})
        description = "token is bound to another key than the DPoP proof's"
        assert_refused(await call(s.srv, f"DPoP {odd}", [holder.proof(s.srv.url, odd)]),
                       401, challenge(s.srv, "invalid_token", description),
                       f"Unauthorized: {description}")
        plain = mint(s.authz, s.srv.url)
        description = "token is not DPoP-bound (it has no cnf.jkt)"
        assert_refused(await call(s.srv, f"DPoP {plain}", [holder.proof(s.srv.url, plain)]),
                       401, challenge(s.srv, "invalid_token", description),
                       f"Unauthorized: {description}")
        expired = bound_token(s, holder, exp=1_000_000_000, iat=999_999_000)
        assert_refused(await call(s.srv, f"DPoP {expired}",
                                  [holder.proof(s.srv.url, expired)]),
                       401, challenge(s.srv, "invalid_token", "token expired"),
                       "Unauthorized: token expired")
        assert len(dpop_of(s).replays) == 0
        assert s.srv.transport.snapshot().refusals["auth_invalid"] == 4


async def test_a_replayed_proof_is_refused() -> None:
    async with oauth_setup(dpop=DPoP()) as s:
        holder = Holder()
        token = bound_token(s, holder)
        proof = holder.proof(s.srv.url, token)
        assert (await call(s.srv, f"DPoP {token}", [proof])).status == 200
        description = "DPoP proof was already used (jti replayed)"
        assert_refused(await call(s.srv, f"DPoP {token}", [proof]), 401,
                       challenge(s.srv, "invalid_dpop_proof", description),
                       f"Unauthorized: {description}")
        # the same jti from another key is another proof
        other = Holder()
        other_token = bound_token(s, other)
        jti = json.loads(base64.urlsafe_b64decode(proof.split(".")[1] + "==="))["jti"]
        assert (await call(s.srv, f"DPoP {other_token}",
                           [other.proof(s.srv.url, other_token, jti=jti)])).status == 200


async def test_the_replay_cache_is_bounded_in_size_and_time() -> None:
    now = [time.time()]
    dpop = DPoP(replay_cache_size=3, replay_cache_per_caller=3, iat_window=60, leeway=5,
                clock=lambda: now[0])
    async with oauth_setup(dpop=dpop) as s:
        holder = Holder()
        token = bound_token(s, holder)
        for _ in range(3):  # at the bound: accepted
            proof = holder.proof(s.srv.url, token, iat=now[0])
            assert (await call(s.srv, f"DPoP {token}", [proof])).status == 200
        assert len(dpop.replays) == 3
        description = "too many recent DPoP proofs: retry shortly"
        over = holder.proof(s.srv.url, token, iat=now[0])
        assert_refused(await call(s.srv, f"DPoP {token}", [over]), 401,
                       challenge(s.srv, "invalid_dpop_proof", description),
                       f"Unauthorized: {description}")
        assert s.srv.transport.snapshot().refusals["dpop_replay_cache_size"] == 1
        now[0] += 69.9  # still inside every remembered proof's window (60 + 2 * 5 s)
        later = holder.proof(s.srv.url, token, iat=now[0])
        assert (await call(s.srv, f"DPoP {token}", [later])).status == 401
        now[0] += 0.2  # the first three are out of their window: forgotten
        assert (await call(s.srv, f"DPoP {token}", [later])).status == 200
        assert len(dpop.replays) == 1


async def test_the_proof_size_is_bounded_exactly() -> None:
    dpop = DPoP()
    async with oauth_setup(dpop=dpop) as s:
        holder = Holder()
        token = bound_token(s, holder)
        at = holder.proof(s.srv.url, token, jti="a" * 40)
        dpop.max_proof_bytes = len(at)
        assert (await call(s.srv, f"DPoP {token}", [at])).status == 200
        over = holder.proof(s.srv.url, token, jti="b" * 41)
        assert len(over) > len(at)
        description = f"DPoP proof exceeds {len(at)} bytes"
        assert_refused(await call(s.srv, f"DPoP {token}", [over]), 401,
                       challenge(s.srv, "invalid_dpop_proof", description),
                       f"Unauthorized: {description}")
        assert s.srv.transport.snapshot().refusals["dpop_max_proof_bytes"] == 1


async def test_server_nonces_are_required_when_configured() -> None:
    now = [time.time()]
    dpop = DPoP(nonces=True, nonce_lifetime=100, clock=lambda: now[0])
    async with oauth_setup(dpop=dpop) as s:
        holder = Holder()
        token = bound_token(s, holder)
        description = "DPoP proof needs the server's nonce (see DPoP-Nonce)"
        first = await call(s.srv, f"DPoP {token}", [holder.proof(s.srv.url, token, iat=now[0])])
        assert_refused(first, 401, challenge(s.srv, "use_dpop_nonce", description),
                       f"Unauthorized: {description}")
        nonce = first.headers["Dpop-Nonce"]
        ok = await call(s.srv, f"DPoP {token}",
                        [holder.proof(s.srv.url, token, iat=now[0], nonce=nonce)])
        assert ok.status == 200 and ok.headers["Dpop-Nonce"] == nonce
        for fake in ("abc", "\u00e9t\u00e9", 42):
            made_up = await call(s.srv, f"DPoP {token}",
                                 [holder.proof(s.srv.url, token, iat=now[0], nonce=fake)])
            assert made_up.status == 401 and 'error="use_dpop_nonce"' in \
                made_up.headers["Www-Authenticate"]
        now[0] += 100  # the next nonce is handed out; the previous one stays good
        renewed = await call(s.srv, f"DPoP {token}",
                             [holder.proof(s.srv.url, token, iat=now[0], nonce=nonce)])
        assert renewed.status == 200 and renewed.headers["Dpop-Nonce"] != nonce
        now[0] += 100  # two lifetimes on: the first nonce is no longer good
        stale = await call(s.srv, f"DPoP {token}",
                           [holder.proof(s.srv.url, token, iat=now[0], nonce=nonce)])
        assert stale.status == 401 and stale.headers["Dpop-Nonce"] not in (nonce, None)
        # two proofs were accepted, 200 s apart: the first is out of its 70 s window
        assert len(dpop.replays) == 1


async def test_htu_is_checked_against_the_configured_resource_url() -> None:
    public = "https://mcp.example.test/mcp"
    async with oauth_setup(dpop=DPoP(), resource=public) as s:
        holder = Holder()
        token = bound_token(s, holder, aud=public)
        # the request reached 127.0.0.1, but the public URL is what the client used
        assert (await call(s.srv, f"DPoP {token}", [holder.proof(public, token)])).status == 200
        r = await call(s.srv, f"DPoP {token}", [holder.proof(s.srv.url, token)])
        assert r.status == 401 and "htu does not match" in r.headers["Www-Authenticate"]


async def test_a_bound_token_lacking_a_scope_is_403_in_the_dpop_challenge() -> None:
    async with oauth_setup(dpop=DPoP()) as s:
        holder = Holder()
        token = bound_token(s, holder)
        description = f"insufficient scope: requires {ADMIN}"
        assert_refused(await call(s.srv, f"DPoP {token}", [holder.proof(s.srv.url, token)],
                                  name="admin_only"), 403,
                       challenge(s.srv, "insufficient_scope", description, scope=ADMIN),
                       f"Forbidden: {description}", request_id=1)


def test_only_asymmetric_proof_algorithms_can_be_configured() -> None:
    for algs in (["HS256"], ["none"], ["ES256", "HS512"], []):
        with pytest.raises(ValueError, match="asymmetric"):
            DPoP(algorithms=algs)
    with pytest.raises(ValueError):
        DPoP(replay_cache_size=0)


def test_urls_are_compared_without_query_fragment_default_port_or_case() -> None:
    assert normalise_url("HTTPS://MCP.Example:443/mcp?x=1#f") == "https://mcp.example/mcp"
    assert normalise_url("http://[::1]:80") == "http://[::1]/"
    assert normalise_url("http://h:8080/a/") == "http://h:8080/a/"
    with pytest.raises(ValueError):
        normalise_url("ftp://h/x")


async def test_a_legacy_session_needs_a_fresh_proof_for_each_method() -> None:
    async with oauth_setup(dpop=DPoP()) as s:
        holder = Holder()
        token = bound_token(s, holder)

        def headers(method: str, sid: str | None = None) -> HTTPHeaders:
            h = HTTPHeaders({"Content-Type": "application/json",
                             "Accept": "application/json, text/event-stream",
                             "Authorization": f"DPoP {token}",
                             "DPoP": holder.proof(s.srv.url, token, htm=method)})
            if sid is not None:
                h.add("Mcp-Session-Id", sid)
                h.add("MCP-Protocol-Version", LEGACY)
            return h

        init = await s.srv.request("POST", json.dumps(init_msg(request_id=1)).encode(),
                                   headers("POST"))  # type: ignore[arg-type]
        assert init.status == 200, init.body
        sid = init.headers["Mcp-Session-Id"]
        # a proof made for POST does not open the GET stream
        wrong = headers("POST", sid)
        wrong.add("Accept", "text/event-stream")
        refused = await s.srv.request("GET", None, wrong)  # type: ignore[arg-type]
        assert refused.status == 401
        assert "htm does not match" in refused.headers["Www-Authenticate"]
        assert s.srv.transport.snapshot().totals.sessions == 1
        deleted = await s.srv.request("DELETE", None,
                                      headers("DELETE", sid))  # type: ignore[arg-type]
        assert deleted.status in (200, 204), deleted.body
        assert s.srv.transport.snapshot().totals.sessions == 0
