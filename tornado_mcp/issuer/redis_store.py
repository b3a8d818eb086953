"""The authorization server's store in Redis, so that every process of a cluster serves
the same clients, codes, grants and keys: any process validates a token another issued,
refreshes a grant another made, and honours a revocation another recorded.

::

    store = RedisStore("redis://10.0.0.5:6379/0", secret=os.environ["SIGNIN_SECRET"])
    signin = SignIn("https://notes.example.com", login=BaseHandler, store=store, ...)

``secret`` (at least 16 bytes, the same on every process, kept out of Redis) seals the
private signing keys before they are stored (AES-256-GCM) and signs the consent forms;
whoever reads Redis does not get the keys.  The steps that must not race are Lua scripts
(one atomic step each): admitting a client under ``oauth_max_clients``, adding an
authorization code under :data:`~tornado_mcp.issuer.store.MAX_CODES`, taking a code,
rotating a refresh token, adding a signing key after the expected one, counting a
registration.  Revocations go to a Redis stream each process reads at most every
``poll_interval`` seconds (one read shared by all its requests): a revoked grant's
tokens are refused at once by the process that revoked it, within ``poll_interval`` by
the others.  While Redis cannot be reached the authorization server answers 503
(:class:`~tornado_mcp.issuer.store.StoreUnavailable`) and the endpoint keeps verifying
tokens with the keys and the revocations it has.  Needs the ``redis`` extra.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import redis.asyncio as aioredis
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from redis.exceptions import RedisError

from .records import Client, Code, Grant, SigningKey
from .store import (
    MAX_CODES,
    MAX_GRANTS_PER_CONSENT,
    REUSED,
    ROTATED,
    UNKNOWN,
    USED_REFRESH_KEPT,
    StoreUnavailable,
    derive,
)

#: Revocations kept in the stream (approximately; each expires with its tokens anyway).
REVOCATION_STREAM_LENGTH = 10_000

# KEYS: clients, used; ARGV: id, record, max (0: none). Evicts the oldest never-used client.
_ADD_CLIENT = """
if tonumber(ARGV[3]) > 0 and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then
  local oldest, at = nil, nil
  local all = redis.call('HGETALL', KEYS[1])
  for i = 1, #all, 2 do
    if redis.call('HEXISTS', KEYS[2], all[i]) == 0 then
      local t = cjson.decode(all[i + 1])['issued_at']
      if at == nil or t < at then oldest, at = all[i], t end
    end
  end
  if oldest == nil then return 0 end
  redis.call('HDEL', KEYS[1], oldest)
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
"""
# KEYS: code, index; ARGV: key, record, expires (s), now (s), max
_ADD_CODE = """
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[4])
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5]) then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'EXAT', ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
return 1
"""
# KEYS: code, used mark, index; ARGV: key, grant id, mark ttl (ms)
_TAKE_CODE = """
if redis.call('DEL', KEYS[1]) == 0 then return 0 end
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
redis.call('ZREM', KEYS[3], ARGV[1])
return 1
"""
# KEYS: grant, grants index, consent index; ARGV: id, record, expires (s), created, kept,
# grant key prefix.  Forgets (and returns) the consent's oldest grants past ``kept``.
_ADD_GRANT = """
redis.call('SET', KEYS[1], ARGV[2], 'EXAT', ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[1])
local extra = redis.call('ZRANGE', KEYS[3], 0, -tonumber(ARGV[5]) - 1)
for _, gid in ipairs(extra) do
  redis.call('DEL', ARGV[6] .. gid)
  redis.call('ZREM', KEYS[2], gid)
  redis.call('ZREM', KEYS[3], gid)
end
return extra
"""
# KEYS: grant; ARGV: old hash, new hash, expires (s), scopes (JSON), now (s), kept
_ROTATE = """
local raw = redis.call('GET', KEYS[1])
if not raw then return 'unknown' end
local g = cjson.decode(raw)
local used = g['used'] or {}
if ARGV[2] ~= '' and g['refresh_hash'] == ARGV[1] then
  table.insert(used, ARGV[1])
  while #used > tonumber(ARGV[6]) do table.remove(used, 1) end
  g['used'] = used
  g['refresh_hash'] = ARGV[2]
  g['expires'] = tonumber(ARGV[3])
  g['scopes'] = cjson.decode(ARGV[4])
  g['refreshed'] = tonumber(ARGV[5])
  redis.call('SET', KEYS[1], cjson.encode(g), 'EXAT', ARGV[3])
  return 'rotated'
