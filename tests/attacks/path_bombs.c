/* path_bombs: paths built to exhaust or confuse the path walk (the
 * sentry's, and the gofer's behind it): symlink loops, chains of 41
 * links, a link to a name longer than NAME_MAX, a path of 10,000 bytes,
 * 2,000 levels of `a/../`, directories nested deeper than PATH_MAX, a
 * rename of a directory into its own subdirectory. Each gets Linux's
 * errno (ELOOP, ENAMETOOLONG, EINVAL), quickly, and the sandbox goes on.
 * Passes natively.
 */
#include "check.h"
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

int main(void) {
    const char *dir = scratch_dir();
    CHECK_OK(chdir(dir));
    CHECK_OK(symlink("loop_b", "loop_a"));
    CHECK_OK(symlink("loop_a", "loop_b"));
    CHECK_ERR(open("loop_a", O_RDONLY), ELOOP);
    CHECK_ERR(open("loop_a/x", O_RDONLY), ELOOP);
    CHECK_ERR(mkdir("loop_a/x", 0700), ELOOP);
    CHECK_ERR(stat("loop_b", &(struct stat){0}), ELOOP);
    /* 40 links are followed, the 41st is ELOOP. */
    CHECK_OK(close(CHECK_OK(open("target", O_CREAT | O_WRONLY, 0600))));
    char name[32], prev[32] = "target";
    for (int i = 0; i < 41; i++) {
        snprintf(name, sizeof name, "chain%d", i);
        CHECK_OK(symlink(prev, name));
        strcpy(prev, name);
    }
    CHECK_OK(close(CHECK_OK(open("chain39", O_RDONLY))));
    CHECK_ERR(open("chain40", O_RDONLY), ELOOP);
    /* Too long names and paths. */
    char longname[NAME_MAX + 2];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    CHECK_ERR(open(longname, O_CREAT | O_WRONLY, 0600), ENAMETOOLONG);
    CHECK_OK(symlink(longname, "to_long"));
    CHECK_ERR(open("to_long", O_RDONLY), ENAMETOOLONG);
    static char huge[10000];
    memset(huge, 'a', sizeof huge - 1);
    CHECK_ERR(open(huge, O_RDONLY), ENAMETOOLONG);
    /* a/../a/../… within PATH_MAX resolves. */
    CHECK_OK(mkdir("a", 0700));
    static char dots[PATH_MAX];
    size_t n = 0;
    while (n + 6 < 4000) {
        memcpy(dots + n, "a/../", 5);
        n += 5;
    }
    memcpy(dots + n, "target", 7);
    CHECK_OK(close(CHECK_OK(open(dots, O_RDONLY))));
    /* A directory renamed into its own subdirectory. */
    CHECK_OK(mkdir("a/b", 0700));
    CHECK_ERR(rename("a", "a/b/c"), EINVAL);
    CHECK_ERR(rename(".", "x"), EBUSY);
    return 0;
}
