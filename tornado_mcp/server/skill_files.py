"""Reading a skill (``SKILL.md`` and its files) from disk, and the rules a skill obeys.

Nothing here knows about MCP methods: :mod:`tornado_mcp.server.skills` builds the
``io.modelcontextprotocol/skills`` extension on it.  What holds here:

* the frontmatter is the leading ``---`` block of ``SKILL.md``, read as YAML 1.2 core
  (``yes`` stays a string, ``2026-01-01`` stays a string, a key appears once), and must be
  a mapping of JSON values with a non-empty ``name`` and ``description``;
* a skill's name follows the Agent Skills rules (1-64 characters of lowercase letters,
  digits and hyphens, no leading, trailing or doubled hyphen), and a skill on disk lives
  in a directory of that name;
* every file of a skill on disk is inside its directory: a symbolic link whose target is
  outside, or a link to a directory, is refused when the skill is registered, and the path
  is resolved and checked again at every read;
* hidden entries (a name starting with ``.``) are not part of a skill;
* a skill has at most ``max_files`` files and ``max_bytes`` bytes in all (512 files and
  16 MiB, the extension's per-skill limits, unless the catalog says otherwise).
"""

from __future__ import annotations

import hashlib
import mimetypes
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import yaml

SKILL_MD = "SKILL.md"
#: The extension's per-skill limits: entries of ``resources`` and the sum of their sizes.
MAX_SKILL_FILES = 512
MAX_SKILL_BYTES = 16 * 1024 * 1024
#: The Agent Skills limit on ``description``.
MAX_DESCRIPTION_CHARS = 1024

NAME_RULE = re.compile(r"^(?!.*--)[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$")
#: A prefix segment: RFC 3986 unreserved characters only (so also a valid reg-name).
PREFIX_SEGMENT = re.compile(r"^[A-Za-z0-9._~-]+$")
_FRONTMATTER = re.compile(r"^---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)")
_TEXT_MIMES = {"application/json", "application/xml", "application/javascript",
               "application/x-sh", "application/x-python", "application/yaml",
               "application/toml"}
_EXTRA_MIMES = {".md": "text/markdown", ".markdown": "text/markdown", ".py": "text/x-python",
                ".yaml": "application/yaml", ".yml": "application/yaml",
                ".toml": "application/toml", ".sh": "application/x-sh",
                ".txt": "text/plain", ".json": "application/json"}


class SkillError(ValueError):
    """A skill that cannot be served as given: the message says what and where."""


def digest_of(data: bytes) -> str:
    """``sha256:`` and the 64 lowercase hex digits of ``data``'s SHA-256."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def mime_type_of(rel: str) -> str:
    """The MIME type served for a file of a skill, from its name."""
    suffix = os.path.splitext(rel)[1].lower()
    if suffix in _EXTRA_MIMES:
        return _EXTRA_MIMES[suffix]
    guessed, _ = mimetypes.guess_type(rel, strict=False)
    return guessed or "application/octet-stream"


def is_text(mime_type: str) -> bool:
    return mime_type.startswith("text/") or mime_type in _TEXT_MIMES


def check_name(name: Any, where: str) -> str:
    if not isinstance(name, str) or not NAME_RULE.fullmatch(name):
        raise SkillError(f"{where}: skill name {name!r} breaks the Agent Skills naming rules "
                         "(1-64 characters: lowercase letters, digits and single hyphens, "
                         "not at either end)")
    return name


def check_prefix(prefix: str | None) -> tuple[str, ...]:
    """The segments of an organisational prefix such as ``acme/billing``."""
    if prefix is None or prefix == "":
        return ()
    segments = tuple(prefix.strip("/").split("/"))
    for segment in segments:
        if not PREFIX_SEGMENT.fullmatch(segment) or segment in (".", ".."):
            raise SkillError(f"skill prefix {prefix!r}: segment {segment!r} must be letters, "
                             "digits, '.', '_', '~' or '-'")
    return segments


def file_uri(skill_path: str, rel: str) -> str:
    """``skill://<skill-path>/<file-path>``, each file-path segment percent-encoded."""
    return f"skill://{skill_path}/" + "/".join(quote(s, safe="!$&'()*+,;=:@~") for s in
                                                rel.split("/"))


# -- frontmatter --------------------------------------------------------------------------
class _CoreResolver(yaml.resolver.BaseResolver):  # type: ignore[misc]
    """YAML 1.2 core schema: booleans, nulls, ints and floats only; all else is a string."""


