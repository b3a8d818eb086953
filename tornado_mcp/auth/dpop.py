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

import asyncio
import base64
import binascii
import hashlib
import hmac
import json
import math
import secrets
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol
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
#: The RSA moduli a proof's key may have, in bits, and the longest public exponent: a
#: verification costs what the key makes it cost (an RSA-3072 key with a 3071-bit exponent
#: took 9-12.5 ms), so a key outside these is refused before anything is verified.
MIN_RSA_BITS = 2048
MAX_RSA_BITS = 4096
MAX_RSA_EXPONENT_BITS = 32
#: The curve each algorithm's key must be on, and the length of its coordinates in bytes.
_CURVES = {"ES256": ("P-256", 32), "ES384": ("P-384", 48), "ES512": ("P-521", 66)}
_EDWARDS = {"Ed25519": 32, "Ed448": 57}
#: Threads verifying proofs off the IOLoop, per :class:`DPoP`.
VERIFY_THREADS = 2


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


def _b64_int_bytes(value: object) -> bytes:
    if not isinstance(value, str) or len(value) > 4 * MAX_RSA_BITS // 24 + 4:
        raise ValueError("key member too long")
    return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))


def check_key_bounds(jwk: Mapping[str, Any], alg: str) -> None:
    """Refuse (:class:`ValueError`) a proof key whose verification would cost more than
    a sane key's: RSA outside :data:`MIN_RSA_BITS`..:data:`MAX_RSA_BITS` or with an
    exponent that is even, below 3 or over :data:`MAX_RSA_EXPONENT_BITS` bits; an EC key
    off its algorithm's curve or with coordinates of the wrong length; an OKP key not on
    Ed25519 or Ed448.  Only lengths are looked at: nothing is computed."""
    kty = jwk.get("kty")
    if alg[:2] in ("RS", "PS"):
        if kty != "RSA":
            raise ValueError("not an RSA key")
        n = _b64_int_bytes(jwk.get("n")).lstrip(b"\0")
        e = _b64_int_bytes(jwk.get("e")).lstrip(b"\0")
        bits = len(n) * 8 - (8 - n[0].bit_length()) if n else 0
        if not MIN_RSA_BITS <= bits <= MAX_RSA_BITS:
            raise ValueError(f"RSA key of {bits} bits")
        exponent = int.from_bytes(e, "big") if len(e) <= MAX_RSA_EXPONENT_BITS // 8 else 0
        if exponent < 3 or exponent % 2 == 0:
            raise ValueError("RSA exponent out of bounds")
    elif alg in _CURVES:
        crv, size = _CURVES[alg]
        if kty != "EC" or jwk.get("crv") != crv:
            raise ValueError("EC key not on the algorithm's curve")
        for member in ("x", "y"):
            if len(_b64_int_bytes(jwk.get(member))) != size:
                raise ValueError("EC coordinate of the wrong length")
    elif alg == "EdDSA":
        length = _EDWARDS.get(str(jwk.get("crv")))
        if kty != "OKP" or length is None or len(_b64_int_bytes(jwk.get("x"))) != length:
            raise ValueError("not an Ed25519 or Ed448 key")


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
    """The proofs accepted in the last ``ttl`` seconds, kept apart per caller: at most
    ``per_caller`` for one caller and ``size`` in all.  Only a digest of key and ``jti``
    is kept.  A caller whose share is full of proofs still inside their window has its new
    proofs refused (``dpop_replay_cache_size``) rather than one forgotten (forgetting would
    let that proof be replayed), and no other caller is touched by it: one caller (however
    many proofs it sends, and however many of its requests the rate limit then refuses)
    holds at most its share.  ``size`` bounds the memory of all of them together."""

    def __init__(self, size: int, ttl: float, clock: Callable[[], float],
                 per_caller: int | None = None) -> None:
        if size < 1 or (per_caller is not None and per_caller < 1):
            raise ValueError("replay_cache_size and replay_cache_per_caller must be at "
                             "least 1")
        self.size = size
        self.per_caller = min(size, per_caller) if per_caller is not None else size
        self.ttl = ttl
        self._clock = clock
        self._callers: dict[str, dict[bytes, float]] = {}  # caller -> digest -> expiry
        self._order: deque[tuple[float, str, bytes]] = deque()  # oldest first
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def held_by(self, caller: str) -> int:
        """The proofs ``caller`` holds a place for now."""
        self._expire(self._clock())
        return len(self._callers.get(caller, ()))

    def _expire(self, now: float) -> None:
        order = self._order
        while order and order[0][0] <= now:
            _, caller, digest = order.popleft()
            mine = self._callers.get(caller)
            if mine is not None and mine.pop(digest, None) is not None:
                self._count -= 1
                if not mine:
                    del self._callers[caller]

    def check(self, caller: str, jkt: str, jti: str) -> bytes:
        """The proof's digest; :class:`DPoPError` when it was seen already or ``caller``'s
        share (or the whole cache) is full."""
        self._expire(self._clock())
        digest = proof_digest(jkt, jti)
        mine = self._callers.get(caller)
        if mine is not None and digest in mine:
            raise DPoPError("DPoP proof was already used (jti replayed)")
        if (mine is not None and len(mine) >= self.per_caller) or self._count >= self.size:
            raise DPoPError("too many recent DPoP proofs: retry shortly",
                            kind=Refusal.DPOP_REPLAY_CACHE_SIZE)
        return digest

    def record(self, caller: str, jkt: str, jti: str) -> None:
        """Remember the proof for ``caller``, or raise :class:`DPoPError` if it was seen
        already (or there is no place for it)."""
        digest = self.check(caller, jkt, jti)
        expiry = self._clock() + self.ttl
        self._callers.setdefault(caller, {})[digest] = expiry
        self._order.append((expiry, caller, digest))
        self._count += 1


