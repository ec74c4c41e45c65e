/* husk-bench's per-operation workloads: `ops NAME ITERATIONS [DIR]` loops
 * ITERATIONS of one operation and prints the mean microseconds per
 * operation on stdout, timed inside the program so that the cost of
 * starting it (and its sandbox) is not counted. DIR is where the file
 * workloads write (the server's IPv4 address for the egress ones). Built static, so that every runtime runs the same code. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BLOCK (64 * 1024)
#define IDLE_PIPES 400
#define POLLERS 100

static const char *dir = "/tmp";
static char block[BLOCK];

static void die(const char *what) {
    fprintf(stderr, "ops: %s: %s\n", what, strerror(errno));
    exit(1);
}

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static void path_in_dir(char *buf, size_t len, const char *name) {
    snprintf(buf, len, "%s/%s.%d", dir, name, (int)getpid());
}

static void full_write(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) die("write");
        p += w;
        n -= (size_t)w;
    }
}

/* full_write and full_read for the egress client's sockets, with send
 * and recv: runsc's host-network sockets (runsc do --network=host, the
 * egress rows' runsc column) fail a blocking write or read with EAGAIN
 * once the host socket would block, but not send and recv. */
static void full_send(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n > 0) {
        ssize_t w = send(fd, p, n, 0);
        if (w < 0) die("send");
        p += w;
        n -= (size_t)w;
    }
}

static void full_recv(int fd, void *buf, size_t n) {
    char *p = buf;
    while (n > 0) {
        ssize_t r = recv(fd, p, n, 0);
        if (r <= 0) die("recv");
        p += r;
        n -= (size_t)r;
    }
}

static void full_read(int fd, void *buf, size_t n) {
    char *p = buf;
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r <= 0) die("read");
        p += r;
        n -= (size_t)r;
    }
}

static void op_getppid(long n) {
    for (long i = 0; i < n; i++) syscall(SYS_getppid);
}

static void op_clock_gettime(long n) {
    struct timespec t;
    for (long i = 0; i < n; i++) clock_gettime(CLOCK_MONOTONIC, &t);
}

static void op_open_close(long n) {
    for (long i = 0; i < n; i++) {
        int fd = open("/etc/passwd", O_RDONLY | O_CLOEXEC);
        if (fd < 0) die("open /etc/passwd");
        close(fd);
    }
}

static void op_stat(long n) {
    struct stat st;
    for (long i = 0; i < n; i++)
        if (stat("/etc/passwd", &st) < 0) die("stat /etc/passwd");
}

static void op_create_unlink(long n) {
    char p[4096];
    path_in_dir(p, sizeof p, "create");
    for (long i = 0; i < n; i++) {
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0) die("create");
        full_write(fd, "0123456789abcdef", 16);
        close(fd);
        if (unlink(p) < 0) die("unlink");
    }
}

/* Writes n blocks to a new file; the timed part when `timed` is set. */
static double write_file(const char *p, long n) {
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) die("create");
    double t0 = now_us();
    for (long i = 0; i < n; i++) full_write(fd, block, BLOCK);
    double t = now_us() - t0;
    close(fd);
    return t;
}

static double op_seq_write(long n) {
    char p[4096];
    path_in_dir(p, sizeof p, "seqw");
    double t = write_file(p, n);
    unlink(p);
    return t;
}

static double op_seq_read(long n) {
    char p[4096];
    path_in_dir(p, sizeof p, "seqr");
    write_file(p, n);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0) die("open");
    double t0 = now_us();
    for (long i = 0; i < n; i++) full_read(fd, block, BLOCK);
    double t = now_us() - t0;
    close(fd);
    unlink(p);
    return t;
}

/* A file of RAND_FILE bytes for the random-access rows, written untimed. */
#define RAND_FILE (16L << 20)
#define RAND_BLOCK 4096

static int rand_file(char *p, size_t len) {
    path_in_dir(p, len, "rand");
    int fd = open(p, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) die("create");
    for (long i = 0; i < RAND_FILE / BLOCK; i++) full_write(fd, block, BLOCK);
    return fd;
}

/* The offset of the i-th access: a fixed pseudo-random sequence of 4 KiB
 * blocks (an LCG), the same under every runtime. */
