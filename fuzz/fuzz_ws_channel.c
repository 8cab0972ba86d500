/* Decodes the input as one received channel message, in binary and in
 * base64 mode, from exactly sized heap copies (so over-reads are caught);
 * checks that what decodes re-encodes to a message of the same size. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ws/ws_channel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one_mode(const uint8_t *data, size_t size, int b64)
{
    uint8_t *msg = malloc(size ? size : 1);
    if (!msg)
        return;
    memcpy(msg, data, size);
    uint8_t ch, *out;
    size_t len;
    if (sl_ws_channel_decode(msg, size, b64, &ch, &out, &len) == 0) {
        if (out < msg || out + len > msg + size)
            __builtin_trap();
        size_t n = sl_ws_channel_encoded_len(len, b64);
        if (n != size)
            __builtin_trap();
        uint8_t *re = malloc(n);
        if (re) {
            if (sl_ws_channel_encode(re, ch, out, len, b64) != n)
                __builtin_trap();
            if (!b64 && memcmp(re, data, n) != 0)
                __builtin_trap();
            free(re);
        }
    }
    free(msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    one_mode(data, size, 0);
    one_mode(data, size, 1);
    return 0;
}
