"""DPoP at the door: a request with ``Authorization: DPoP <token>`` and a ``DPoP`` proof.

The order (RFC 9449 §7.1): the proof is checked first (no token verification is spent on a
bad proof), then the token (by the resource's verifier, as a bearer token would be), then
the binding (the token's ``cnf.jkt`` is the proof key's thumbprint), and last the proof's
``jti`` is recorded, in the share of the token's caller, so only a proof that would have
been accepted takes a place in the replay cache, and only its own caller's place.  The
proof is checked on a thread of its own (:meth:`DPoP.verify_proof`), its key's size
bounded first.  A DPoP-bound token sent as a plain ``Bearer`` token is refused: whoever
holds it without the key is exactly who DPoP keeps out.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from ..protocol import HEADER_AUTHORIZATION
from ..protocol.auth_errors import AuthError, invalid
from ..protocol.identity import Principal
from .dpop import HEADER_DPOP, DPoP, DPoPError, normalise_url, same_text

log = logging.getLogger("tornado_mcp.auth")

#: The authorization scheme of a DPoP-bound token (RFC 9449 §7.1).
SCHEME = "DPoP"


def bound_key(principal: Principal) -> str | None:
    """The key thumbprint a verified token is bound to (``cnf.jkt``), if any."""
    cnf = principal.claims.get("cnf")
    jkt = cnf.get("jkt") if isinstance(cnf, Mapping) else None
    return jkt if isinstance(jkt, str) and jkt else None


def check_bearer(dpop: DPoP | None, principal: Principal) -> None:
    """Refuse a token sent as ``Bearer`` that is DPoP-bound, or any when ``dpop`` requires
    DPoP."""
    if bound_key(principal) is not None:
        raise invalid("DPoP-bound token presented as a Bearer token "
                      "(send Authorization: DPoP with a proof)")
    if dpop is not None and dpop.required:
        raise invalid("this resource requires DPoP-bound tokens (Authorization: DPoP)")


def request_url(resource: str | None, request: Any) -> str:
    """The URL a proof's ``htu`` must name: the configured ``resource``'s scheme and host
    (a request's ``Host`` only for a caller without one) and the request path."""
    if resource is not None:
        parts = urlsplit(resource)
        base = f"{parts.scheme}://{parts.netloc}"
    else:
        base = f"{request.protocol}://{request.host}"
    return normalise_url(base + request.path)


async def authenticate_dpop(request: Any, resource: str | None, dpop: DPoP, token: str,
                            verify: Callable[[str], Awaitable[Principal]]) -> Principal:
    """The principal of a DPoP ``request`` (Tornado's) presenting ``token`` at the endpoint
    whose canonical URL is ``resource``, or :class:`AuthError`.  With nonces on, the caller
    answers with ``DPoP-Nonce``."""
    try:
        url = request_url(resource, request)
    except ValueError:
        raise DPoPError("the request URL cannot be matched against a DPoP proof") from None
    try:
        proof = await dpop.verify_proof(request.headers.get_list(HEADER_DPOP),
                                        request.method or "", url, token)
    except AuthError:
        raise
    except Exception as exc:  # a bug in a check is a refused proof, never a 500
        log.error("checking a DPoP proof raised %s", type(exc).__name__)
        raise DPoPError("DPoP proof could not be checked") from None
    principal = await verify(token)
    jkt = bound_key(principal)
    if jkt is None:
        raise invalid("token is not DPoP-bound (it has no cnf.jkt)")
    if not same_text(jkt, proof.jkt):
        raise invalid("token is bound to another key than the DPoP proof's")
    await dpop.record(principal.caller, proof)
    return principal


def used_dpop(request: Any) -> bool:
    """The request offered its token with the ``DPoP`` scheme."""
    values = request.headers.get_list(HEADER_AUTHORIZATION)
    return len(values) == 1 and values[0].strip().partition(" ")[0].lower() == "dpop"


def challenge(dpop: DPoP, request: Any, params: list[str], error: AuthError) -> str:
    """``WWW-Authenticate`` for a resource accepting DPoP (RFC 9449 §7.1): a ``Bearer``
    challenge (unless DPoP is required) beside a ``DPoP`` one naming the proof algorithms.
    ``params`` (``resource_metadata``, ``scope``) go in both; the error goes in the one for
    the scheme the request used (always ``DPoP`` when DPoP is required)."""
    errors = []
    if error.error is not None:
        errors = [f'error="{error.error}"', f'error_description="{_quoted(error.description)}"']
    on_dpop = dpop.required or used_dpop(request) or isinstance(error, DPoPError)
    dpop_part = (f'{SCHEME} algs="{" ".join(dpop.algorithms)}", '
                 + ", ".join([*params, *(errors if on_dpop else [])]))
    if dpop.required:
        return dpop_part
    return "Bearer " + ", ".join([*params, *([] if on_dpop else errors)]) + ", " + dpop_part


def _quoted(text: str) -> str:
    return "".join(c for c in text if 0x20 <= ord(c) < 0x7F and c not in '"\\')
