/* The part of protobuf-c → JSON that sluiced's verbose info (Go
 * encoding/json style, src/sluiced/cri/pb_json.c) and sluicectl's output
 * (protojson style, src/sluicectl/pbjson.c) share: walking a field's
 * storage through its descriptor and one value's JSON. The two differ only
 * in names, which fields they leave out, and the "info" map. */
#ifndef SL_PB_VALUE_H
#define SL_PB_VALUE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <protobuf-c/protobuf-c.h>

/* Bytes one element of type t takes in a repeated field's array. */
size_t sl_pb_elem_size(ProtobufCType t);

/* Whether f is a map<string, V>: a repeated *Entry message with exactly
 * the fields key (a string) and value. A repeated message that merely has
 * those two fields (CRI's KeyValue, ContainerConfig.envs) is a list. */
bool sl_pb_is_map(const ProtobufCFieldDescriptor *f);

/* Turns a sub-message (NULL when unset) into JSON for sl_pb_value_json. */
typedef json_t *(*sl_pb_msg_json_fn)(const ProtobufCMessage *m, void *arg);

/* A new JSON value for the value of f stored at v (one element for a
 * repeated field): integers as numbers (64-bit too), floats as reals,
 * bools, enums by name (by number when the value has none), strings (""
 * for NULL), bytes as padded standard base64; a message goes to msg(m,
 * arg). NULL when out of memory. */
json_t *sl_pb_value_json(const ProtobufCFieldDescriptor *f, const void *v, sl_pb_msg_json_fn msg,
                         void *arg);

#endif
