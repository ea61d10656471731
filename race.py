import socket, json, time
body = json.dumps({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"quick","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"x","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}})
req = ("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:18470\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: quick\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)).encode()
for i in range(400):
    s = socket.create_connection(("127.0.0.1", 18470))
    s.sendall(req)
    time.sleep((i % 20) * 0.00005)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b'\x01\x00\x00\x00\x00\x00\x00\x00')
    s.close()
