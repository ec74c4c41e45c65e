/* membarrier.c — membarrier(2) as Linux: QUERY lists the commands,
 * GLOBAL always works, the private expedited barrier is EPERM until the
 * process registers (per address space: a forked child keeps the
 * registration, an exec drops it), GET_REGISTRATIONS reports them, and flags
 * or unknown commands are EINVAL. A barrier issued while other threads
 * run returns. */
#include "check.h"
#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#ifndef MEMBARRIER_CMD_GET_REGISTRATIONS
#define MEMBARRIER_CMD_GET_REGISTRATIONS (1 << 9)
#endif

static long membarrier(int cmd, unsigned flags, int cpu) { return syscall(SYS_membarrier, cmd, flags, cpu); }

static volatile int stop;
static void *spin(void *arg) {
    (void)arg;
    while (!stop)
        ;
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "after-exec") == 0) {
        CHECK_ERR(membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0), EPERM);
        if (membarrier(MEMBARRIER_CMD_QUERY, 0, 0) & MEMBARRIER_CMD_GET_REGISTRATIONS)
            CHECK_EQ(membarrier(MEMBARRIER_CMD_GET_REGISTRATIONS, 0, 0), 0);
        return 0;
    }
    long mask = CHECK_OK(membarrier(MEMBARRIER_CMD_QUERY, 0, 0));
    const long needed = MEMBARRIER_CMD_GLOBAL | MEMBARRIER_CMD_PRIVATE_EXPEDITED |
                        MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED | MEMBARRIER_CMD_GLOBAL_EXPEDITED |
                        MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED;
    CHECK_EQ(mask & needed, needed);
    int regs = (mask & MEMBARRIER_CMD_GET_REGISTRATIONS) != 0;

    CHECK_ERR(membarrier(MEMBARRIER_CMD_QUERY, 1, 0), EINVAL);
    CHECK_ERR(membarrier(MEMBARRIER_CMD_GLOBAL, 1, 0), EINVAL);
    CHECK_ERR(membarrier(1 << 20, 0, 0), EINVAL);
    CHECK_ERR(membarrier(-1, 0, 0), EINVAL);

    if (regs)
        CHECK_EQ(membarrier(MEMBARRIER_CMD_GET_REGISTRATIONS, 0, 0), 0);
    CHECK_ERR(membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0), EPERM);
    CHECK_EQ(membarrier(MEMBARRIER_CMD_GLOBAL, 0, 0), 0);
    CHECK_EQ(membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0), 0);

    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, spin, NULL), 0);
    CHECK_EQ(membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0), 0);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0), 0);
    CHECK_EQ(membarrier(MEMBARRIER_CMD_GLOBAL, 0, 0), 0);
    stop = 1;
    CHECK_EQ(pthread_join(th, NULL), 0);
    if (regs)
        CHECK_EQ(membarrier(MEMBARRIER_CMD_GET_REGISTRATIONS, 0, 0), MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
    CHECK_EQ(membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0), 0);
    if (regs)
        CHECK_EQ(membarrier(MEMBARRIER_CMD_GET_REGISTRATIONS, 0, 0),
                 MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED | MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED);

    /* A forked child's copy of the address space keeps the registration;
     * an exec starts a new one, unregistered. */
    pid_t pid = CHECK_OK(fork());
    if (pid == 0) {
        if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0)
            _exit(1);
        if (regs && membarrier(MEMBARRIER_CMD_GET_REGISTRATIONS, 0, 0) !=
                        (MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED | MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED))
            _exit(2);
        execl("/proc/self/exe", argv[0], "after-exec", (char *)NULL);
        _exit(3);
    }
    int st = 0;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st));
    CHECK_EQ(WEXITSTATUS(st), 0);
    /* The parent stays registered. */
    CHECK_EQ(membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0), 0);
    return 0;
}
