/* proc_mem_write: /proc/self/mem and /proc/<pid>/mem write behind a
 * mapping's protections, as a debugger does (Linux's FOLL_FORCE). That
 * must reach nothing but the guest's own private memory: a write into a
 * read-only shared mapping of a file opened read-only fails (EIO) and
 * leaves the file as it was; a write into a read-only private mapping of
 * it changes only that copy, never the file or another mapping of it;
 * and a process that may not trace another may not open its mem (EACCES)
 * and so cannot change its data. Passes natively: the sandbox holds the
 * same lines Linux does.
 */
#include "check.h"
#include <stdint.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>

static volatile char data[32] = "unchanged";

static void file_is(const char *path, const char *want, size_t n) {
    char buf[64] = {0};
    int fd = CHECK_OK(open(path, O_RDONLY));
    CHECK_EQ(read(fd, buf, n), (long)n);
    CHECK_OK(close(fd));
    CHECK(memcmp(buf, want, n) == 0);
}

int main(void) {
    const char *path = "/tmp/proc_mem_write.victim";
    int w = CHECK_OK(open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644));
    CHECK_EQ(write(w, "original", 8), 8);
    CHECK_OK(close(w));
    int ro = CHECK_OK(open(path, O_RDONLY));
    int mem = CHECK_OK(open("/proc/self/mem", O_RDWR));

    char *shared = mmap(NULL, 4096, PROT_READ, MAP_SHARED, ro, 0);
    CHECK(shared != MAP_FAILED);
    CHECK_ERR(pwrite(mem, "CHANGED!", 8, (off_t)(uintptr_t)shared), EIO);
    CHECK(memcmp(shared, "original", 8) == 0);
    file_is(path, "original", 8);

    char *private = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, ro, 0);
    CHECK(private != MAP_FAILED);
    CHECK_EQ(pwrite(mem, "CHANGED!", 8, (off_t)(uintptr_t)private), 8);
    CHECK(memcmp(private, "CHANGED!", 8) == 0);
    CHECK(memcmp(shared, "original", 8) == 0);
    file_is(path, "original", 8);
    char *again = mmap(NULL, 4096, PROT_READ, MAP_SHARED, ro, 0);
    CHECK(again != MAP_FAILED);
    CHECK(memcmp(again, "original", 8) == 0);
    CHECK_OK(close(mem));

    pid_t kid = CHECK_OK(fork());
    if (kid == 0) {
        char p[64];
        snprintf(p, sizeof p, "/proc/%d/mem", (int)getppid());
        CHECK_OK(setresuid(65534, 65534, 65534));
        CHECK_ERR(open(p, O_RDWR), EACCES);
        _exit(0);
    }
    int st;
    CHECK_EQ(waitpid(kid, &st, 0), kid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_STR((const char *)data, "unchanged");
    CHECK_OK(unlink(path));
    return 0;
}
