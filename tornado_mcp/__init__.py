"""tornado-mcp: an embeddable Model Context Protocol server for Tornado.

    import tornado.web
    from tornado_mcp import Server, Transport

    server = Server("notes", version="1.0.0")

    @server.tool()
    def add_note(text: str) -> str:
        "Store a note."
        return "stored"

    transport = Transport(server)
    app = tornado.web.Application([*transport.routes("/mcp")])

See ``docs/getting-started.md`` for the tour and ``docs/options.md`` for every limit.
"""

from .context import Context
from .errors import MCPError, MissingClientCapability, ResourceNotFound, ToolError
from .identity import ANONYMOUS, Principal
from .introspection import SessionInfo, Snapshot, StreamInfo, TaskTotals, Totals
from .mrtr import (
    ElicitationSchemaError,
    InputRequired,
    RequestStateCodec,
    elicitation,
    roots,
    sampling,
)
from .options import OptionError, TransportOptions
from .primitives import PromptArgument
from .results import audio, embedded_resource, image, resource_link, text
from .server import Server
from .session import Session
from .transport import MCPHandler, Transport
from .typeschema import Arg

__version__ = "0.1.0"

__all__ = [
    "ANONYMOUS",
    "Arg",
    "Context",
    "ElicitationSchemaError",
    "InputRequired",
    "MCPError",
    "MCPHandler",
    "MissingClientCapability",
    "OptionError",
    "Principal",
    "PromptArgument",
    "RequestStateCodec",
    "ResourceNotFound",
    "Server",
    "Session",
    "SessionInfo",
    "Snapshot",
    "StreamInfo",
    "TaskTotals",
    "ToolError",
    "Totals",
    "Transport",
    "TransportOptions",
    "audio",
    "elicitation",
    "embedded_resource",
    "image",
    "resource_link",
    "roots",
    "sampling",
    "text",
]
