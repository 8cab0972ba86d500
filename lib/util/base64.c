#include "util/base64.h"

static const char std_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char url_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

size_t sl_base64_encoded_len(size_t n, int url)
{
    if (url)
        return n / 3 * 4 + (n % 3 ? n % 3 + 1 : 0);
    return (n + 2) / 3 * 4;
}

size_t sl_base64_encode(char *dst, const uint8_t *src, size_t n, int url)
{
    const char *a = url ? url_alphabet : std_alphabet;
    char *d = dst;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)src[i] << 16 | (uint32_t)src[i + 1] << 8 | src[i + 2];
        *d++ = a[v >> 18];
        *d++ = a[(v >> 12) & 63];
        *d++ = a[(v >> 6) & 63];
        *d++ = a[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)src[i] << 16;
        *d++ = a[v >> 18];
        *d++ = a[(v >> 12) & 63];
        if (!url) {
            *d++ = '=';
            *d++ = '=';
        }
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)src[i] << 16 | (uint32_t)src[i + 1] << 8;
        *d++ = a[v >> 18];
        *d++ = a[(v >> 12) & 63];
        *d++ = a[(v >> 6) & 63];
        if (!url)
            *d++ = '=';
    }
    *d = '\0';
    return (size_t)(d - dst);
}

static int val(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

long sl_base64_decode(uint8_t *dst, const char *src, size_t len)
{
    if (len % 4)
        return -1;
    size_t o = 0;
    for (size_t i = 0; i < len; i += 4) {
        int pad = 0;
        if (src[i + 3] == '=') {
            pad = src[i + 2] == '=' ? 2 : 1;
            if (i + 4 != len) /* padding only in the last quantum */
                return -1;
        }
        int v0 = val(src[i]), v1 = val(src[i + 1]);
        int v2 = pad == 2 ? 0 : val(src[i + 2]);
        int v3 = pad ? 0 : val(src[i + 3]);
        if (v0 < 0 || v1 < 0 || v2 < 0 || v3 < 0)
            return -1;
        uint32_t v = (uint32_t)v0 << 18 | (uint32_t)v1 << 12 | (uint32_t)v2 << 6 | (uint32_t)v3;
        dst[o++] = (uint8_t)(v >> 16);
        if (pad < 2)
            dst[o++] = (uint8_t)(v >> 8);
        if (pad < 1)
            dst[o++] = (uint8_t)v;
    }
    return (long)o;
}
