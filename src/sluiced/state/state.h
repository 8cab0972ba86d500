/* On-disk records of pods and containers: one JSON file per object,
 * <root>/<kind>/<id>/record.json, written atomically, so that after a
 * SIGKILL a restarted sluiced lists exactly what existed. */
#ifndef SL_STATE_H
#define SL_STATE_H

#include <jansson.h>
#include <stddef.h>
#include "sys_error.h"

#define SL_STATE_MAX_RECORD (4 * 1024 * 1024) /* bytes of one record file */

/* Directory of one object (<root>/<kind>/<id>), malloc'd. */
char *sl_state_dir(const char *root, const char *kind, const char *id);
/* Writes rec atomically, creating the directory. Returns 0 or -1 (*e). */
int sl_state_save(const char *root, const char *kind, const char *id, json_t *rec, sl_error *e);
/* Reads a record; NULL with *e (errnum ENOENT when absent). */
json_t *sl_state_load(const char *root, const char *kind, const char *id, sl_error *e);
/* Ids that have a record, sorted; *ids is a malloc'd array of malloc'd
 * strings (free with sl_state_ids_free). Directories without a record
 * (an interrupted create) are skipped. Returns 0 or -1 (*e). */
int sl_state_list(const char *root, const char *kind, char ***ids, size_t *n, sl_error *e);
void sl_state_ids_free(char **ids, size_t n);
/* Removes the object's directory (idempotent). Returns 0 or -1 (*e). */
int sl_state_remove(const char *root, const char *kind, const char *id, sl_error *e);

#endif
