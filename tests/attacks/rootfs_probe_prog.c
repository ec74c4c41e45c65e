/* The guest side of host_files_race.sh: tries, many times over, every
 * path by which a file beside the sandbox's root might be reached, while
 * the host swaps a directory of the root for symlinks out of it and a
 * thread of ours races symlinks and renames of our own. Prints how many
 * reads returned the secret's text (must be 0), then "done".
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *secret;
static volatile int stop;
static long leaks;

static void try_read(const char *path) {
    char buf[256] = {0};
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n > 0 && strstr(buf, secret)) {
        fprintf(stderr, "LEAK through %s\n", path);
        leaks++;
    }
}

static void *swapper(void *arg) {
    (void)arg;
    while (!stop) {
        symlink("/", "/tmp/up");
        rename("/tmp/up", "/tmp/upd");
        symlink("../../../..", "/tmp/rel");
        unlink("/tmp/upd");
        unlink("/tmp/rel");
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3)
        return 2;
    secret = argv[1];
    const char *name = argv[2]; /* the secret file's name beside the root */
    pthread_t t;
    pthread_create(&t, NULL, swapper, NULL);
    char p[512];
    const char *forms[] = {
        "/../%s", "/../../%s", "/d/%s", "/d/../%s", "/d/../../%s", "/proc/self/root/../%s",
        "/proc/1/root/../%s", "/proc/self/cwd/../../%s", "/tmp/upd/../%s", "/tmp/rel/%s",
        "/proc/self/root/d/../../%s", "/abs/%s", "/up/%s",
    };
    for (int i = 0; i < 3000; i++)
        for (unsigned j = 0; j < sizeof forms / sizeof *forms; j++) {
            snprintf(p, sizeof p, forms[j], name);
            try_read(p);
        }
    stop = 1;
    pthread_join(t, NULL);
    printf("leaks %ld\ndone\n", leaks);
    return 0;
}