static off_t rand_offset(uint64_t *state) {
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (off_t)((*state >> 33) % (RAND_FILE / RAND_BLOCK)) * RAND_BLOCK;
}

/* 4 KiB pread (or pwrite) at random offsets of a 16 MiB file. */
static double rand_io(long n, int writing) {
    char p[4096];
    int fd = rand_file(p, sizeof p);
    uint64_t state = 1;
    double t0 = now_us();
    for (long i = 0; i < n; i++) {
        off_t off = rand_offset(&state);
        ssize_t done = writing ? pwrite(fd, block, RAND_BLOCK, off) : pread(fd, block, RAND_BLOCK, off);
        if (done != RAND_BLOCK) die(writing ? "pwrite" : "pread");
    }
    double t = now_us() - t0;
    close(fd);
    unlink(p);
    return t;
}

static double op_rand_read(long n) { return rand_io(n, 0); }
static double op_rand_write(long n) { return rand_io(n, 1); }

/* One byte there and back between parent and child over fds a/b. */
static double ping_pong(long n, int pa[2], int pb[2]) {
    char c = 'x';
    pid_t pid = fork();
    if (pid < 0) die("fork");
    if (pid == 0) {
        for (long i = 0; i < n; i++) {
            full_read(pa[0], &c, 1);
            full_write(pb[1], &c, 1);
        }
        _exit(0);
    }
    double t0 = now_us();
    for (long i = 0; i < n; i++) {
        full_write(pa[1], &c, 1);
        full_read(pb[0], &c, 1);
    }
    double t = now_us() - t0;
    waitpid(pid, NULL, 0);
    return t;
}

static double op_pipe_pingpong(long n) {
    int a[2], b[2];
    if (pipe(a) < 0 || pipe(b) < 0) die("pipe");
    return ping_pong(n, a, b);
}

/* Waits with select until `fd` is readable. */
static void select_readable(int fd) {
    fd_set r;
    FD_ZERO(&r);
    FD_SET(fd, &r);
    if (select(fd + 1, &r, NULL, NULL, NULL) != 1) die("select");
}

/* pipe ping-pong where each side selects before it reads. */
static double op_select_pingpong(long n) {
    int a[2], b[2];
    char c = 'x';
    if (pipe(a) < 0 || pipe(b) < 0) die("pipe");
    pid_t pid = fork();
    if (pid < 0) die("fork");
    if (pid == 0) {
        for (long i = 0; i < n; i++) {
            select_readable(a[0]);
            full_read(a[0], &c, 1);
            full_write(b[1], &c, 1);
        }
        _exit(0);
    }
    double t0 = now_us();
    for (long i = 0; i < n; i++) {
        full_write(a[1], &c, 1);
        select_readable(b[0]);
        full_read(b[0], &c, 1);
    }
    double t = now_us() - t0;
    waitpid(pid, NULL, 0);
    return t;
}

struct poller {
    int in;     /* its own pipe's read end */
    int answer; /* the shared answer pipe's write end */
};

/* Polls its own pipe; answers each byte with one on the shared pipe
 * until the driver closes its pipe. */
static void *poller(void *arg) {
    struct poller *p = arg;
    char c;
    for (;;) {
        struct pollfd pfd = {.fd = p->in, .events = POLLIN};
        if (poll(&pfd, 1, -1) != 1) die("poll");
        ssize_t r = read(p->in, &c, 1);
        if (r == 0) return NULL;
        if (r < 0) die("read");
        full_write(p->answer, &c, 1);
    }
}

/* POLLERS threads each poll a pipe of their own; the driver writes one
 * pipe at a time and waits for that poller's answer. With a wait queue
 * per pipe a write wakes one poller, not all of them. */
static double op_pollers_100(long n) {
    static struct poller ps[POLLERS];
    pthread_t ts[POLLERS];
    int out[POLLERS], answer[2];
    if (pipe(answer) < 0) die("pipe");
    for (int i = 0; i < POLLERS; i++) {
        int p[2];
        if (pipe(p) < 0) die("pipe");
        ps[i] = (struct poller){.in = p[0], .answer = answer[1]};
        out[i] = p[1];
        if (pthread_create(&ts[i], NULL, poller, &ps[i]) != 0) die("pthread_create");
    }
    char c = 'x';
    double t0 = now_us();
    for (long i = 0; i < n; i++) {
        full_write(out[i % POLLERS], &c, 1);
        full_read(answer[0], &c, 1);
    }
    double t = now_us() - t0;
    for (int i = 0; i < POLLERS; i++) {
        close(out[i]);
        pthread_join(ts[i], NULL);
        close(ps[i].in);
    }
    close(answer[0]);
    close(answer[1]);
    return t;
}

