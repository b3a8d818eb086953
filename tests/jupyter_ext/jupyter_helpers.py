"""Code the test Jupyter servers import: a user's own tool and an authorizer.

Named in ``--MCPExtension.tools`` and ``--ServerApp.authorizer_class`` on the command line
of the servers the tests start, with this directory on their ``PYTHONPATH``.
"""

from __future__ import annotations

from typing import Any

from jupyter_server.auth import Authorizer


def shout(text: str) -> str:
    """Repeat the text in capitals (a user's own tool, from configuration)."""
    return text.upper() + "!"


class NoExecuteAuthorizer(Authorizer):
    """Lets every logged-in user read and write, but never execute code."""

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        return action != "execute"
