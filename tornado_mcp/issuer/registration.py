"""Client metadata: what a client may register (RFC 7591) or describe in a Client ID
Metadata Document, checked against authlib's RFC 7591 claims, the server's bounds and
the host's :class:`~tornado_mcp.issuer.policy.Policy`.

The bounds are live options (``docs/limits.md``): ``oauth_max_client_metadata_bytes``
(the JSON document, in bytes, checked before it is parsed) and ``oauth_max_redirect_uris``.
Redirect URIs the policy refuses are left out of what is registered (the answer lists
what was kept: RFC 7591 §3.2.1 lets the server replace requested values); a client left
with none is refused ``invalid_redirect_uri``.
"""

from __future__ import annotations

import json
from typing import Any

from authlib.oauth2.rfc7591 import ClientMetadataClaims
from joserfc.errors import JoseError

from ..protocol import Refusal
from .policy import Policy

#: The grant types, response types and token endpoint authentication methods offered.
GRANT_TYPES = ("authorization_code", "refresh_token")
RESPONSE_TYPES = ("code",)
AUTH_METHODS = ("none", "client_secret_post", "client_secret_basic")
#: The longest ``client_name`` kept (it is shown on the consent page).
MAX_CLIENT_NAME = 200


class MetadataError(Exception):
    """Client metadata refused: ``error`` is the RFC 7591 §3.2.2 code, ``description``
    a sentence for the client, ``refusal`` the bound it crossed (if one)."""

    def __init__(self, error: str, description: str, refusal: Refusal | None = None) -> None:
        super().__init__(description)
        self.error = error
        self.description = description
        self.refusal = refusal


def parse(body: bytes, max_bytes: int) -> dict[str, Any]:
    """``body`` as a JSON object, refused over ``max_bytes`` before it is parsed."""
    if len(body) > max_bytes:
        raise MetadataError("invalid_client_metadata",
                            f"client metadata exceeds {max_bytes} bytes",
                            Refusal.OAUTH_MAX_CLIENT_METADATA_BYTES)
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise MetadataError("invalid_client_metadata",
                            "client metadata is not a JSON document") from None
    if not isinstance(data, dict):
        raise MetadataError("invalid_client_metadata", "client metadata must be a JSON object")
    return data


def validate(data: dict[str, Any], policy: Policy, max_redirect_uris: int,
             *, public_only: bool = False) -> dict[str, Any]:
    """The metadata to keep for ``data``, or :class:`MetadataError`.

    ``public_only``: the client may not have a secret (a metadata document's client)."""
    uris = data.get("redirect_uris")
    if not isinstance(uris, list) or not uris or not all(isinstance(u, str) for u in uris):
        raise MetadataError("invalid_redirect_uri",
                            "redirect_uris must be a non-empty list of URIs")
    if len(uris) > max_redirect_uris:
        raise MetadataError("invalid_redirect_uri",
                            f"a client may register at most {max_redirect_uris} redirect URIs",
                            Refusal.OAUTH_MAX_REDIRECT_URIS)
    kept = [u for u in dict.fromkeys(uris) if policy.redirect_refusal(u) is None]
    if not kept:
        raise MetadataError("invalid_redirect_uri", str(policy.redirect_refusal(uris[0])))
    claims_in = {k: v for k, v in data.items() if k in ClientMetadataClaims.REGISTERED_CLAIMS
                 and k not in ("jwks", "jwks_uri", "software_statement")}
    claims_in["redirect_uris"] = kept
    claims_in.setdefault("grant_types", ["authorization_code"])
    claims_in.setdefault("response_types", ["code"])
    if public_only:
        claims_in.setdefault("token_endpoint_auth_method", "none")
    claims = ClientMetadataClaims(claims_in, {})
    try:
        claims.validate()
    except JoseError as exc:
        raise MetadataError("invalid_client_metadata",
                            str(exc.description or exc.error)) from None
    except (TypeError, ValueError, AttributeError):
        raise MetadataError("invalid_client_metadata", "client metadata is malformed") from None
    meta: dict[str, Any] = dict(claims.get_registered_claims())
    _check_lists(meta)
    method = meta.get("token_endpoint_auth_method")
    if method not in AUTH_METHODS or (public_only and method != "none"):
        allowed = ("none",) if public_only else AUTH_METHODS
        raise MetadataError("invalid_client_metadata",
                            "token_endpoint_auth_method must be one of " + ", ".join(allowed))
    name = meta.get("client_name")
    if name is not None:
        if not isinstance(name, str):
            raise MetadataError("invalid_client_metadata", "client_name must be a string")
        meta["client_name"] = name[:MAX_CLIENT_NAME]
    return meta


def _check_lists(meta: dict[str, Any]) -> None:
    for field, offered in (("grant_types", GRANT_TYPES), ("response_types", RESPONSE_TYPES)):
        value = meta.get(field)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise MetadataError("invalid_client_metadata", f"{field} must be a list of strings")
        unknown = [v for v in value if v not in offered]
        if unknown:
            raise MetadataError("invalid_client_metadata",
                                f"{field} may hold only " + ", ".join(offered))
    if "authorization_code" not in meta["grant_types"]:
        raise MetadataError("invalid_client_metadata",
                            "grant_types must include authorization_code")
