/* proc_host_pids.c: /proc must hold the sandbox's processes only. The
 * sentry, gofer and stub processes and the host's pids are not there: a
 * walk of /proc finds only our own pids (1 and the child we fork), no
 * entry names "husk", and host pids such as the sentry's are ESRCH for
 * kill and ENOENT under /proc.
 */
// native: skip
#include "check.h"
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>

int main(void) {
    CHECK_EQ(getpid(), 1);
    pid_t c = fork();
    CHECK(c >= 0);
    if (c == 0) {
        pause();
        _exit(0);
    }
    DIR *d = opendir("/proc");
    CHECK(d != NULL);
    struct dirent *e;
    int seen = 0;
    char path[300], buf[4096];
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        int pid = atoi(e->d_name);
        if (pid != 1 && pid != c)
            FAILF("/proc/%d is not ours", pid);
        snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
        long n = read_file(path, buf, sizeof buf);
        CHECK(n >= 0);
        for (long i = 0; i < n; i++)
            if (buf[i] == 0)
                buf[i] = ' ';
        if (strstr(buf, "husk"))
            FAILF("/proc/%d/cmdline names husk: %s", pid, buf);
        seen++;
    }
    closedir(d);
    CHECK_EQ(seen, 2);
    /* Pids a host would have: none is reachable. */
    for (int pid = c + 1; pid < c + 200; pid++) {
        CHECK_ERR(kill(pid, 0), ESRCH);
        snprintf(path, sizeof path, "/proc/%d/status", pid);
        CHECK_ERR(access(path, F_OK), ENOENT);
    }
    CHECK_OK(kill(c, SIGKILL));
    CHECK_EQ(waitpid(c, 0, 0), c);
    return 0;
}
