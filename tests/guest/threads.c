/* threads.c — clone(CLONE_THREAD) through pthreads: shared memory, locks,
 * condition variables, thread-local storage, tids, join via
 * CLONE_CHILD_CLEARTID, /proc/self/task. */
#include "check.h"

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

#define N 16
#define ROUNDS 2000

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static long shared_total;
static atomic_int started;
static int go;
static __thread long tls_value;
static pid_t tids[N];

static void *worker(void *arg) {
    long id = (long)arg;
    tls_value = id * 100;
    tids[id] = (pid_t)syscall(SYS_gettid);
    atomic_fetch_add(&started, 1);
    pthread_mutex_lock(&mu);
    while (!go)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(&mu);
        shared_total += 1;
        pthread_mutex_unlock(&mu);
    }
    if (tls_value != id * 100)
        return (void *)-1;
    if (getpid() != (pid_t)syscall(SYS_getpid))
        return (void *)-2;
    return (void *)(id + 1);
}

static int count_tasks(void) {
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

int main(void) {
    pthread_t t[N];
    tls_value = -7;
    for (long i = 0; i < N; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, worker, (void *)i), 0);
    while (atomic_load(&started) < N)
        sched_yield();
    /* Every worker is parked on the condition variable. */
    CHECK_EQ(count_tasks(), N + 1);
    pthread_mutex_lock(&mu);
    go = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    long sum = 0;
    for (int i = 0; i < N; i++) {
        void *r;
        CHECK_EQ(pthread_join(t[i], &r), 0);
        CHECK((long)r > 0);
        sum += (long)r;
    }
    CHECK_EQ(sum, (long)N * (N + 1) / 2);
    CHECK_EQ(shared_total, (long)N * ROUNDS);
    CHECK_EQ(tls_value, -7);
    pid_t me = (pid_t)syscall(SYS_gettid);
    CHECK_EQ(me, getpid());
    for (int i = 0; i < N; i++) {
        CHECK(tids[i] != me);
        for (int j = 0; j < i; j++)
            CHECK(tids[i] != tids[j]);
    }
    CHECK_EQ(count_tasks(), 1);
    return 0;
}
