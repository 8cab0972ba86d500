/* The config file (/etc/sluicectl.yaml, as crictl's /etc/crictl.yaml): a
 * tiny YAML subset of "key: value" lines, '#' comments and blank lines;
 * values may be quoted. Anything else is an error naming the line. The
 * `config` command rewrites it line by line, so comments and the order of
 * keys stay as the user wrote them. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"

static const char *const key_names[CTL_NKEYS] = {
    [CTL_KEY_RT] = "runtime-endpoint",
    [CTL_KEY_IMG] = "image-endpoint",
    [CTL_KEY_TIMEOUT] = "timeout",
    [CTL_KEY_DEBUG] = "debug",
    [CTL_KEY_IMPORT] = "import-dir",
    [CTL_KEY_PULL_CREATE] = "pull-image-on-create",
    [CTL_KEY_NOPULL_RUN] = "disable-pull-on-run",
};

static const char *const key_defaults[CTL_NKEYS] = {
    [CTL_KEY_RT] = "",
    [CTL_KEY_IMG] = "",
    [CTL_KEY_TIMEOUT] = "2s",
    [CTL_KEY_DEBUG] = "false",
    [CTL_KEY_IMPORT] = CTL_DEFAULT_IMPORT_DIR,
    [CTL_KEY_PULL_CREATE] = "false",
    [CTL_KEY_NOPULL_RUN] = "false",
};

static char values[CTL_NKEYS][CTL_CONFIG_MAX_VALUE];

const char *ctl_config_key_name(int key)
{
    return key_names[key];
}

const char *ctl_config_key_default(int key)
{
    return key_defaults[key];
}

int ctl_config_key(const char *name)
{
    for (int i = 0; i < CTL_NKEYS; i++)
        if (!strcmp(name, key_names[i]))
            return i;
    return -1;
}

int ctl_parse_bool(const char *v, bool *out)
{
    if (!strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "on") || !strcmp(v, "1"))
        *out = true;
    else if (!strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "off") || !strcmp(v, "0"))
        *out = false;
    else
        return -1;
    return 0;
}

int ctl_config_check(int key, const char *val, const char *origin, sl_error *e)
{
    uint64_t ms;
    bool b;
    if (strlen(val) >= CTL_CONFIG_MAX_VALUE)
        return sl_error_set(e, 0, "%s: %s value longer than %d bytes", origin, key_names[key],
                            CTL_CONFIG_MAX_VALUE - 1);
    if ((key == CTL_KEY_DEBUG || key == CTL_KEY_PULL_CREATE || key == CTL_KEY_NOPULL_RUN) &&
        ctl_parse_bool(val, &b) < 0)
        return sl_error_set(e, 0, "%s: %s must be true or false, not \"%s\"", origin,
                            key_names[key], val);
    if (key == CTL_KEY_TIMEOUT &&
        (ctl_parse_duration_ms(val, &ms) < 0 || ms == 0 || ms > UINT32_MAX))
        return sl_error_set(e, 0, "%s: timeout \"%s\" is not a duration such as 2s, 500ms or 1m",
                            origin, val);
    return 0;
}

int ctl_config_set(ctl *c, int key, const char *val, const char *origin, sl_error *e)
{
    uint64_t ms = 0;
    if (ctl_config_check(key, val, origin, e) < 0)
        return -1;
    snprintf(values[key], CTL_CONFIG_MAX_VALUE, "%s", val);
    switch (key) {
    case CTL_KEY_RT:
        c->runtime_endpoint = *values[key] ? values[key] : NULL;
        return 0;
    case CTL_KEY_IMG:
        c->image_endpoint = *values[key] ? values[key] : NULL;
        return 0;
    case CTL_KEY_IMPORT:
        c->import_dir = values[key];
        return 0;
    case CTL_KEY_DEBUG:
        return ctl_parse_bool(val, &c->debug);
    case CTL_KEY_PULL_CREATE:
        return ctl_parse_bool(val, &c->pull_on_create);
    case CTL_KEY_NOPULL_RUN:
        return ctl_parse_bool(val, &c->no_pull_on_run);
    case CTL_KEY_TIMEOUT:
        ctl_parse_duration_ms(val, &ms);
        c->timeout_ms = (uint32_t)ms;
        return 0;
    default:
        return -1;
    }
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
        s[--n] = '\0';
    return s;
}

/* Unquotes v in place; a value loses a trailing " # comment". Returns
 * NULL for an unterminated quote or text after the closing one. */
