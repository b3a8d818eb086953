"""HTTP on a Unix domain socket: for a server only local processes (a reverse proxy, a
sidecar, a desktop client) should reach, with file permissions as the access control.

:func:`bind` creates the listening socket with mode ``0600`` (the umask is tightened while
it is created, so it is never reachable by others, not even for an instant), and refuses a
path that exists and is not a socket.  A socket file nobody listens on (left behind by a
process that died without removing it) is replaced; one a live server listens on is
refused, so a second server cannot steal the first one's clients.  :func:`remove` deletes
the file on shutdown, only if it is still the socket this process created.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import stat
import sys
from urllib.parse import quote

import tornado.netutil

#: The scheme of the ``MCP endpoint:`` line of a server on a Unix socket; the host part is
#: the socket's path, percent-encoded (``http+unix://%2Frun%2Fmcp.sock/mcp``).
SCHEME = "http+unix"
#: How long to wait for a server on an existing socket to answer a connection.
PROBE_TIMEOUT = 1.0


class UnixSocketError(Exception):
    """The socket cannot be created at this path (the message says why)."""


def _listening(path: str) -> bool:
    """Whether a server accepts connections on the socket file ``path``."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(PROBE_TIMEOUT)
    try:
        probe.connect(path)
    except (ConnectionRefusedError, FileNotFoundError):
        return False
    except PermissionError:
        raise UnixSocketError(f"{path}: not allowed to check the socket there") from None
    except OSError as exc:  # a full backlog (EAGAIN) or a timeout: someone is there
        return exc.errno != errno.ECONNREFUSED
    finally:
        probe.close()
    return True


def bind(path: str, backlog: int = 128) -> tuple[socket.socket, int]:
    """A listening socket at ``path`` (mode 0600) and the inode of its file."""
    if not path or path.startswith("\0"):
        raise UnixSocketError("needs a file system path")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        pass
    else:
        if not stat.S_ISSOCK(st.st_mode):
            raise UnixSocketError(f"{path} exists and is not a socket")
        if _listening(path):
            raise UnixSocketError(f"{path}: another server is listening on it")
        os.remove(path)  # stale: its server is gone
    old = os.umask(0o177)
    try:
        sock = tornado.netutil.bind_unix_socket(path, mode=0o600, backlog=backlog)
    except OSError as exc:
        raise UnixSocketError(f"{path}: {exc.strerror or exc}") from None
    finally:
        os.umask(old)
    return sock, os.stat(path).st_ino


def bind_or_exit(path: str, backlog: int = 128) -> tuple[socket.socket, int]:
    """:func:`bind` for a command line: a path that cannot be used prints
    ``error: --unix-socket ...`` on stderr and exits with status 2."""
    try:
        return bind(path, backlog)
    except UnixSocketError as exc:
        print(f"error: --unix-socket {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def remove(path: str, inode: int) -> None:
    """Delete the socket file at ``path`` if it is still the one with ``inode``."""
    with contextlib.suppress(OSError):
        st = os.lstat(path)
        if stat.S_ISSOCK(st.st_mode) and st.st_ino == inode:
            os.remove(path)


def url(path: str, mcp_path: str) -> str:
    """The endpoint's URL as the start-up line prints it."""
    return f"{SCHEME}://{quote(path, safe='')}{mcp_path}"
