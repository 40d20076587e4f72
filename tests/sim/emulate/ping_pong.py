#!/usr/bin/env python3
"""A request/response exchange of small messages between two emulated hosts, for the
emulator's tests: the client sends one message over a TCP connection (TCP_NODELAY), waits
for the server's echo, and repeats.

  ping_pong.py server PORT SIZE COUNT        echo COUNT + 1 messages of SIZE bytes
  ping_pong.py client ADDR PORT SIZE COUNT   send them, print a JSON line

The client's line has the round trips in ms, "min_ms", "median_ms", "mean_ms", "p90_ms" and
"max_ms", over the COUNT exchanges after the first (which also pays for the first packets'
cold paths). Standard library only.
"""
import json
import socket
import statistics
import sys
import time

from peer_connection import connect_when_listening


def recv_exactly(sock, size):
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("peer closed")
        data += chunk
    return data


def server(port, size, count):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("0.0.0.0", port))
    listener.listen(1)
    conn, _ = listener.accept()
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for _ in range(count + 1):
        conn.sendall(recv_exactly(conn, size))
    conn.close()
    return 0


def client(addr, port, size, count):
    sock, _ = connect_when_listening(addr, port)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    message = b"\x5a" * size
    rtts = []
    for _ in range(count + 1):
        start = time.perf_counter()
        sock.sendall(message)
        recv_exactly(sock, size)
        rtts.append((time.perf_counter() - start) * 1e3)
    sock.close()
    rtts = sorted(rtts[1:])
    print(json.dumps({"role": "client", "size": size, "count": count, "min_ms": rtts[0],
                      "median_ms": statistics.median(rtts), "mean_ms": statistics.fmean(rtts),
                      "p90_ms": rtts[int(0.9 * (len(rtts) - 1))], "max_ms": rtts[-1]}),
          flush=True)
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "server":
        sys.exit(server(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])))
    sys.exit(client(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])))
