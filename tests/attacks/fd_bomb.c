// husk-do: --memory-mb 256
/* fd_bomb: opens descriptors without end, in several processes at once.
 * RLIMIT_NOFILE must hold in each (EMFILE at the soft limit, no way past
 * the hard one), the fds of a process must all work, and the sandbox must
 * live on. */
#include "check.h"
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>

#define SOFT 4096
#define CHILDREN 4

/* Opens /dev/null until it fails; returns how many were opened. */
static int open_all(void) {
    int n = 0;
    for (;;) {
        int fd = open("/dev/null", O_RDONLY);
        if (fd < 0) {
            CHECK_EQ(errno, EMFILE);
            return n;
        }
        n++;
    }
}

int main(void) {
    struct rlimit rl;
    CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
    struct rlimit over = {rl.rlim_max + 1, rl.rlim_max + 1};
    if (rl.rlim_max != RLIM_INFINITY && geteuid() != 0)
        CHECK(setrlimit(RLIMIT_NOFILE, &over) == -1 && errno == EPERM);
    struct rlimit soft = {SOFT, rl.rlim_max};
    CHECK(setrlimit(RLIMIT_NOFILE, &soft) == 0);
    /* No descriptor number at or past the limit can be made. */
    CHECK(dup2(0, SOFT) == -1 && errno == EBADF);
    CHECK(fcntl(0, F_DUPFD, SOFT) == -1 && errno == EINVAL);

    pid_t kids[CHILDREN];
    for (int i = 0; i < CHILDREN; i++) {
        kids[i] = fork();
        CHECK(kids[i] >= 0);
        if (kids[i] == 0) {
            int opened = open_all();
            /* stdin, stdout and stderr were open already. */
            if (opened < SOFT - 8 || opened > SOFT - 3)
                FAILF("opened %d descriptors under a limit of %d", opened, SOFT);
            /* Every one of them works, and a close makes room for one. */
            char c;
            CHECK(read(SOFT - 1, &c, 1) == 0);
            CHECK(close(SOFT - 1) == 0);
            CHECK(open("/dev/null", O_RDONLY) == SOFT - 1);
            CHECK(open("/dev/null", O_RDONLY) == -1 && errno == EMFILE);
            _exit(0);
        }
    }
    for (int i = 0; i < CHILDREN; i++) {
        int status;
        CHECK(waitpid(kids[i], &status, 0) == kids[i]);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    return 0;
}