end
for _, h in ipairs(used) do if h == ARGV[1] then return 'reused' end end
return 'unknown'
"""
# KEYS: keys hash, newest; ARGV: expected ('' for none), kid, record, drops...
_ADD_KEY = """
local newest = redis.call('GET', KEYS[2]) or ''
if newest ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
for i = 4, #ARGV do redis.call('HDEL', KEYS[1], ARGV[i]) end
redis.call('SET', KEYS[2], ARGV[2])
return 1
"""
# KEYS: bucket; ARGV: window (ms)
_HIT = """
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n
"""


class RedisStore:
    """An :class:`~tornado_mcp.issuer.store.IssuerStore` in Redis (``url``, or a
    redis-py asyncio ``client``), its keys under ``prefix``."""

    def __init__(self, url: str | None = None, *, secret: bytes | str,
                 client: Any = None, prefix: str = "tornado-mcp:signin",
                 poll_interval: float = 1.0) -> None:
        raw = secret.encode() if isinstance(secret, str) else secret
        if not isinstance(raw, bytes) or len(raw) < 16:
            raise ValueError("secret must have at least 16 bytes (the same on every process)")
        if (url is None) == (client is None):
            raise ValueError("pass either url or client")
        if not poll_interval > 0:
            raise ValueError("poll_interval must be a positive number of seconds")
        self.redis: Any = client if client is not None else aioredis.from_url(
            str(url), socket_connect_timeout=2.0, socket_timeout=5.0)
        self.prefix = prefix
        self._secret = derive(raw, "authorization server")
        self._seal = AESGCM(derive(raw, "signing keys"))
        self._poll = poll_interval
        self._scripts = {name: self.redis.register_script(source) for name, source in (
            ("add_client", _ADD_CLIENT), ("add_code", _ADD_CODE), ("take_code", _TAKE_CODE),
            ("add_grant", _ADD_GRANT),
            ("rotate", _ROTATE), ("add_key", _ADD_KEY), ("hit", _HIT))}

    @property
    def secret(self) -> bytes:
        return self._secret

    @property
    def poll_interval(self) -> float:
        return self._poll

    def _k(self, *parts: str) -> str:
        return ":".join((self.prefix, *parts))

    async def _call(self, name: str, keys: list[str], args: list[Any]) -> Any:
        try:
            return await self._scripts[name](keys=keys, args=args)
        except (RedisError, OSError, TimeoutError) as exc:
            raise StoreUnavailable(type(exc).__name__) from None

    async def _do(self, command: str, *args: Any) -> Any:
        try:
            return await getattr(self.redis, command)(*args)
        except (RedisError, OSError, TimeoutError) as exc:
            raise StoreUnavailable(type(exc).__name__) from None

    # -- clients --------------------------------------------------------------------------
    async def add_client(self, client: Client, max_clients: int | None) -> bool:
        record = client.as_dict()
        record.pop("used_at", None)
        return bool(await self._call("add_client", [self._k("clients"), self._k("used")],
                                     [client.client_id, json.dumps(record), max_clients or 0]))

    async def client(self, client_id: str) -> Client | None:
        raw = await self._do("hget", self._k("clients"), client_id)
        if raw is None:
            return None
        found = Client.of(json.loads(raw))
        used = await self._do("hget", self._k("used"), client_id)
        found.used_at = int(used) if used is not None else None
        return found

    async def clients(self) -> list[Client]:
        raw = await self._do("hgetall", self._k("clients"))
        used = await self._do("hgetall", self._k("used"))
        found = []
        for cid, record in raw.items():
            client = Client.of(json.loads(record))
            when = used.get(cid)
            client.used_at = int(when) if when is not None else None
            found.append(client)
        return sorted(found, key=lambda c: c.issued_at)

    async def client_used(self, client_id: str, when: int) -> None:
        await self._do("hset", self._k("used"), client_id, str(when))

    async def remove_client(self, client_id: str) -> bool:
        await self._do("hdel", self._k("used"), client_id)
        return bool(await self._do("hdel", self._k("clients"), client_id))

    # -- codes ----------------------------------------------------------------------------
    async def add_code(self, key: str, code: Code) -> bool:
        return bool(await self._call("add_code", [self._k("code", key), self._k("codes")], [
            key, json.dumps(code.as_dict()), code.expires, int(time.time()), MAX_CODES]))

    async def code(self, key: str) -> Code | None:
        raw = await self._do("get", self._k("code", key))
        return Code.of(json.loads(raw)) if raw is not None else None

    async def take_code(self, key: str, grant_id: str, mark_ttl: float) -> bool:
        return bool(await self._call("take_code", [
            self._k("code", key), self._k("used_code", key), self._k("codes")],
            [key, grant_id, int(mark_ttl * 1000)]))

    async def code_replayed(self, key: str) -> str | None:
        raw = await self._do("get", self._k("used_code", key))
        return raw.decode() if isinstance(raw, bytes) else raw

    # -- grants ---------------------------------------------------------------------------
    async def add_grant(self, grant: Grant) -> list[str]:
        pushed = await self._call("add_grant", [
            self._k("grant", grant.grant_id), self._k("grants"),
            self._k("consent", grant.subject, grant.client_id)], [
            grant.grant_id, json.dumps(grant.as_dict()), grant.expires, grant.created,
            MAX_GRANTS_PER_CONSENT, self._k("grant", "")])
        return [g.decode() if isinstance(g, bytes) else g for g in pushed]

    async def grant(self, grant_id: str) -> Grant | None:
        raw = await self._do("get", self._k("grant", grant_id))
        return Grant.of(json.loads(raw)) if raw is not None else None

    async def grants(self) -> list[Grant]:
        ids = [i.decode() if isinstance(i, bytes) else i
               for i in await self._do("zrange", self._k("grants"), 0, -1)]
        if not ids:
            return []
        raws = await self._do("mget", [self._k("grant", i) for i in ids])
        found, gone = [], []
        for gid, raw in zip(ids, raws, strict=True):
            if raw is None:
                gone.append(gid)  # expired: forget its index entry
            else:
                found.append(Grant.of(json.loads(raw)))
        if gone:
            await self._do("zrem", self._k("grants"), *gone)
        return found

    async def rotate_refresh(self, grant_id: str, old_hash: str, new_hash: str,
                             expires: int, scopes: tuple[str, ...]) -> str:
        outcome = await self._call("rotate", [self._k("grant", grant_id)], [
            old_hash, new_hash, max(expires, int(time.time()) + 1),
            json.dumps(list(scopes)), int(time.time()), USED_REFRESH_KEPT])
        outcome = outcome.decode() if isinstance(outcome, bytes) else outcome
        return str(outcome) if outcome in (ROTATED, REUSED) else UNKNOWN

    async def revoke(self, grant_ids: list[str], until: float) -> None:
        for gid in grant_ids:
            grant = await self.grant(gid)
            try:
                async with self.redis.pipeline(transaction=True) as pipe:
                    pipe.delete(self._k("grant", gid))
                    pipe.zrem(self._k("grants"), gid)
                    if grant is not None:
                        pipe.zrem(self._k("consent", grant.subject, grant.client_id), gid)
                    pipe.xadd(self._k("revocations"), {"gid": gid, "until": str(until)},
                              maxlen=REVOCATION_STREAM_LENGTH, approximate=True)
                    await pipe.execute()
            except (RedisError, OSError, TimeoutError) as exc:
                raise StoreUnavailable(type(exc).__name__) from None

    async def revocations(self, cursor: str | None) -> tuple[dict[str, float], str | None]:
        start = f"({cursor}" if cursor else "-"
        entries = await self._do("xrange", self._k("revocations"), start, "+")
        found: dict[str, float] = {}
        t = time.time()
        for entry_id, fields in entries:
            cursor = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
            data = {(k.decode() if isinstance(k, bytes) else k):
                    (v.decode() if isinstance(v, bytes) else v) for k, v in fields.items()}
            until = float(data.get("until", 0))
            if until > t:
                found[data["gid"]] = until
        return found, cursor

    # -- keys -----------------------------------------------------------------------------
    def _sealed(self, key: SigningKey) -> str:
        nonce = os.urandom(12)
        body = json.dumps(key.as_dict()).encode()
        return (nonce + self._seal.encrypt(nonce, body, b"signing key")).hex()

    def _opened(self, raw: bytes | str) -> SigningKey | None:
        try:
            data = bytes.fromhex(raw.decode() if isinstance(raw, bytes) else raw)
            return SigningKey.of(json.loads(self._seal.decrypt(data[:12], data[12:],
                                                               b"signing key")))
        except (ValueError, InvalidTag):
            return None  # sealed with another secret: not ours to use

    async def signing_keys(self) -> list[SigningKey]:
        raw = await self._do("hgetall", self._k("keys"))
        keys = [k for k in (self._opened(v) for v in raw.values()) if k is not None]
        return sorted(keys, key=lambda k: k.created)

    async def add_signing_key(self, key: SigningKey, after: str | None,
                              drop: list[str]) -> bool:
        return bool(await self._call("add_key", [self._k("keys"), self._k("newest_key")],
                                     [after or "", key.kid, self._sealed(key), *drop]))

    # -- rate limits ----------------------------------------------------------------------
    async def hit(self, bucket: str, window: float) -> int:
        count = await self._call("hit", [self._k("hit", bucket)], [int(window * 1000)])
        return int(count)

