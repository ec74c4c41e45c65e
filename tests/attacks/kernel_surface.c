/* kernel_surface: host kernel interfaces a guest reaches for to escape or
 * to attack the host kernel must not be there: eBPF, perf events,
 * userfaultfd, io_uring, module and kexec loading, the keyring, reboot,
 * swap, port I/O, handles of host files. Each call must fail; none may
 * reach the host (the sentry's seccomp filter would kill it if one did,
 * and the run would not exit 0). Not run natively: as root on a host
 * most of these succeed.
 */
// native: skip
#include "check.h"
#include <fcntl.h>
#include <sys/syscall.h>
#include <linux/reboot.h>

static int failures;

#define MUST_FAIL(name, call)                                                  \
    do {                                                                       \
        errno = 0;                                                             \
        long r_ = (call);                                                      \
        if (r_ != -1) {                                                        \
            fprintf(stderr, "FAIL: %s returned %ld\n", name, r_);             \
            failures++;                                                        \
        }                                                                      \
    } while (0)

int main(void) {
    static char buf[4096];
    MUST_FAIL("bpf(BPF_PROG_LOAD)", syscall(SYS_bpf, 5, buf, 128));
    MUST_FAIL("bpf(BPF_MAP_CREATE)", syscall(SYS_bpf, 0, buf, 128));
    MUST_FAIL("perf_event_open", syscall(SYS_perf_event_open, buf, 0, -1, -1, 0));
    MUST_FAIL("userfaultfd", syscall(SYS_userfaultfd, 0));
    MUST_FAIL("io_uring_setup", syscall(SYS_io_uring_setup, 8, buf));
    MUST_FAIL("init_module", syscall(SYS_init_module, buf, sizeof buf, ""));
    MUST_FAIL("finit_module", syscall(SYS_finit_module, 0, "", 0));
    MUST_FAIL("delete_module", syscall(SYS_delete_module, "ext4", 0));
    MUST_FAIL("kexec_load", syscall(SYS_kexec_load, 0, 0, NULL, 0));
    MUST_FAIL("kexec_file_load", syscall(SYS_kexec_file_load, 0, 0, 0, "", 0));
    MUST_FAIL("add_key", syscall(SYS_add_key, "user", "husk", "x", 1, -4));
    MUST_FAIL("keyctl(GET_KEYRING_ID)", syscall(SYS_keyctl, 0, -4, 1));
    MUST_FAIL("request_key", syscall(SYS_request_key, "user", "husk", NULL, 0));
    MUST_FAIL("swapon", syscall(SYS_swapon, "/etc/passwd", 0));
    MUST_FAIL("swapoff", syscall(SYS_swapoff, "/etc/passwd"));
    MUST_FAIL("iopl", syscall(SYS_iopl, 3));
    MUST_FAIL("ioperm", syscall(SYS_ioperm, 0x60, 8, 1));
    MUST_FAIL("name_to_handle_at", syscall(SYS_name_to_handle_at, AT_FDCWD, "/etc/passwd", buf, buf + 1024, 0));
    MUST_FAIL("open_by_handle_at", syscall(SYS_open_by_handle_at, AT_FDCWD, buf, O_RDONLY));
    MUST_FAIL("lookup_dcookie", syscall(SYS_lookup_dcookie, 0, buf, sizeof buf));
    MUST_FAIL("fanotify_init", syscall(SYS_fanotify_init, 0, 0));
    MUST_FAIL("quotactl", syscall(SYS_quotactl, 0x800002, "/dev/vda", 0, buf));
    MUST_FAIL("acct", syscall(SYS_acct, "/tmp/acct"));
    MUST_FAIL("vhangup", syscall(SYS_vhangup));
    MUST_FAIL("reboot(RESTART)", syscall(SYS_reboot, LINUX_REBOOT_MAGIC1, LINUX_REBOOT_MAGIC2, LINUX_REBOOT_CMD_RESTART, 0));
    MUST_FAIL("reboot(CAD_OFF)", syscall(SYS_reboot, LINUX_REBOOT_MAGIC1, LINUX_REBOOT_MAGIC2, LINUX_REBOOT_CMD_CAD_OFF, 0));
    return failures ? 1 : 0;
}
