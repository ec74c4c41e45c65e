/* clone_vm.c — new processes that share their parent's memory (clone
 * with CLONE_VM and a stack of the caller's, as gVisor's wait tests and
 * posix_spawn do): the child's writes are the parent's, it has a pid and
 * process of its own that wait reports; CLONE_FILES, CLONE_FS and
 * CLONE_SIGHAND share descriptors, working directory and handlers, and
 * without them the child has copies; a sharing child's exit closes none
 * of the shared descriptors, and its exec leaves the parent's memory and
 * handlers alone; vfork's child writes its parent's memory too, and a
 * thread made with CLONE_VFORK holds its creator until its exec; clone3's
 * exit signal checks and CLONE_CLEAR_SIGHAND. */
#define _GNU_SOURCE
#include "check.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#define STACK_SIZE (256 * 1024)

static volatile int shared_word;
static volatile int child_fd = -1;
static char self_exe[4096];

static void handler(int sig) { (void)sig; }

/* The child: writes the shared word, opens a descriptor, changes its
 * working directory and SIGUSR2's handler, and exits (the thread only,
 * as glibc's _exit would end the caller's process too when sharing). */
static int child_main(void *arg) {
    shared_word = (int)(long)arg;
    child_fd = (int)syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDONLY);
    syscall(SYS_chdir, "/proc");
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = handler;
    syscall(SYS_rt_sigaction, SIGUSR2, &sa, NULL, 8);
    syscall(SYS_exit, 7);
    return 0;
}

/* The child: execs this program again (which exits 5 at once). */
static int exec_main(void *arg) {
    (void)arg;
    shared_word = 11;
    char *argv[] = {self_exe, "exit5", NULL};
    syscall(SYS_execve, self_exe, argv, NULL);
    syscall(SYS_exit, 99);
    return 0;
}

