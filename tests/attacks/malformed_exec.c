/* malformed_exec: hostile executables must make execve fail, never the
 * loader crash or wedge the sandbox: truncated ELF headers, absurd
 * program header counts and offsets, segments past the file's end or
 * overlapping the kernel half, a PT_INTERP naming itself or a missing
 * file, a `#!` interpreter chain that loops, and an argument list past
 * ARG_MAX. Each execve returns -1 (Linux's ENOEXEC, ELIBBAD, ELOOP, ENOENT, E2BIG,
 * EINVAL, EACCES or ENOMEM) in a child, or past the point of no return
 * the child dies of SIGSEGV or SIGKILL, and the sandbox goes on. Passes
 * natively.
 */
#include "check.h"
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stddef.h>
#include <signal.h>
#include <sys/wait.h>

static char dir[48];

static void put(const char *name, const void *data, size_t len) {
    char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    int fd = CHECK_OK(open(p, O_CREAT | O_TRUNC | O_WRONLY, 0755));
    CHECK_EQ(write(fd, data, len), (ssize_t)len);
    close(fd);
}

/* execve of dir/name in a child must fail; returns its errno. */
static int exec_fails(const char *name, char *const *argv) {
    char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    int pipefd[2];
    CHECK_OK(pipe(pipefd));
    pid_t kid = CHECK_OK(fork());
    if (kid == 0) {
        close(pipefd[0]);
        char *const none[] = {p, NULL};
        execve(p, argv ? argv : none, (char *[]){NULL});
        int e = errno;
        write(pipefd[1], &e, sizeof e);
        _exit(0);
    }
    close(pipefd[1]);
    int e = 0;
    ssize_t n = read(pipefd[0], &e, sizeof e);
    close(pipefd[0]);
    int st;
    CHECK_EQ(waitpid(kid, &st, 0), kid);
    if (n == sizeof e)
        return e;
    /* Past the point of no return the new image cannot be set up: Linux
     * kills the process (SIGSEGV or SIGKILL). */
    if (WIFSIGNALED(st) && (WTERMSIG(st) == SIGSEGV || WTERMSIG(st) == SIGKILL || WTERMSIG(st) == SIGBUS))
        return ENOEXEC;
    FAILF("execve of %s did not fail (status %#x)", name, st);
}

static int ok_errno(int e) {
    return e == ENOEXEC || e == ELOOP || e == ENOENT || e == E2BIG || e == EINVAL || e == EACCES || e == ENOMEM ||
           e == EIO || e == EFAULT || e == ELIBBAD;
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/malexec-%d", getpid());
    CHECK_OK(mkdir(dir, 0755));
    Elf64_Ehdr eh = {0};
    memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_type = ET_EXEC;
    eh.e_machine = EM_X86_64;
    eh.e_version = EV_CURRENT;
    eh.e_entry = 0x400000;
    eh.e_phoff = sizeof eh;
    eh.e_ehsize = sizeof eh;
    eh.e_phentsize = sizeof(Elf64_Phdr);

    put("truncated", &eh, 20);
    Elf64_Ehdr h = eh;
    h.e_phnum = 0xffff;
    put("many_phdrs", &h, sizeof h);
    h = eh;
    h.e_phnum = 1;
    h.e_phoff = 0x7fffffffffffff00ULL;
    put("phoff_huge", &h, sizeof h);
    h = eh;
    h.e_phentsize = 7;
    h.e_phnum = 1;
    put("phentsize_bad", &h, sizeof h);

    struct image {
        Elf64_Ehdr e;
        Elf64_Phdr p[2];
        char interp[128];
    } f = {0};
    f.e = eh;
    f.e.e_phnum = 1;
    f.p[0].p_type = PT_LOAD;
    f.p[0].p_flags = PF_R | PF_X;
    f.p[0].p_offset = 0;
    f.p[0].p_vaddr = 0xffffffffff000000ULL; /* the kernel half */
    f.p[0].p_filesz = 0x1000;
    f.p[0].p_memsz = 0x1000;
    f.p[0].p_align = 0x1000;
    put("kernel_segment", &f, sizeof f);
    f.p[0].p_vaddr = 0x400000;
    f.p[0].p_filesz = 0x10000000; /* past the file's end */
    f.p[0].p_memsz = 0x10000000;
    put("past_eof", &f, sizeof f);
    f.p[0].p_filesz = 0x1000;
    f.p[0].p_memsz = 0x100;        /* filesz > memsz */
    put("filesz_gt_memsz", &f, sizeof f);
    f.e.e_phnum = 2;
    f.p[0].p_memsz = 0x1000;
    f.p[1].p_type = PT_INTERP;
    f.p[1].p_offset = offsetof(struct image, interp);
    snprintf(f.interp, sizeof f.interp, "%s/self_interp", dir);
    f.p[1].p_filesz = strlen(f.interp) + 1;
    put("self_interp", &f, sizeof f);
    snprintf(f.interp, sizeof f.interp, "/nonexistent/ld.so");
    f.p[1].p_filesz = strlen(f.interp) + 1;
    put("missing_interp", &f, sizeof f);
    f.p[1].p_filesz = 0x7fffffff; /* interpreter name past the end */
    put("interp_huge", &f, sizeof f);

    char loop[128];
    snprintf(loop, sizeof loop, "#!%s/shebang_a\n", dir);
    put("shebang_b", loop, strlen(loop));
    snprintf(loop, sizeof loop, "#!%s/shebang_b\n", dir);
    put("shebang_a", loop, strlen(loop));
    put("empty", "", 0);
    put("garbage", "\x7f" "ELF\x02\x01\x01\xff\xff\xff\xff\xff\xff", 14);

    const char *names[] = {"truncated", "many_phdrs", "phoff_huge", "phentsize_bad", "kernel_segment", "past_eof",
                           "filesz_gt_memsz", "self_interp", "missing_interp", "interp_huge", "shebang_a", "empty",
                           "garbage"};
    for (unsigned i = 0; i < sizeof names / sizeof *names; i++) {
        int e = exec_fails(names[i], NULL);
        if (getenv("MALEXEC_VERBOSE"))
            fprintf(stderr, "%s: %d\n", names[i], e);
        if (!ok_errno(e))
            FAILF("execve of %s: errno %d (%s)", names[i], e, strerror(e));
    }
    /* An argument list past ARG_MAX. */
    static char big[131072];
    memset(big, 'a', sizeof big - 1);
    static char *argv[64];
    for (int i = 0; i < 63; i++)
        argv[i] = big;
    CHECK_EQ(exec_fails("shebang_a", argv), E2BIG);
    /* Still alive. */
    pid_t kid = CHECK_OK(fork());
    if (kid == 0)
        _exit(5);
    int st;
    CHECK_EQ(waitpid(kid, &st, 0), kid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 5);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK_EQ(system(cmd), 0);
    return 0;
}
