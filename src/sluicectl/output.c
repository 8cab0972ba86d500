/* Output: crictl-like tables (Go tabwriter with minwidth 20, padding 3),
 * JSON and a small YAML emitter for JSON trees, human times and sizes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl.h"

#define TAB_MINWIDTH 20
#define TAB_PADDING 3

struct ctl_table {
    int ncols;
    char **cells; /* row-major, header first */
    size_t nrows, cap;
};

ctl_table *ctl_table_new(int ncols, const char *const *headers)
{
    ctl_table *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->ncols = ncols;
    ctl_table_add(t, headers);
    return t;
}

void ctl_table_add(ctl_table *t, const char *const *cells)
{
    if (!t)
        return;
    if (t->nrows == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        char **nc = realloc(t->cells, cap * (size_t)t->ncols * sizeof *nc);
        if (!nc)
            return;
        t->cells = nc;
        t->cap = cap;
    }
    for (int i = 0; i < t->ncols; i++)
        t->cells[t->nrows * (size_t)t->ncols + (size_t)i] = strdup(cells[i] ? cells[i] : "");
    t->nrows++;
}

void ctl_table_free(ctl_table *t)
{
    if (!t)
        return;
    for (size_t k = 0; k < t->nrows * (size_t)t->ncols; k++)
        free(t->cells[k]);
    free(t->cells);
    free(t);
}

void ctl_table_print(ctl_table *t)
{
    if (!t)
        return;
    size_t *w = calloc((size_t)t->ncols, sizeof *w);
    for (size_t r = 0; w && r < t->nrows; r++)
        for (int i = 0; i < t->ncols; i++) {
            const char *s = t->cells[r * (size_t)t->ncols + (size_t)i];
            size_t n = (s ? strlen(s) : 0) + TAB_PADDING;
            if (n > w[i])
                w[i] = n < TAB_MINWIDTH ? TAB_MINWIDTH : n;
        }
    for (size_t r = 0; w && r < t->nrows; r++) {
        for (int i = 0; i < t->ncols; i++) {
            const char *s = t->cells[r * (size_t)t->ncols + (size_t)i];
            if (i + 1 < t->ncols)
                printf("%-*s", (int)w[i], s ? s : "");
            else
                printf("%s", s ? s : "");
        }
        putchar('\n');
    }
    free(w);
    ctl_table_free(t);
}

void ctl_print_json(json_t *j)
{
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_ENCODE_ANY);
    if (s)
        puts(s);
    free(s);
}

/* ---- YAML ---- */

static bool plain_ok(const char *s)
{
    static const char *const reserved[] = {"true", "false", "null", "yes", "no", "on", "off", "~",
                                           "True", "False", "Null", "Yes", "No", "On", "Off"};
    if (!*s || strchr("-?:,[]{}#&*!|>'\"%@` ", s[0]))
        return false;
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
        if (!strcmp(s, reserved[i]))
            return false;
    char *end;
    strtod(s, &end);
    if (*end == '\0')
        return false; /* would read back as a number */
    for (const char *p = s; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        if (ch < 0x20 || ch == 0x7f || (ch == ':' && (p[1] == ' ' || !p[1])) ||
            (ch == ' ' && p[1] == '#'))
            return false;
    }
    return s[strlen(s) - 1] != ' ';
}

static void yaml_scalar(json_t *j)
{
    if (json_is_string(j) && plain_ok(json_string_value(j))) {
        fputs(json_string_value(j), stdout);
        return;
    }
    /* JSON scalars (double-quoted strings included) are valid YAML. */
    char *s = json_dumps(j, JSON_ENCODE_ANY);
    fputs(s ? s : "null", stdout);
    free(s);
}

static bool is_container(json_t *j)
{
    return (json_is_object(j) && json_object_size(j)) || (json_is_array(j) && json_array_size(j));
}

static void yaml_node(json_t *j, int indent, bool inline_first);

static void yaml_value_after_key(json_t *v, int indent)
{
    if (is_container(v)) {
        putchar('\n');
        yaml_node(v, json_is_array(v) ? indent : indent + 2, false);
    } else {
        putchar(' ');
        if (json_is_object(v))
            fputs("{}", stdout);
        else if (json_is_array(v))
            fputs("[]", stdout);
        else
            yaml_scalar(v);
        putchar('\n');
    }
}

