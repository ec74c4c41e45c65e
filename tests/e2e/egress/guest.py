# Runs inside the sandbox: each check prints "ok NAME" or raises.
# argv[1] is the check set: allowed, none_allowed, reserved, no_network, dns.
import errno, os, select, socket, struct, sys, time, urllib.request

INTERNET = "198.18.0.2"

def expect_errno(name, want, f):
    start = time.monotonic()
    try:
        f()
    except OSError as e:
        assert e.errno == want, "%s: errno %s, want %s" % (name, e.errno, want)
        took = time.monotonic() - start
        assert took < 2, "%s: took %.1f s" % (name, took)
        print("ok", name)
        return
    raise AssertionError("%s: no error" % name)

def connect(addr, family=socket.AF_INET):
    s = socket.socket(family, socket.SOCK_STREAM)
    try:
        s.connect(addr)
    finally:
        s.close()

def allowed():
    body = urllib.request.urlopen("http://%s:8080/" % INTERNET, timeout=10).read()
    assert body == b"hello from 198.18.0.2\n", body
    print("ok urllib")
    s = socket.create_connection((INTERNET, 8081), timeout=10)
    assert s.getpeername() == (INTERNET, 8081), s.getpeername()
    assert s.getsockname()[0] == "10.0.2.15" and s.getsockname()[1] != 0, s.getsockname()
    s.sendall(b"x" * 300000)
    s.shutdown(socket.SHUT_WR)
    reply = b""
    while True:
        more = s.recv(100)
        if not more:
            break
        reply += more
    assert reply == b"got 300000", reply
    s.close()
    print("ok half_close")
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.connect(("::ffff:" + INTERNET, 8080))
    assert s.getpeername()[:2] == ("::ffff:" + INTERNET, 8080), s.getpeername()
    s.close()
    print("ok v4_mapped")
    s = socket.socket()
    s.setblocking(False)
    r = s.connect_ex((INTERNET, 8080))
    assert r in (0, errno.EINPROGRESS), r
    _, w, _ = select.select([], [s], [], 10)
    assert w == [s]
    assert s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0
    assert s.connect_ex((INTERNET, 8080)) in (0, errno.EISCONN)
    s.close()
    print("ok nonblocking_connect")
    # epoll sees the host socket's readiness: writable once connected,
    # readable when the answer arrives.
    s = socket.socket()
    s.setblocking(False)
    ep = select.epoll()
    ep.register(s.fileno(), select.EPOLLOUT | select.EPOLLIN)
    s.connect_ex((INTERNET, 8080))
    events = ep.poll(10)
    assert events and events[0][1] & select.EPOLLOUT, events
    ep.modify(s.fileno(), select.EPOLLIN | select.EPOLLET)
    assert ep.poll(0.2) == [], "nothing to read yet"
    s.send(b"GET / HTTP/1.0\r\n\r\n")
    events = ep.poll(10)
    assert events and events[0][1] & select.EPOLLIN, events
    assert s.recv(100).startswith(b"HTTP/1.0 200")
    ep.close()
    s.close()
    print("ok epoll")
    # SO_RCVTIMEO bounds a blocking receive from a silent peer.
    s = socket.create_connection((INTERNET, 8081), timeout=None)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", 0, 300000))
    start = time.monotonic()
    try:
        s.recv(10)
        raise AssertionError("a silent peer answered")
    except BlockingIOError:
        pass
    took = time.monotonic() - start
    assert 0.25 < took < 5, took
    s.close()
    print("ok rcvtimeo")
    s = socket.socket()
    s.setblocking(False)
    r = s.connect_ex((INTERNET, 8089))
    if r == errno.EINPROGRESS:
        _, w, _ = select.select([], [s], [], 10)
        assert w == [s]
        r = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
    assert r == errno.ECONNREFUSED, r
    s.close()
    print("ok nonblocking_refused")
    expect_errno("refused", errno.ECONNREFUSED, lambda: connect((INTERNET, 8089)))
    expect_errno("port_not_allowed", errno.EPERM, lambda: connect((INTERNET, 8082)))
    # Loopback stays the sandbox's own.
    l = socket.socket()
    l.bind(("127.0.0.1", 0))
    l.listen()
    c = socket.create_connection(l.getsockname())
    c.close()
    l.close()
    print("ok loopback")
    reconnect()
    udp()

