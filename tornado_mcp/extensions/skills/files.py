"""Reading a skill (``SKILL.md`` and its files) from disk, and the rules a skill obeys.

Nothing here knows about MCP methods: :mod:`tornado_mcp.extensions.skills` builds the
``io.modelcontextprotocol/skills`` extension on it.  What holds here:

* the frontmatter is the leading ``---`` block of ``SKILL.md``, read as YAML 1.2 core
  (``yes`` stays a string, ``2026-01-01`` stays a string, a key appears once), and must be
  a mapping of JSON values with a non-empty ``name`` and ``description``, within its
  bounds (:data:`MAX_FRONTMATTER_BYTES`, :data:`MAX_FRONTMATTER_VALUES` with aliases
  expanded, :data:`MAX_FRONTMATTER_DEPTH`, :data:`MAX_INT_DIGITS`);
* a skill's name follows the Agent Skills rules (1-64 characters of lowercase letters,
  digits and hyphens, no leading, trailing or doubled hyphen), and a skill on disk lives
  in a directory of that name;
* every file of a skill on disk is inside its directory: a symbolic link whose target is
  outside, or a link to a directory, is refused when the skill is registered, and every
  read opens the file component by component from the skill directory's descriptor,
  refusing a symbolic link to a directory at any depth (:func:`read_confined`);
* a file is a regular file (a FIFO, device or socket is refused without blocking) whose
  name is UTF-8;
* hidden entries (a name starting with ``.``) are not part of a skill;
* a skill has at most ``max_files`` files and ``max_bytes`` bytes in all (512 files and
  16 MiB, the extension's per-skill limits, unless the catalog says otherwise).
"""

from __future__ import annotations

import errno
import hashlib
import mimetypes
import os
import re
import stat
from collections.abc import Iterator
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
#: A frontmatter's bounds: its text in bytes of UTF-8, and so the keys and strings of its
#: value once parsed (a YAML alias counted every time it is used, so an alias bomb cannot
#: grow past them); the values in it (keys aside); how deep it nests; the digits of an
#: integer (Python's own bound on converting text to an int is 4,300).
MAX_FRONTMATTER_BYTES = 64 * 1024
MAX_FRONTMATTER_VALUES = 1024
MAX_FRONTMATTER_DEPTH = 32
MAX_INT_DIGITS = 64

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
        if len(value) > MAX_INT_DIGITS:
            raise yaml.constructor.ConstructorError(
                None, None, f"an integer of {len(value)} digits (at most {MAX_INT_DIGITS})",
                node.start_mark)
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


class _Budget:
    """What is left of the frontmatter's bounds while its value is walked (an alias is
    walked, and counted, once per place it is used)."""

    def __init__(self) -> None:
        self.values = MAX_FRONTMATTER_VALUES
        self.bytes = MAX_FRONTMATTER_BYTES

    def take(self, where: str, text: str | None = None, values: int = 1) -> None:
        self.values -= values
        if text is not None:
            self.bytes -= len(text.encode("utf-8", "surrogatepass"))
        if self.values < 0 or self.bytes < 0:
            raise SkillError(f"{where}: the frontmatter is over its bounds "
                             f"({MAX_FRONTMATTER_VALUES} values, {MAX_FRONTMATTER_BYTES} "
                             "bytes of keys and strings, an alias counted each time it is "
                             "used)")


def _json_value(value: Any, where: str, budget: _Budget, depth: int = 0) -> Any:
    if depth > MAX_FRONTMATTER_DEPTH:
        raise SkillError(f"{where}: the frontmatter nests deeper than "
                         f"{MAX_FRONTMATTER_DEPTH} levels")
    if value is None or isinstance(value, (bool, int)):
        budget.take(where)
        return value
    if isinstance(value, str):
        budget.take(where, value)
        return value
    if isinstance(value, float):
        budget.take(where)
        if value != value or value in (float("inf"), float("-inf")):
            raise SkillError(f"{where}: {value!r} has no JSON form")
        return value
    if isinstance(value, list):
        budget.take(where)
        return [_json_value(v, where, budget, depth + 1) for v in value]
    if isinstance(value, dict):
        budget.take(where)
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise SkillError(f"{where}: the key {key!r} is not a string")
            budget.take(where, key, values=0)
            out[key] = _json_value(item, where, budget, depth + 1)
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
    block = match.group(1)
    size = len(block.encode("utf-8", "surrogatepass"))
    if size > MAX_FRONTMATTER_BYTES:
        raise SkillError(f"{where}: the frontmatter has {size} bytes; at most "
                         f"{MAX_FRONTMATTER_BYTES}")
    try:
        data = yaml.load(block, Loader=_Loader)  # a safe constructor
    except yaml.YAMLError as exc:
        raise SkillError(f"{where}: the frontmatter is not valid YAML: {exc}") from None
    except RecursionError:
        raise SkillError(f"{where}: the frontmatter nests too deep") from None
    if not isinstance(data, dict):
        raise SkillError(f"{where}: the frontmatter must be a mapping")
    front: dict[str, Any] = _json_value(data, where, _Budget())
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


