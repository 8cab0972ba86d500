/* The size rule of libsluice's public structs (docs/embedding.md "ABI"):
 * a struct the caller fills starts with `size_t struct_size`, the sizeof
 * the caller was compiled with. The library reads the fields that fit in
 * that size and keeps its defaults for the rest, so a field can be added at
 * the end without breaking a program built against an older header. */
#ifndef SL_ABI_H
#define SL_ABI_H

#include <stddef.h>

/* The size of T up to and including FIELD: the first size a release
 * accepted when FIELD was the last field. */
#define SL_ABI_SIZE_THROUGH(T, FIELD) (offsetof(T, FIELD) + sizeof(((T *)0)->FIELD))

/* Copies the caller's struct src over dst (dst_size bytes, already holding
 * the defaults) and sets dst's struct_size to dst_size. Returns SL_OK,
 * SL_ERR_INVAL when src is NULL or its struct_size is below min_size (the
 * first release's size), SL_ERR_UNSUPPORTED when the caller is newer than
 * this library and set a field it does not know (a non-zero byte past
 * dst_size: refused rather than ignored). */
int sl_abi_copy(void *dst, size_t dst_size, const void *src, size_t min_size);

#endif