def reconnect():
    # After a refusal a TCP socket may connect again (as on Linux), and
    # each new destination is the policy's again.
    s = socket.socket()
    expect_errno("refused_then", errno.ECONNREFUSED, lambda: s.connect((INTERNET, 8089)))
    expect_errno("reconnect_reserved", errno.EPERM, lambda: s.connect(("10.77.0.1", 80)))
    expect_errno("reconnect_port_not_allowed", errno.EPERM, lambda: s.connect((INTERNET, 8082)))
    expect_errno("reconnect_loopback", errno.ENETUNREACH, lambda: s.connect(("127.0.0.1", 80)))
    s.connect((INTERNET, 8080))
    assert s.getpeername() == (INTERNET, 8080), s.getpeername()
    expect_errno("reconnect_connected", errno.EISCONN, lambda: s.connect(("10.77.0.1", 80)))
    s.close()
    print("ok reconnect")
    s = socket.socket()
    expect_errno("keepidle_zero", errno.EINVAL, lambda: s.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, 0))
    expect_errno("keepcnt_128", errno.EINVAL, lambda: s.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, 128))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, 30)
    s.connect((INTERNET, 8080))
    s.close()
    print("ok keepalive_ranges")
    # Two threads connecting one socket at once: the denied one never
    # goes out, whichever runs first.
    import threading
    for _ in range(20):
        s = socket.socket()
        results = []
        def go(addr):
            try:
                s.connect(addr)
                results.append((addr, 0))
            except OSError as e:
                results.append((addr, e.errno))
        ts = [threading.Thread(target=go, args=(a,)) for a in [(INTERNET, 8080), ("10.77.0.1", 80)]]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert (("10.77.0.1", 80), 0) not in results, results
        s.close()
    print("ok concurrent_connects")

def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(10)
    s.sendto(b"one", (INTERNET, 5300))
    data, peer = s.recvfrom(100)
    assert (data, peer) == (b"echo one", (INTERNET, 5300)), (data, peer)
    expect_errno("udp_port_not_allowed", errno.EPERM, lambda: s.sendto(b"x", (INTERNET, 5301)))
    expect_errno("udp_reserved", errno.EPERM, lambda: s.sendto(b"x", ("10.77.0.1", 5300)))
    s.close()
    c = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    c.settimeout(10)
    c.connect(("::ffff:" + INTERNET, 5300))
    assert c.getpeername()[:2] == ("::ffff:" + INTERNET, 5300), c.getpeername()
    assert c.getsockname()[0] == "::ffff:10.0.2.15" and c.getsockname()[1] != 0, c.getsockname()
    c.send(b"two")
    assert c.recv(100) == b"echo two"
    c.close()
    # connect(AF_UNSPEC) dissolves an outside association, as on Linux.
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    c.connect((INTERNET, 5300))
    unspec = struct.pack("H14x", 0)
    assert libc.connect(c.fileno(), unspec, len(unspec)) == 0, ctypes.get_errno()
    expect_errno("udp_unspec_send", errno.EDESTADDRREQ, lambda: c.send(b"x"))
    expect_errno("udp_unspec_peer", errno.ENOTCONN, c.getpeername)
    # And one reconnected into the sandbox sends there, not outside.
    local = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    local.bind(("127.0.0.1", 0))
    local.settimeout(10)
    c.connect((INTERNET, 5300))
    c.connect(local.getsockname())
    assert c.getpeername() == local.getsockname(), c.getpeername()
    c.send(b"inside")
    assert local.recv(100) == b"inside"
    c.close()
    local.close()
    print("ok udp_disconnect")
    # A socket connected out is bound as Linux binds it, to eth0's address
    # (the source toward the gateway) and a port; AF_UNSPEC gives both back.
    c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    c.settimeout(10)
    c.connect((INTERNET, 5300))
    name = c.getsockname()
    assert name[0] == "10.0.2.15" and name[1] != 0, name
    c.send(b"four")
    assert c.recv(100) == b"echo four"
    assert libc.connect(c.fileno(), unspec, len(unspec)) == 0, ctypes.get_errno()
    assert c.getsockname() == ("0.0.0.0", 0), c.getsockname()
    c.close()
    print("ok udp_sockname")
    # The sandbox's own datagrams still go through loopback.
    a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    a.bind(("127.0.0.1", 0))
    a.settimeout(10)
    a.sendto(b"local", a.getsockname())
    assert a.recvfrom(100) == (b"local", a.getsockname())
    a.close()
    print("ok udp")

