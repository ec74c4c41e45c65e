/* bomb fork|thread: creates processes (each waits in pause) or threads
 * until one is refused, then tries 50 times more; every refusal must be
 * EAGAIN, as Linux's pids cgroup answers past pids.max. The bomb then ends
 * its processes and prints how many it had; it exits 0 when every
 * refusal was EAGAIN and it could create at least one task. It never
 * goes past MAX tasks, so it cannot take a host that has no limit. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX 5000

static pid_t kids[MAX];

static void *idle(void *arg) {
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

/* Creates one task; 0, or the error that refused it. */
static int one(int threads, int n) {
    if (threads) {
        pthread_attr_t a;
        pthread_t t;
        pthread_attr_init(&a);
        pthread_attr_setstacksize(&a, 64 << 10);
        int e = pthread_create(&t, &a, idle, NULL);
        pthread_attr_destroy(&a);
        return e;
    }
    pid_t p = fork();
    if (p == 0) {
        pause();
        _exit(0);
    }
    if (p < 0)
        return errno;
    kids[n] = p;
    return 0;
}

int main(int argc, char **argv) {
    int threads = argc > 1 && strcmp(argv[1], "thread") == 0;
    int n = 0, e = 0, wrong = 0;
    while (n < MAX && (e = one(threads, n)) == 0)
        n++;
    if (e != EAGAIN) {
        fprintf(stderr, "refused with %s after %d, not EAGAIN\n", strerror(e), n);
        wrong = 1;
    }
    for (int i = 0; i < 50; i++) {
        int again = one(threads, n);
        if (again == 0)
            n++;
        else if (again != EAGAIN)
            wrong = 1;
    }
    for (int i = 0; i < n && !threads; i++) {
        kill(kids[i], SIGKILL);
        waitpid(kids[i], NULL, 0);
    }
    printf("%d %s, then %s\n", n, threads ? "threads" : "processes", strerror(e));
    fflush(stdout);
    return wrong || n == 0;
}