for _tag, _pattern, _first in (
        ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
        ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
        ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$",
         "-+0123456789"),
        ("tag:yaml.org,2002:float",
         r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
         r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$", "-+0123456789.")):
    _CoreResolver.add_implicit_resolver(_tag, re.compile(_pattern), list(_first))


class _CoreConstructor(yaml.constructor.SafeConstructor):  # type: ignore[misc]
    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, str) and key in seen:  # YAML 1.2: keys are unique
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark)
            if isinstance(key, str):
                seen.add(key)
        return super().construct_mapping(node, deep)

    def construct_core_bool(self, node: Any) -> bool:
        return str(self.construct_scalar(node)).lower() == "true"

    def construct_core_int(self, node: Any) -> int:
        value = str(self.construct_scalar(node))
        if value.startswith(("0o", "0x")):
            return int(value, 0)
        return int(value, 10)


_CoreConstructor.add_constructor("tag:yaml.org,2002:bool", _CoreConstructor.construct_core_bool)
_CoreConstructor.add_constructor("tag:yaml.org,2002:int", _CoreConstructor.construct_core_int)


class _Loader(yaml.reader.Reader, yaml.scanner.Scanner,  # type: ignore[misc]
              yaml.parser.Parser, yaml.composer.Composer,  # type: ignore[misc]
              _CoreConstructor, _CoreResolver):
    def __init__(self, stream: str) -> None:
        yaml.reader.Reader.__init__(self, stream)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)
        yaml.composer.Composer.__init__(self)
        _CoreConstructor.__init__(self)
        _CoreResolver.__init__(self)


def _json_value(value: Any, where: str) -> Any:
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise SkillError(f"{where}: {value!r} has no JSON form")
        return value
    if isinstance(value, list):
        return [_json_value(v, where) for v in value]
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise SkillError(f"{where}: the key {key!r} is not a string")
            out[key] = _json_value(item, where)
        return out
    raise SkillError(f"{where}: a {type(value).__name__} value has no JSON form")


def parse_frontmatter(text: str, where: str) -> dict[str, Any]:
    """The frontmatter of a ``SKILL.md`` as a JSON object, checked (see the module doc)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    match = _FRONTMATTER.match(text)
    if match is None:
        raise SkillError(f"{where}: SKILL.md must begin with a '---' delimited YAML "
                         "frontmatter block")
    try:
        data = yaml.load(match.group(1), Loader=_Loader)  # a safe constructor
    except yaml.YAMLError as exc:
        raise SkillError(f"{where}: the frontmatter is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise SkillError(f"{where}: the frontmatter must be a mapping")
    front: dict[str, Any] = _json_value(data, where)
    check_name(front.get("name"), where)
    description = front.get("description")
    if not isinstance(description, str) or not description.strip():
        raise SkillError(f"{where}: the frontmatter needs a non-empty string description")
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise SkillError(f"{where}: the description has {len(description)} characters; "
                         f"at most {MAX_DESCRIPTION_CHARS}")
    return front


# -- files on disk ------------------------------------------------------------------------
@dataclass(frozen=True)
class DiskFile:
    """One file of a skill on disk: its path relative to the skill, size and digest."""

    rel: str
    size: int
    digest: str


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def scan_directory(root: Path, max_files: int, max_bytes: int) -> list[DiskFile]:
    """Every file of the skill at ``root`` (a resolved directory), refused as a whole with
    :class:`SkillError` when one escapes it or a limit is crossed."""
    base = str(root)
    files: list[DiskFile] = []
    total = 0
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for dirname in dirnames:
            if os.path.islink(os.path.join(dirpath, dirname)):
                raise SkillError(f"{os.path.join(dirpath, dirname)}: a symbolic link to a "
                                 "directory is not served in a skill")
        for filename in sorted(f for f in filenames if not f.startswith(".")):
            full = os.path.join(dirpath, filename)
            rel = os.path.relpath(full, base).replace(os.sep, "/")
            data = read_confined(root, rel, max_bytes - total)
            total += len(data)
            files.append(DiskFile(rel, len(data), digest_of(data)))
            if len(files) > max_files:
                raise SkillError(f"{root}: the skill has more than {max_files} files")
    if not any(f.rel == SKILL_MD for f in files):
        raise SkillError(f"{root}: a skill directory must contain {SKILL_MD}")
    return files


def read_confined(root: Path, rel: str, limit: int) -> bytes:
    """The bytes of ``root/rel``, refused (:class:`SkillError`) when the resolved path is
    outside ``root``, is not a regular file, or holds more than ``limit`` bytes."""
    base = str(root)
    candidate = os.path.join(base, *rel.split("/"))
    resolved = os.path.realpath(candidate)
    if not _inside(resolved, base) or resolved == base:
        raise SkillError(f"{candidate}: resolves outside the skill directory {base}")
    try:
        fd = os.open(resolved, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise SkillError(f"{candidate}: cannot be read ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SkillError(f"{candidate}: is not a regular file")
        if info.st_size > limit:
            raise SkillError(f"{candidate}: {info.st_size} bytes is over the skill's limit "
                             f"({limit} bytes left of it)")
        with os.fdopen(os.dup(fd), "rb") as stream:
            data = stream.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise SkillError(f"{candidate}: grew over the skill's limit while read")
    return data
