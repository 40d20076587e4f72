#!/usr/bin/env python3
"""A bulk TCP transfer between two emulated hosts, for the emulator's tests.

  bulk_tcp.py server PORT BYTES         receive BYTES, answer one byte, print a JSON line
  bulk_tcp.py client ADDR PORT BYTES    send BYTES, wait for the answer, print a JSON line

The client's line has "seconds" (from connect to the answer: the transfer's duration as the
sender sees it), "goodput_bps" and "retransmissions" (RetransSegs of this namespace's kernel,
/proc/net/snmp). Standard library only.
"""
import json
import socket
import sys
import time

from peer_connection import connect_when_listening


def retrans_segs():
    with open("/proc/net/snmp") as f:
        lines = [line.split() for line in f if line.startswith("Tcp:")]
    header, values = lines[0], lines[1]
    return int(values[header.index("RetransSegs")])


def server(port, total):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("0.0.0.0", port))
    listener.listen(1)
    conn, peer = listener.accept()
    received = 0
    while received < total:
        chunk = conn.recv(1 << 20)
        if not chunk:
            break
        received += len(chunk)
    conn.sendall(b"k")
    conn.close()
    print(json.dumps({"role": "server", "received": received, "peer": peer[0]}), flush=True)
    return 0 if received == total else 1


def client(addr, port, total):
    before = retrans_segs()
    sock, start = connect_when_listening(addr, port)
    block = b"\x5a" * (1 << 16)
    sent = 0
    while sent < total:
        n = min(len(block), total - sent)
        sock.sendall(block[:n])
        sent += n
    answer = sock.recv(1)
    seconds = time.time() - start
    sock.close()
    print(json.dumps({"role": "client", "sent": sent, "answer": answer.decode(),
                      "seconds": seconds, "goodput_bps": 8 * sent / seconds,
                      "retransmissions": retrans_segs() - before}), flush=True)
    return 0 if answer == b"k" else 1


if __name__ == "__main__":
    if sys.argv[1] == "server":
        sys.exit(server(int(sys.argv[2]), int(sys.argv[3])))
    sys.exit(client(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
