/* fifo_files.c — FIFOs that are files of a gofer-served filesystem behave
 * as Linux's fifo_open: every open of the file, by any name (a hard link
 * too), meets at one pipe; a blocking open waits for the other end;
 * O_NONBLOCK readers open at once, O_NONBLOCK writers without a reader get
 * ENXIO, O_RDWR never waits.
 *
 * Usage: fifo_files DIR [FIFO...]: makes a FIFO (and a hard link to it)
 * in the writable directory DIR (a volume under husk), then exercises it
 * and each existing FIFO given (files of the root filesystem). */
#include "check.h"
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

static void nap_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A child that opens `path` with `flags` after 100 ms and writes `msg`
 * (opened for writing) or reads and checks it, then exits 0. */
static pid_t other_end_later(const char *path, int flags, const char *msg) {
    pid_t p = CHECK_OK(fork());
    if (p == 0) {
        nap_ms(100);
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

/* `path` and `other` name the same FIFO. */
static void exercise(const char *path, const char *other) {
    struct stat st;
    CHECK_OK(stat(path, &st));
    CHECK(S_ISFIFO(st.st_mode));
    char buf[32];

    /* Non-blocking: a writer needs a reader, and both names are one pipe. */
    CHECK_ERR(open(path, O_WRONLY | O_NONBLOCK), ENXIO);
    int r = CHECK_OK(open(path, O_RDONLY | O_NONBLOCK));
    CHECK_EQ(read(r, buf, sizeof buf), 0); /* no writer yet: EOF */
    int w = CHECK_OK(open(other, O_WRONLY | O_NONBLOCK));
    CHECK_OK(fstat(w, &st));
    CHECK(S_ISFIFO(st.st_mode));
    CHECK_EQ(write(w, "abc", 3), 3);
    CHECK_EQ(read(r, buf, sizeof buf), 3);
    CHECK_MEM(buf, "abc", 3);
    CHECK_ERR(read(r, buf, sizeof buf), EAGAIN); /* empty, a writer open */
    close(w);
    close(r);

    /* O_RDWR never waits, and reads what it wrote. */
    int rw = CHECK_OK(open(path, O_RDWR));
    CHECK_EQ(write(rw, "xy", 2), 2);
    CHECK_EQ(read(rw, buf, sizeof buf), 2);
    CHECK_MEM(buf, "xy", 2);
    close(rw);

    /* A blocking reader waits for a writer (opening the other name), a
     * blocking writer for a reader. */
    pid_t c = other_end_later(other, O_WRONLY, "hello");
    r = CHECK_OK(open(path, O_RDONLY));
    CHECK_EQ(read(r, buf, sizeof buf), 5);
    CHECK_MEM(buf, "hello", 5);
    reap_ok(c);
    CHECK_EQ(read(r, buf, sizeof buf), 0); /* the writer is gone: EOF */
    close(r);
    c = other_end_later(other, O_RDONLY, "world");
    w = CHECK_OK(open(path, O_WRONLY));
    CHECK_EQ(write(w, "world", 5), 5);
    close(w);
    reap_ok(c);
}

int main(int argc, char **argv) {
    alarm(30);
    if (argc < 2)
        FAILF("usage: fifo_files DIR [FIFO...]");
    char made[4096], link_name[4096];
    snprintf(made, sizeof made, "%s/fifo", argv[1]);
    snprintf(link_name, sizeof link_name, "%s/fifo-link", argv[1]);
    unlink(made);
    unlink(link_name);
    CHECK_OK(mkfifo(made, 0600));
    CHECK_OK(link(made, link_name));
    exercise(made, link_name);
    CHECK_OK(unlink(link_name));
    CHECK_OK(unlink(made));
    for (int i = 2; i < argc; i++)
        exercise(argv[i], argv[i]);
    return 0;
}
