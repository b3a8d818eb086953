"""The extension's configuration (traitlets) and what loading it builds.

:data:`MCPExtension` is a traitlets ``Configurable``: every transport limit of
:data:`~tornado_mcp.options.OPTION_SPECS` is one of its traits, generated from that table and
validated by the same :meth:`~tornado_mcp.options.OptionSpec.coerce` as the command-line
flags and the dashboard, so both of these work::

    # jupyter_server_config.py
    c.MCPExtension.max_sessions = 50
    c.MCPExtension.allow_code_execution = True

    jupyter server --MCPExtension.max_sessions=50 --MCPExtension.session_idle_timeout=none

The limits marked live stay live: the dashboard (or code) changes them on the running
transport, and the trait follows.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
from typing import Any, cast

from jupyter_server.extension.application import ExtensionApp
from jupyter_server.utils import url_path_join
from traitlets import Bool, Float, Int, List, TraitError, TraitType, Unicode

from ..options import LIVE_OPTIONS, OPTION_SPECS, Options, OptionSpec
from ..server.context import Context
from ..server.server import Server
from ..transport import Transport
from .auth import JupyterMCPHandler, dashboard_user
from .contents import ContentsTools
from .kernel import CodeRunner

log = logging.getLogger("tornado_mcp.jupyter")

#: Entry-point group through which other packages contribute tools: each entry point names
#: a function, registered as a tool under the entry point's name.
TOOLS_ENTRY_POINT_GROUP = "tornado_mcp.jupyter_tools"


class OptionTrait(TraitType[Any, Any]):
    """A trait holding one transport option, validated as the flags and dashboard do."""

    def __init__(self, spec: OptionSpec) -> None:
        super().__init__(default_value=spec.default, help=spec.help, config=True)
        self.spec = spec
        self.info_text = f"{spec.kind} option{' (or none)' if spec.nullable else ''}"

    def validate(self, obj: Any, value: Any) -> Any:
        try:
            return self.spec.coerce(value)
        except ValueError as exc:
            raise TraitError(f"{type(obj).__name__}.{self.name}: {exc}") from None

    def from_string(self, s: str) -> Any:
        return s  # text is what coerce() parses, exactly as for a command-line flag


class MCPExtensionBase(ExtensionApp):
    """MCP inside Jupyter Server; the transport limits are traits of :data:`MCPExtension`.

    A Jupyter ``ExtensionApp``: Jupyter links it to the server (reading its configuration),
    calls :meth:`initialize_handlers` once the web application exists, and awaits
    :meth:`stop_extension` at shutdown.
    """

    name = "tornado_mcp"
    #: The transport serving MCP, once the extension is loaded.
    transport: Transport | None = None
    #: What runs code for ``run_code``, when it is allowed.
    runner: CodeRunner | None = None

    path = Unicode("mcp", config=True,
                   help="Where MCP is served, below the server's base_url.")
    dashboard = Bool(True, config=True,
                     help="Serve the dashboard at {base_url}{path}/admin/ (Jupyter's login).")
    allow_code_execution = Bool(False, config=True,
                                help="Offer the run_code tool (off: the tool is not listed).")
    code_timeout = Float(30.0, min=0.001, config=True,
                         help="Seconds run_code waits before interrupting the kernel.")
    max_output_bytes = Int(64 * 1024, min=1, config=True,
                           help="Output run_code returns, in UTF-8 bytes (the rest is cut).")
    max_read_bytes = Int(1024 * 1024, min=1, config=True,
                         help="Largest file or notebook read_file/read_notebook return, bytes.")
    kernel_name = Unicode("", config=True,
                          help="Kernel spec of the kernel run_code starts ('' for default).")
    tools = List(Unicode(), config=True,
                 help="Your own tools, as 'module:function' strings.")
    load_entry_point_tools = Bool(True, config=True,
                                  help=f"Add the tools of the {TOOLS_ENTRY_POINT_GROUP!r} "
                                       "entry points of installed packages.")

    def transport_options(self) -> Options:
        """The transport options these traits hold."""
        return Options(**{s.name: getattr(self, s.name) for s in OPTION_SPECS})

    def build_server(self, serverapp: Any) -> Server:
        """The MCP server: contents tools, notebook resources, run_code when allowed, and
        the configured and contributed tools."""
        server = Server("jupyter-server", version=_version("jupyter_server"),
                        instructions="Files, notebooks and kernels of a Jupyter server.")
        server.add_tool(whoami, annotations={"readOnlyHint": True})
        ContentsTools(serverapp.contents_manager, self.max_read_bytes).register(server)
        if self.allow_code_execution:
            runner = self.runner = CodeRunner(serverapp.kernel_manager, self.code_timeout,
                                              self.max_output_bytes, self.kernel_name)
            server.add_tool(runner.run_code, "run_code",
                            annotations={"destructiveHint": True, "openWorldHint": True})
        for spec in self.tools:
            server.add_tool(_import(spec))
        if self.load_entry_point_tools:
            for ep in importlib.metadata.entry_points(group=TOOLS_ENTRY_POINT_GROUP):
                server.add_tool(ep.load(), ep.name)
        return server

    def initialize_handlers(self) -> None:
        """Jupyter's hook once its web application exists: mount MCP and the dashboard.

        Not when reading the configuration failed: an operator's bound is never silently
        replaced by a default.  Jupyter logs both errors and runs on without MCP.
        """
        if not self._linked:
            raise TraitError("MCPExtension: the configuration above is invalid, so MCP is "
                             "not served")
        self.transport = self.load(self.serverapp)

    async def stop_extension(self) -> None:
        """Jupyter's hook at shutdown: listen streams get their final result, sessions end,
        and the kernel ``run_code`` started is shut down."""
        if self.transport is not None:
            await self.transport.close()
        if self.runner is not None:
            await self.runner.shutdown()

    def load(self, serverapp: Any) -> Transport:
        """Mount MCP (and the dashboard) on ``serverapp.web_app``; return the transport."""
        transport = Transport(self.build_server(serverapp), self.transport_options())
        serverapp.web_app.settings["tornado_mcp_transport"] = transport
        transport.options.subscribe(self._follow)
        base = serverapp.base_url
        path = url_path_join(base, self.path)
        rules: list[Any] = [(path, JupyterMCPHandler, {"transport": transport})]
        if self.dashboard:
            from ..dashboard import dashboard_routes
            rules.extend(dashboard_routes(
                transport, path + "/admin", authenticate=dashboard_user,
                login_url=url_path_join(base, "login")) or [])
        serverapp.web_app.add_handlers(".*$", rules)
        self.observe(lambda change: transport.options.update({change["name"]: change["new"]},
                                                            actor="config"),
                     names=list(LIVE_OPTIONS))
        serverapp.log.info("MCP endpoint at %s", path)
        return transport

    def _follow(self, diff: dict[str, tuple[Any, Any]], actor: str) -> None:
        """Live changes made elsewhere (the dashboard) show in the traits too."""
        for name, (_, new) in diff.items():
            if getattr(self, name) != new:
                setattr(self, name, new)  # the observer then finds nothing to change


def whoami(ctx: Context) -> dict[str, Any]:
    """Who Jupyter says you are, and what its authorizer lets you do (as scopes)."""
    return {**ctx.principal.as_dict(), "name": ctx.principal.claims.get("name")}


def _import(spec: str) -> Any:
    module, sep, name = spec.partition(":")
    if not sep or not module or not name:
        raise TraitError(f"MCPExtension.tools: {spec!r} is not 'module:function'")
    return getattr(importlib.import_module(module), name)


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover
        return "0"


#: The configurable class: ``c.MCPExtension.<trait>`` in config, ``--MCPExtension.<trait>``
#: on the command line.  Built with :func:`type` so each option of
#: :data:`~tornado_mcp.options.OPTION_SPECS` becomes a trait without being written twice.
MCPExtension = cast(type[MCPExtensionBase], type("MCPExtension", (MCPExtensionBase,), {
    "__doc__": MCPExtensionBase.__doc__,
    "__module__": __name__,
    **{spec.name: OptionTrait(spec) for spec in OPTION_SPECS},
}))