static char *new_stack(void) {
    char *s = mmap(NULL, STACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(s != MAP_FAILED);
    return s + STACK_SIZE;
}

static void reset(void) {
    shared_word = 0;
    child_fd = -1;
    CHECK_OK(chdir("/"));
    signal(SIGUSR2, SIG_DFL);
}

static int sigusr2_handled(void) {
    struct sigaction old;
    CHECK_OK(sigaction(SIGUSR2, NULL, &old));
    return old.sa_handler == handler;
}

static void wait_exit(pid_t pid, int code, int options) {
    int st = 0;
    CHECK_EQ(waitpid(pid, &st, options), pid);
    CHECK(WIFEXITED(st));
    CHECK_EQ(WEXITSTATUS(st), code);
}

static void share_all(void) {
    reset();
    int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | SIGCHLD;
    pid_t pid = clone(child_main, new_stack(), flags, (void *)42L);
    CHECK(pid > 0);
    CHECK(pid != getpid());
    wait_exit(pid, 7, 0);
    CHECK_EQ(shared_word, 42);
    /* Its descriptor is ours, and stays open after its exit. */
    CHECK(child_fd >= 0);
    CHECK_OK(fcntl(child_fd, F_GETFD));
    CHECK_OK(close(child_fd));
    char cwd[64];
    CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
    CHECK_STR(cwd, "/proc");
    CHECK(sigusr2_handled());
}

static void share_memory_only(void) {
    reset();
    pid_t pid = clone(child_main, new_stack(), CLONE_VM | SIGCHLD, (void *)43L);
    CHECK(pid > 0);
    wait_exit(pid, 7, 0);
    CHECK_EQ(shared_word, 43);
    /* Its descriptor, directory and handler were its own copies'. */
    CHECK(child_fd >= 0);
    CHECK_ERR(fcntl(child_fd, F_GETFD), EBADF);
    char cwd[64];
    CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
    CHECK_STR(cwd, "/");
    CHECK(!sigusr2_handled());
}

static void clone_child_without_signal(void) {
    reset();
    /* Exit signal 0: a "clone" child, which only __WCLONE/__WALL see. */
    pid_t pid = clone(child_main, new_stack(), CLONE_VM | CLONE_FILES, (void *)44L);
    CHECK(pid > 0);
    int st;
    CHECK_ERR(waitpid(pid, &st, 0), ECHILD);
    wait_exit(pid, 7, __WCLONE);
    CHECK_EQ(shared_word, 44);
    CHECK_OK(close(child_fd));
}

static void exec_leaves_parent_alone(void) {
    reset();
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = handler;
    CHECK_OK(sigaction(SIGUSR2, &sa, NULL));
    int flags = CLONE_VM | CLONE_FILES | CLONE_SIGHAND | SIGCHLD;
    pid_t pid = clone(exec_main, new_stack(), flags, NULL);
    CHECK(pid > 0);
    wait_exit(pid, 5, 0);
    CHECK_EQ(shared_word, 11);
    /* The exec reset the new image's handlers, not ours. */
    CHECK(sigusr2_handled());
    /* Our memory still works after the child's image went. */
    shared_word = 12;
    CHECK_EQ(shared_word, 12);
}

static void vfork_shares_memory(void) {
    reset();
    pid_t pid = vfork();
    if (pid == 0) {
        shared_word = 77;
        _exit(3);
    }
    CHECK(pid > 0);
    CHECK_EQ(shared_word, 77);
    wait_exit(pid, 3, 0);

    int flags = CLONE_VM | CLONE_VFORK | SIGCHLD;
    pid = clone(exec_main, new_stack(), flags, NULL);
    CHECK(pid > 0);
    /* The parent goes on once the child's exec is done. */
    CHECK_EQ(shared_word, 11);
    wait_exit(pid, 5, 0);
}

/* A thread made with CLONE_VFORK: its creator waits until it execs, and
 * its exec ends the creator, so the process is the new program's (in a
 * forked child, whose status tells). */
static void vfork_thread_exec(void) {
    pid_t pid = fork();
    if (pid == 0) {
        int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_VFORK;
        clone(exec_main, new_stack(), flags, NULL);
        _exit(9);
    }
    CHECK(pid > 0);
    wait_exit(pid, 5, 0);
}

struct clone3_args {
    unsigned long long flags, pidfd, child_tid, parent_tid, exit_signal;
    unsigned long long stack, stack_size, tls, set_tid, set_tid_size, cgroup;
};

static long clone3(struct clone3_args *a) { return syscall(SYS_clone3, a, sizeof(*a)); }

/* clone3: a thread or a sibling has no exit signal of its own (EINVAL);
 * CLONE_CLEAR_SIGHAND starts the child with handled signals at their
 * default and ignored ones still ignored, and is EINVAL with
 * CLONE_SIGHAND. */
static void clone3_checks(void) {
    struct clone3_args a;
    memset(&a, 0, sizeof(a));
    a.flags = CLONE_PARENT;
    a.exit_signal = SIGCHLD;
    CHECK_ERR(clone3(&a), EINVAL);
    a.flags = CLONE_THREAD | CLONE_SIGHAND | CLONE_VM;
    CHECK_ERR(clone3(&a), EINVAL);

    reset();
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = handler;
    CHECK_OK(sigaction(SIGUSR2, &sa, NULL));
    sa.sa_handler = SIG_IGN;
    CHECK_OK(sigaction(SIGUSR1, &sa, NULL));
    memset(&a, 0, sizeof(a));
    a.flags = 0x100000000ULL | CLONE_SIGHAND | CLONE_VM;
    a.exit_signal = SIGCHLD;
    CHECK_ERR(clone3(&a), EINVAL);
    a.flags = 0x100000000ULL; /* CLONE_CLEAR_SIGHAND */
    long pid = clone3(&a);
    if (pid == 0) {
        struct sigaction old;
        sigaction(SIGUSR2, NULL, &old);
        if (old.sa_handler != SIG_DFL)
            _exit(1);
        sigaction(SIGUSR1, NULL, &old);
        _exit(old.sa_handler == SIG_IGN ? 0 : 2);
    }
    CHECK(pid > 0);
    wait_exit((pid_t)pid, 0, 0);
    CHECK(sigusr2_handled());
    signal(SIGUSR1, SIG_DFL);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "exit5") == 0)
        return 5;
    ssize_t n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
    CHECK(n > 0);
    self_exe[n] = 0;
    share_all();
    share_memory_only();
    clone_child_without_signal();
    exec_leaves_parent_alone();
    vfork_shares_memory();
    vfork_thread_exec();
    clone3_checks();
    return 0;
}
