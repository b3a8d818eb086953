"""MCP inside Jupyter Server: the real endpoint on Jupyter's own app, loop and login.

Install the ``jupyter`` extra (``pip install '.[jupyter]'`` in a clone) and enable it::

    jupyter server --ServerApp.jpserver_extensions="{'tornado_mcp.jupyter': True}"

(or set ``c.ServerApp.jpserver_extensions`` in ``jupyter_server_config.py``; installing the
package enables nothing by itself).  MCP is then served at
``{base_url}mcp`` and the dashboard at ``{base_url}mcp/admin/``, both behind Jupyter's own
identity provider: MCP clients send the server's token as ``Authorization: Bearer <token>``
(or Jupyter's ``Authorization: token <token>``), browsers use their Jupyter login.

* :mod:`.auth` -- Jupyter's user as the request's :class:`~tornado_mcp.Principal`, with the
  permissions Jupyter's authorizer grants as scopes;
* :mod:`.contents` -- ``list_files``, ``read_file``, ``read_notebook`` and the
  ``notebook://{+path}`` resources, updated when Jupyter saves a notebook;
* :mod:`.kernel` -- ``run_code``, off unless enabled, bounded in time and output;
* :mod:`.extension` -- :data:`MCPExtension`, the traitlets configuration (every transport
  limit is a trait), and what loading builds.

``docs/jupyter.md`` is the guide.
"""

from __future__ import annotations

from typing import Any

from .extension import MCPExtension, MCPExtensionBase

__all__ = ["MCPExtension", "MCPExtensionBase"]


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    """Jupyter Server's entry point: this module, served by the :data:`MCPExtension` app
    (whose transport the web application's settings keep as ``"tornado_mcp_transport"``)."""
    return [{"module": "tornado_mcp.jupyter", "app": MCPExtension}]


def _load_jupyter_server_extension(serverapp: Any) -> Any:
    """Load the extension into ``serverapp`` (Jupyter calls :data:`MCPExtension`'s own
    loader; this one is for hosts that load extensions by module)."""
    return MCPExtension._load_jupyter_server_extension(serverapp)  # type: ignore[no-untyped-call]
