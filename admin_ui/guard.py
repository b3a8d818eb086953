"""Two small checks of the base handler: where a state-changing request came from, and
how a throttled caller is told when to come back.

``Origin`` (or, without it, ``Referer``) is compared with the request's own ``Host``: a
browser names the page that made a request in them, so a request another site's page made
through the operator's browser is refused whatever cookie it carries.  ``Origin: null`` (a
sandboxed frame, a ``data:`` page, a page with ``Referrer-Policy: no-referrer``) is refused
too; the dashboard's own pages send ``Referrer-Policy: same-origin``, under which browsers
name their origin on same-origin requests.  A request with neither header (a script, curl)
passes this check; the XSRF token still guards it.
"""

from __future__ import annotations

import math
import urllib.parse

from tornado.httputil import HTTPServerRequest


def foreign_origin(request: HTTPServerRequest) -> str | None:
    """Why ``request`` looks made by another site's page, or ``None`` when it does not."""
    own = (request.host or "").strip().lower()
    origin = request.headers.get("Origin")
    if origin is not None:
        if _netloc(origin) != own:
            return "The request's Origin is not this dashboard's."
        return None
    referer = request.headers.get("Referer")
    if referer and _netloc(referer) != own:
        return "The request's Referer is not this dashboard's."
    return None


def _netloc(url: str) -> str | None:
    try:
        parts = urllib.parse.urlsplit(url.strip())
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return None
    return parts.netloc.lower()


def retry_after(seconds: float) -> str:
    """The ``Retry-After`` value for a wait of ``seconds``: whole seconds, at least 1."""
    return str(max(1, math.ceil(seconds)))
