/* mqueue.c — POSIX message queues: mq_open (create, exclusive, missing,
 * bad names, sizes), priorities (highest first, FIFO within one),
 * EMSGSIZE/EINVAL/EAGAIN/ETIMEDOUT, mq_getattr/mq_setattr, a blocked
 * receiver woken by another process's send, a blocked sender woken by a
 * receive, timed out and interrupted, mq_notify's signal with
 * SI_MESGQ and its value (EBUSY for a second process), /dev/mqueue and
 * mq_unlink. */
#include "check.h"
#include <fcntl.h>
#include <mqueue.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

static const char *name = "/husk-mq-test";
static volatile sig_atomic_t got_signo, got_code, got_pid, got_value;

static void on_usr1(int sig, siginfo_t *si, void *ctx) {
    (void)ctx;
    got_signo = sig;
    got_code = si->si_code;
    got_pid = si->si_pid;
    got_value = si->si_value.sival_int;
}

static struct timespec in_ms(long ms) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_nsec += (ms % 1000) * 1000000L;
    t.tv_sec += ms / 1000 + t.tv_nsec / 1000000000L;
    t.tv_nsec %= 1000000000L;
    return t;
}

int main(void) {
    mq_unlink(name);
    struct mq_attr attr = {0};
    attr.mq_maxmsg = 4;
    attr.mq_msgsize = 64;
    mqd_t q = CHECK_OK(mq_open(name, O_CREAT | O_EXCL | O_RDWR, 0600, &attr));
    CHECK_ERR(mq_open(name, O_CREAT | O_EXCL | O_RDWR, 0600, &attr), EEXIST);
    CHECK_ERR(mq_open("/husk-mq-missing", O_RDWR), ENOENT);
    CHECK_ERR(mq_open("/a/b", O_CREAT | O_RDWR, 0600, NULL), EACCES);
    struct mq_attr huge = attr;
    huge.mq_maxmsg = 1000000;
    CHECK_ERR(mq_open("/husk-mq-huge", O_CREAT | O_RDWR, 0600, &huge), EINVAL);

    struct mq_attr got;
    CHECK_OK(mq_getattr(q, &got));
    CHECK_EQ(got.mq_maxmsg, 4);
    CHECK_EQ(got.mq_msgsize, 64);
    CHECK_EQ(got.mq_curmsgs, 0);
    CHECK_EQ(got.mq_flags, 0);

    /* Priorities: highest first, first in first out within one. */
    CHECK_OK(mq_send(q, "low-1", 5, 1));
    CHECK_OK(mq_send(q, "high", 4, 5));
    CHECK_OK(mq_send(q, "low-2", 5, 1));
    CHECK_OK(mq_getattr(q, &got));
    CHECK_EQ(got.mq_curmsgs, 3);
    char buf[64];
    unsigned prio;
    CHECK_EQ(mq_receive(q, buf, sizeof buf, &prio), 4);
    CHECK(memcmp(buf, "high", 4) == 0 && prio == 5);
    CHECK_EQ(mq_receive(q, buf, sizeof buf, &prio), 5);
    CHECK(memcmp(buf, "low-1", 5) == 0 && prio == 1);
    CHECK_EQ(mq_receive(q, buf, sizeof buf, NULL), 5);
    CHECK(memcmp(buf, "low-2", 5) == 0);

    /* Sizes and priorities out of range. */
    char big[65] = {0};
    CHECK_ERR(mq_send(q, big, sizeof big, 0), EMSGSIZE);
    CHECK_ERR(mq_send(q, "x", 1, 32768), EINVAL);
    CHECK_ERR(mq_receive(q, buf, 63, NULL), EMSGSIZE);

    /* An empty queue times out; a full one refuses with O_NONBLOCK. */
    struct timespec soon = in_ms(100);
    CHECK_ERR(mq_timedreceive(q, buf, sizeof buf, NULL, &soon), ETIMEDOUT);
    struct mq_attr nb = {0}, old;
    nb.mq_flags = O_NONBLOCK;
    CHECK_OK(mq_setattr(q, &nb, &old));
    CHECK_EQ(old.mq_flags, 0);
    CHECK_ERR(mq_receive(q, buf, sizeof buf, NULL), EAGAIN);
    for (int i = 0; i < 4; i++)
        CHECK_OK(mq_send(q, "f", 1, 0));
    CHECK_ERR(mq_send(q, "f", 1, 0), EAGAIN);
    CHECK_OK(mq_getattr(q, &got));
    CHECK_EQ(got.mq_flags, O_NONBLOCK);
    for (int i = 0; i < 4; i++)
        CHECK_EQ(mq_receive(q, buf, sizeof buf, NULL), 1);
    nb.mq_flags = 0;
    CHECK_OK(mq_setattr(q, &nb, NULL));

    /* /dev/mqueue shows the queue. */
    int fd = open("/dev/mqueue/husk-mq-test", O_RDONLY);
    if (fd >= 0) {
        char status[128] = {0};
        CHECK(read(fd, status, sizeof status - 1) > 0);
        CHECK(strncmp(status, "QSIZE:0 ", 8) == 0);
        close(fd);
    }

    /* A blocked receiver is woken by another process's send. */
    pid_t c = CHECK_OK(fork());
    if (c == 0) {
        usleep(100000);
        _exit(mq_send(q, "from child", 10, 2) == 0 ? 0 : 1);
    }
    CHECK_EQ(mq_receive(q, buf, sizeof buf, &prio), 10);
    CHECK(memcmp(buf, "from child", 10) == 0 && prio == 2);
    int st;
    CHECK_EQ(waitpid(c, &st, 0), c);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);

    /* A sender blocked on a full queue is woken by another process's
     * receive; a full queue times out a timed send; a signal whose
     * handler does not ask for restarts ends a blocked send with EINTR. */
    for (int i = 0; i < 4; i++)
        CHECK_OK(mq_send(q, "f", 1, 0));
    soon = in_ms(50);
    CHECK_ERR(mq_timedsend(q, "g", 1, 0, &soon), ETIMEDOUT);
    c = CHECK_OK(fork());
    if (c == 0) {
        usleep(100000);
        _exit(mq_receive(q, buf, sizeof buf, NULL) == 1 ? 0 : 1);
    }
    CHECK_OK(mq_send(q, "last", 4, 7));
    CHECK_EQ(waitpid(c, &st, 0), c);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    struct sigaction quiet = {0};
    quiet.sa_sigaction = on_usr1;
    quiet.sa_flags = SA_SIGINFO;
    CHECK_OK(sigaction(SIGALRM, &quiet, NULL));
    alarm(1);
    CHECK_ERR(mq_send(q, "h", 1, 0), EINTR);
    CHECK_EQ(got_signo, SIGALRM);
    got_signo = 0;
    CHECK_EQ(mq_receive(q, buf, sizeof buf, &prio), 4);
    CHECK(memcmp(buf, "last", 4) == 0 && prio == 7);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(mq_receive(q, buf, sizeof buf, NULL), 1);

    /* mq_notify: a signal when a message reaches the empty queue. */
    struct sigaction sa = {0};
    sa.sa_sigaction = on_usr1;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    CHECK_OK(sigaction(SIGUSR1, &sa, NULL));
    struct sigevent ev = {0};
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = SIGUSR1;
    ev.sigev_value.sival_int = 4242;
    CHECK_OK(mq_notify(q, &ev));
    c = CHECK_OK(fork());
    if (c == 0) {
        /* Another process may not take the registration. */
        if (mq_notify(q, &ev) == 0 || errno != EBUSY)
            _exit(2);
        _exit(mq_send(q, "ping", 4, 0) == 0 ? 0 : 1);
    }
    CHECK_EQ(waitpid(c, &st, 0), c);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    for (int i = 0; i < 100 && !got_signo; i++)
        usleep(10000);
    CHECK_EQ(got_signo, SIGUSR1);
    CHECK_EQ(got_code, SI_MESGQ);
    CHECK_EQ(got_pid, c);
    CHECK_EQ(got_value, 4242);
    CHECK_EQ(mq_receive(q, buf, sizeof buf, NULL), 4);
    /* The registration was used up: registering again works. */
    CHECK_OK(mq_notify(q, &ev));
    CHECK_OK(mq_notify(q, NULL));

    /* Unlinked, the name is gone but the open queue still works. */
    CHECK_OK(mq_unlink(name));
    CHECK_ERR(mq_unlink(name), ENOENT);
    CHECK_ERR(mq_open(name, O_RDWR), ENOENT);
    CHECK_OK(mq_send(q, "still", 5, 0));
    CHECK_EQ(mq_receive(q, buf, sizeof buf, NULL), 5);
    CHECK_OK(mq_close(q));
    printf("mqueue: ok\n");
    return 0;
}
