// husk-do: --pids-limit 32
// native: skip
/* pids_race: eight threads released at once race fork, vfork and
 * clone(CLONE_THREAD) against --pids-limit 32, each holding what it
 * gets (a child or thread blocked on a pipe) until all are done. Every
 * refusal must be EAGAIN, some must come (the limit was reached), and
 * the tasks held at the end, all alive at once, must fit the limit with
 * the main thread: no interleaving of creations may pass it. (Natively
 * there is no such limit to hold: skipped there.) */
#include "check.h"
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>

#define LIMIT 32
#define RACERS 8
#define TRIES 40
#define MAX_HELD (RACERS * TRIES)

static int gate[2];
static pthread_barrier_t start;
static atomic_int forks, threads, vforks, refused;
static pthread_t held_threads[MAX_HELD];
static pid_t held_kids[MAX_HELD];
static atomic_int n_threads, n_kids;

/* A held thread: blocks until the gate's write end is closed. */
static void *held(void *arg) {
    char c;
    (void)arg;
    while (read(gate[0], &c, 1) > 0)
        ;
    return NULL;
}

/* Counts a refusal, which must be EAGAIN. */
static void refusal(int e) {
    if (e != EAGAIN)
        FAILF("a creation failed with %s, not EAGAIN", strerror(e));
    atomic_fetch_add(&refused, 1);
}

static void *racer(void *arg) {
    (void)arg;
    pthread_barrier_wait(&start);
    for (int i = 0; i < TRIES; i++) {
        switch (i % 3) {
        case 0: {
            pid_t p = fork();
            if (p == 0) {
                char c;
                close(gate[1]);
                while (read(gate[0], &c, 1) > 0)
                    ;
                _exit(0);
            }
            if (p < 0) {
                refusal(errno);
            } else {
                held_kids[atomic_fetch_add(&n_kids, 1)] = p;
                atomic_fetch_add(&forks, 1);
            }
            break;
        }
        case 1: {
            pthread_attr_t a;
            pthread_t t;
            pthread_attr_init(&a);
            pthread_attr_setstacksize(&a, 64 << 10);
            int e = pthread_create(&t, &a, held, NULL);
            pthread_attr_destroy(&a);
            if (e != 0) {
                refusal(e);
            } else {
                held_threads[atomic_fetch_add(&n_threads, 1)] = t;
                atomic_fetch_add(&threads, 1);
            }
            break;
        }
        default: {
            pid_t p = vfork();
            if (p == 0)
                _exit(0);
            if (p < 0) {
                refusal(errno);
            } else {
                CHECK_EQ(waitpid(p, NULL, 0), p);
                atomic_fetch_add(&vforks, 1);
            }
            break;
        }
        }
    }
    return NULL;
}

int main(void) {
    pthread_t r[RACERS];
    CHECK_OK(pipe(gate));
    pthread_barrier_init(&start, NULL, RACERS);
    for (int i = 0; i < RACERS; i++)
        CHECK_EQ(pthread_create(&r[i], NULL, racer, NULL), 0);
    for (int i = 0; i < RACERS; i++)
        CHECK_EQ(pthread_join(r[i], NULL), 0);
    int live = 1 + atomic_load(&forks) + atomic_load(&threads);
    printf("%d tasks held at once, %d vforks, %d refusals\n", live, atomic_load(&vforks), atomic_load(&refused));
    if (live > LIMIT)
        FAILF("%d tasks alive at once under a limit of %d", live, LIMIT);
    CHECK(atomic_load(&refused) > 0);
    close(gate[1]);
    for (int i = 0; i < atomic_load(&n_threads); i++)
        CHECK_EQ(pthread_join(held_threads[i], NULL), 0);
    for (int i = 0; i < atomic_load(&n_kids); i++)
        CHECK_EQ(waitpid(held_kids[i], NULL, 0), held_kids[i]);
    return 0;
}
