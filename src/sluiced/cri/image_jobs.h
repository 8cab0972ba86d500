/* Image imports off the loop: one queue per image store, one import at a
 * time. Each import begins and commits on the loop (quick: the index) and
 * runs its slow half (staging, digests, unpacking, syncing) on a libuv
 * worker thread, so every other call is served meanwhile. A call that
 * needs an image an import may give waits behind it (sl_imgq_after); the
 * deletions of removed images and failed imports go to worker threads
 * too. */
#ifndef SL_CRI_IMAGE_JOBS_H
#define SL_CRI_IMAGE_JOBS_H

#include <stdbool.h>
#include <uv.h>

#include "cri/waitq.h"
#include "grpc/grpc_call.h"
#include "image/image_store.h"
#include "sys_error.h"

typedef struct sl_imgq sl_imgq;

/* Called when a required import (sluiced --import FILE) failed. */
typedef void (*sl_imgq_fatal_fn)(void *arg, const sl_error *e);

/* The queue of store s (which must defer its deletes), on loop. */
sl_imgq *sl_imgq_new(uv_loop_t *loop, sl_image_store *s);
/* After the loop ended (nothing may be running). */
void sl_imgq_free(sl_imgq *q);
void sl_imgq_set_fatal(sl_imgq *q, sl_imgq_fatal_fn fn, void *arg);

/* Queues an import of the tarball at path, unless one of it is queued
 * already or it failed before and has not changed since. required: a
 * failure calls the fatal function. */
void sl_imgq_import(sl_imgq *q, const char *path, bool required);
/* Queues the tarballs of dir that are new or changed (or give want's
 * missing tag: sl_image_store_dir_changes). Returns 0 or -1 (*e). */
int sl_imgq_scan(sl_imgq *q, const char *dir, const char *want, sl_error *e);

/* fn(arg) runs once every job queued now has ended (at once when none
 * is). Returns 0, or -1 on ENOMEM (fn is not called). */
int sl_imgq_after(sl_imgq *q, sl_waitq_fn fn, void *arg);
/* handler(call, arg) runs again once every job queued now has ended. */
void sl_imgq_retry(sl_imgq *q, sl_grpc_handler handler, sl_grpc_call *call, void *arg);

/* True when a queued or running import may give ref: its tarball's record
 * says it gave ref's name:tag before, or (unknown_counts) the tarball was
 * never imported, so what it holds is not known yet. */
bool sl_imgq_may_give(const sl_imgq *q, const char *ref, bool unknown_counts);

/* How far the import that may give ref (as sl_imgq_may_give with
 * unknown_counts) is, as JSON: {"file", "phase": "queued" | "reading" |
 * "unpacking", "bytesRead", "bytesTotal" (of the tarball file),
 * "secondsElapsed"} (malloc'd); NULL when no import may give ref, or on
 * ENOMEM. */
char *sl_imgq_progress_json(const sl_imgq *q, const char *ref);

/* What a failed import of a tarball said, for the answers of calls that
 * looked for an image in vain: "FILE: error; FILE: error" into buf ("" when
 * none failed). */
const char *sl_imgq_failures(const sl_imgq *q, char *buf, size_t n);

/* Deletes what the store left to delete, on a worker thread. */
void sl_imgq_collect(sl_imgq *q);

/* Shutdown: the running import is cancelled, queued ones are dropped, and
 * every waiter runs (its call finds what there is). */
void sl_imgq_stop(sl_imgq *q);

#endif
