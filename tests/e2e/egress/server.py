# The "internet" of the egress tests: TCP listeners on the addresses given
# as ADDR:PORT:MODE arguments, run inside the internet-side network
# namespace. Every accepted connection is logged (listener, peer) to LOG.
# MODE http answers one HTTP request; eof reads to end of file and then
# answers "got N" (a half-close test); bulk sends the number of bytes
# asked for; udp echoes each datagram back, prefixed with "echo ". READY
# is written once all listen.
import socket, sys, threading

log_path, ready_path = sys.argv[1], sys.argv[2]
lock = threading.Lock()

def note(line):
    with lock, open(log_path, "a") as f:
        f.write(line + "\n")

def serve(conn, where, mode):
    with conn:
        conn.settimeout(10)
        if mode == "http":
            data = b""
            while b"\r\n\r\n" not in data:
                more = conn.recv(4096)
                if not more:
                    break
                data += more
            body = ("hello from " + where + "\n").encode()
            conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        elif mode == "eof":
            n = 0
            while True:
                more = conn.recv(65536)
                if not more:
                    break
                n += len(more)
            conn.sendall(b"got %d" % n)
        elif mode == "bulk":
            size = int(conn.recv(64).decode())
            chunk = b"x" * 65536
            while size > 0:
                conn.sendall(chunk[: min(size, len(chunk))])
                size -= len(chunk)

def echo(s, host, port):
    while True:
        data, peer = s.recvfrom(65536)
        note("%s:%s udp from %s" % (host, port, peer[0]))
        s.sendto(b"echo " + data, peer)

def listen(spec):
    host, port, mode = spec.rsplit(":", 2)
    host = host.strip("[]")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    if mode == "udp":
        s = socket.socket(family, socket.SOCK_DGRAM)
        s.bind((host, int(port)))
        threading.Thread(target=echo, args=(s, host, port), daemon=True).start()
        return
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, int(port)))
    s.listen(64)
    def loop():
        while True:
            conn, peer = s.accept()
            note("%s:%s from %s" % (host, port, peer[0]))
            threading.Thread(target=serve, args=(conn, host, mode), daemon=True).start()
    threading.Thread(target=loop, daemon=True).start()

for spec in sys.argv[3:]:
    listen(spec)
open(ready_path, "w").close()
threading.Event().wait()