def _is_utf8(name: str) -> bool:
    """A name read from the disk was valid UTF-8 (Python keeps other bytes as lone
    surrogates, which no URI can carry)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def walk(top: str | Path, refused: str) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk`` of ``top`` in name order, never into a hidden directory, raising
    :class:`SkillError` at a symbolic link to a directory (``... is not {refused}``):
    how both a skill's files and a tree of skills are found."""
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for dirname in dirnames:
            if os.path.islink(os.path.join(dirpath, dirname)):
                raise SkillError(f"{os.path.join(dirpath, dirname)}: a symbolic link to a "
                                 f"directory is not {refused}")
        yield dirpath, dirnames, filenames


def scan_directory(root: Path, max_files: int, max_bytes: int) -> list[DiskFile]:
    """Every file of the skill at ``root`` (a resolved directory), refused as a whole with
    :class:`SkillError` when one escapes it or a limit is crossed."""
    base = str(root)
    files: list[DiskFile] = []
    total = 0
    for dirpath, _dirnames, filenames in walk(base, "served in a skill"):
        for filename in sorted(f for f in filenames if not f.startswith(".")):
            full = os.path.join(dirpath, filename)
            rel = os.path.relpath(full, base).replace(os.sep, "/")
            if not _is_utf8(rel):
                raise SkillError(f"{full!r}: a file name that is not UTF-8 cannot be "
                                 "named by a skill:// URI")
            data = read_confined(root, rel, max_bytes - total)
            total += len(data)
            files.append(DiskFile(rel, len(data), digest_of(data)))
            if len(files) > max_files:
                raise SkillError(f"{root}: the skill has more than {max_files} files")
    if not any(f.rel == SKILL_MD for f in files):
        raise SkillError(f"{root}: a skill directory must contain {SKILL_MD}")
    return files


def read_confined(root: Path, rel: str, limit: int) -> bytes:
    """The bytes of ``root/rel``, refused (:class:`SkillError`) when it is not a regular
    file inside ``root`` or holds more than ``limit`` bytes.

    Every component is opened relative to the descriptor of the one before it, from the
    skill directory's own, with ``O_NOFOLLOW``: a directory swapped for a symbolic link
    at any moment is refused, never followed out of the skill.  A symbolic link as the
    last component is followed only when its target, taken as a path inside the skill,
    stays inside it (at most :data:`MAX_LINK_HOPS` links), and is then opened the same
    way.  The file is opened with ``O_NONBLOCK`` and checked with ``fstat`` before a byte
    is read: a FIFO, a device or a socket is refused at once, never waited on."""
    candidate = os.path.join(str(root), *rel.split("/"))
    try:
        top = os.open(root, _DIR_FLAGS)
    except OSError as exc:
        raise SkillError(f"{root}: the skill directory cannot be opened "
                         f"({exc.strerror})") from None
    try:
        fd = _open_inside(top, str(root), rel, candidate)
    finally:
        os.close(top)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SkillError(f"{candidate}: is not a regular file")
        if info.st_size > limit:
            raise SkillError(f"{candidate}: {info.st_size} bytes is over the skill's limit "
                             f"({limit} bytes left of it)")
        os.set_blocking(fd, True)
        with os.fdopen(os.dup(fd), "rb") as stream:
            data = stream.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise SkillError(f"{candidate}: grew over the skill's limit while read")
    return data


#: The most symbolic links followed (each to a file inside the skill) to reach a file.
MAX_LINK_HOPS = 8
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
_FILE_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


def _open_inside(top: int, base: str, rel: str, candidate: str) -> int:
    """A descriptor of the file ``rel`` below the directory ``top`` (at ``base``), opened
    component by component (see :func:`read_confined`)."""
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    for _ in range(MAX_LINK_HOPS + 1):
        if not parts or ".." in parts:
            raise SkillError(f"{candidate}: resolves outside the skill directory {base}")
        fds: list[int] = []
        try:
            here = top
            for part in parts[:-1]:
                try:
                    here = os.open(part, _DIR_FLAGS, dir_fd=here)
                except OSError as exc:
                    raise SkillError(f"{candidate}: {part!r} is not a directory of the skill "
                                     f"({exc.strerror})") from None
                fds.append(here)
            try:
                return os.open(parts[-1], _FILE_FLAGS, dir_fd=here)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.EMLINK):
                    raise SkillError(f"{candidate}: cannot be read ({exc.strerror})") from None
                try:
                    target = os.readlink(parts[-1], dir_fd=here)
                except OSError as link_exc:
                    raise SkillError(f"{candidate}: cannot be read "
                                     f"({link_exc.strerror})") from None
        finally:
            for fd in fds:
                os.close(fd)
        if os.path.isabs(target):  # inside the skill only as a path below ``base``
            target = os.path.normpath(target)
            if not target.startswith(base.rstrip(os.sep) + os.sep):
                raise SkillError(f"{candidate}: resolves outside the skill directory {base}")
            parts = target[len(base.rstrip(os.sep)) + 1:].split(os.sep)
        else:
            parts = os.path.normpath("/".join([*parts[:-1], target])).split("/")
    raise SkillError(f"{candidate}: more than {MAX_LINK_HOPS} symbolic links")
