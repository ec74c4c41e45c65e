/* sysv_sem: SysV semaphores as Linux (man 2 semget, semop, semctl).
 * semget's checks (nsems against /proc/sys/kernel/sem), semctl's
 * GETVAL/SETVAL/GETALL/SETALL/GETPID/GETNCNT/GETZCNT and their range
 * errors, semop all-or-none with IPC_NOWAIT (EAGAIN), ERANGE, EFBIG,
 * E2BIG and EINVAL, semtimedop's timeout (EAGAIN), a waiter woken by
 * another process and counted in semncnt/semzcnt while it waits, EINTR
 * from a signal handler, EIDRM when the set is removed under a waiter,
 * SEM_UNDO applied when a process exits, IPC_STAT/IPC_SET/IPC_INFO/
 * SEM_INFO/SEM_STAT, /proc/sysvipc/sem, and a non-owner's denials (when
 * run as root, in a setuid child). Passes natively.
 */
#include "check.h"
#include <signal.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>

union semun {
    int val;
    struct semid_ds *buf;
    unsigned short *array;
    struct seminfo *__buf;
};

static int getval(int id, int n) { return semctl(id, n, GETVAL); }

static void setval(int id, int n, int v) {
    union semun u = {.val = v};
    CHECK_OK(semctl(id, n, SETVAL, u));
}

static int op1(int id, unsigned short n, short op, short flg) {
    struct sembuf b = {n, op, flg};
    return semop(id, &b, 1);
}

/* Waits (bounded) until `cmd` on semaphore n reports `want`. */
static void wait_count(int id, int n, int cmd, int want) {
    for (int i = 0; i < 5000; i++) {
        if (semctl(id, n, cmd) == want)
            return;
        usleep(1000);
    }
    FAILF("semctl(%d) never reached %d (is %d)", cmd, want, semctl(id, n, cmd));
}

static int reap(pid_t pid) {
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st));
    return WEXITSTATUS(st);
}

static void on_alarm(int sig) { (void)sig; }

/* Whether /proc/sysvipc/sem lists `id` with `nsems`. */
static int listed(int id, int nsems) {
    FILE *f = fopen("/proc/sysvipc/sem", "r");
    CHECK(f != NULL);
    char line[512];
    CHECK(fgets(line, sizeof line, f) != NULL);
    CHECK(strstr(line, "semid") != NULL && strstr(line, "nsems") != NULL);
    int found = 0;
    while (fgets(line, sizeof line, f)) {
        int key, sid, n;
        unsigned perms;
        if (sscanf(line, "%d %d %o %d", &key, &sid, &perms, &n) == 4 && sid == id && n == nsems)
            found = 1;
    }
    fclose(f);
    return found;
}

