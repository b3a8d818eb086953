"""Plain ``def`` handlers in a bounded thread pool: :mod:`.handlers` (how a handler is
called, and how its thread reaches the IOLoop: :func:`~.handlers.wait_on_loop`) over
:mod:`.pool` (the pool itself).

It knows nothing of MCP, so it sits below everything that calls handlers: the protocol
core's contracts, the extensions' generated skill files, the engine that sets the pool
per request, and both transports, whose channels hop back onto the loop from a thread.
"""
