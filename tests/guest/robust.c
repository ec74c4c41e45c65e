/* robust.c — robust mutexes whose owner dies: the next locker gets
 * EOWNERDEAD (and may make the mutex consistent) whether it tried after
 * the death or was already waiting for the lock, for a thread that exits
 * for a process-shared mutex whose owning process exits, and for one whose
 * owning process execs (Linux releases the robust list at exec as at
 * exit, while the process lives on). An alarm ends a hang. */
#include "check.h"
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

static pthread_mutex_t m;
static volatile int locked;

static void nap_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void init_robust(pthread_mutex_t *mx, int shared) {
    pthread_mutexattr_t a;
    CHECK_EQ(pthread_mutexattr_init(&a), 0);
    CHECK_EQ(pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST), 0);
    if (shared)
        CHECK_EQ(pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED), 0);
    CHECK_EQ(pthread_mutex_init(mx, &a), 0);
    pthread_mutexattr_destroy(&a);
}

static void *lock_and_die(void *arg) {
    long linger_ms = (long)arg;
    CHECK_EQ(pthread_mutex_lock(&m), 0);
    locked = 1;
    nap_ms(linger_ms);
    return NULL; /* exits holding the lock */
}

static void recover(pthread_mutex_t *mx) {
    CHECK_EQ(pthread_mutex_consistent(mx), 0);
    CHECK_EQ(pthread_mutex_unlock(mx), 0);
    CHECK_EQ(pthread_mutex_lock(mx), 0);
    CHECK_EQ(pthread_mutex_unlock(mx), 0);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "idle") == 0) {
        /* The image the owner execs: it outlives the parent's check. */
        nap_ms(20000);
        return 0;
    }
    alarm(20);
    init_robust(&m, 0);

    /* Locked after the owner died. */
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, lock_and_die, (void *)0L), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK_EQ(pthread_mutex_lock(&m), EOWNERDEAD);
    recover(&m);

    /* Waiting for the lock when the owner dies. */
    locked = 0;
    CHECK_EQ(pthread_create(&t, NULL, lock_and_die, (void *)150L), 0);
    while (!locked)
        nap_ms(1);
    CHECK_EQ(pthread_mutex_lock(&m), EOWNERDEAD);
    recover(&m);
    CHECK_EQ(pthread_join(t, NULL), 0);

    /* A process-shared mutex whose owning process exits. */
    pthread_mutex_t *sm = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(sm != MAP_FAILED);
    init_robust(sm, 1);
    int ready[2];
    CHECK_OK(pipe(ready));
    pid_t c = CHECK_OK(fork());
    if (c == 0) {
        if (pthread_mutex_lock(sm) != 0 || write(ready[1], "l", 1) != 1)
            _exit(1);
        nap_ms(150);
        _exit(0);
    }
    char b;
    CHECK_EQ(read(ready[0], &b, 1), 1);
    CHECK_EQ(pthread_mutex_lock(sm), EOWNERDEAD);
    recover(sm);
    int st;
    CHECK_EQ(waitpid(c, &st, 0), c);
    CHECK_EQ(st, 0);

    /* The owning process execs: the lock is the next locker's, with
     * EOWNERDEAD, long before the new image ends. */
    c = CHECK_OK(fork());
    if (c == 0) {
        if (pthread_mutex_lock(sm) != 0 || write(ready[1], "l", 1) != 1)
            _exit(1);
        char *idle[] = {"/proc/self/exe", "idle", NULL};
        execv(idle[0], idle);
        _exit(1);
    }
    CHECK_EQ(read(ready[0], &b, 1), 1);
    struct timespec until;
    CHECK_OK(clock_gettime(CLOCK_REALTIME, &until));
    until.tv_sec += 10;
    CHECK_EQ(pthread_mutex_timedlock(sm, &until), EOWNERDEAD);
    recover(sm);
    CHECK_OK(kill(c, SIGKILL));
    CHECK_EQ(waitpid(c, &st, 0), c);
    CHECK(WIFSIGNALED(st));
    return 0;
}
