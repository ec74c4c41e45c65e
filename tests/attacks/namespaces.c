/* namespaces.c: new namespaces (a user namespace would make the guest
 * root of it; a pid or network namespace would need the host's) and setns
 * into someone else's. The namespaces the sentry emulates (mount, UTS,
 * IPC) are made inside the sandbox; every other kind and setns fail, and
 * we are where we were.
 */
// native: skip
#include "check.h"
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>

int main(void) {
    int refused[] = {CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP, 0x80 /* CLONE_NEWTIME */,
                     CLONE_NEWUSER | CLONE_NEWNS};
    for (unsigned i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        errno = 0;
        CHECK_EQ(unshare(refused[i]), -1);
        CHECK(errno == EPERM || errno == EINVAL);
    }
    CHECK_OK(unshare(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC));
    errno = 0;
    CHECK_EQ(setns(0, 0), -1);
    CHECK(errno == ENOSYS || errno == EPERM || errno == EINVAL || errno == EBADF);
    int fd = open("/proc/1/ns/mnt", O_RDONLY);
    if (fd >= 0) {
        errno = 0;
        CHECK_EQ(setns(fd, CLONE_NEWNET), -1);
        close(fd);
    }
    CHECK_EQ(getpid() > 0, 1);
    struct stat st;
    CHECK_OK(stat("/proc/self/status", &st));
    return 0;
}