int main(void) {
    long semmsl, semmns, semopm, semmni;
    char text[128];
    CHECK(read_file("/proc/sys/kernel/sem", text, sizeof text) > 0);
    CHECK_EQ(sscanf(text, "%ld %ld %ld %ld", &semmsl, &semmns, &semopm, &semmni), 4);

    /* semget. */
    CHECK_ERR(semget(IPC_PRIVATE, 0, 0600), EINVAL);
    CHECK_ERR(semget(IPC_PRIVATE, (int)semmsl + 1, 0600), EINVAL);
    CHECK_ERR(semget(IPC_PRIVATE, -1, 0600), EINVAL);
    key_t key = 0x5e300000 + (getpid() & 0xffff);
    int id = CHECK_OK(semget(key, 3, IPC_CREAT | IPC_EXCL | 0600));
    CHECK_EQ(semget(key, 2, 0), id);
    CHECK_EQ(semget(key, 0, 0), id);
    CHECK_ERR(semget(key, 4, 0), EINVAL);
    CHECK_ERR(semget(key, 3, IPC_CREAT | IPC_EXCL), EEXIST);
    CHECK(listed(id, 3));

    /* Values. */
    unsigned short all[3] = {9, 9, 9};
    union semun u = {.array = all};
    CHECK_OK(semctl(id, 0, GETALL, u));
    CHECK(all[0] == 0 && all[1] == 0 && all[2] == 0);
    setval(id, 0, 1);
    CHECK_EQ(getval(id, 0), 1);
    CHECK_EQ(semctl(id, 0, GETPID), getpid());
    u.val = 32768;
    CHECK_ERR(semctl(id, 0, SETVAL, u), ERANGE);
    u.val = -1;
    CHECK_ERR(semctl(id, 0, SETVAL, u), ERANGE);
    u.val = 1;
    CHECK_ERR(semctl(id, 3, SETVAL, u), EINVAL);
    CHECK_ERR(semctl(id, 3, GETVAL), EINVAL);
    unsigned short set[3] = {1, 2, 3};
    u.array = set;
    CHECK_OK(semctl(id, 0, SETALL, u));
    CHECK_EQ(getval(id, 2), 3);
    unsigned short bad[3] = {1, 40000, 3};
    u.array = bad;
    CHECK_ERR(semctl(id, 0, SETALL, u), ERANGE);
    CHECK_EQ(getval(id, 1), 2);

    /* semop: all or nothing. */
    struct sembuf two[2] = {{0, -1, 0}, {1, -3, IPC_NOWAIT}};
    CHECK_ERR(semop(id, two, 2), EAGAIN);
    CHECK_EQ(getval(id, 0), 1);
    two[1].sem_op = -2;
    CHECK_OK(semop(id, two, 2));
    CHECK_EQ(getval(id, 0), 0);
    CHECK_EQ(getval(id, 1), 0);
    CHECK_ERR(op1(id, 0, -1, IPC_NOWAIT), EAGAIN);
    CHECK_ERR(op1(id, 2, 0, IPC_NOWAIT), EAGAIN);
    CHECK_ERR(op1(id, 3, 1, 0), EFBIG);
    CHECK_ERR(semop(id, two, 0), EINVAL);
    struct sembuf *many = calloc((size_t)semopm + 1, sizeof *many);
    CHECK_ERR(semop(id, many, (size_t)semopm + 1), E2BIG);
    CHECK_ERR(semop(id, (struct sembuf *)8, 1), EFAULT);
    CHECK_ERR(semop(-1, two, 1), EINVAL);
    setval(id, 2, 32767);
    CHECK_ERR(op1(id, 2, 1, 0), ERANGE);
    setval(id, 2, 0);

    /* semtimedop: the timeout ends the wait with EAGAIN. */
    struct sembuf dec = {0, -1, 0};
    struct timespec ts = {0, 50 * 1000 * 1000};
    CHECK_ERR(semtimedop(id, &dec, 1, &ts), EAGAIN);
    struct timespec bad_ts = {0, 1000000000L};
    CHECK_ERR(semtimedop(id, &dec, 1, &bad_ts), EINVAL);

    /* A waiter in another process, counted while it waits. */
    pid_t pid = CHECK_OK(fork());
    if (pid == 0)
        _exit(op1(id, 0, -2, 0) == 0 ? 0 : 1);
    wait_count(id, 0, GETNCNT, 1);
    CHECK_EQ(semctl(id, 0, GETZCNT), 0);
    CHECK_OK(op1(id, 0, 1, 0));
    usleep(10000);
    CHECK_EQ(semctl(id, 0, GETNCNT), 1); /* one is not enough */
    CHECK_OK(op1(id, 0, 1, 0));
    CHECK_EQ(reap(pid), 0);
    CHECK_EQ(getval(id, 0), 0);
    CHECK_EQ(semctl(id, 0, GETPID), pid);
    CHECK_EQ(semctl(id, 0, GETNCNT), 0);

    /* Waiting for zero. */
    setval(id, 1, 1);
    pid = CHECK_OK(fork());
    if (pid == 0)
        _exit(op1(id, 1, 0, 0) == 0 ? 0 : 1);
    wait_count(id, 1, GETZCNT, 1);
    CHECK_OK(op1(id, 1, -1, 0));
    CHECK_EQ(reap(pid), 0);

    /* A signal handler interrupts the wait: EINTR, never restarted. */
    struct sigaction sa = {0};
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    CHECK_OK(sigaction(SIGALRM, &sa, NULL));
    struct itimerval it = {{0, 0}, {0, 100000}};
    CHECK_OK(setitimer(ITIMER_REAL, &it, NULL));
    CHECK_ERR(op1(id, 0, -1, 0), EINTR);
    CHECK_EQ(semctl(id, 0, GETNCNT), 0);

    /* SEM_UNDO: a process's adjustments are undone when it exits. */
    setval(id, 0, 5);
    pid = CHECK_OK(fork());
    if (pid == 0) {
        if (op1(id, 0, -3, SEM_UNDO) != 0 || op1(id, 1, 2, SEM_UNDO) != 0)
            _exit(1);
        _exit(getval(id, 0) == 2 && getval(id, 1) == 2 ? 0 : 2);
    }
    CHECK_EQ(reap(pid), 0);
    CHECK_EQ(getval(id, 0), 5);
    CHECK_EQ(getval(id, 1), 0);
    CHECK_EQ(semctl(id, 0, GETPID), pid);
    /* SETVAL clears the adjustment: nothing is undone. */
    int p2[2];
    CHECK_OK(pipe(p2));
    pid = CHECK_OK(fork());
    if (pid == 0) {
        char c;
        if (op1(id, 2, 4, SEM_UNDO) != 0)
            _exit(1);
        close(p2[1]);
        _exit(read(p2[0], &c, 1) == 0 ? 0 : 2);
    }
    close(p2[0]);
    wait_count(id, 2, GETVAL, 4);
    setval(id, 2, 1);
    close(p2[1]);
    CHECK_EQ(reap(pid), 0);
    CHECK_EQ(getval(id, 2), 1);

    /* IPC_STAT, IPC_SET, IPC_INFO, SEM_INFO, SEM_STAT. */
    struct semid_ds ds;
    u.buf = &ds;
    CHECK_OK(semctl(id, 0, IPC_STAT, u));
    CHECK_EQ(ds.sem_nsems, 3);
    CHECK_EQ(ds.sem_perm.mode & 0777, 0600);
    CHECK_EQ(ds.sem_perm.uid, geteuid());
    CHECK(ds.sem_otime > 0 && ds.sem_ctime > 0);
    ds.sem_perm.mode = 0660;
    CHECK_OK(semctl(id, 0, IPC_SET, u));
    CHECK_OK(semctl(id, 0, IPC_STAT, u));
    CHECK_EQ(ds.sem_perm.mode & 0777, 0660);
    struct seminfo si;
    u.__buf = &si;
    int maxidx = CHECK_OK(semctl(0, 0, IPC_INFO, u));
    CHECK_EQ(si.semmsl, semmsl);
    CHECK_EQ(si.semmns, semmns);
    CHECK_EQ(si.semopm, semopm);
    CHECK_EQ(si.semmni, semmni);
    CHECK_EQ(si.semvmx, 32767);
    CHECK_EQ(semctl(0, 0, SEM_INFO, u), maxidx);
    CHECK(si.semusz >= 1 && si.semaem >= 3);
    int seen = 0;
    u.buf = &ds;
    for (int i = 0; i <= maxidx; i++)
        if (semctl(i, 0, SEM_STAT, u) == id)
            seen = 1;
    CHECK(seen);
    CHECK_ERR(semctl(id, 0, 999), EINVAL);

    /* A non-owner. */
    if (geteuid() == 0) {
        pid = CHECK_OK(fork());
        if (pid == 0) {
            CHECK_OK(setgid(65534));
            CHECK_OK(setuid(65534));
            CHECK_ERR(op1(id, 0, 1, 0), EACCES);
            CHECK_ERR(semctl(id, 0, GETVAL), EACCES);
            CHECK_ERR(semctl(id, 0, IPC_RMID), EPERM);
            _exit(0);
        }
        CHECK_EQ(reap(pid), 0);
    }

    /* Removal under a waiter: EIDRM. */
    pid = CHECK_OK(fork());
    if (pid == 0)
        _exit(op1(id, 0, -100, 0) == -1 && errno == EIDRM ? 0 : 1);
    wait_count(id, 0, GETNCNT, 1);
    CHECK_OK(semctl(id, 0, IPC_RMID));
    CHECK_EQ(reap(pid), 0);
    CHECK_ERR(semctl(id, 0, GETVAL), EINVAL);
    CHECK_ERR(op1(id, 0, 1, 0), EINVAL);
    CHECK(!listed(id, 3));
    return 0;
}
