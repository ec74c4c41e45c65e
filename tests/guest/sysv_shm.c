/* sysv_shm: SysV shared memory as Linux (man 2 shmget, shmat, shmctl).
 * Creation by IPC_PRIVATE and by key (EEXIST, ENOENT, size checks), the
 * attach address rules (SHMLBA, SHM_RND, SHM_REMAP, overlap = EINVAL),
 * SHM_RDONLY faulting on a store, attachments shared with and inherited
 * by a fork child and dropped at exec and exit (shm_nattch), shmdt's
 * rules, IPC_RMID while attached (SHM_DEST, the key freed, gone at the
 * last detach), IPC_STAT/IPC_SET/IPC_INFO/SHM_INFO/SHM_STAT against
 * /proc/sys/kernel and /proc/sysvipc/shm, SHM_LOCK, and a non-owner's
 * denials (when run as root, in a setuid child). Passes natively.
 */
#include "check.h"
#include <signal.h>
#include <stdint.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/wait.h>

#define PAGE 4096UL

static unsigned long nattch(int id) {
    struct shmid_ds ds;
    CHECK_OK(shmctl(id, IPC_STAT, &ds));
    return ds.shm_nattch;
}

static pid_t last_child;

/* The exit status of a child running `f`. */
static int in_child(void (*f)(int, void *), int id, void *p) {
    pid_t pid = CHECK_OK(fork());
    last_child = pid;
    if (pid == 0) {
        f(id, p);
        _exit(0);
    }
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    return st;
}

static void store(int id, void *p) {
    (void)id;
    *(volatile char *)p = 1;
}

static void child_sees_and_writes(int id, void *p) {
    char *c = p;
    CHECK_STR(c, "parent");
    /* Two attachments in the parent and their copies here. */
    CHECK_EQ(nattch(id), 4);
    strcpy(c, "child");
}

static void non_owner(int id, void *p) {
    (void)p;
    CHECK_OK(setgid(65534));
    CHECK_OK(setuid(65534));
    struct shmid_ds ds;
    CHECK(shmat(id, NULL, 0) == (void *)-1 && errno == EACCES);
    CHECK_ERR(shmctl(id, IPC_STAT, &ds), EACCES);
    CHECK_ERR(shmctl(id, IPC_RMID, NULL), EPERM);
    CHECK_ERR(shmctl(id, SHM_LOCK, NULL), EPERM);
}

static unsigned long proc_ulong(const char *path) {
    char buf[64];
    CHECK(read_file(path, buf, sizeof buf) > 0);
    return strtoul(buf, NULL, 10);
}