static double op_unix_pingpong(long n) {
    int s[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, s) < 0) die("socketpair");
    /* The child reads and writes s[1], the parent s[0]. */
    int a[2] = {s[1], s[0]}, b[2] = {s[0], s[1]};
    return ping_pong(n, a, b);
}

static void op_fork_wait(long n) {
    for (long i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid < 0) die("fork");
        if (pid == 0) _exit(0);
        if (waitpid(pid, NULL, 0) < 0) die("waitpid");
    }
}

static void op_fork_exec_wait(long n) {
    for (long i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid < 0) die("fork");
        if (pid == 0) {
            execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        int st;
        if (waitpid(pid, &st, 0) < 0) die("waitpid");
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "ops: /bin/true failed\n");
            exit(1);
        }
    }
}

/* n page faults: map, touch every page, unmap, in 16 MiB rounds. */
static void op_page_fault(long n) {
    long page = sysconf(_SC_PAGESIZE);
    long per = (16L << 20) / page;
    for (long done = 0; done < n; done += per) {
        long pages = n - done < per ? n - done : per;
        char *m = mmap(NULL, (size_t)(pages * page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) die("mmap");
        for (long i = 0; i < pages; i++) m[i * page] = 1;
        munmap(m, (size_t)(pages * page));
    }
}

static void *nothing(void *arg) { return arg; }

static void op_thread_create_join(long n) {
    for (long i = 0; i < n; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, nothing, NULL) != 0) die("pthread_create");
        pthread_join(t, NULL);
    }
}

static uint32_t turn;
static long futex_rounds;

static void futex_wait_for(uint32_t want) {
    uint32_t v;
    while ((v = __atomic_load_n(&turn, __ATOMIC_ACQUIRE)) != want)
        syscall(SYS_futex, &turn, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
}

static void futex_hand_to(uint32_t to) {
    __atomic_store_n(&turn, to, __ATOMIC_RELEASE);
    syscall(SYS_futex, &turn, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void *futex_partner(void *arg) {
    for (long i = 0; i < futex_rounds; i++) {
        futex_wait_for(1);
        futex_hand_to(0);
    }
    return arg;
}

static double op_futex_pingpong(long n) {
    pthread_t t;
    futex_rounds = n;
    if (pthread_create(&t, NULL, futex_partner, NULL) != 0) die("pthread_create");
    double t0 = now_us();
    for (long i = 0; i < n; i++) {
        futex_hand_to(1);
        futex_wait_for(0);
    }
    double took = now_us() - t0;
    pthread_join(t, NULL);
    return took;
}

/* A readiness round trip on one pipe while IDLE_PIPES others sit idle in
 * the same epoll set. */
static double op_epoll_idle(long n) {
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) die("epoll_create1");
    for (int i = 0; i < IDLE_PIPES; i++) {
        int p[2];
        if (pipe(p) < 0) die("pipe");
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = p[0]};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) < 0) die("epoll_ctl");
    }
    int live[2];
    if (pipe(live) < 0) die("pipe");
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = live[0]};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, live[0], &ev) < 0) die("epoll_ctl");
    char c = 'x';
    double t0 = now_us();
    for (long i = 0; i < n; i++) {
        full_write(live[1], &c, 1);
        struct epoll_event got;
        if (epoll_wait(ep, &got, 1, -1) != 1 || got.data.fd != live[0]) die("epoll_wait");
        full_read(live[0], &c, 1);
    }
    return now_us() - t0;
}

