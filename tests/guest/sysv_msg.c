/* sysv_msg: SysV message queues as Linux (man 2 msgget, msgsnd, msgrcv,
 * msgctl). msgsnd's checks (mtype, msgmax from /proc/sys/kernel),
 * msgrcv's selection by type (0, > 0, < 0, MSG_EXCEPT), E2BIG and
 * MSG_NOERROR, MSG_COPY, ENOMSG and EAGAIN with IPC_NOWAIT, a full queue
 * (msg_qbytes) blocking a sender until a receiver makes room, a receiver
 * blocking until a sender comes, EINTR from a signal handler, EIDRM when
 * the queue is removed under a waiter, IPC_STAT/IPC_SET (msg_qbytes
 * above msgmnb needs CAP_SYS_RESOURCE)/IPC_INFO/MSG_INFO/MSG_STAT,
 * /proc/sysvipc/msg, and a non-owner's denials (when run as root, in a
 * setuid child). Passes natively.
 */
#include "check.h"
#include <signal.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/time.h>
#include <sys/wait.h>

struct m {
    long mtype;
    char text[9000];
};

static int send(int id, long type, const char *text, int flg) {
    struct m b;
    b.mtype = type;
    strcpy(b.text, text);
    return msgsnd(id, &b, strlen(text), flg);
}

/* Receives into a fresh buffer; returns the text or NULL. */
static const char *recv(int id, long type, int flg, long *got_type) {
    static struct m b;
    memset(&b, 0, sizeof b);
    ssize_t n = msgrcv(id, &b, 100, type, flg);
    if (n < 0)
        return NULL;
    b.text[n] = 0;
    if (got_type)
        *got_type = b.mtype;
    return b.text;
}

static unsigned long qnum(int id) {
    struct msqid_ds ds;
    CHECK_OK(msgctl(id, IPC_STAT, &ds));
    return ds.msg_qnum;
}

static int reap(pid_t pid) {
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st));
    return WEXITSTATUS(st);
}

static void on_alarm(int sig) { (void)sig; }

/* Whether capability `cap` is effective, as /proc/self/status says. */
static int has_cap(int cap) {
    char buf[4096];
    CHECK(read_file("/proc/self/status", buf, sizeof buf) > 0);
    char *p = strstr(buf, "CapEff:");
    CHECK(p != NULL);
    return (strtoull(p + 7, NULL, 16) >> cap) & 1;
}

static long proc_long(const char *path) {
    char buf[64];
    CHECK(read_file(path, buf, sizeof buf) > 0);
    return strtol(buf, NULL, 10);
}

/* Whether /proc/sysvipc/msg lists `id` with `qnum` messages. */
static int listed(int id, unsigned long want) {
    FILE *f = fopen("/proc/sysvipc/msg", "r");
    CHECK(f != NULL);
    char line[512];
    CHECK(fgets(line, sizeof line, f) != NULL);
    CHECK(strstr(line, "msqid") != NULL && strstr(line, "qnum") != NULL);
    int found = 0;
    while (fgets(line, sizeof line, f)) {
        int key, qid;
        unsigned perms;
        unsigned long cbytes, n;
        if (sscanf(line, "%d %d %o %lu %lu", &key, &qid, &perms, &cbytes, &n) == 5 && qid == id && n == want)
            found = 1;
    }
    fclose(f);
    return found;
}

/* Waits (bounded) until the child sleeps, as its state in /proc shows,
 * and a little longer: a sandbox may show every other process sleeping. */
static void wait_blocked(pid_t pid) {
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    for (int i = 0; i < 5000; i++) {
        if (read_file(path, buf, sizeof buf) > 0) {
            char *p = strrchr(buf, ')');
            if (p && p[1] == ' ' && p[2] == 'S') {
                usleep(200 * 1000);
                return;
            }
        }
        usleep(1000);
    }
    FAILF("child %d never blocked", pid);
}