static char *unquote(char *v)
{
    if (v[0] == '"' || v[0] == '\'') {
        char *end = strchr(v + 1, v[0]);
        const char *rest = end ? trim(end + 1) : NULL;
        if (!rest || (*rest && *rest != '#'))
            return NULL;
        *end = '\0';
        return v + 1;
    }
    char *hash = strstr(v, " #");
    if (hash)
        *hash = '\0';
    return trim(v);
}

/* One line: CTL_NKEYS for nothing (blank, comment, "---"), the key with
 * *val set, or -1 with e saying why (origin is "FILE:LINE"). */
static int parse_line(char *line, const char *origin, char **val, sl_error *e)
{
    char *s = trim(line);
    if (!*s || *s == '#' || !strcmp(s, "---"))
        return CTL_NKEYS;
    char *colon = strchr(s, ':');
    if (!colon || colon == s || (colon[1] != ' ' && colon[1] != '\t' && colon[1] != '\0'))
        return sl_error_set(
            e, 0, "%s: expected \"key: value\", got \"%s\" (only that YAML subset is read)", origin,
            s);
    *colon = '\0';
    char *k = trim(s);
    int key = ctl_config_key(k);
    if (key < 0)
        return sl_error_set(
            e, 0,
            "%s: unknown key \"%s\" (known: runtime-endpoint, image-endpoint, "
            "timeout, debug, import-dir, pull-image-on-create, disable-pull-on-run)",
            origin, k);
    if (!(*val = unquote(trim(colon + 1))))
        return sl_error_set(e, 0, "%s: unterminated quote (or text after it) in the value of %s",
                            origin, k);
    return key;
}

typedef int (*line_fn)(void *arg, int key, const char *val, const char *origin, sl_error *e);

/* Calls fn(arg, key, value, origin, e) for every key line of path. A
 * missing file is 1 (nothing read); -1 with e set; 0 when read. */
static int each_line(const char *path, line_fn fn, void *arg, sl_error *e)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT)
            return 1;
        return sl_error_set(e, errno, "config file %s", path);
    }
    char line[CTL_CONFIG_MAX_VALUE + 256], origin[PATH_MAX + 32];
    int lineno = 0, rc = 0;
    size_t total = 0;
    errno = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        snprintf(origin, sizeof origin, "%s:%d", path, ++lineno);
        total += strlen(line);
        if (total > CTL_MAX_CONFIG_FILE || (!strchr(line, '\n') && !feof(f))) {
            rc = sl_error_set(e, 0, "config file %s: line or file too long", origin);
            break;
        }
        char *val;
        int key = parse_line(line, origin, &val, e);
        if (key < 0)
            rc = -1;
        else if (key < CTL_NKEYS)
            rc = fn(arg, key, val, origin, e);
    }
    if (rc == 0 && ferror(f)) /* a directory reads as EISDIR here, not as empty */
        rc = sl_error_set(e, errno ? errno : EIO, "config file %s", path);
    fclose(f);
    return rc;
}

typedef struct load_arg {
    ctl *c;
    const bool *set;
} load_arg;

static int apply_cb(void *arg, int key, const char *val, const char *origin, sl_error *e)
{
    load_arg *l = arg;
    return l->set[key] ? 0 : ctl_config_set(l->c, key, val, origin, e);
}

int ctl_config_load(ctl *c, const char *path, bool required, const bool *set, sl_error *e)
{
    load_arg l = {c, set};
    int rc = each_line(path, apply_cb, &l, e);
    if (rc == 1 && required)
        return sl_error_set(e, ENOENT, "config file %s", path);
    return rc;
}

static int read_cb(void *arg, int key, const char *val, const char *origin, sl_error *e)
{
    char(*out)[CTL_CONFIG_MAX_VALUE] = arg;
    if (ctl_config_check(key, val, origin, e) < 0)
        return -1;
    snprintf(out[key], CTL_CONFIG_MAX_VALUE, "%s", val);
    return 0;
}

int ctl_config_read(const char *path, char out[CTL_NKEYS][CTL_CONFIG_MAX_VALUE], sl_error *e)
{
    for (int i = 0; i < CTL_NKEYS; i++)
        snprintf(out[i], CTL_CONFIG_MAX_VALUE, "%s", key_defaults[i]);
    return each_line(path, read_cb, out, e) < 0 ? -1 : 0;
}

/* ---- writing ---- */

/* "key: value\n" with the value quoted when a plain one would not read
 * back, and the old line's " # comment" kept. */