/* n blocks of 64 KiB from a child to the parent over loopback TCP. */
static double op_tcp_loopback(long n) {
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (l < 0) die("socket");
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    if (bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 1) < 0) die("bind/listen");
    if (getsockname(l, (struct sockaddr *)&a, &alen) < 0) die("getsockname");
    pid_t pid = fork();
    if (pid < 0) die("fork");
    if (pid == 0) {
        int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a) < 0) die("connect");
        for (long i = 0; i < n; i++) full_write(c, block, BLOCK);
        close(c);
        _exit(0);
    }
    int s = accept(l, NULL, NULL);
    if (s < 0) die("accept");
    double t0 = now_us();
    full_read(s, block, 1);
    for (long left = (long)BLOCK * n - 1; left > 0;) {
        ssize_t r = read(s, block, left < BLOCK ? (size_t)left : BLOCK);
        if (r <= 0) die("read");
        left -= r;
    }
    double t = now_us() - t0;
    waitpid(pid, NULL, 0);
    return t;
}

/* n loopback TCP connections, one at a time: the child connects and waits
 * for the parent to accept and close (the server closes first, so the
 * client's ephemeral ports do not linger in TIME_WAIT). */
static double op_tcp_connect(long n) {
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (l < 0) die("socket");
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    if (bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 16) < 0) die("bind/listen");
    if (getsockname(l, (struct sockaddr *)&a, &alen) < 0) die("getsockname");
    pid_t pid = fork();
    if (pid < 0) die("fork");
    if (pid == 0) {
        for (long i = 0; i < n; i++) {
            char c;
            int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) < 0) die("connect");
            if (read(s, &c, 1) != 0) die("read to EOF");
            close(s);
        }
        _exit(0);
    }
    double t0 = now_us();
    for (long i = 0; i < n; i++) {
        int s = accept(l, NULL, NULL);
        if (s < 0) die("accept");
        close(s);
    }
    int st;
    if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "ops: the connecting child failed\n");
        exit(1);
    }
    return now_us() - t0;
}

/* The egress rows' port on the far side of the bench's veth pair. */
#define EGRESS_PORT 8090

static struct sockaddr_in egress_addr(void) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(EGRESS_PORT)};
    if (inet_pton(AF_INET, dir, &a.sin_addr) != 1) {
        fprintf(stderr, "ops: %s is not an IPv4 address\n", dir);
        exit(2);
    }
    return a;
}

/* `ops tcp_sink 1 ADDR`: the egress row's server, run natively in the
 * bench's far namespace until killed. Per connection it reads to EOF and
 * answers the count of bytes it got, so that a client's timing ends when
 * its data arrived, and the client can check that all of it did. */
static void op_tcp_sink(long n) {
    (void)n;
    struct sockaddr_in a = egress_addr();
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0) die("socket");
    if (bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 4) < 0) die("bind/listen");
    for (;;) {
        int s = accept(l, NULL, NULL);
        if (s < 0) die("accept");
        uint64_t got = 0;
        for (ssize_t r; (r = read(s, block, BLOCK)) > 0;) got += (uint64_t)r;
        full_write(s, &got, sizeof got);
        close(s);
    }
}

/* n blocks of 64 KiB to `tcp_sink` at ADDR, until its answer (which must
 * count them all). */
static double op_tcp_egress(long n) {
    struct sockaddr_in a = egress_addr();
    int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a) < 0) die("connect");
    double t0 = now_us();
    for (long i = 0; i < n; i++) full_send(c, block, BLOCK);
    if (shutdown(c, SHUT_WR) < 0) die("shutdown");
    uint64_t got;
    full_recv(c, &got, sizeof got);
    double t = now_us() - t0;
    if (got != (uint64_t)n * BLOCK) {
        fprintf(stderr, "ops: the server got %llu bytes of %llu\n", (unsigned long long)got,
                (unsigned long long)n * BLOCK);
        exit(1);
    }
    close(c);
    return t;
}

/* n connections to `tcp_sink` at ADDR, each closed at once (the sink
 * answers 0 bytes got): the gateway's cost per connection, its policy
 * check and host socket included. */
static double op_tcp_egress_connect(long n) {
    struct sockaddr_in a = egress_addr();
    double t0 = now_us();
    for (long i = 0; i < n; i++) {
        int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a) < 0) die("connect");
        if (shutdown(c, SHUT_WR) < 0) die("shutdown");
        uint64_t got;
        full_recv(c, &got, sizeof got);
        if (got != 0) {
            fprintf(stderr, "ops: the server got %llu bytes of none\n", (unsigned long long)got);
            exit(1);
        }
        close(c);
    }
    return now_us() - t0;
}

