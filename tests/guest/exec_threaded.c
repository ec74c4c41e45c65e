/* exec_threaded.c — execve from a process with several threads: the other
 * threads end, the new program runs alone (its /proc/self/task has one
 * entry) and its exit status is the process's. */
#include "check.h"

#include <pthread.h>
#include <unistd.h>

static void *park(void *arg) {
    for (;;)
        pause();
    return arg;
}

int main(int argc, char **argv) {
    (void)argc;
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, park, NULL), 0);
    usleep(20000);
    /* The shell, alone in the process now, exits 7. */
    execl("/bin/sh", "sh", "-c", "test $(ls /proc/$$/task | wc -l) -eq 1 && exit 7", (char *)NULL);
    FAILF("execl %s failed", argv[0]);
}
