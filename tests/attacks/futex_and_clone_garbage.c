/* futex_and_clone_garbage: the sentry's futex table and its thread
 * creation get garbage: futex words in unmapped and read-only memory,
 * unknown operations, requeue onto garbage, huge timeouts, a robust
 * list pointing at itself and at unmapped memory (followed when the
 * thread exits), clone and clone3 with bad flags, sizes and pointers.
 * Each gets Linux's errno and the sandbox goes on. Passes natively.
 */
#include "check.h"
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

struct robust {
    struct robust *next;
    long futex_offset;
    struct robust *pending;
};

static void *robust_thread(void *arg) {
    static struct robust head;
    head.next = &head; /* a list that loops on itself */
    head.futex_offset = 0x10000000;
    head.pending = (struct robust *)0x10;
    syscall(SYS_set_robust_list, &head, sizeof head);
    return arg;
}

int main(void) {
    int *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(ro != MAP_FAILED);
    void *hole = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(hole != MAP_FAILED);
    CHECK_OK(munmap(hole, 4096));
    CHECK_ERR(syscall(SYS_futex, hole, FUTEX_WAIT, 0, NULL, NULL, 0), EFAULT);
    CHECK_ERR(syscall(SYS_futex, (char *)ro + 1, FUTEX_WAIT, 0, NULL, NULL, 0), EINVAL);
    CHECK_ERR(syscall(SYS_futex, ro, 99, 0, NULL, NULL, 0), ENOSYS);
    struct timespec bad = {-1, 0};
    int word = 0;
    CHECK_ERR(syscall(SYS_futex, &word, FUTEX_WAIT, 0, &bad, NULL, 0), EINVAL);
    struct timespec far = {0x7fffffffffffffffL, 999999999};
    CHECK_ERR(syscall(SYS_futex, &word, FUTEX_WAIT, 1, &far, NULL, 0), EAGAIN);
    CHECK(syscall(SYS_futex, &word, FUTEX_REQUEUE, 1, (void *)1, hole, 0) >= 0 || errno == EFAULT);
    CHECK_ERR(syscall(SYS_futex, &word, FUTEX_CMP_REQUEUE, 1, (void *)1, hole, 5), EFAULT);
    CHECK_ERR(syscall(SYS_set_robust_list, (void *)1, 7), EINVAL);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, robust_thread, NULL), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    /* clone: a thread without shared memory, and shared signal handlers
     * without shared memory, are EINVAL. */
    CHECK_ERR(syscall(SYS_clone, CLONE_THREAD | SIGCHLD, 0, 0, 0, 0), EINVAL);
    CHECK_ERR(syscall(SYS_clone, CLONE_SIGHAND, 0, 0, 0, 0), EINVAL);
    /* clone3 with a bad size, a bad pointer and unknown flags. */
    char args[128] = {0};
    /* (Or ENOSYS where clone3 is not served: glibc then uses clone.) */
#define CLONE3_ERR(call, e)                                                     \
    do {                                                                       \
        errno = 0;                                                             \
        CHECK((call) == -1 && (errno == (e) || errno == ENOSYS));              \
    } while (0)
    CLONE3_ERR(syscall(SYS_clone3, args, 8), EINVAL);
    CLONE3_ERR(syscall(SYS_clone3, (void *)8, 88), EFAULT);
    unsigned long long flags = 1ULL << 40;
    memcpy(args, &flags, 8);
    CLONE3_ERR(syscall(SYS_clone3, args, 88), EINVAL);
    pid_t kid = CHECK_OK(fork());
    if (kid == 0)
        _exit(6);
    int st;
    CHECK_EQ(waitpid(kid, &st, 0), kid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 6);
    return 0;
}
