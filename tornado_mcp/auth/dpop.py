"""DPoP: access tokens bound to a key the client proves it holds (RFC 9449).

A DPoP-bound access token carries ``cnf.jkt``, the RFC 7638 thumbprint of the client's
public key.  With each request the client sends ``Authorization: DPoP <token>`` and a
``DPoP`` header: a short-lived JWT (the *proof*) signed with that key, naming the request's
method (``htm``) and URL (``htu``), when it was made (``iat``), a unique id (``jti``) and the
hash of the token (``ath``).  A stolen token is useless without the private key, and a
captured proof is useless for another request, another URL, later, or a second time.

:class:`DPoP` holds the settings and checks a proof (:meth:`DPoP.check_proof`); the
request-level flow (token, binding, replay, challenge) is :mod:`.dpop_gate`.  Signatures
are verified by PyJWT (the ``oauth`` extra), with the public key the proof's header
carries.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import math
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..protocol import Refusal
from ..protocol.auth_errors import AuthError

#: The request header carrying the proof, and the one carrying a server nonce.
HEADER_DPOP = "DPoP"
HEADER_DPOP_NONCE = "DPoP-Nonce"
#: The proof's ``typ`` (RFC 9449 §4.2).
PROOF_TYPE = "dpop+jwt"
#: Proof signature algorithms accepted unless told otherwise: asymmetric only.
DEFAULT_DPOP_ALGORITHMS = ("ES256", "ES384", "ES512", "RS256", "RS384", "RS512",
                           "PS256", "PS384", "PS512", "EdDSA")
_ASYMMETRIC = frozenset(DEFAULT_DPOP_ALGORITHMS)
#: JWK members that only a private (or symmetric) key has.
_PRIVATE_MEMBERS = frozenset({"d", "p", "q", "dp", "dq", "qi", "oth", "k"})
#: The members of each public key type that its RFC 7638 thumbprint hashes.
_THUMBPRINT_MEMBERS = {"RSA": ("e", "kty", "n"), "EC": ("crv", "kty", "x", "y"),
                       "OKP": ("crv", "kty", "x")}
_DEFAULT_PORTS = {"http": 80, "https": 443}
#: The longest ``jti`` accepted (RFC 9449 suggests 96 bits of randomness: 16 characters).
MAX_JTI_CHARS = 256


class DPoPError(AuthError):
    """A refusal answered in the ``DPoP`` challenge: ``invalid_dpop_proof`` (the proof is
    wrong), ``use_dpop_nonce`` (retry with the server's nonce), or ``invalid_token`` (the
    token sent with the DPoP scheme is wrong or not bound to the proof's key)."""

    def __init__(self, description: str, code: str = "invalid_dpop_proof",
                 kind: Refusal = Refusal.AUTH_DPOP) -> None:
        super().__init__(kind, description)
        self.code = code

    @property
    def error(self) -> str | None:
        return self.code


def same_text(a: str, b: str) -> bool:
    """``a == b`` in constant time, for any text (``compare_digest`` refuses non-ASCII str)."""
    return hmac.compare_digest(a.encode("utf-8", "surrogatepass"),
                               b.encode("utf-8", "surrogatepass"))


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def token_hash(token: str) -> str:
    """The ``ath`` a proof must carry for ``token``: base64url(SHA-256(token))."""
    return b64url(hashlib.sha256(token.encode("ascii")).digest())


def thumbprint(jwk: Mapping[str, Any]) -> str:
    """The RFC 7638 SHA-256 thumbprint of a public JWK (what ``cnf.jkt`` holds).

    Raises :class:`ValueError` for a key type DPoP cannot use or a missing member."""
    members = _THUMBPRINT_MEMBERS.get(str(jwk.get("kty")))
    if members is None:
        raise ValueError("unsupported key type")
    values = {name: jwk.get(name) for name in members}
    if not all(isinstance(v, str) and v for v in values.values()):
        raise ValueError("incomplete key")
    canonical = json.dumps(values, sort_keys=True, separators=(",", ":"))
    return b64url(hashlib.sha256(canonical.encode("utf-8")).digest())


def normalise_url(url: str) -> str:
    """``url`` compared as RFC 9449 §4.3 says: no query or fragment, scheme and host in
    lower case, no default port, an empty path as ``/``.  Raises :class:`ValueError`."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = parts.hostname
    if scheme not in _DEFAULT_PORTS or not host:
        raise ValueError("not an http(s) URL")
    port = parts.port
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port is None or port == _DEFAULT_PORTS[scheme] else f"{host}:{port}"
    return f"{scheme}://{netloc}{parts.path or '/'}"


@dataclass(frozen=True)
class Proof:
    """What a proof that checked out says: the key's thumbprint and the proof's ``jti``."""

    jkt: str
    jti: str


class ReplayCache:
    """The ``jti`` of every proof accepted in the last ``ttl`` seconds, at most ``size`` of
    them.  Only a digest of key and ``jti`` is kept.  When the cache is full of proofs still
    inside their window, a new proof is refused (``dpop_replay_cache_size``) rather than one
    forgotten: forgetting would let that proof be replayed."""

    def __init__(self, size: int, ttl: float, clock: Callable[[], float]) -> None:
        if size < 1:
            raise ValueError("replay_cache_size must be at least 1")
        self.size = size
        self.ttl = ttl
        self._clock = clock
        self._seen: OrderedDict[bytes, float] = OrderedDict()  # digest -> expiry

    def __len__(self) -> int:
        return len(self._seen)

    def _expire(self, now: float) -> None:
        while self._seen:
            digest, expiry = next(iter(self._seen.items()))
            if expiry > now:
                break
            del self._seen[digest]

    def record(self, jkt: str, jti: str) -> None:
        """Remember the proof, or raise :class:`DPoPError` if it was seen already (or the
        cache is full)."""
        now = self._clock()
        self._expire(now)
        digest = hashlib.sha256(f"{jkt}\0{jti}".encode()).digest()
        if digest in self._seen:
            raise DPoPError("DPoP proof was already used (jti replayed)")
        if len(self._seen) >= self.size:
            raise DPoPError("too many recent DPoP proofs: retry shortly",
                            kind=Refusal.DPOP_REPLAY_CACHE_SIZE)
        self._seen[digest] = now + self.ttl


class DPoP:
    """DPoP settings of an :class:`~tornado_mcp.auth.OAuthResource` (``dpop=DPoP()``).

    ``algorithms``: proof signature algorithms accepted (asymmetric only).  ``required``:
    only DPoP-bound tokens are accepted (a plain ``Bearer`` token is refused, and the
    metadata says ``dpop_bound_access_tokens_required``).  ``iat_window``: how old a proof
    may be, in seconds; ``leeway``: clock skew allowed either way.  ``replay_cache_size``:
    proofs remembered to refuse a replay (each for ``iat_window + 2 * leeway`` seconds).
    ``max_proof_bytes``: the longest ``DPoP`` header.  ``nonces``: proofs must carry a
    server nonce (``use_dpop_nonce``); nonces change every ``nonce_lifetime`` seconds (the
    previous one stays good) and are derived from ``nonce_secret`` (random by default;
    give every process of a deployment the same one).  ``clock``: wall-clock time.
    """

    def __init__(self, *, algorithms: Iterable[str] = DEFAULT_DPOP_ALGORITHMS,
                 required: bool = False, iat_window: float = 60.0, leeway: float = 5.0,
                 replay_cache_size: int = 10_000, max_proof_bytes: int = 8192,
                 nonces: bool = False, nonce_lifetime: float = 300.0,
                 nonce_secret: bytes | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        algs = tuple(algorithms)
        bad = sorted(a for a in algs if a not in _ASYMMETRIC)
        if bad or not algs:
            raise ValueError(f"DPoP algorithms must be asymmetric, not {bad or 'nothing'}")
        if iat_window <= 0 or leeway < 0 or max_proof_bytes < 1 or nonce_lifetime <= 0:
            raise ValueError("iat_window, max_proof_bytes and nonce_lifetime must be "
                             "positive, leeway not negative")
        self.algorithms = algs
        self.required = required
        self.iat_window = iat_window
        self.leeway = leeway
        self.max_proof_bytes = max_proof_bytes
        self.nonces = nonces
        self.nonce_lifetime = nonce_lifetime
        self._nonce_key = nonce_secret or secrets.token_bytes(32)
        self.clock = clock
        self.replays = ReplayCache(replay_cache_size, iat_window + 2 * leeway, clock)

    def __repr__(self) -> str:  # never show the nonce secret
        return f"DPoP(algorithms={self.algorithms!r}, required={self.required!r})"

    def metadata(self) -> dict[str, Any]:
        """What the RFC 9728 document says about DPoP."""
        doc: dict[str, Any] = {"dpop_signing_alg_values_supported": list(self.algorithms)}
        if self.required:
            doc["dpop_bound_access_tokens_required"] = True
        return doc

    # -- nonces (RFC 9449 §9) ---------------------------------------------------------------
    def nonce(self) -> str:
        """The server nonce to hand out now."""
        return self._nonce_for(int(self.clock() // self.nonce_lifetime))

    def _nonce_for(self, epoch: int) -> str:
        stamp = epoch.to_bytes(8, "big", signed=True)
        mac = hmac.new(self._nonce_key, stamp, hashlib.sha256).digest()[:16]
        return b64url(stamp + mac)

    def nonce_ok(self, value: object) -> bool:
        if not isinstance(value, str) or len(value) > 64:
            return False
        epoch = int(self.clock() // self.nonce_lifetime)
        return any(same_text(value, self._nonce_for(e)) for e in (epoch, epoch - 1))

    # -- the proof (RFC 9449 §4.3) ----------------------------------------------------------
    def check_proof(self, values: list[str], method: str, url: str, token: str) -> Proof:
        """Check the ``DPoP`` header ``values`` of a ``method`` request to ``url`` (already
        normalised) presenting ``token``.  Raises :class:`DPoPError`; records nothing."""
        import jwt  # the oauth extra

        if not values:
            raise DPoPError("DPoP proof missing (send a DPoP header)")
        if len(values) > 1:
            raise DPoPError("more than one DPoP header")
        proof = values[0].strip()
        if len(proof) > self.max_proof_bytes:
            raise DPoPError(f"DPoP proof exceeds {self.max_proof_bytes} bytes",
                            kind=Refusal.DPOP_MAX_PROOF_BYTES)
        try:
            header = jwt.get_unverified_header(proof)
        except jwt.PyJWTError:
            raise DPoPError("malformed DPoP proof") from None
        typ = header.get("typ")
        if not isinstance(typ, str) or typ.lower() != PROOF_TYPE:
            raise DPoPError(f"DPoP proof typ must be {PROOF_TYPE}")
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self.algorithms:
            raise DPoPError("DPoP proof algorithm not allowed")
        jwk = header.get("jwk")
        if not isinstance(jwk, dict):
            raise DPoPError("DPoP proof has no jwk header")
        if _PRIVATE_MEMBERS & jwk.keys():
            raise DPoPError("DPoP proof jwk holds private key material")
        try:
            jkt = thumbprint(jwk)
            key = jwt.PyJWK(jwk, algorithm=alg)
        except (ValueError, jwt.PyJWTError):
            raise DPoPError("DPoP proof jwk is not a usable public key for its alg") from None
        try:
            claims: dict[str, Any] = jwt.decode(
                proof, key, algorithms=[alg],
                options={"verify_exp": False, "verify_nbf": False, "verify_iat": False,
                         "verify_aud": False, "verify_iss": False})
        except jwt.InvalidSignatureError:
            raise DPoPError("DPoP proof signature does not verify") from None
        except jwt.PyJWTError:
            raise DPoPError("malformed DPoP proof") from None
        self._check_claims(claims, method, url, token)
        return Proof(jkt, claims["jti"])

    def _check_claims(self, claims: Mapping[str, Any], method: str, url: str,
                      token: str) -> None:
        jti = claims.get("jti")
        if not isinstance(jti, str) or not jti or len(jti) > MAX_JTI_CHARS:
            raise DPoPError(f"DPoP proof needs a jti of 1 to {MAX_JTI_CHARS} characters")
        if claims.get("htm") != method:
            raise DPoPError("DPoP proof htm does not match the request method")
        htu = claims.get("htu")
        try:
            same_url = isinstance(htu, str) and normalise_url(htu) == url
        except ValueError:
            same_url = False
        if not same_url:
            raise DPoPError("DPoP proof htu does not match the request URL")
        iat = claims.get("iat")
        if not isinstance(iat, int | float) or isinstance(iat, bool) or \
                (isinstance(iat, float) and not math.isfinite(iat)):
            raise DPoPError("DPoP proof needs a numeric iat")
        now = self.clock()
        if iat > now + self.leeway:
            raise DPoPError("DPoP proof iat is in the future")
        if iat < now - self.iat_window - self.leeway:
            raise DPoPError("DPoP proof is too old (iat)")
        ath = claims.get("ath")
        if not isinstance(ath, str) or not same_text(ath, token_hash(token)):
            raise DPoPError("DPoP proof ath does not match the access token")
        if self.nonces and not self.nonce_ok(claims.get("nonce")):
            raise DPoPError("DPoP proof needs the server's nonce (see DPoP-Nonce)",
                            code="use_dpop_nonce")
