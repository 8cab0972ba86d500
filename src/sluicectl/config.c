/* The config file (/etc/sluicectl.yaml, as crictl's /etc/crictl.yaml): a
 * tiny YAML subset of "key: value" lines, '#' comments and blank lines;
 * values may be quoted. Anything else is an error naming the line. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

#define MAX_VALUE 4096 /* bytes of one value */

static const char *const key_names[CTL_NKEYS] = {
    [CTL_KEY_RT] = "runtime-endpoint", [CTL_KEY_IMG] = "image-endpoint",
    [CTL_KEY_TIMEOUT] = "timeout",     [CTL_KEY_DEBUG] = "debug",
    [CTL_KEY_IMPORT] = "import-dir",
};

/* crictl keys that mean nothing here: accepted so a crictl.yaml works. */
static const char *const ignored_keys[] = {"pull-image-on-create", "disable-pull-on-run"};

static char values[CTL_NKEYS][MAX_VALUE];

static int parse_bool(const char *v, bool *out)
{
    if (!strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "on") || !strcmp(v, "1"))
        *out = true;
    else if (!strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "off") || !strcmp(v, "0"))
        *out = false;
    else
        return -1;
    return 0;
}

int ctl_config_set(ctl *c, int key, const char *val, const char *origin)
{
    uint64_t ms;
    if (strlen(val) >= MAX_VALUE) {
        ctl_err(c, "%s: %s value longer than %d bytes", origin, key_names[key], MAX_VALUE);
        return -1;
    }
    snprintf(values[key], MAX_VALUE, "%s", val);
    switch (key) {
    case CTL_KEY_RT:
        c->runtime_endpoint = values[key];
        break;
    case CTL_KEY_IMG:
        c->image_endpoint = values[key];
        break;
    case CTL_KEY_IMPORT:
        c->import_dir = values[key];
        break;
    case CTL_KEY_DEBUG:
        if (parse_bool(val, &c->debug) < 0) {
            ctl_err(c, "%s: debug must be true or false, not \"%s\"", origin, val);
            return -1;
        }
        break;
    case CTL_KEY_TIMEOUT:
        if (ctl_parse_duration_ms(val, &ms) < 0 || ms == 0 || ms > UINT32_MAX) {
            ctl_err(c, "%s: timeout \"%s\" is not a duration such as 2s, 500ms or 1m", origin, val);
            return -1;
        }
        c->timeout_ms = (uint32_t)ms;
        break;
    default:
        return -1;
    }
    return 0;
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

/* Unquotes v in place; a plain value loses a trailing " # comment".
 * Returns NULL for an unterminated quote. */
static char *unquote(char *v)
{
    if (v[0] == '"' || v[0] == '\'') {
        char *end = strchr(v + 1, v[0]);
        if (!end || *trim(end + 1) != '\0')
            return NULL;
        *end = '\0';
        return v + 1;
    }
    char *hash = strstr(v, " #");
    if (hash)
        *hash = '\0';
    return trim(v);
}

static int find_key(const char *k)
{
    for (int i = 0; i < CTL_NKEYS; i++)
        if (!strcmp(k, key_names[i]))
            return i;
    for (size_t i = 0; i < sizeof ignored_keys / sizeof ignored_keys[0]; i++)
        if (!strcmp(k, ignored_keys[i]))
            return CTL_NKEYS;
    return -1;
}

static int parse_line(ctl *c, char *line, const char *path, int lineno, const bool *set)
{
    char origin[PATH_MAX + 32];
    snprintf(origin, sizeof origin, "%s:%d", path, lineno);
    char *s = trim(line);
    if (!*s || *s == '#' || !strcmp(s, "---"))
        return 0;
    char *colon = strchr(s, ':');
    if (!colon || colon == s || (colon[1] != ' ' && colon[1] != '\t' && colon[1] != '\0')) {
        ctl_err(c, "%s: expected \"key: value\", got \"%s\" (only that YAML subset is read)",
                origin, s);
        return -1;
    }
    *colon = '\0';
    char *k = trim(s), *v = unquote(trim(colon + 1));
    int key = find_key(k);
    if (key < 0) {
        ctl_err(c,
                "%s: unknown key \"%s\" (known: runtime-endpoint, image-endpoint, timeout, "
                "debug, import-dir)",
                origin, k);
        return -1;
    }
    if (!v) {
        ctl_err(c, "%s: unterminated quote in the value of %s", origin, k);
        return -1;
    }
    if (key == CTL_NKEYS || set[key])
        return 0;
    return ctl_config_set(c, key, v, origin);
}

int ctl_config_load(ctl *c, const char *path, bool required, const bool *set)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT && !required)
            return 0;
        ctl_err(c, "config file %s: %s", path, strerror(errno));
        return -1;
    }
    char line[MAX_VALUE + 256];
    int lineno = 0, rc = 0;
    size_t total = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        total += strlen(line);
        if (total > CTL_MAX_CONFIG_FILE || (!strchr(line, '\n') && !feof(f))) {
            ctl_err(c, "config file %s:%d: line or file too long", path, lineno);
            rc = -1;
            break;
        }
        rc = parse_line(c, line, path, lineno, set);
    }
    fclose(f);
    if (rc == 0)
        ctl_debug(c, "config file %s read", path);
    return rc;
}
