/* The percent codec (pct.h). */
#include "pct.h"

#include <stdint.h>
#include <stdlib.h>

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The byte an escape at s[i] stands for, or -1 when s[i..] is none. */
static int escape_at(const char *s, size_t len, size_t i)
{
    if (i + 2 >= len)
        return -1;
    int hi = hexval(s[i + 1]), lo = hexval(s[i + 2]);
    return hi < 0 || lo < 0 ? -1 : hi << 4 | lo;
}

long sl_pct_decode(const char *s, size_t len, char *out, size_t outlen, unsigned flags)
{
    size_t o = 0;
    long rc = 0;
    for (size_t i = 0; i < len && o + 1 < outlen; i++) {
        int c = s[i] == '%' ? escape_at(s, len, i) : -1;
        if (c >= 0) {
            out[o++] = (char)c;
            i += 2;
        } else if (s[i] == '%' && (flags & SL_PCT_STRICT)) {
            rc = -1;
            break;
        } else {
            out[o++] = s[i] == '+' && (flags & SL_PCT_PLUS_SPACE) ? ' ' : s[i];
        }
    }
    out[o] = '\0';
    return rc < 0 ? rc : (long)o;
}

char *sl_pct_decode_dup(const char *s, size_t len, unsigned flags)
{
    char *out = malloc(len + 1);
    if (out != NULL && sl_pct_decode(s, len, out, len + 1, flags) < 0) {
        free(out);
        return NULL;
    }
    return out;
}

static int needs_escape(uint8_t c)
{
    return c < 0x20 || c > 0x7e || c == '%';
}

char *sl_pct_encode_grpc(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;
    for (const uint8_t *p = (const uint8_t *)s; *p; p++)
        n += needs_escape(*p) ? 3 : 1;
    char *out = malloc(n + 1);
    if (out == NULL)
        return NULL;
    char *o = out;
    for (const uint8_t *p = (const uint8_t *)s; *p; p++) {
        if (needs_escape(*p)) {
            *o++ = '%';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 15];
        } else {
            *o++ = (char)*p;
        }
    }
    *o = '\0';
    return out;
}
