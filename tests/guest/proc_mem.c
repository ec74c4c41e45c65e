/* proc_mem.c — /proc/[pid]/mem: offsets are addresses; reads and writes
 * go as a debugger's do (a read-only page is written), stop at the first
 * unmapped page (EIO when nothing was done), only SEEK_SET/SEEK_CUR move
 * it; the file keeps the address space it was opened on (nothing to read
 * once the process is gone); another user may not open it (EACCES).
 */
#include "check.h"

#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>

static char message[] = "hello-world";

static void other_user_is_refused(void) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/mem", getppid());
    CHECK_OK(setresuid(65534, 65534, 65534));
    CHECK_ERR(open(path, O_RDONLY), EACCES);
    exit(0);
}

int main(void) {
    struct stat st;
    CHECK_OK(stat("/proc/self/mem", &st));
    CHECK_EQ(st.st_mode, S_IFREG | 0600);
    CHECK_EQ(st.st_size, 0);

    int fd = open("/proc/self/mem", O_RDWR);
    CHECK_OK(fd);
    char out[sizeof message];
    CHECK_EQ(pread(fd, out, sizeof out, (off_t)(uintptr_t)message), (long)sizeof out);
    CHECK_STR(out, message);

    char target[sizeof message] = {0};
    CHECK_EQ(lseek(fd, (off_t)(uintptr_t)target, SEEK_SET), (off_t)(uintptr_t)target);
    CHECK_EQ(write(fd, "HELLO", 5), 5);
    CHECK_STR(target, "HELLO");
    CHECK_EQ(lseek(fd, 0, SEEK_CUR), (off_t)(uintptr_t)target + 5);
    CHECK_EQ(lseek(fd, -5, SEEK_CUR), (off_t)(uintptr_t)target);
    CHECK_ERR(lseek(fd, 0, SEEK_END), EINVAL);

    /* A read-only page is written through the file (FOLL_FORCE). */
    long page = sysconf(_SC_PAGESIZE);
    char *ro = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(ro != MAP_FAILED);
    memset(ro, 'x', 2 * page);
    CHECK_OK(mprotect(ro, page, PROT_READ));
    CHECK_EQ(pwrite(fd, "y", 1, (off_t)(uintptr_t)ro), 1);
    CHECK_EQ(ro[0], 'y');

    /* Reads stop at an unmapped page; EIO when it is the first. */
    CHECK_OK(munmap(ro + page, page));
    char *buf = malloc(page);
    CHECK_EQ(pread(fd, buf, page, (off_t)(uintptr_t)(ro + page - 1)), 1);
    CHECK_EQ(buf[0], 'x');
    CHECK_ERR(pread(fd, buf, 1, (off_t)(uintptr_t)(ro + page)), EIO);
    CHECK_ERR(pwrite(fd, buf, 1, (off_t)(uintptr_t)(ro + page)), EIO);
    CHECK_OK(close(fd));

    /* A child's memory, while it lives and after it was reaped. */
    int go[2];
    CHECK_OK(pipe(go));
    pid_t child = fork();
    CHECK_OK(child);
    if (child == 0) {
        char c;
        message[0] = 'J';
        close(go[1]);
        if (read(go[0], &c, 1) < 0)
            _exit(1);
        _exit(0);
    }
    close(go[0]);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/mem", child);
    /* The child's write to its copy is not ours. */
    for (int tries = 0;; tries++) {
        int cfd = open(path, O_RDONLY);
        CHECK_OK(cfd);
        CHECK_EQ(pread(cfd, out, sizeof out, (off_t)(uintptr_t)message), (long)sizeof out);
        if (out[0] == 'J') {
            CHECK_STR(out, "Jello-world");
            CHECK_STR(message, "hello-world");
            CHECK_OK(close(go[1]));
            int status;
            CHECK_EQ(waitpid(child, &status, 0), child);
            CHECK_EQ(pread(cfd, out, sizeof out, (off_t)(uintptr_t)message), 0);
            CHECK_OK(close(cfd));
            break;
        }
        CHECK_OK(close(cfd));
        CHECK(tries < 1000);
        usleep(1000);
    }

    pid_t other = fork();
    CHECK_OK(other);
    if (other == 0)
        other_user_is_refused();
    int status;
    CHECK_EQ(waitpid(other, &status, 0), other);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return 0;
}
