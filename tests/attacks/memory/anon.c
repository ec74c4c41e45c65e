/* anon.c LIMIT_MB — a child touches anonymous memory without end; the
 * sandbox's memory limit must kill it with SIGKILL (the OOM kill) before
 * it gets much past the limit, and the parent must live on.
 *
 * The child is spawned (vfork and exec) rather than forked, so the
 * parent's pages are not shared copy-on-write with it: the parent needs no
 * new page while the child holds all the memory, as the attack is about
 * the child. */
#include "check.h"
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define MiB (1024L * 1024)

extern char **environ;

static void bomb(int out) {
    for (long mib = 1;; mib++) {
        char *m = mmap(NULL, MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            _exit(3);
        memset(m, 1, MiB);
        /* Near the limit the pipe may refuse the report: keep touching. */
        if (write(out, &mib, sizeof mib) < 0 && errno != ENOMEM)
            _exit(4);
    }
}

int main(int argc, char **argv) {
    CHECK(argc == 2 || argc == 3);
    if (argc == 3)
        bomb(atoi(argv[2]));
    long limit = atol(argv[1]) * MiB;
    int p[2];
    CHECK(pipe(p) == 0);
    char fd[16];
    snprintf(fd, sizeof fd, "%d", p[1]);
    char *args[] = {argv[0], argv[1], fd, NULL};
    pid_t pid;
    CHECK(posix_spawn(&pid, "/proc/self/exe", NULL, NULL, args, environ) == 0);
    close(p[1]);
    long mib = 0, got;
    while (read(p[0], &got, sizeof got) == sizeof got)
        mib = got;
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
        FAILF("the child ended with status %#x, not SIGKILL", status);
    if (mib * MiB > limit)
        FAILF("the child touched %ld MiB, past the %ld MiB limit", mib, limit / MiB);
    printf("anonymous: killed after %ld MiB of a %ld MiB limit\n", mib, limit / MiB);
    return 0;
}
