/* auxv.c — the initial process stack: argv, envp, the auxiliary vector. */
#include "check.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <sys/auxv.h>

extern char _start[];
extern char **environ;

int main(int argc, char **argv, char **envp) {
    /* argv / envp layout: argv[argc] == NULL, envp right after it. */
    CHECK(argc >= 1);
    CHECK(argv[argc] == NULL);
    CHECK(envp == argv + argc + 1);
    CHECK(envp == environ);
    for (int i = 0; i < argc; i++)
        CHECK(argv[i] != NULL);
    int nenv = 0, found = 0;
    for (char **e = envp; *e; e++, nenv++) {
        CHECK(strchr(*e, '=') != NULL);
        found |= strcmp(*e, "HUSK_TEST_ENV=marker") == 0;
    }
    if (!found)
        FAILF("HUSK_TEST_ENV=marker is not in envp (%d entries)", nenv);
    CHECK_STR(getenv("HUSK_TEST_ENV"), "marker");
    /* strings live above the pointer arrays, on the stack. */
    CHECK((uintptr_t)argv[0] > (uintptr_t)&envp[nenv]);

    /* the raw auxv follows envp's NULL; compare with getauxval. */
    Elf64_auxv_t *av = (Elf64_auxv_t *)(envp + nenv + 1);
    int n = 0, seen_pagesz = 0;
    for (; av[n].a_type != AT_NULL; n++) {
        CHECK(n < 64);
        if (av[n].a_type == AT_PAGESZ)
            seen_pagesz = 1;
        /* (static glibc reports its own AT_HWCAP/AT_HWCAP2 values.) */
        if (av[n].a_type != AT_IGNORE && av[n].a_type != AT_HWCAP &&
            av[n].a_type != AT_HWCAP2 &&
            av[n].a_type != AT_MINSIGSTKSZ)
            CHECK_EQ(getauxval(av[n].a_type), av[n].a_un.a_val);
    }
    CHECK(seen_pagesz);
    /* /proc/self/auxv holds the same vector, AT_NULL terminated. */
    {
        static Elf64_auxv_t pav[128];
        int fd = CHECK_OK(open("/proc/self/auxv", O_RDONLY));
        ssize_t r = read(fd, pav, sizeof pav);
        CHECK_OK(close(fd));
        CHECK_EQ(r, (long)sizeof(Elf64_auxv_t) * (n + 1));
        CHECK_MEM(pav, av, sizeof(Elf64_auxv_t) * (size_t)(n + 1));
    }

    CHECK_EQ(getauxval(AT_PAGESZ), 4096);
    CHECK_EQ(getauxval(AT_CLKTCK), 100);
    CHECK_EQ(getauxval(AT_SECURE), 0);
    CHECK_EQ(getauxval(AT_UID), getuid());
    CHECK_EQ(getauxval(AT_EUID), geteuid());
    CHECK_EQ(getauxval(AT_GID), getgid());
    CHECK_EQ(getauxval(AT_EGID), getegid());
    /* a static executable has no interpreter. */
    CHECK_EQ(getauxval(AT_BASE), 0);
    CHECK_EQ(sysconf(_SC_PAGESIZE), 4096);
    CHECK_EQ(sysconf(_SC_CLK_TCK), 100);

    /* AT_ENTRY is _start; AT_PHDR/PHENT/PHNUM describe our own headers. */
    CHECK(getauxval(AT_ENTRY) != 0);
    CHECK_EQ(getauxval(AT_ENTRY), (uintptr_t)_start);
    const Elf64_Phdr *ph = (const Elf64_Phdr *)getauxval(AT_PHDR);
    CHECK(ph != NULL);
    CHECK_EQ(getauxval(AT_PHENT), sizeof(Elf64_Phdr));
    size_t phnum = getauxval(AT_PHNUM);
    CHECK(phnum >= 2 && phnum < 64);
    int loads = 0, text = 0;
    for (size_t i = 0; i < phnum; i++) {
        if (ph[i].p_type != PT_LOAD)
            continue;
        loads++;
        if (ph[i].p_vaddr <= (uintptr_t)_start &&
            (uintptr_t)_start < ph[i].p_vaddr + ph[i].p_memsz)
            text = (ph[i].p_flags & PF_X) != 0;
    }
    CHECK(loads >= 1);
    CHECK(text);

    /* AT_RANDOM points at 16 readable bytes, not all zero. */
    const unsigned char *rnd = (const unsigned char *)getauxval(AT_RANDOM);
    CHECK(rnd != NULL);
    int nz = 0;
    for (int i = 0; i < 16; i++)
        nz |= rnd[i];
    CHECK(nz != 0);

    /* AT_EXECFN is the path given to execve: ends with the program name. */
    const char *execfn = (const char *)getauxval(AT_EXECFN);
    CHECK(execfn != NULL);
    const char *base = strrchr(argv[0], '/');
    base = base ? base + 1 : argv[0];
    size_t lf = strlen(execfn), lb = strlen(base);
    if (lf < lb || strcmp(execfn + lf - lb, base) != 0)
        FAILF("AT_EXECFN \"%s\" does not end with \"%s\"", execfn, base);

    /* AT_PLATFORM is "x86_64". */
    const char *plat = (const char *)getauxval(AT_PLATFORM);
    CHECK(plat != NULL);
    CHECK_STR(plat, "x86_64");

    /* AT_SYSINFO_EHDR: where a vDSO is provided (Linux; husk does not
     * provide one yet), it is a page-aligned ELF image. */
    const unsigned char *vdso = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
    if (vdso != NULL) {
        CHECK_MEM(vdso, "\177ELF", 4);
        CHECK_EQ((uintptr_t)vdso % 4096, 0);
    }

    /* getauxval of an absent type → 0 with ENOENT. */
    errno = 0;
    CHECK_EQ(getauxval(999), 0);
    CHECK_EQ(errno, ENOENT);

    /* the stack pointer at entry was 16-byte aligned, so locals of main
     * can be 16-aligned by the compiler; check a 16-aligned variable. */
    long double ld = 1.5L;
    CHECK_EQ((uintptr_t)&ld % 16, 0);
    return 0;
}
