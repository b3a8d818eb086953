"""``python -m tornado_mcp demo``: serve the demo MCP server (and its dashboard)."""

from __future__ import annotations

import argparse

from . import cli


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tornado_mcp",
                                     description="tornado-mcp command line")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="serve the demo MCP server at /mcp, dashboard at /admin")
    cli.add_option_flags(demo)
    args = parser.parse_args(argv)
    if args.command == "demo":
        from .demo import build_demo_server
        cli.serve(build_demo_server(), args)


if __name__ == "__main__":
    main()
