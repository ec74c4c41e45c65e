/* anon.c LIMIT_MB — a child touches anonymous memory without end; the
 * sandbox's memory limit must kill it with SIGKILL (the OOM kill) before
 * it gets much past the limit, and the parent must live on. */
#include "check.h"
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define MiB (1024L * 1024)

int main(int argc, char **argv) {
    CHECK(argc == 2);
    long limit = atol(argv[1]) * MiB;
    /* The child reports its progress in a shared page, which needs no
     * memory once it is touched. */
    volatile long *done = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(done != MAP_FAILED);
    *done = 0;
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        for (long mib = 1;; mib++) {
            char *m = mmap(NULL, MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (m == MAP_FAILED)
                _exit(3);
            memset(m, 1, MiB);
            *done = mib;
        }
    }
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
        FAILF("the child ended with status %#x, not SIGKILL", status);
    long mib = *done;
    if (mib * MiB > limit)
        FAILF("the child touched %ld MiB, past the %ld MiB limit", mib, limit / MiB);
    printf("anonymous: killed after %ld MiB of a %ld MiB limit\n", mib, limit / MiB);
    return 0;
}