def proof_digest(jkt: str, jti: str) -> bytes:
    """What a replay cache keeps of a proof: SHA-256 of its key's thumbprint and ``jti``."""
    return hashlib.sha256(f"{jkt}\0{jti}".encode()).digest()


class SharedReplays(Protocol):
    """A replay cache shared by the processes of a cluster (set by the cluster on
    :attr:`DPoP.shared`): :meth:`record` answers ``None`` when recorded, else the refusal;
    it raises ``ConnectionError`` (or ``OSError``) when it cannot be reached, and the
    process's own cache is used meanwhile.  A Protocol because the cluster is a layer
    above this one."""

    async def record(self, caller: str, digest: bytes, ttl: float,
                     per_caller: int) -> DPoPError | None: ...


class DPoP:
    """DPoP settings of an :class:`~tornado_mcp.auth.OAuthResource` (``dpop=DPoP()``).

    ``algorithms``: proof signature algorithms accepted (asymmetric only).  ``required``:
    only DPoP-bound tokens are accepted (a plain ``Bearer`` token is refused, and the
    metadata says ``dpop_bound_access_tokens_required``).  ``iat_window``: how old a proof
    may be, in seconds; ``leeway``: clock skew allowed either way.  ``replay_cache_size``:
    proofs remembered to refuse a replay (each for ``iat_window + 2 * leeway`` seconds).
    ``replay_cache_per_caller``: the most of them one caller holds (1,000: over 14
    requests a second for a whole window; at most the cache's size).
    ``max_proof_bytes``: the longest ``DPoP`` header.  ``nonces``: proofs must carry a
    server nonce (``use_dpop_nonce``); nonces change every ``nonce_lifetime`` seconds (the
    previous one stays good) and are derived from ``nonce_secret`` (random by default;
    give every process of a deployment the same one).  ``clock``: wall-clock time.
    """

    def __init__(self, *, algorithms: Iterable[str] = DEFAULT_DPOP_ALGORITHMS,
                 required: bool = False, iat_window: float = 60.0, leeway: float = 5.0,
                 replay_cache_size: int = 100_000,
                 replay_cache_per_caller: int = 1000, max_proof_bytes: int = 8192,
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
        self.replays = ReplayCache(replay_cache_size, iat_window + 2 * leeway, clock,
                                   replay_cache_per_caller)
        self._pool: ThreadPoolExecutor | None = None
        #: The cluster's replay cache (every process refuses a proof any of them took).
        self.shared: SharedReplays | None = None
        #: Proofs checked against this process's own cache because the shared one could
        #: not be reached (a cluster exports it as
        #: ``tornado_mcp_cluster_fallbacks_total{kind="dpop_replay"}``).
        self.fallbacks = 0

    async def record(self, caller: str, proof: Proof) -> None:
        """Take ``proof``'s place among ``caller``'s recent proofs (the cluster's when
        shared); :class:`DPoPError` for a replay or a full share."""
        replays = self.replays
        shared = self.shared
        if shared is not None:
            digest = replays.check(caller, proof.jkt, proof.jti)
            try:
                refused = await shared.record(caller, digest, replays.ttl,
                                              replays.per_caller)
            except (ConnectionError, OSError, TimeoutError):
                self.fallbacks += 1
            else:
                if refused is not None:
                    raise refused
        replays.record(caller, proof.jkt, proof.jti)

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
    async def verify_proof(self, values: list[str], method: str, url: str,
                           token: str) -> Proof:
        """:meth:`check_proof` on one of this resource's :data:`VERIFY_THREADS` threads,
        never on the IOLoop (a signature check costs up to a millisecond or so, which
        requests that carry no proof must not wait for)."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(VERIFY_THREADS, thread_name_prefix="dpop-verify")
        return await asyncio.get_running_loop().run_in_executor(
            self._pool, self.check_proof, values, method, url, token)

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
            check_key_bounds(jwk, alg)
        except (ValueError, TypeError, binascii.Error):
            raise DPoPError("DPoP proof jwk is outside the accepted key sizes "
                            "(RSA 2048-4096 bits with an exponent of at most 32 bits, "
                            "EC on its algorithm's curve, Ed25519 or Ed448)") from None
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
