"""A hostile Streamable HTTP "MCP server" for tests/it/redteam.rs: `airlock audit --url` must
stay bounded and give no pass against it.

Usage: python3 redteam-hostile-http.py MODE. Prints the port it listens on (loopback), then
answers every request on every connection as MODE says:

- chunked: a 200 whose chunked body never ends (SSE content type);
- sse: a 200 text/event-stream sending comment lines forever;
- head: a status line, then header lines forever;
- drip: a status line one byte a second, never finished;
- redirect: a 307 to a remote host;
- length: a 200 that announces 1 GiB and sends 64 KiB;
- utf8: a 200 JSON body of invalid UTF-8;
- bomb: a 200 JSON body of arrays nested a million deep;
- pretend: a 200 `{"jsonrpc":"2.0","id":1,"result":{}}` to everything, whatever was asked;
- silent: accepts and reads, never answers.
"""

import socket
import sys
import threading
import time

MODE = sys.argv[1]


def read_head(conn):
    data = b""
    conn.settimeout(30)
    while b"\r\n\r\n" not in data and len(data) < 1 << 20:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            try:
                length = int(value.strip())
            except ValueError:
                length = 0
    while len(rest) < min(length, 1 << 24):
        chunk = conn.recv(65536)
        if not chunk:
            break
        rest += chunk
    return head


def reply(conn, status, headers, body):
    lines = [b"HTTP/1.1 " + status]
    lines += headers
    lines.append(b"content-length: " + str(len(body)).encode())
    conn.sendall(b"\r\n".join(lines) + b"\r\n\r\n" + body)


def serve(conn):
    try:
        while True:
            head = read_head(conn)
            if head is None:
                return
            if MODE == "chunked":
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                             b"transfer-encoding: chunked\r\n\r\n")
                while True:
                    conn.sendall(b"4000\r\n" + b"x" * 0x4000 + b"\r\n")
            elif MODE == "sse":
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                             b"cache-control: no-cache\r\n\r\n")
                while True:
                    conn.sendall(b": keep going " + b"z" * 4000 + b"\n\n")
            elif MODE == "head":
                conn.sendall(b"HTTP/1.1 200 OK\r\n")
                n = 0
                while True:
                    conn.sendall(b"x-filler-%d: %s\r\n" % (n, b"y" * 1000))
                    n += 1
            elif MODE == "drip":
                for byte in b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n":
                    conn.sendall(bytes([byte]))
                    time.sleep(1)
                time.sleep(3600)
            elif MODE == "redirect":
                reply(conn, b"307 Temporary Redirect",
                      [b"location: http://203.0.113.7:9/mcp"], b"")
            elif MODE == "length":
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                             b"content-length: 1073741824\r\n\r\n" + b" " * 65536)
                time.sleep(3600)
            elif MODE == "utf8":
                reply(conn, b"200 OK", [b"content-type: application/json"],
                      b'{"jsonrpc":"2.0","id":1,"result":{"x":"\xff\xfe\xc0\xaf"}}')
            elif MODE == "bomb":
                reply(conn, b"200 OK", [b"content-type: application/json"],
                      b"[" * 1000000 + b"]" * 1000000)
            elif MODE == "pretend":
                reply(conn, b"200 OK", [b"content-type: application/json",
                                        b"mcp-session-id: s1"],
                      b'{"jsonrpc":"2.0","id":1,"result":{}}')
            elif MODE == "silent":
                time.sleep(3600)
            else:
                return
    except OSError:
        return
    finally:
        try:
            conn.close()
        except OSError:
            pass


def main():
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    print(listener.getsockname()[1], flush=True)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


main()
