"""``lamarck.mcp``: the Model Context Protocol server (``lamarck mcp``).

``tools`` holds what each tool does over a node's AgentService; ``server`` builds the
``MCPServer`` and serves it over stdio or streamable HTTP.
"""

from lamarck.mcp.server import McpParams, build_server, serve_http
from lamarck.mcp.tools import DESCRIPTIONS, LamarckTools, NodeLink

__all__ = ["DESCRIPTIONS", "LamarckTools", "McpParams", "NodeLink", "build_server", "serve_http"]
