"""The official Python SDK's quickstart server (an `add` tool), for docs/REVIEWER-GUIDE.md's audit figures:

    airlock audit --quick -- tests/clients/.env/python/bin/python tests/data/audit/python_sdk_server.py
"""
from mcp.server.mcpserver import MCPServer

server = MCPServer("Demo")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


if __name__ == "__main__":
    server.run("stdio")
