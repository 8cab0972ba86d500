/* Reference parsing: a strict subset of distribution's grammar, enough for
 * every name the kubelet or a tarball hands us. */
#include "image_ref.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define DIGEST_PREFIX "sha256:"
#define DIGEST_HEX_LEN 64

static int is_lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static int is_alnum(char c)
{
    return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

int sl_hex_valid(const char *s, size_t n, int exact)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return !exact || s[n] == '\0';
}

int sl_digest_valid(const char *s)
{
    size_t pl = strlen(DIGEST_PREFIX);
    return !strncmp(s, DIGEST_PREFIX, pl) && sl_hex_valid(s + pl, DIGEST_HEX_LEN, 1);
}

void sl_digest_format(const unsigned char md[32], char out[SL_DIGEST_STR_LEN])
{
    static const char hex[] = "0123456789abcdef";
    size_t pl = strlen(DIGEST_PREFIX);
    memcpy(out, DIGEST_PREFIX, pl);
    for (size_t i = 0; i < 32; i++) {
        out[pl + 2 * i] = hex[md[i] >> 4];
        out[pl + 2 * i + 1] = hex[md[i] & 15];
    }
    out[pl + 64] = '\0';
}

/* One path component of n bytes: [a-z0-9]+ ((.|_|__|-+)[a-z0-9]+)*. */
static int path_component_valid(const char *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        if (!is_lower_alnum(p[i]))
            return 0;
        while (i < n && is_lower_alnum(p[i]))
            i++;
        if (i == n)
            return 1;
        size_t sep = i;
        if (p[i] == '.')
            i++;
        else if (p[i] == '_')
            i += (i + 1 < n && p[i + 1] == '_') ? 2 : 1;
        else
            while (i < n && p[i] == '-')
                i++;
        if (i == sep || i == n)
            return 0;
    }
    return n > 0;
}

/* host[:port]: dot-separated alnum labels with inner '-', optional port. */
static int domain_valid(const char *p, size_t n)
{
    const char *colon = memchr(p, ':', n);
    size_t hn = colon ? (size_t)(colon - p) : n;
    if (colon) {
        size_t pn = n - hn - 1;
        if (pn == 0 || pn > 5)
            return 0;
        for (size_t i = hn + 1; i < n; i++)
            if (p[i] < '0' || p[i] > '9')
                return 0;
    }
    if (hn == 0)
        return 0;
    for (size_t i = 0; i < hn; i++) {
        int edge = i == 0 || i + 1 == hn || p[i - 1] == '.' || p[i + 1] == '.';
        if (p[i] == '.' && (i == 0 || i + 1 == hn || p[i - 1] == '.'))
            return 0;
        if (p[i] == '-' && edge)
            return 0;
        if (p[i] != '.' && p[i] != '-' && !is_alnum(p[i]))
            return 0;
    }
    return 1;
}

static int tag_valid(const char *t)
{
    size_t n = strlen(t);
    if (n == 0 || n > SL_IMAGE_TAG_MAX || !(is_alnum(t[0]) || t[0] == '_'))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!is_alnum(t[i]) && t[i] != '_' && t[i] != '.' && t[i] != '-')
            return 0;
    return 1;
}

/* Does the part before the first '/' name a registry? */
static int is_domain(const char *p, size_t n)
{
    if (n == 9 && !memcmp(p, "localhost", 9))
        return 1;
    for (size_t i = 0; i < n; i++)
        if (p[i] == '.' || p[i] == ':' || (p[i] >= 'A' && p[i] <= 'Z'))
            return 1;
    return 0;
}

static int path_valid(const char *p)
{
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (!path_component_valid(p, n))
            return 0;
        if (!slash)
            return 1;
        p = slash + 1;
    }
}

/* Fills r->name from the (tag- and digest-free) name s. */
static int parse_name(const char *s, sl_image_ref *r, sl_error *e)
{
    const char *slash = strchr(s, '/');
    const char *domain = SL_IMAGE_DEFAULT_DOMAIN, *path = s;
    size_t dn = strlen(domain);
    if (slash && is_domain(s, (size_t)(slash - s))) {
        domain = s;
        dn = (size_t)(slash - s);
        path = slash + 1;
        if (!domain_valid(domain, dn))
            return sl_error_set(e, EINVAL, "invalid registry in reference \"%.300s\"", s);
        if (dn == 15 && !memcmp(domain, "index.docker.io", 15)) {
            domain = SL_IMAGE_DEFAULT_DOMAIN;
            dn = strlen(domain);
        }
    }
    if (!path_valid(path))
        return sl_error_set(e, EINVAL, "invalid repository name \"%.300s\"", s);
    int official = dn == strlen(SL_IMAGE_DEFAULT_DOMAIN) &&
                   !memcmp(domain, SL_IMAGE_DEFAULT_DOMAIN, dn) && !strchr(path, '/');
    int n = snprintf(r->name, sizeof(r->name), "%.*s/%s%s", (int)dn, domain,
                     official ? "library/" : "", path);
    if (n < 0 || (size_t)n >= sizeof(r->name))
        return sl_error_set(e, EINVAL, "repository name \"%.300s\" over %d bytes", s,
                            SL_IMAGE_NAME_MAX);
    return 0;
}

int sl_image_ref_parse(const char *s, sl_image_ref *r, sl_error *e)
{
    char buf[SL_IMAGE_REF_MAX];
    memset(r, 0, sizeof(*r));
    if (!s || !s[0] || strlen(s) >= sizeof(buf))
        return sl_error_set(e, EINVAL, "invalid reference \"%.300s\"", s ? s : "");
    strcpy(buf, s);
    char *at = strrchr(buf, '@');
    if (at) {
        *at = '\0';
        if (!sl_digest_valid(at + 1))
            return sl_error_set(e, EINVAL, "invalid digest in reference \"%.300s\"", s);
        strcpy(r->digest, at + 1);
    }
    char *lastslash = strrchr(buf, '/');
    char *colon = strrchr(lastslash ? lastslash : buf, ':');
    if (colon) {
        *colon = '\0';
        if (!tag_valid(colon + 1))
            return sl_error_set(e, EINVAL, "invalid tag in reference \"%.300s\"", s);
        strcpy(r->tag, colon + 1);
    } else if (!r->digest[0]) {
        strcpy(r->tag, SL_IMAGE_DEFAULT_TAG);
    }
    return parse_name(buf, r, e);
}

int sl_image_ref_name_tag(const sl_image_ref *r, char *out, size_t n)
{
    int w = snprintf(out, n, "%s%s%s", r->name, r->tag[0] ? ":" : "", r->tag);
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

int sl_image_ref_name_digest(const char *name, const char *digest, char *out, size_t n)
{
    int w = snprintf(out, n, "%s@%s", name, digest);
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

int sl_image_ref_normalize(const char *s, char *out, size_t n, sl_error *e)
{
    sl_image_ref r;
    if (sl_image_ref_parse(s, &r, e) < 0)
        return -1;
    int w = snprintf(out, n, "%s%s%s%s%s", r.name, r.tag[0] ? ":" : "", r.tag,
                     r.digest[0] ? "@" : "", r.digest);
    if (w < 0 || (size_t)w >= n)
        return sl_error_set(e, ENAMETOOLONG, "reference \"%.300s\" too long", s);
    return 0;
}
