#include "ws/ws_channel.h"

#include <string.h>

#include "util/base64.h"
#include "sluice/error.h"

size_t sl_ws_channel_encoded_len(size_t len, int base64)
{
    return 1 + (base64 ? sl_base64_encoded_len(len, 0) : len);
}

/* sl_base64_encode() writes a NUL after its output, which dst has no room
 * for: encode all whole groups but the last directly (the NUL lands where
 * the last group goes), then the last 1..3 bytes through a small buffer. */
static void encode_b64_exact(uint8_t *dst, const uint8_t *data, size_t len)
{
    if (len == 0)
        return;
    size_t head = (len - 1) / 3 * 3;
    size_t o = sl_base64_encode((char *)dst, data, head, 0);
    char tail[5];
    size_t n = sl_base64_encode(tail, data + head, len - head, 0);
    memcpy(dst + o, tail, n);
}

size_t sl_ws_channel_encode(uint8_t *dst, uint8_t channel, const uint8_t *data, size_t len,
                            int base64)
{
    if (!base64) {
        dst[0] = channel;
        if (len)
            memcpy(dst + 1, data, len);
        return 1 + len;
    }
    dst[0] = (uint8_t)('0' + channel);
    encode_b64_exact(dst + 1, data, len);
    return sl_ws_channel_encoded_len(len, 1);
}

int sl_ws_channel_decode(uint8_t *msg, size_t msg_len, int base64, uint8_t *channel, uint8_t **data,
                         size_t *len)
{
    if (msg_len == 0)
        return SL_ERR_PROTO;
    *data = msg + 1;
    if (!base64) {
        *channel = msg[0];
        *len = msg_len - 1;
        return SL_OK;
    }
    if (msg[0] < '0')
        return SL_ERR_PROTO;
    /* Decoding in place is safe: each 4-char group is read before its (at
     * most 3) output bytes are written at or before the group's start. */
    long n = sl_base64_decode(msg + 1, (const char *)msg + 1, msg_len - 1);
    if (n < 0)
        return SL_ERR_PROTO;
    *channel = (uint8_t)(msg[0] - '0');
    *len = (size_t)n;
    return SL_OK;
}
