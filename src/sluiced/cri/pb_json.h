/* A protobuf-c message as JSON (jansson), as Go's encoding/json shows a
 * CRI message with its generated tags (what containerd puts in verbose
 * info): field names as in the .proto; zero numbers, false, empty strings,
 * lists and messages left out; enums by name, the zero one too (POD,
 * Merge: it means something); maps (repeated *Entry messages) as
 * objects; bytes as base64; 64-bit integers as numbers. */
#ifndef SL_PB_JSON_H
#define SL_PB_JSON_H

#include <jansson.h>
#include <protobuf-c/protobuf-c.h>

/* Nesting followed at most (deeper messages become null). */
#define SL_PB_JSON_MAX_DEPTH 32

/* A new JSON object for m, or NULL when out of memory. */
json_t *sl_pb_json(const ProtobufCMessage *m);

#endif