def interfaces():
    names = [n for _, n in socket.if_nameindex()]
    assert names == ["lo", "eth0"], names
    with open("/proc/net/route") as f:
        default = f.readlines()[1].split()
    assert default[:3] == ["eth0", "00000000", "0202000A"], default
    with open("/proc/net/dev") as f:
        devs = [line.split(":")[0].strip() for line in f.readlines()[2:]]
    assert devs == ["lo", "eth0"], devs
    import subprocess
    addr = subprocess.run(["ip", "-4", "addr", "show", "eth0"], capture_output=True, text=True).stdout
    assert "inet 10.0.2.15/24" in addr, addr
    route = subprocess.run(["ip", "route"], capture_output=True, text=True).stdout
    assert "default via 10.0.2.2 dev eth0" in route, route
    print("ok interfaces")

def own_address():
    # eth0's address is the sandbox's own: bound, connected to and sent to
    # inside the sandbox (Linux delivers it through lo), with no rule.
    eth0 = "10.0.2.15"
    srv = socket.socket()
    srv.bind((eth0, 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    c = socket.create_connection((eth0, port), timeout=5)
    a, peer = srv.accept()
    assert peer[0] == eth0 and c.getsockname()[0] == eth0, (peer, c.getsockname())
    c.sendall(b"ping")
    assert a.recv(4) == b"ping"
    for s in (a, c, srv):
        s.close()
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("0.0.0.0", 0))
    rx.settimeout(5)
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", (eth0, rx.getsockname()[1]))
    data, src = rx.recvfrom(4)
    assert data == b"x" and src[0] == eth0, (data, src)
    expect_errno("other_on_eth0_subnet", errno.EADDRNOTAVAIL,
                 lambda: socket.socket().bind(("10.0.2.16", 0)))
    print("ok own_address")

def none_allowed():
    interfaces()
    own_address()
    expect_errno("no_rule", errno.EPERM, lambda: connect((INTERNET, 8080)))
    expect_errno("no_rule_v6", errno.EPERM, lambda: connect(("::ffff:" + INTERNET, 8080), socket.AF_INET6))

def reserved():
    for addr in ["169.254.169.254", "10.77.0.1"]:
        expect_errno("reserved " + addr, errno.EPERM, lambda: connect((addr, 80)))
    for addr in ["::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe", "::ffff:10.77.0.1"]:
        expect_errno("reserved " + addr, errno.EPERM, lambda: connect((addr, 80), socket.AF_INET6))
    body = urllib.request.urlopen("http://%s:8080/" % INTERNET, timeout=10).read()
    assert body.startswith(b"hello"), body
    print("ok star_allows_public")

def no_network():
    names = [n for _, n in socket.if_nameindex()]
    assert names == ["lo"], names
    with open("/proc/net/dev") as f:
        devs = [line.split(":")[0].strip() for line in f.readlines()[2:]]
    assert devs == ["lo"], devs
    print("ok only_lo")
    expect_errno("unreachable", errno.ENETUNREACH, lambda: connect((INTERNET, 8080)))

def dns_query(name, qid=0x1234):
    """A DNS query for NAME's A record, as bytes."""
    q = b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0"
    return struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0) + q + struct.pack(">HH", 1, 1)

def expect_nxdomain(check, name):
    start = time.monotonic()
    try:
        socket.getaddrinfo(name, 80)
    except socket.gaierror as e:
        assert e.errno == socket.EAI_NONAME, "%s: %s" % (check, e)
        took = time.monotonic() - start
        assert took < 2, "%s: took %.1f s" % (check, took)
        print("ok", check)
        return
    raise AssertionError("%s: %s resolved" % (check, name))

