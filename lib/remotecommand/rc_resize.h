/* Decoder for the resize stream: a sequence of JSON objects
 * {"Width":W,"Height":H} split arbitrarily across messages (protocol notes
 * §5.4). I/O free. Like the kubelet, decoding stops for good at the first
 * malformed object; the session itself goes on. */
#ifndef SL_RC_RESIZE_H
#define SL_RC_RESIZE_H

#include <stddef.h>
#include <stdint.h>
#include "sluice/runtime.h"

/* Longest single resize object we buffer while waiting for its end. */
#define SL_RC_RESIZE_MAX_OBJECT 1024

typedef struct sl_rc_resize {
    char buf[SL_RC_RESIZE_MAX_OBJECT];
    size_t len;
    int failed; /* a malformed object was seen: further input is ignored */
} sl_rc_resize;

void sl_rc_resize_init(sl_rc_resize *r);

/* Feeds bytes; calls fn for every complete size, in order. Returns SL_OK,
 * or SL_ERR_PROTO once the stream is malformed (also for later calls). */
int sl_rc_resize_feed(sl_rc_resize *r, const uint8_t *data, size_t len,
                      void (*fn)(void *arg, sl_term_size size), void *arg);

#endif
