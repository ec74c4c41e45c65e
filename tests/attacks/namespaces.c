/* namespaces.c: new namespaces (a user namespace makes the guest root of
 * it; a mount namespace lets it rearrange mounts) and setns into someone
 * else's. unshare of every kind and setns fail, and we are where we were.
 */
// native: skip
#include "check.h"
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>

int main(void) {
    int kinds[] = {CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWUTS,
                   CLONE_NEWIPC, CLONE_NEWCGROUP, CLONE_NEWUSER | CLONE_NEWNS};
    for (unsigned i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        errno = 0;
        CHECK_EQ(unshare(kinds[i]), -1);
        CHECK(errno == ENOSYS || errno == EPERM || errno == EINVAL);
    }
    errno = 0;
    CHECK_EQ(setns(0, 0), -1);
    CHECK(errno == ENOSYS || errno == EPERM || errno == EINVAL);
    int fd = open("/proc/1/ns/mnt", O_RDONLY);
    if (fd >= 0) {
        errno = 0;
        CHECK_EQ(setns(fd, CLONE_NEWNS), -1);
        close(fd);
    }
    CHECK_EQ(getpid() > 0, 1);
    struct stat st;
    CHECK_OK(stat("/proc/self/status", &st));
    return 0;
}
