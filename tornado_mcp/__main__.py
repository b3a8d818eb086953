"""``python -m tornado_mcp demo``: serve the demo MCP server (and its dashboard);
``python -m tornado_mcp stdio module:attribute``: serve a ``Server`` over stdio.

The same command line is the ``tornado-mcp`` console script; usage and errors name the
command the way it was invoked.
"""

from __future__ import annotations

import argparse

from . import cli

MODULE_PROG = "python -m tornado_mcp"


def main(argv: list[str] | None = None, prog: str | None = None) -> None:
    """Run the command line; ``prog`` (the name in usage and errors) defaults to the
    script's own name, as argparse derives it (``tornado-mcp`` for the console script)."""
    parser = argparse.ArgumentParser(prog=prog,
                                     description="tornado-mcp command line")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="serve the demo MCP server at /mcp, dashboard at /admin")
    cli.add_option_flags(demo)
    stdio = sub.add_parser("stdio", help="serve a Server over stdin/stdout (the MCP stdio "
                                         "transport); logs go to stderr")
    stdio.add_argument("target", help="module:attribute (or path/to/file.py:attribute) "
                                      "naming a Server, or a function returning one")
    stdio.add_argument("--max-line-bytes", type=int, default=None,
                       help="longest message line accepted (default 4 MiB)")
    stdio.add_argument("--log-level", default="warning")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from .demo import build_demo_server
        cli.serve(build_demo_server(), args)
    elif args.command == "stdio":
        from .stdio import MAX_LINE_BYTES, load_server, run
        try:
            server = load_server(args.target)
        except (ImportError, AttributeError, TypeError, ValueError, OSError) as exc:
            parser.error(f"stdio: {exc}")
        run(server, log_level=args.log_level,
            max_line_bytes=args.max_line_bytes or MAX_LINE_BYTES)


if __name__ == "__main__":
    main(prog=MODULE_PROG)