def dns():
    with open("/etc/resolv.conf") as f:
        conf = f.read()
    assert "nameserver 10.0.2.2" in conf.splitlines(), conf
    print("ok resolv_conf")
    body = urllib.request.urlopen("http://api.test:8080/", timeout=10).read()
    assert body == b"hello from 198.18.0.2\n", body
    print("ok name_urllib")
    expect_nxdomain("other_nxdomain", "other.test")
    expect_errno("other_address_eperm", errno.EPERM, lambda: connect(("198.18.0.3", 8080)))
    expect_errno("name_port_not_allowed", errno.EPERM, lambda: connect((INTERNET, 8081)))
    expect_nxdomain("exfil_nxdomain", "secret-data.exfil.test")
    # The resolver itself, asked by hand: the reply comes from 10.0.2.2:53.
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(5)
    s.sendto(dns_query("api.test"), ("10.0.2.2", 53))
    reply, sender = s.recvfrom(4096)
    assert sender == ("10.0.2.2", 53), sender
    assert reply[:2] == b"\x12\x34" and reply.endswith(socket.inet_aton(INTERNET)), reply
    s.close()
    print("ok resolver_udp")
    # write() and writev() on a socket connected to the resolver are
    # sends: each query reaches it and gets its answer.
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(5)
    s.connect(("10.0.2.2", 53))
    assert s.getsockname()[0] == "10.0.2.15" and s.getsockname()[1] != 0, s.getsockname()
    q = dns_query("api.test", 0x5678)
    assert os.write(s.fileno(), q) == len(q)
    reply = s.recv(4096)
    assert reply[:2] == b"\x56\x78" and reply.endswith(socket.inet_aton(INTERNET)), reply
    q = dns_query("api.test", 0x5679)
    assert os.writev(s.fileno(), [q[:7], q[7:]]) == len(q)
    reply = s.recv(4096)
    assert reply[:2] == b"\x56\x79" and reply.endswith(socket.inet_aton(INTERNET)), reply
    s.close()
    print("ok resolver_udp_write")
    # And over TCP, as glibc asks again for a truncated answer: two
    # queries on one connection, an allowed name and a denied one.
    s = socket.create_connection(("10.0.2.2", 53), timeout=5)
    for name, qid in [("api.test", 0x4321), ("secret-data.exfil.test", 0x4322)]:
        q = dns_query(name, qid)
        s.sendall(struct.pack(">H", len(q)) + q)
        head = b""
        while len(head) < 2:
            head += s.recv(2 - len(head))
        (n,) = struct.unpack(">H", head)
        reply = b""
        while len(reply) < n:
            more = s.recv(n - len(reply))
            assert more, "EOF after %d of %d bytes" % (len(reply), n)
            reply += more
        assert reply[:2] == struct.pack(">H", qid), reply
        rcode = reply[3] & 0xF
        if name == "api.test":
            assert rcode == 0 and reply.endswith(socket.inet_aton(INTERNET)), reply
        else:
            assert rcode == 3, reply
    s.close()
    print("ok resolver_tcp")
    # Any other DNS server is refused, even one an allowed name lives on.
    expect_errno("direct_dns_udp", errno.EPERM,
                 lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(dns_query("api.test"), (INTERNET, 53)))
    expect_errno("direct_dns_tcp", errno.EPERM, lambda: connect((INTERNET, 53)))
    expect_errno("direct_dot", errno.EPERM, lambda: connect((INTERNET, 853)))
    times = []
    for _ in range(20):
        start = time.monotonic()
        socket.getaddrinfo("api.test", 8080, socket.AF_INET, socket.SOCK_STREAM)
        times.append(time.monotonic() - start)
    times.sort()
    print("lookup_median_ms %.2f" % (times[len(times) // 2] * 1000))
    print("ok lookups")

{"allowed": allowed, "none_allowed": none_allowed, "reserved": reserved, "no_network": no_network,
 "dns": dns}[sys.argv[1]]()
print("done")
