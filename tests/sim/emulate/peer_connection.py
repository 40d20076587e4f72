"""The client side's connection for the emulator's test programs, whose server is started at
the same moment on another host and may not be listening yet."""
import socket
import time


def connect_when_listening(addr, port, patience_s=20):
    """Connects to addr:port, trying again every 50 ms for patience_s while it is refused.
    Returns the socket and the time.time() at which the attempt that succeeded began."""
    deadline = time.time() + patience_s
    while True:
        try:
            start = time.time()
            return socket.create_connection((addr, port), timeout=30), start
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.05)
