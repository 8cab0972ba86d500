/* Kubernetes channel framing inside WebSocket messages (protocol notes §6.2):
 * binary protocols carry <channel byte><data>; base64 protocols carry text
 * '0'+channel followed by padded standard base64 of the data. I/O free. */
#ifndef SL_WS_CHANNEL_H
#define SL_WS_CHANNEL_H

#include <stddef.h>
#include <stdint.h>

/* Encoded size of len bytes of data on one channel. */
size_t sl_ws_channel_encoded_len(size_t len, int base64);
/* Encodes channel+data into dst (sl_ws_channel_encoded_len bytes).
 * Returns the number of bytes written. */
size_t sl_ws_channel_encode(uint8_t *dst, uint8_t channel, const uint8_t *data, size_t len,
                            int base64);

/* Decodes one received message in place. is_text says the frame was a text
 * frame. For base64 protocols, text or binary frames are both accepted and
 * the payload after the channel digit is base64-decoded into msg itself.
 * On success returns 0, sets *channel, *data (pointing into msg) and *len.
 * Returns SL_ERR_PROTO (negative) for an empty message, a channel digit
 * below '0' in base64 mode, or malformed base64. */
int sl_ws_channel_decode(uint8_t *msg, size_t msg_len, int base64, uint8_t *channel, uint8_t **data,
                         size_t *len);

#endif
