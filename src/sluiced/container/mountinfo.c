#include "container/mountinfo.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"

/* The kernel escapes space, tab, newline and backslash as \ooo. */
static void unescape(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 1 < cap; i++) {
        if (s[i] == '\\' && i + 3 < n && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' &&
            s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
            out[o++] = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
            i += 3;
        } else {
            out[o++] = s[i];
        }
    }
    out[o] = '\0';
}

/* Is mp path itself or a directory above it? */
static bool holds(const char *mp, const char *path)
{
    size_t n = strlen(mp);
    if (n == 1 && mp[0] == '/')
        return path[0] == '/';
    return !strncmp(mp, path, n) && (path[n] == '\0' || path[n] == '/');
}

/* The n-th space-separated field of line [s, end): start and length. */
static const char *field(const char *s, const char *end, int n, size_t *len)
{
    for (int i = 0; i < n && s < end; i++) {
        const char *sp = memchr(s, ' ', (size_t)(end - s));
        if (!sp)
            return NULL;
        s = sp + 1;
    }
    const char *sp = memchr(s, ' ', (size_t)(end - s));
    *len = (size_t)((sp ? sp : end) - s);
    return s < end ? s : NULL;
}

/* Reads shared:/master: from the optional fields (6.. up to "-"). */
static void optional_fields(const char *s, const char *end, sl_mount_prop *p)
{
    p->shared = p->slave = false;
    size_t len;
    for (s = field(s, end, 6, &len); s; s = field(s, end, 1, &len)) {
        if (len == 1 && *s == '-')
            return;
        p->shared |= len > 7 && !strncmp(s, "shared:", 7);
        p->slave |= len > 7 && !strncmp(s, "master:", 7);
    }
}

int sl_mountinfo_find(const char *text, const char *path, sl_mount_prop *out)
{
    size_t best = 0;
    bool found = false;
    char mp[SL_MOUNTINFO_PATH_MAX];
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        if (!end)
            end = line + strlen(line);
        size_t len;
        const char *f = field(line, end, 4, &len);
        if (f) {
            unescape(f, len, mp, sizeof(mp));
            size_t n = strlen(mp);
            if (holds(mp, path) && n >= best) {
                best = n;
                found = true;
                memcpy(out->mountpoint, mp, n + 1);
                optional_fields(line, end, out);
            }
        }
        line = *end ? end + 1 : NULL;
    }
    return found ? 0 : -1;
}

int sl_mountinfo_lookup(const char *path, sl_mount_prop *out, sl_error *e)
{
    SL_AUTOFREE char *text = NULL;
    if (sl_read_file("/proc/self/mountinfo", SL_MOUNTINFO_MAX, &text, NULL, e) < 0)
        return -1;
    if (sl_mountinfo_find(text, path, out) < 0)
        return sl_error_set(e, ENOENT, "no mount holds %s", path);
    return 0;
}
