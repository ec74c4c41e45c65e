/* fifo.c — named pipes and pipes opened by name, as Linux's fifo_open:
 * a blocking open of a FIFO waits for the other end (a reader for a
 * writer, a writer for a reader) and a signal interrupts the wait;
 * O_NONBLOCK readers open at once, O_NONBLOCK writers without a reader
 * get ENXIO, O_RDWR never waits; a reader opened O_NONBLOCK before any
 * writer does not report POLLHUP; the pipe's bytes go with its last end;
 * opening /proc/self/fd/N or /dev/stdin of a pipe opens that pipe, and
 * never waits for a partner there. An
 * alarm ends a hang. */
#include "check.h"
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>

static void nap_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void on_alarm(int sig) { (void)sig; }

/* A child that opens `path` with `flags` after `ms`, writes `msg` (when
 * opened for writing) or reads and checks it, then exits 0. */
static pid_t other_end_later(const char *path, int flags, long ms, const char *msg) {
    pid_t p = CHECK_OK(fork());
    if (p == 0) {
        nap_ms(ms);
        int fd = open(path, flags);
        if (fd < 0)
            _exit(10);
        size_t n = strlen(msg);
        if ((flags & O_ACCMODE) == O_WRONLY) {
            if (write(fd, msg, n) != (ssize_t)n)
                _exit(11);
        } else {
            char buf[32] = {0};
            if (read(fd, buf, sizeof buf) != (ssize_t)n || memcmp(buf, msg, n) != 0)
                _exit(12);
        }
        _exit(0);
    }
    return p;
}

static void reap_ok(pid_t p) {
    int st;
    CHECK_EQ(waitpid(p, &st, 0), p);
    CHECK(WIFEXITED(st));
    CHECK_EQ(WEXITSTATUS(st), 0);
}

