"""A real nginx in front of server processes, configured as docs/deploy.md says (routing
by ``hash $http_mcp_session_id consistent``, streams passed through unbuffered, a refusing
upstream skipped for a second), writing everything it needs into a directory of its own;
and :func:`free_port`, for the processes a test starts on fixed ports."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists()
                                  else None)

CONF = """
daemon off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_buffer_size 1m;
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    upstream mcp {{
        hash $http_mcp_session_id consistent;
{servers}
    }}
    server {{
        listen 127.0.0.1:{port};
        location /mcp {{
            proxy_pass http://mcp;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_buffering off;
            proxy_connect_timeout 2s;
            proxy_read_timeout 1h;
        }}
    }}
}}
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start_nginx(upstreams: list[int], workdir: Path) -> tuple[subprocess.Popen[bytes], int]:
    """nginx on a free loopback port in front of ``upstreams``; returns once it accepts
    connections (raising with its error log if it does not)."""
    assert NGINX is not None
    port = free_port()
    servers = "\n".join(f"        server 127.0.0.1:{p} max_fails=1 fail_timeout=1s;"
                        for p in upstreams)
    conf = workdir / "nginx.conf"
    conf.write_text(CONF.format(d=workdir, servers=servers, port=port))
    proc = subprocess.Popen([NGINX, "-c", str(conf), "-p", str(workdir),
                             "-e", str(workdir / "error.log")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, port
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                log = (workdir / "error.log").read_text() if \
                    (workdir / "error.log").exists() else ""
                proc.kill()
                raise RuntimeError(f"nginx did not start: {log}") from None
            time.sleep(0.05)
