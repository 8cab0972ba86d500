#include "util/abi.h"

#include <string.h>

#include "sluice/error.h"

int sl_abi_copy(void *dst, size_t dst_size, const void *src, size_t min_size)
{
    size_t size;
    if (src == NULL)
        return SL_ERR_INVAL;
    memcpy(&size, src, sizeof(size));
    if (size < min_size || size < sizeof(size))
        return SL_ERR_INVAL;
    /* A newer caller: what this library does not know must be unset. */
    for (size_t i = dst_size; i < size; i++)
        if (((const unsigned char *)src)[i] != 0)
            return SL_ERR_UNSUPPORTED;
    memcpy(dst, src, size < dst_size ? size : dst_size);
    memcpy(dst, &dst_size, sizeof(dst_size));
    return SL_OK;
}