int main(void) {
    alarm(30);
    const char *path = scratch_path("fifo");
    CHECK_OK(mkfifo(path, 0600));
    struct stat st;
    CHECK_OK(stat(path, &st));
    CHECK(S_ISFIFO(st.st_mode));

    /* Non-blocking opens: a writer needs a reader. */
    CHECK_ERR(open(path, O_WRONLY | O_NONBLOCK), ENXIO);
    int r = CHECK_OK(open(path, O_RDONLY | O_NONBLOCK));
    struct pollfd p = {r, POLLIN, 0};
    CHECK_EQ(poll(&p, 1, 0), 0); /* no writer yet: no POLLHUP */
    char buf[32];
    CHECK_EQ(read(r, buf, sizeof buf), 0);
    int w = CHECK_OK(open(path, O_WRONLY | O_NONBLOCK));
    CHECK_EQ(write(w, "abc", 3), 3);
    CHECK_EQ(poll(&p, 1, 0), 1);
    CHECK_EQ(p.revents, POLLIN);
    CHECK_EQ(read(r, buf, sizeof buf), 3);
    CHECK_MEM(buf, "abc", 3);
    close(w);
    CHECK_EQ(poll(&p, 1, 0), 1);
    CHECK_EQ(p.revents, POLLHUP); /* the writer came and went */
    close(r);

    /* O_RDWR never waits, and reads what it wrote. */
    int rw = CHECK_OK(open(path, O_RDWR));
    CHECK_EQ(write(rw, "xy", 2), 2);
    CHECK_EQ(read(rw, buf, sizeof buf), 2);
    CHECK_MEM(buf, "xy", 2);
    /* Bytes left when the last end closes are gone. */
    CHECK_EQ(write(rw, "lost", 4), 4);
    close(rw);
    r = CHECK_OK(open(path, O_RDONLY | O_NONBLOCK));
    CHECK_EQ(read(r, buf, sizeof buf), 0); /* empty, and no writer: EOF */
    close(r);

    /* A blocking reader waits for a writer, a blocking writer for a
     * reader. */
    pid_t c = other_end_later(path, O_WRONLY, 100, "hello");
    r = CHECK_OK(open(path, O_RDONLY));
    CHECK_EQ(read(r, buf, sizeof buf), 5);
    CHECK_MEM(buf, "hello", 5);
    CHECK_EQ(read(r, buf, sizeof buf), 0);
    close(r);
    reap_ok(c);
    c = other_end_later(path, O_RDONLY, 100, "world");
    w = CHECK_OK(open(path, O_WRONLY));
    CHECK_EQ(write(w, "world", 5), 5);
    close(w);
    reap_ok(c);

    /* A signal interrupts the wait (no SA_RESTART: EINTR). */
    struct sigaction sa = {0};
    sa.sa_handler = on_alarm;
    CHECK_OK(sigaction(SIGALRM, &sa, NULL));
    struct itimerval it = {{0, 0}, {0, 100000}};
    CHECK_OK(setitimer(ITIMER_REAL, &it, NULL));
    CHECK_ERR(open(path, O_WRONLY), EINTR);
    CHECK_OK(setitimer(ITIMER_REAL, &it, NULL));
    CHECK_ERR(open(path, O_RDONLY), EINTR);
    /* The interrupted opens left no end behind. */
    CHECK_ERR(open(path, O_WRONLY | O_NONBLOCK), ENXIO);
    alarm(30);

    /* A pipe opened by its /proc/self/fd name is that pipe. */
    int fds[2];
    CHECK_OK(pipe(fds));
    char name[64];
    snprintf(name, sizeof name, "/proc/self/fd/%d", fds[1]);
    int w2 = CHECK_OK(open(name, O_WRONLY));
    snprintf(name, sizeof name, "/proc/self/fd/%d", fds[0]);
    int r2 = CHECK_OK(open(name, O_RDONLY));
    CHECK_EQ(write(w2, "via", 3), 3);
    CHECK_EQ(read(fds[0], buf, sizeof buf), 3);
    CHECK_MEM(buf, "via", 3);
    CHECK_EQ(write(fds[1], "both", 4), 4);
    CHECK_EQ(read(r2, buf, sizeof buf), 4);
    CHECK_MEM(buf, "both", 4);
    close(r2);
    close(w2);

    /* /dev/stdin when standard input is a pipe. */
    c = CHECK_OK(fork());
    if (c == 0) {
        if (dup2(fds[0], 0) != 0)
            _exit(1);
        int in = open("/dev/stdin", O_RDONLY);
        if (in < 0)
            _exit(2);
        char b[8];
        _exit(read(in, b, sizeof b) == 5 && memcmp(b, "stdin", 5) == 0 ? 0 : 3);
    }
    CHECK_EQ(write(fds[1], "stdin", 5), 5);
    reap_ok(c);
    close(fds[0]);
    close(fds[1]);

    /* Unlike a FIFO, a pipe opened by name never waits for a partner: a
     * reader after the last writer reads what is left, then EOF... */
    CHECK_OK(pipe(fds));
    CHECK_EQ(write(fds[1], "left", 4), 4);
    close(fds[1]);
    snprintf(name, sizeof name, "/proc/self/fd/%d", fds[0]);
    int late = CHECK_OK(open(name, O_RDONLY));
    CHECK_EQ(read(late, buf, sizeof buf), 4);
    CHECK_MEM(buf, "left", 4);
    CHECK_EQ(read(late, buf, sizeof buf), 0);
    close(late);
    close(fds[0]);
    /* ...and a writer after the last reader opens at once, even
     * O_NONBLOCK (no ENXIO, as for a FIFO), and its write fails with
     * EPIPE. */
    CHECK_OK(pipe(fds));
    close(fds[0]);
    snprintf(name, sizeof name, "/proc/self/fd/%d", fds[1]);
    int lone = CHECK_OK(open(name, O_WRONLY | O_NONBLOCK));
    close(lone);
    lone = CHECK_OK(open(name, O_WRONLY));
    signal(SIGPIPE, SIG_IGN);
    CHECK_ERR(write(lone, "x", 1), EPIPE);
    close(lone);
    close(fds[1]);
    return 0;
}
