#include "decimal.h"

bool sl_decimal_u64(const char *s, const char **end, uint64_t *v)
{
    if (*s < '0' || *s > '9')
        return false;
    uint64_t n = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        unsigned d = (unsigned)(*s - '0');
        if (n > (UINT64_MAX - d) / 10)
            return false;
        n = n * 10 + d;
    }
    *end = s;
    *v = n;
    return true;
}
