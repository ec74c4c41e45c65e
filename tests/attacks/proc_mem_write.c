/* proc_mem_write: /proc/self/mem and /proc/<pid>/mem of another process
 * are the classic way to write to memory behind its protections (and, on
 * a host, to patch read-only code). In the sandbox a write through them
 * must not change anything: our read-only code page and another
 * process's data stay as they were. Not run natively (there it works).
 */
// native: skip
#include "check.h"
#include <stdint.h>
#include <fcntl.h>
#include <sys/wait.h>

static volatile char data[32] = "unchanged";

static int victim(void) {
    return 42;
}

int main(void) {
    int fd = open("/proc/self/mem", O_RDWR);
    if (fd >= 0) {
        unsigned char nop[4] = {0xc3, 0xc3, 0xc3, 0xc3};
        pwrite(fd, nop, sizeof nop, (off_t)(uintptr_t)victim);
        pwrite(fd, "changed", 8, (off_t)(uintptr_t)data);
        close(fd);
    }
    CHECK_EQ(victim(), 42);
    pid_t kid = CHECK_OK(fork());
    if (kid == 0) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/mem", (int)getppid());
        int f = open(path, O_RDWR);
        if (f >= 0)
            pwrite(f, "changed", 8, (off_t)(uintptr_t)data);
        _exit(0);
    }
    int st;
    CHECK_EQ(waitpid(kid, &st, 0), kid);
    CHECK_STR((const char *)data, "unchanged");
    return 0;
}
