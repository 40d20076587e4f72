#!/usr/bin/env python3
"""A request/response exchange of small messages between two emulated hosts, for the
emulator's tests: the client sends one message, waits for the echo, and repeats.

  ping_pong.py server PROTO PORT SIZE COUNT        echo COUNT messages of SIZE bytes
  ping_pong.py client PROTO ADDR PORT SIZE COUNT   send them, print a JSON line

PROTO is tcp (one connection, TCP_NODELAY) or udp. The client's line has the round trips in
ms: "min_ms", "median_ms", "mean_ms", "p90_ms", "max_ms" over the COUNT exchanges after the
first (which also pays for the connection and the first packets' cold paths).
Standard library only.
"""
import json
import socket
import statistics
import sys
import time


def recv_exactly(sock, size):
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("peer closed")
        data += chunk
    return data


def server(proto, port, size, count):
    if proto == "tcp":
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("0.0.0.0", port))
        listener.listen(1)
        conn, _ = listener.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(count + 1):
            conn.sendall(recv_exactly(conn, size))
        conn.close()
    else:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind(("0.0.0.0", port))
        answered = 0
        while answered < count + 1:
            data, peer = sock.recvfrom(65536)
            if data == b"hello":  # the client's probe, before the timed exchanges
                sock.sendto(data, peer)
                continue
            sock.sendto(data, peer)
            answered += 1
    return 0


def client(proto, addr, port, size, count):
    message = b"\x5a" * size
    deadline = time.time() + 20
    if proto == "tcp":
        while True:  # the server may not be listening yet
            try:
                sock = socket.create_connection((addr, port), timeout=30)
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.05)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def exchange():
            sock.sendall(message)
            recv_exactly(sock, size)
    else:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.connect((addr, port))
        sock.settimeout(0.2)
        while True:  # until the server answers
            try:
                sock.send(b"hello")
                if sock.recv(65536) == b"hello":
                    break
            except OSError:
                if time.time() > deadline:
                    raise
        sock.settimeout(30)

        def exchange():
            sock.send(message)
            sock.recv(65536)
    rtts = []
    for _ in range(count + 1):
        start = time.perf_counter()
        exchange()
        rtts.append((time.perf_counter() - start) * 1e3)
    sock.close()
    rtts = sorted(rtts[1:])
    print(json.dumps({"role": "client", "proto": proto, "size": size, "count": count,
                      "min_ms": rtts[0], "median_ms": statistics.median(rtts),
                      "mean_ms": statistics.fmean(rtts),
                      "p90_ms": rtts[int(0.9 * (len(rtts) - 1))], "max_ms": rtts[-1]}),
          flush=True)
    return 0


if __name__ == "__main__":
    proto = sys.argv[2]
    if sys.argv[1] == "server":
        sys.exit(server(proto, int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])))
    sys.exit(client(proto, sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])))