/* inline_first: the first line's indentation was already written ("- "). */
static void yaml_node(json_t *j, int indent, bool inline_first)
{
    bool first = true;
    if (json_is_object(j)) {
        const char *k;
        json_t *v;
        json_object_foreach(j, k, v)
        {
            if (!(first && inline_first))
                printf("%*s", indent, "");
            first = false;
            json_t *key = json_string(k);
            yaml_scalar(key);
            json_decref(key);
            putchar(':');
            yaml_value_after_key(v, indent);
        }
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v)
        {
            if (!(first && inline_first))
                printf("%*s", indent, "");
            first = false;
            fputs("-", stdout);
            if (is_container(v) && json_is_object(v)) {
                putchar(' ');
                yaml_node(v, indent + 2, true);
            } else if (is_container(v)) {
                putchar('\n');
                yaml_node(v, indent + 2, false);
            } else {
                yaml_value_after_key(v, indent);
            }
        }
    } else {
        yaml_scalar(j);
        putchar('\n');
    }
}

void ctl_print_yaml(json_t *j)
{
    if (json_is_object(j) && !json_object_size(j))
        puts("{}");
    else if (json_is_array(j) && !json_array_size(j))
        puts("[]");
    else
        yaml_node(j, 0, false);
}

void ctl_print_doc(json_t *j, ctl_out out)
{
    if (out == CTL_OUT_YAML)
        ctl_print_yaml(j);
    else
        ctl_print_json(j);
}

/* ---- humans ---- */

void ctl_ago(int64_t ns, char *out, size_t outlen)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t d = now.tv_sec - ns / 1000000000;
    if (ns <= 0) {
        snprintf(out, outlen, "Unknown");
        return;
    }
    int64_t m = d / 60, h = d / 3600;
    if (d < 1)
        snprintf(out, outlen, "Less than a second ago");
    else if (d == 1)
        snprintf(out, outlen, "1 second ago");
    else if (d < 60)
        snprintf(out, outlen, "%lld seconds ago", (long long)d);
    else if (m == 1)
        snprintf(out, outlen, "About a minute ago");
    else if (m < 60)
        snprintf(out, outlen, "%lld minutes ago", (long long)m);
    else if (h == 1)
        snprintf(out, outlen, "About an hour ago");
    else if (h < 48)
        snprintf(out, outlen, "%lld hours ago", (long long)h);
    else if (h < 24 * 7 * 2)
        snprintf(out, outlen, "%lld days ago", (long long)(h / 24));
    else if (h < 24 * 30 * 2)
        snprintf(out, outlen, "%lld weeks ago", (long long)(h / 24 / 7));
    else if (h < 24 * 365 * 2)
        snprintf(out, outlen, "%lld months ago", (long long)(h / 24 / 30));
    else
        snprintf(out, outlen, "%lld years ago", (long long)(h / 24 / 365));
}

void ctl_human_size_prec(uint64_t bytes, int digits, char *out, size_t outlen)
{
    static const char *const units[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
    double v = (double)bytes;
    size_t u = 0;
    while (v >= 1000 && u + 1 < sizeof units / sizeof units[0])
        v /= 1000, u++;
    snprintf(out, outlen, "%.*g%s", digits, v, units[u]);
}

void ctl_human_size(uint64_t bytes, char *out, size_t outlen)
{
    ctl_human_size_prec(bytes, 3, out, outlen);
}

void ctl_trunc_id(const char *id, bool no_trunc, char *out, size_t outlen)
{
    if (!id)
        id = "";
    if (!no_trunc && !strncmp(id, "sha256:", 7))
        id += 7;
    snprintf(out, outlen, "%.*s", no_trunc ? (int)strlen(id) : CTL_TRUNC_ID, id);
}

const char *ctl_pod_state(int s)
{
    return s == RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY ? "Ready" : "NotReady";
}

const char *ctl_ctr_state(int s)
{
    switch (s) {
    case RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED:
        return "Created";
    case RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING:
        return "Running";
    case RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED:
        return "Exited";
    default:
        return "Unknown";
    }
}