/* n A queries for bench.test to the first nameserver of /etc/resolv.conf
 * (under husk do the sandbox's resolver, which forwards an allowed name
 * upstream; natively the bench's dnsmasq itself), one at a time, each
 * of which must be answered NOERROR with an answer. */
static double op_dns_lookup(long n) {
    FILE *f = fopen("/etc/resolv.conf", "r");
    if (!f) die("/etc/resolv.conf");
    char line[256], ns[64] = "";
    while (fgets(line, sizeof line, f))
        if (sscanf(line, " nameserver %63s", ns) == 1) break;
    fclose(f);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(53)};
    if (inet_pton(AF_INET, ns, &a.sin_addr) != 1) {
        fprintf(stderr, "ops: no IPv4 nameserver in /etc/resolv.conf\n");
        exit(1);
    }
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct timeval tv = {.tv_sec = 5};
    if (s < 0 || setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0) die("dns socket");
    if (connect(s, (struct sockaddr *)&a, sizeof a) < 0) die("dns connect");
    unsigned char q[] = {0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0,
                         5, 'b', 'e', 'n', 'c', 'h', 4, 't', 'e', 's', 't', 0, 0, 1, 0, 1};
    unsigned char r[512];
    double t0 = now_us();
    for (long i = 0; i < n; i++) {
        q[0] = (unsigned char)(i >> 8);
        q[1] = (unsigned char)i;
        if (send(s, q, sizeof q, 0) != (ssize_t)sizeof q) die("dns send");
        ssize_t got;
        do {
            got = recv(s, r, sizeof r, 0);
            if (got < 0) die("dns recv");
        } while (got < 12 || r[0] != q[0] || r[1] != q[1]);
        if ((r[3] & 0xf) != 0 || (r[6] | r[7]) == 0) {
            fprintf(stderr, "ops: bench.test answered rcode %d with %d answers\n", r[3] & 0xf, r[6] << 8 | r[7]);
            exit(1);
        }
    }
    double t = now_us() - t0;
    close(s);
    return t;
}

struct op {
    const char *name;
    void (*plain)(long);     /* timed around the whole loop */
    double (*timed)(long);   /* times itself, returns microseconds */
};

static const struct op ops[] = {
    {"getppid", op_getppid, NULL},
    {"clock_gettime", op_clock_gettime, NULL},
    {"open_close", op_open_close, NULL},
    {"stat", op_stat, NULL},
    {"create_unlink", op_create_unlink, NULL},
    {"seq_write", NULL, op_seq_write},
    {"seq_read", NULL, op_seq_read},
    {"rand_read", NULL, op_rand_read},
    {"rand_write", NULL, op_rand_write},
    {"pipe_pingpong", NULL, op_pipe_pingpong},
    {"unix_pingpong", NULL, op_unix_pingpong},
    {"select_pingpong", NULL, op_select_pingpong},
    {"pollers_100", NULL, op_pollers_100},
    {"fork_wait", op_fork_wait, NULL},
    {"fork_exec_wait", op_fork_exec_wait, NULL},
    {"page_fault", op_page_fault, NULL},
    {"thread_create_join", op_thread_create_join, NULL},
    {"futex_pingpong", NULL, op_futex_pingpong},
    {"epoll_idle", NULL, op_epoll_idle},
    {"tcp_loopback", NULL, op_tcp_loopback},
    {"tcp_connect", NULL, op_tcp_connect},
    {"tcp_sink", op_tcp_sink, NULL},
    {"tcp_egress", NULL, op_tcp_egress},
    {"tcp_egress_connect", NULL, op_tcp_egress_connect},
    {"dns_lookup", NULL, op_dns_lookup},
};

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: ops NAME ITERATIONS [DIR]\n");
        return 2;
    }
    long n = atol(argv[2]);
    if (argc > 3) dir = argv[3];
    if (n <= 0) {
        fprintf(stderr, "ops: ITERATIONS must be positive\n");
        return 2;
    }
    memset(block, 'b', sizeof block);
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        if (strcmp(ops[i].name, argv[1]) != 0) continue;
        double us;
        if (ops[i].plain) {
            double t0 = now_us();
            ops[i].plain(n);
            us = now_us() - t0;
        } else {
            us = ops[i].timed(n);
        }
        printf("%.4f\n", us / (double)n);
        return 0;
    }
    fprintf(stderr, "ops: unknown operation %s\n", argv[1]);
    return 2;
}
