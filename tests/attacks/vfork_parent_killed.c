/* vfork_parent_killed.c: a vfork parent waits for its child to exec or
 * exit; that wait must be killable (Linux's is), or a child that pauses
 * forever wedges its parent, and the parent's parent waiting for it, with
 * SIGKILL ignored. Found by syscall_fuzz. The parent dies of SIGKILL at
 * once, whether it alone or its whole group is killed.
 */
#include "check.h"
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>

static void one(int whole_group) {
    pid_t c = fork();
    CHECK(c >= 0);
    if (c == 0) {
        setpgid(0, 0);
        if (syscall(SYS_vfork) == 0) {
            syscall(SYS_pause);
            _exit(1);
        }
        _exit(2);
    }
    usleep(100000);
    CHECK_OK(kill(whole_group ? -c : c, SIGKILL));
    int st;
    CHECK_EQ(waitpid(c, &st, 0), c);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    if (!whole_group)
        kill(-c, SIGKILL); /* the orphaned vfork child */
}

int main(void) {
    one(0);
    one(1);
    return 0;
}
