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

from .introspection import AuditTotals, SessionInfo, Snapshot, StreamInfo, TaskTotals, Totals
from .options import OptionError, Options
from .protocol.errors import MCPError, MissingClientCapability, ResourceNotFound, ToolError
from .protocol.identity import ANONYMOUS, Principal
from .schema.from_types import Arg
from .server.context import Context
from .server.input import ElicitationSchemaError, InputRequired, elicitation, roots, sampling
from .server.primitives import PromptArgument
from .server.registry import Registry
from .server.request_state import RequestStateCodec
from .server.results import audio, embedded_resource, image, resource_link, text
from .server.server import Server
from .server.session import Session
from .transport import MCPHandler, Transport

__version__ = "0.1.0"

__all__ = [
    "ANONYMOUS",
    "Arg",
    "AuditTotals",
    "Context",
    "ElicitationSchemaError",
    "InputRequired",
    "MCPError",
    "MCPHandler",
    "MissingClientCapability",
    "OptionError",
    "Options",
    "Principal",
    "PromptArgument",
    "Registry",
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
    "audio",
    "elicitation",
    "embedded_resource",
    "image",
    "resource_link",
    "roots",
    "sampling",
    "text",
]
