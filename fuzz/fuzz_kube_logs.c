/* sluice-kube's pods/log: the CRI log records it reads (a container writes
 * their content, and another runtime may have written the file), the
 * sinceTime query value, and the tail search. Each line of the input is
 * parsed as a record and as a time; a record's pointers stay inside its
 * line, its time prints back, and the tail offset of the whole input (in a
 * memfd, n from the first byte) is a record start inside the file. Lines
 * are exact heap copies (over-reads caught). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cri_log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_line(const char *line, size_t len)
{
    char fixed[64], out[40];
    int64_t ns;
    if (sl_cri_time_parse(line, len, &ns) == 0)
        sl_cri_time_format(ns, out);
    sl_cri_log_rec r;
    if (sl_cri_log_parse(line, len, &r) < 0)
        return;
    if (r.ts != line || r.ts_len > len || r.content < line ||
        r.content + r.content_len != line + len)
        __builtin_trap();
    sl_cri_time_fixed(r.ts, r.ts_len, fixed);
    if (!memchr(fixed, '\0', sizeof fixed))
        __builtin_trap();
    sl_cri_time_format(r.ts_ns, out);
    if (!memchr(out, '\0', sizeof out))
        __builtin_trap();
}

static void check_tail(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz-log", MFD_CLOEXEC);
    if (fd < 0)
        abort();
    if (size && write(fd, data, size) != (ssize_t)size)
        abort();
    int64_t n = size ? (int64_t)(int8_t)data[0] : 0;
    off_t off = sl_cri_log_tail_offset(fd, n);
    if (off < 0 || (size_t)off > size || (off > 0 && (size_t)off < size && data[off - 1] != '\n'))
        __builtin_trap();
    close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t start = 0;
    for (size_t i = 0; i <= size; i++) {
        if (i < size && data[i] != '\n')
            continue;
        size_t len = i - start;
        char *line = malloc(len ? len : 1);
        if (!line)
            return 0;
        memcpy(line, data + start, len);
        check_line(line, len);
        free(line);
        start = i + 1;
    }
    check_tail(data, size);
    return 0;
}
