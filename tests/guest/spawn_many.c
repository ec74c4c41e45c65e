/* spawn_many.c — 500 threads and 200 child processes in one program: all
 * created, joined or reaped, with their results intact. */
#include "check.h"

#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 500
#define CHILDREN 200

static void *echo_arg(void *a) {
    return a;
}

int main(void) {
    static pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, echo_arg, (void *)i), 0);
    long sum = 0;
    for (int i = 0; i < THREADS; i++) {
        void *r;
        CHECK_EQ(pthread_join(t[i], &r), 0);
        sum += (long)r;
    }
    CHECK_EQ(sum, (long)THREADS * (THREADS - 1) / 2);
    for (int i = 0; i < CHILDREN; i++) {
        pid_t p = fork();
        CHECK(p >= 0);
        if (p == 0)
            _exit(i % 7);
        int st;
        CHECK_EQ(waitpid(p, &st, 0), p);
        CHECK(WIFEXITED(st));
        CHECK_EQ(WEXITSTATUS(st), i % 7);
    }
    CHECK_ERR(waitpid(-1, NULL, WNOHANG), ECHILD);
    return 0;
}
