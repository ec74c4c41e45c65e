/* deep_cwd: getcwd of a working directory deeper than PATH_MAX must fail
 * with ENAMETOOLONG, as Linux's (it returned ERANGE, telling a program to
 * retry with a larger buffer, which never helps); a buffer too small for
 * a short path is ERANGE. Passes natively.
 */
#include "check.h"
#include <limits.h>
#include <sys/syscall.h>

int main(void) {
    char dir[] = "/tmp/deepcwd-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    CHECK_OK(chdir(dir));
    char name[201];
    memset(name, 'd', 200);
    name[200] = 0;
    int depth = 0;
    for (; depth < 25; depth++) {
        CHECK_OK(mkdir(name, 0700));
        CHECK_OK(chdir(name));
    }
    static char buf[3 * PATH_MAX];
    CHECK_ERR(syscall(SYS_getcwd, buf, sizeof buf), ENAMETOOLONG);
    for (; depth > 0; depth--) {
        CHECK_OK(chdir(".."));
        CHECK_OK(rmdir(name));
    }
    CHECK_ERR(syscall(SYS_getcwd, buf, 4), ERANGE);
    CHECK(getcwd(buf, sizeof buf) != NULL);
    CHECK_STR(buf, dir);
    CHECK_OK(chdir("/"));
    CHECK_OK(rmdir(dir));
    return 0;
}