static int format_line(const char *key, const char *v, const char *comment, char *out,
                       size_t outlen)
{
    bool plain =
        *v && v[0] != ' ' && v[strlen(v) - 1] != ' ' && !strchr("\"'#", v[0]) && !strstr(v, " #");
    char q = !strchr(v, '"') ? '"' : !strchr(v, '\'') ? '\'' : 0;
    if (!plain && !q)
        return -1;
    int n = plain ? snprintf(out, outlen, "%s: %s", key, v)
                  : snprintf(out, outlen, "%s: %c%s%c", key, q, v, q);
    snprintf(out + n, outlen - (size_t)n, "%s%s\n", comment ? " " : "", comment ? comment : "");
    return 0;
}

/* The "# ..." ending a key line (after a quoted value or " #"), or NULL. */
static const char *comment_of(const char *line, char *buf, size_t buflen)
{
    const char *v = strchr(line, ':') + 1;
    v += strspn(v, " \t");
    const char *end = *v == '"' || *v == '\'' ? strchr(v + 1, *v) : v;
    const char *hash = end ? strchr(end, '#') : NULL;
    if (!hash || (end == v && (hash == v || hash[-1] != ' ')))
        return NULL; /* a plain value's '#' starts a comment only after a blank */
    snprintf(buf, buflen, "%s", hash);
    buf[strcspn(buf, "\r\n")] = '\0';
    return buf;
}

/* The key a line sets, or -1 (comments, blank lines, anything else). */
static int line_key(const char *line)
{
    char copy[CTL_CONFIG_MAX_VALUE + 256];
    snprintf(copy, sizeof copy, "%s", line);
    char *s = trim(copy), *colon = strchr(s, ':');
    if (*s == '#' || !colon)
        return -1;
    *colon = '\0';
    return ctl_config_key(trim(s));
}

/* The file's text with newv's keys replaced in place or appended. */
static char *rewrite(FILE *in, const char *const newv[CTL_NKEYS], size_t *len)
{
    char *out = NULL, line[CTL_CONFIG_MAX_VALUE + 256], repl[CTL_CONFIG_MAX_VALUE + 64];
    bool done[CTL_NKEYS] = {0};
    FILE *o = open_memstream(&out, len);
    while (o && in && fgets(line, sizeof line, in)) {
        int k = line_key(line);
        char cbuf[sizeof line];
        if (k >= 0 && newv[k] &&
            format_line(key_names[k], newv[k], comment_of(line, cbuf, sizeof cbuf), repl,
                        sizeof repl) == 0) {
            fputs(repl, o); /* every line of the key, as crictl does */
            done[k] = true;
        } else {
            fputs(line, o);
            if (!strchr(line, '\n'))
                fputc('\n', o);
        }
    }
    for (int k = 0; o && k < CTL_NKEYS; k++)
        if (newv[k] && !done[k] && format_line(key_names[k], newv[k], NULL, repl, sizeof repl) == 0)
            fputs(repl, o);
    if (o && fclose(o) == 0)
        return out;
    free(out);
    return NULL;
}

/* Writes text to path through a temporary file, fsync and rename, so a
 * reader sees the old file or the new one; -1 with e saying which step
 * failed (its errno kept, the temporary file removed). */
static int write_atomic(const char *path, const char *text, size_t len, mode_t mode, sl_error *e)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s.tmp-%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0)
        return sl_error_set(e, errno, "cannot write the config file %s: creating %s", path, tmp);
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    const char *step = off < len ? "writing" : fsync(fd) < 0 ? "fsync" : NULL;
    int err = step ? (errno ? errno : EIO) : 0;
    if (close(fd) < 0 && !step)
        step = "close", err = errno;
    if (!step && rename(tmp, path) < 0)
        step = "rename", err = errno;
    if (!step)
        return 0;
    unlink(tmp);
    return sl_error_set(e, err, "cannot write the config file %s: %s %s", path, step, tmp);
}

int ctl_config_write(const char *path, const char *const newv[CTL_NKEYS], sl_error *e)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
            return sl_error_set(e, errno, "cannot create %s for the config file", dir);
    }
    struct stat st;
    mode_t mode = stat(path, &st) == 0 ? st.st_mode & 07777 : 0644;
    FILE *in = fopen(path, "r");
    if (!in && errno != ENOENT)
        return sl_error_set(e, errno, "cannot read the config file %s", path);
    size_t len = 0;
    char *text = rewrite(in, newv, &len);
    if (in)
        fclose(in);
    if (!text)
        return sl_error_set(e, ENOMEM, "cannot write the config file %s", path);
    int rc = write_atomic(path, text, len, mode, e);
    free(text);
    return rc;
}
