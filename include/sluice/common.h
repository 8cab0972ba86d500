/* Common definitions of the libsluice public API.
 *
 * The size rule (ABI): every public struct a program fills and hands to
 * the library (sl_server_config, sl_runtime_ops, sl_client_exec_opts,
 * sl_client_pf_opts, sl_client_exec_cb, sl_client_pf_cb, the requests
 * sl_exec_request, sl_attach_request, sl_portforward_request and
 * sl_stream_request) starts with
 * `size_t struct_size`, the sizeof the program was compiled with. Set it
 * with the struct's _init function where there is one, else with
 * SL_STRUCT_SIZE(type) (= sizeof), and zero what you do not set. The
 * library:
 *   - reads only the fields that fit in struct_size and uses its default
 *     for the rest (NULL for a callback), so a program built against an
 *     older header keeps working when fields are added at the end;
 *   - refuses a struct_size below the first release that had the field
 *     (0.2.0; 0.3.0 for the requests) with SL_ERR_INVAL;
 *   - refuses a larger struct_size (a program built against a newer
 *     header) with SL_ERR_UNSUPPORTED when a byte past the fields it
 *     knows is not zero: a setting it cannot honour is never ignored.
 * Structs the library hands out (sl_session_info, sl_client_error, the
 * requests given to the runtime and the hand-off function) carry
 * struct_size too, set by the library: a program built against a newer
 * header reads a field only when SL_HAS_FIELD(ptr, type, field) is true.
 * Fields are only ever added at the end, at an offset no smaller than the
 * previous sizeof; none is removed or reordered without a new soname.
 * sl_runtime ({ops, data}), sl_term_size, sl_proc_endpoints and
 * sl_client_header (an array element) are frozen: they never grow in this
 * soname. */
#ifndef SLUICE_COMMON_H
#define SLUICE_COMMON_H

#include <stddef.h>

#if defined(__GNUC__)
#define SL_EXPORT __attribute__((visibility("default")))
#else
#define SL_EXPORT
#endif

/* The struct_size value of a struct the program fills. */
#define SL_STRUCT_SIZE(type) sizeof(type)

/* True when the struct at p (with struct_size first) holds field: use on
 * a struct the library handed out before reading a field newer than the
 * library the program may run with. */
#define SL_HAS_FIELD(p, type, field)                                                               \
    ((p)->struct_size >= offsetof(type, field) + sizeof(((type *)0)->field))

#endif