/* Whether /proc/sysvipc/shm lists `id` with `size`. */
static int listed(int id, unsigned long size) {
    FILE *f = fopen("/proc/sysvipc/shm", "r");
    CHECK(f != NULL);
    char line[512];
    CHECK(fgets(line, sizeof line, f) != NULL);
    CHECK(strstr(line, "shmid") != NULL && strstr(line, "nattch") != NULL);
    int found = 0;
    while (fgets(line, sizeof line, f)) {
        int key, sid;
        unsigned perms;
        unsigned long sz;
        if (sscanf(line, "%d %d %o %lu", &key, &sid, &perms, &sz) == 4 && sid == id && sz == size)
            found = 1;
    }
    fclose(f);
    return found;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "nattch") == 0) {
        /* After exec: this process's attachments are gone. */
        int id = atoi(argv[2]);
        return nattch(id) == 1 ? 0 : 3;
    }
    key_t key = 0x5eed0000 + (getpid() & 0xffff);

    /* Creation. */
    CHECK_ERR(shmget(IPC_PRIVATE, 0, 0600), EINVAL);
    CHECK_ERR(shmget(key, PAGE, 0600), ENOENT);
    int id = CHECK_OK(shmget(key, 5000, IPC_CREAT | IPC_EXCL | 0600));
    CHECK_ERR(shmget(key, PAGE, IPC_CREAT | IPC_EXCL | 0600), EEXIST);
    CHECK_EQ(shmget(key, 4096, 0), id);
    CHECK_ERR(shmget(key, 5001, 0), EINVAL);
    struct shmid_ds ds;
    CHECK_OK(shmctl(id, IPC_STAT, &ds));
    CHECK_EQ(ds.shm_segsz, 5000);
    CHECK_EQ(ds.shm_nattch, 0);
    CHECK_EQ(ds.shm_cpid, getpid());
    CHECK_EQ(ds.shm_perm.mode & 0777, 0600);
    CHECK_EQ(ds.shm_perm.__key, key);
    CHECK_EQ(ds.shm_perm.uid, geteuid());
    CHECK_EQ(ds.shm_perm.cuid, geteuid());
    CHECK_EQ(ds.shm_atime, 0);
    CHECK(ds.shm_ctime > 0);
    CHECK(listed(id, 5000));

    /* Attaching: a fresh segment reads as zeros, both pages usable. */
    char *p = shmat(id, NULL, 0);
    CHECK(p != (void *)-1);
    CHECK_EQ((uintptr_t)p % PAGE, 0);
    CHECK_EQ(p[0], 0);
    CHECK_EQ(p[2 * PAGE - 1], 0);
    strcpy(p, "parent");
    CHECK_OK(shmctl(id, IPC_STAT, &ds));
    CHECK_EQ(ds.shm_nattch, 1);
    CHECK_EQ(ds.shm_lpid, getpid());
    CHECK(ds.shm_atime > 0);

    /* A read-only attachment sees the same bytes; a store faults. */
    char *ro = shmat(id, NULL, SHM_RDONLY);
    CHECK(ro != (void *)-1 && ro != p);
    CHECK_STR(ro, "parent");
    int st = in_child(store, id, ro);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
    /* Nor can it be made writable. */
    CHECK_ERR(mprotect(ro, PAGE, PROT_READ | PROT_WRITE), EACCES);
    CHECK_OK(mprotect(ro, PAGE, PROT_READ));
    CHECK_EQ(nattch(id), 2);

    /* A fork child shares the attachments; its exit drops its copies. */
    st = in_child(child_sees_and_writes, id, p);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_OK(shmctl(id, IPC_STAT, &ds));
    CHECK_EQ(ds.shm_lpid, last_child); /* detached at its exit */
    CHECK_STR(p, "child");
    CHECK_STR(ro, "child");
    CHECK_EQ(nattch(id), 2);

    /* Exec drops them too: the child checks after exec. */
    CHECK_OK(shmdt(ro));
    pid_t pid = CHECK_OK(fork());
    if (pid == 0) {
        char ids[16];
        snprintf(ids, sizeof ids, "%d", id);
        execl("/proc/self/exe", argv[0], "nattch", ids, (char *)NULL);
        _exit(4);
    }
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st));
    CHECK_EQ(WEXITSTATUS(st), 0);

    /* Address rules. */
    char *area = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(area != MAP_FAILED);
    CHECK(shmat(id, area + 1, 0) == (void *)-1 && errno == EINVAL);
    CHECK(shmat(id, NULL, SHM_REMAP) == (void *)-1 && errno == EINVAL);
    CHECK(shmat(id, area, 0) == (void *)-1 && errno == EINVAL); /* overlaps */
    char *q = shmat(id, area + 1, SHM_RND | SHM_REMAP);
    CHECK(q == area);
    CHECK_STR(q, "child");
    CHECK_EQ(nattch(id), 2);
    CHECK_OK(munmap(area, 4 * PAGE)); /* munmap detaches as well */
    CHECK_EQ(nattch(id), 1);
    CHECK(shmat(id, (void *)-PAGE, 0) == (void *)-1 && errno == EINVAL); /* wraps */

    /* shmdt: only at an attachment's start. */
    CHECK_ERR(shmdt(p + 1), EINVAL);
    CHECK_ERR(shmdt(p + PAGE), EINVAL);
    CHECK_ERR(shmdt(&ds), EINVAL);
    /* A split attachment counts each part and goes whole. */
    CHECK_OK(mprotect(p, PAGE, PROT_READ));
    CHECK_EQ(nattch(id), 2);
    CHECK_OK(shmdt(p));
    CHECK_EQ(nattch(id), 0);
    CHECK_OK(shmctl(id, IPC_STAT, &ds));
    CHECK(ds.shm_dtime > 0);
    CHECK_EQ(ds.shm_lpid, getpid());

    /* IPC_SET, SHM_LOCK. */
    ds.shm_perm.mode = 0640;
    CHECK_OK(shmctl(id, IPC_SET, &ds));
    CHECK_OK(shmctl(id, IPC_STAT, &ds));
    CHECK_EQ(ds.shm_perm.mode & 0777, 0640);
    if (geteuid() == 0) {
        CHECK_OK(shmctl(id, SHM_LOCK, NULL));
        CHECK_OK(shmctl(id, IPC_STAT, &ds));
        CHECK(ds.shm_perm.mode & SHM_LOCKED);
        CHECK_OK(shmctl(id, SHM_UNLOCK, NULL));
        CHECK_OK(shmctl(id, IPC_STAT, &ds));
        CHECK(!(ds.shm_perm.mode & SHM_LOCKED));
        st = in_child(non_owner, id, NULL);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    CHECK_ERR(shmctl(id, 999, &ds), EINVAL);
    CHECK_ERR(shmctl(id, IPC_STAT, (struct shmid_ds *)8), EFAULT);

    /* The limits, as /proc/sys/kernel shows them. */
    struct shminfo info;
    int maxidx = CHECK_OK(shmctl(0, IPC_INFO, (struct shmid_ds *)&info));
    CHECK_EQ(info.shmmni, proc_ulong("/proc/sys/kernel/shmmni"));
    CHECK_EQ(info.shmmax, proc_ulong("/proc/sys/kernel/shmmax"));
    CHECK_EQ(info.shmall, proc_ulong("/proc/sys/kernel/shmall"));
    CHECK_EQ(info.shmmin, 1);
    struct shm_info sinfo;
    CHECK_EQ(shmctl(0, SHM_INFO, (struct shmid_ds *)&sinfo), maxidx);
    CHECK(sinfo.used_ids >= 1);
    CHECK(sinfo.shm_tot >= 2);
    int seen = 0;
    for (int i = 0; i <= maxidx; i++) {
        int sid = shmctl(i, SHM_STAT, &ds);
        if (sid == id) {
            seen = 1;
            CHECK_EQ(ds.shm_segsz, 5000);
        }
    }
    CHECK(seen);

    /* IPC_RMID while attached: the key is free, the memory stays. */
    p = shmat(id, NULL, 0);
    CHECK(p != (void *)-1);
    CHECK_OK(shmctl(id, IPC_RMID, NULL));
    CHECK_OK(shmctl(id, IPC_STAT, &ds));
    CHECK(ds.shm_perm.mode & SHM_DEST);
    CHECK_EQ(ds.shm_perm.__key, IPC_PRIVATE);
    CHECK_ERR(shmget(key, PAGE, 0600), ENOENT);
    CHECK_STR(p, "child");
    pid = CHECK_OK(fork());
    if (pid == 0)
        _exit(strcmp(p, "child") == 0 && nattch(id) == 2 ? 0 : 5);
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_OK(shmdt(p));
    CHECK_ERR(shmctl(id, IPC_STAT, &ds), EINVAL);
    CHECK(!listed(id, 5000));
    return 0;
}