int main(void) {
    long msgmax = proc_long("/proc/sys/kernel/msgmax");
    long msgmnb = proc_long("/proc/sys/kernel/msgmnb");
    long msgmni = proc_long("/proc/sys/kernel/msgmni");
    key_t key = 0x5e500000 + (getpid() & 0xffff);
    CHECK_ERR(msgget(key, 0600), ENOENT);
    int id = CHECK_OK(msgget(key, IPC_CREAT | IPC_EXCL | 0600));
    CHECK_EQ(msgget(key, 0), id);
    CHECK_ERR(msgget(key, IPC_CREAT | IPC_EXCL), EEXIST);

    /* msgsnd's checks. */
    CHECK_ERR(send(id, 0, "x", 0), EINVAL);
    CHECK_ERR(send(id, -1, "x", 0), EINVAL);
    struct m big = {1, {0}};
    CHECK_ERR(msgsnd(id, &big, (size_t)msgmax + 1, 0), EINVAL);
    CHECK_ERR(msgsnd(id, (void *)8, 1, 0), EFAULT);
    CHECK_ERR(send(-1, 1, "x", 0), EINVAL);

    /* Selection by type. */
    CHECK_OK(send(id, 3, "c", 0));
    CHECK_OK(send(id, 1, "a", 0));
    CHECK_OK(send(id, 2, "b", 0));
    CHECK_OK(send(id, 1, "a2", 0));
    CHECK(listed(id, 4));
    struct msqid_ds ds;
    CHECK_OK(msgctl(id, IPC_STAT, &ds));
    CHECK_EQ(ds.msg_qnum, 4);
    CHECK_EQ(ds.__msg_cbytes, 5);
    CHECK_EQ(ds.msg_qbytes, msgmnb);
    CHECK_EQ(ds.msg_lspid, getpid());
    CHECK_EQ(ds.msg_lrpid, 0);
    CHECK(ds.msg_stime > 0 && ds.msg_rtime == 0);
    long t;
    CHECK_STR(recv(id, 2, 0, &t), "b");
    CHECK_STR(recv(id, -2, 0, &t), "a");
    CHECK_EQ(t, 1);
    CHECK_STR(recv(id, 1, MSG_EXCEPT, &t), "c");
    CHECK_EQ(t, 3);
    CHECK_STR(recv(id, 0, 0, &t), "a2");
    CHECK(recv(id, 0, IPC_NOWAIT, NULL) == NULL && errno == ENOMSG);
    CHECK(recv(id, 5, IPC_NOWAIT, NULL) == NULL && errno == ENOMSG);
    CHECK_OK(msgctl(id, IPC_STAT, &ds));
    CHECK_EQ(ds.msg_lrpid, getpid());

    /* Too long: E2BIG leaves it queued; MSG_NOERROR cuts it. */
    CHECK_OK(send(id, 7, "0123456789", 0));
    struct m small;
    /* MSG_COPY: a copy by position, left queued; only with IPC_NOWAIT. */
    CHECK_EQ(msgrcv(id, &small, 100, 0, MSG_COPY | IPC_NOWAIT), 10);
    CHECK_EQ(small.mtype, 7);
    CHECK_ERR(msgrcv(id, &small, 100, 1, MSG_COPY | IPC_NOWAIT), ENOMSG);
    CHECK_ERR(msgrcv(id, &small, 100, 0, MSG_COPY), EINVAL);
    CHECK_ERR(msgrcv(id, &small, 4, 0, MSG_COPY | IPC_NOWAIT), E2BIG);
    CHECK_ERR(msgrcv(id, &small, 4, 0, 0), E2BIG);
    CHECK_EQ(qnum(id), 1);
    CHECK_EQ(msgrcv(id, &small, 4, 0, MSG_NOERROR), 4);
    CHECK_MEM(small.text, "0123", 4);
    CHECK_EQ(qnum(id), 0);
    CHECK_ERR(msgrcv(id, &small, (size_t)-1, 0, IPC_NOWAIT), EINVAL);

    /* A full queue blocks its sender until a receiver makes room. */
    ds.msg_qbytes = 100;
    CHECK_OK(msgctl(id, IPC_SET, &ds));
    char sixty[61];
    memset(sixty, 's', 60);
    sixty[60] = 0;
    CHECK_OK(send(id, 1, sixty, 0));
    CHECK_ERR(send(id, 1, sixty, IPC_NOWAIT), EAGAIN);
    pid_t pid = CHECK_OK(fork());
    if (pid == 0)
        _exit(send(id, 2, sixty, 0) == 0 ? 0 : 1);
    wait_blocked(pid);
    CHECK_EQ(qnum(id), 1);
    CHECK(recv(id, 1, 0, NULL) != NULL);
    CHECK_EQ(reap(pid), 0);
    CHECK_EQ(qnum(id), 1);
    CHECK(recv(id, 2, 0, NULL) != NULL);

    /* A receiver blocks until a sender comes. */
    pid = CHECK_OK(fork());
    if (pid == 0) {
        const char *s = recv(id, 9, 0, NULL);
        _exit(s && strcmp(s, "late") == 0 ? 0 : 1);
    }
    wait_blocked(pid);
    CHECK_OK(send(id, 8, "other", 0));
    CHECK_OK(send(id, 9, "late", 0));
    CHECK_EQ(reap(pid), 0);
    CHECK_EQ(qnum(id), 1);

    /* A signal handler interrupts a wait: EINTR. */
    struct sigaction sa = {0};
    sa.sa_handler = on_alarm;
    CHECK_OK(sigaction(SIGALRM, &sa, NULL));
    struct itimerval it = {{0, 0}, {0, 100000}};
    CHECK_OK(setitimer(ITIMER_REAL, &it, NULL));
    CHECK(recv(id, 42, 0, NULL) == NULL && errno == EINTR);

    /* Limits. */
    struct msginfo mi;
    int maxidx = CHECK_OK(msgctl(0, IPC_INFO, (struct msqid_ds *)&mi));
    CHECK_EQ(mi.msgmax, msgmax);
    CHECK_EQ(mi.msgmnb, msgmnb);
    CHECK_EQ(mi.msgmni, msgmni);
    CHECK_EQ(msgctl(0, MSG_INFO, (struct msqid_ds *)&mi), maxidx);
    CHECK(mi.msgpool >= 1 && mi.msgmap >= 1 && mi.msgtql >= 5);
    int seen = 0;
    for (int i = 0; i <= maxidx; i++)
        if (msgctl(i, MSG_STAT, &ds) == id)
            seen = 1;
    CHECK(seen);
    CHECK_ERR(msgctl(id, 999, &ds), EINVAL);

    if (geteuid() == 0) {
        pid = CHECK_OK(fork());
        if (pid == 0) {
            CHECK_OK(setgid(65534));
            CHECK_OK(setuid(65534));
            CHECK_ERR(send(id, 1, "x", 0), EACCES);
            CHECK(recv(id, 0, IPC_NOWAIT, NULL) == NULL && errno == EACCES);
            CHECK_ERR(msgctl(id, IPC_RMID, NULL), EPERM);
            /* Its own queue: msg_qbytes past msgmnb needs CAP_SYS_RESOURCE. */
            int own = CHECK_OK(msgget(IPC_PRIVATE, 0600));
            struct msqid_ds od;
            CHECK_OK(msgctl(own, IPC_STAT, &od));
            od.msg_qbytes = (unsigned long)msgmnb + 1;
            CHECK_ERR(msgctl(own, IPC_SET, &od), EPERM);
            od.msg_qbytes = (unsigned long)msgmnb - 1;
            CHECK_OK(msgctl(own, IPC_SET, &od));
            CHECK_OK(msgctl(own, IPC_RMID, NULL));
            _exit(0);
        }
        CHECK_EQ(reap(pid), 0);
        CHECK_OK(msgctl(id, IPC_STAT, &ds));
        ds.msg_qbytes = (unsigned long)msgmnb * 2;
        if (has_cap(24)) /* CAP_SYS_RESOURCE */
            CHECK_OK(msgctl(id, IPC_SET, &ds));
        else
            CHECK_ERR(msgctl(id, IPC_SET, &ds), EPERM);
    }

    /* Removal under a waiter: EIDRM. */
    pid = CHECK_OK(fork());
    if (pid == 0)
        _exit(recv(id, 77, 0, NULL) == NULL && errno == EIDRM ? 0 : 1);
    wait_blocked(pid);
    CHECK_OK(msgctl(id, IPC_RMID, NULL));
    CHECK_EQ(reap(pid), 0);
    CHECK_ERR(send(id, 1, "x", 0), EINVAL);
    CHECK(!listed(id, 1));
    return 0;
}
