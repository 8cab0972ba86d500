/* Feeds the input as a layer (any compression) to the unpacker, in a fresh
 * directory under a private temp dir, with small limits; then checks that
 * nothing landed next to the layer directory (an escape) and removes it.
 * The temp dir is on tmpfs (/dev/shm) when there is one: every input makes
 * and removes a tree, which on /tmp's ext4 cost most of the time (inode
 * allocation and eviction, journal) and kept the rate near 1k inputs/s. */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "image/image_tar.h"

#define FUZZ_MAX_BYTES (1u << 20)
#define FUZZ_MAX_ENTRIES 256
#define FUZZ_MAX_PATH 512
#define LAYER_NAME "layer"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char base[64];

/* /dev/shm if usable (tmpfs: creating and removing files is memory work),
 * else /tmp. */
static const char *scratch_root(void)
{
    return access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm" : "/tmp";
}

static void cleanup(void)
{
    if (base[0])
        sl_rm_rf(base, NULL);
}

/* Only the layer directory may exist in base. */
static void check_no_escape(void)
{
    DIR *d = opendir(base);
    if (!d)
        abort();
    struct dirent *de;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && strcmp(de->d_name, LAYER_NAME))
            abort();
    closedir(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!base[0]) {
        snprintf(base, sizeof(base), "%s/sl-fuzz-image-XXXXXX", scratch_root());
        if (!mkdtemp(base))
            abort();
        atexit(cleanup);
    }
    char layer[96];
    snprintf(layer, sizeof(layer), "%s/%s", base, LAYER_NAME);
    if (mkdir(layer, 0755) < 0)
        abort();
    int fd = open(layer, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        abort();
    sl_layer_limits lim = {FUZZ_MAX_BYTES, FUZZ_MAX_ENTRIES, FUZZ_MAX_PATH};
    sl_layer_stats st;
    sl_error e = {0};
    if (sl_layer_unpack_mem(data, size, SL_LAYER_AUTO, fd, &lim, &st, &e) == 0 &&
        st.stream_bytes > FUZZ_MAX_BYTES)
        abort();
    close(fd);
    check_no_escape();
    if (sl_rm_rf(layer, NULL) < 0)
        abort();
    return 0;
}
