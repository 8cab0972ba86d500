/* Image manifests, indexes and configs as an import reads them. The input
 * is up to three JSON documents separated by "\n--\n"; the first byte
 * picks the layout:
 *   even: OCI layout   index.json = doc 1, a manifest blob = doc 2,
 *                      a config blob = doc 3, one layer blob;
 *   odd:  docker-archive manifest.json = doc 1, <hex>.json = doc 3,
 *                      layer.tar.
 * Digests cannot be guessed by a fuzzer, so placeholders are replaced
 * first: @D the layer's digest (also its diff id: it is stored
 * uncompressed), @C the config's digest (docker: its file name), @M the
 * manifest's. The archive is written to a temp file, staged and parsed
 * like a real import; parse errors are fine, crashes, leaks and
 * over-reads are not. The archive and the stage live on tmpfs (/dev/shm)
 * when there is one: writing, staging and removing files per input on
 * /tmp's ext4 cost most of the time. */
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "image/image_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_DOC 65536
static const char layer[] = "not a tar, never unpacked here";
static char base[64];

/* /dev/shm if usable (tmpfs: creating and removing files is memory work),
 * else /tmp. */
static const char *scratch_root(void)
{
    return access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm" : "/tmp";
}

static void cleanup(void)
{
    if (base[0])
        sl_rm_rf(base, NULL);
}

static void digest(const void *p, size_t n, char out[SL_DIGEST_STR_LEN])
{
    unsigned char md[32];
    unsigned len = 0;
    EVP_Digest(p, n, md, &len, EVP_sha256(), NULL);
    sl_digest_format(md, out);
}

/* doc with every "@X" replaced by its value (malloc'd, NUL-terminated). */
static char *subst(const char *doc, size_t n, const char *const vals[26], size_t *outlen)
{
    size_t cap = n * 80 + 1, len = 0;
    char *out = malloc(cap);
    for (size_t i = 0; out && i < n; i++) {
        const char *v = doc[i] == '@' && i + 1 < n && doc[i + 1] >= 'A' && doc[i + 1] <= 'Z'
                            ? vals[doc[i + 1] - 'A']
                            : NULL;
        if (v) {
            size_t vl = strlen(v);
            memcpy(out + len, v, vl);
            len += vl;
            i++;
        } else {
            out[len++] = doc[i];
        }
    }
    if (out)
        out[len] = '\0';
    *outlen = len;
    return out;
}

static void add(struct archive *a, const char *path, const void *p, size_t n)
{
    struct archive_entry *e = archive_entry_new();
    archive_entry_set_pathname(e, path);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, (la_int64_t)n);
    if (archive_write_header(a, e) == ARCHIVE_OK && n)
        archive_write_data(a, p, n);
    archive_entry_free(e);
}

/* Splits data at "\n--\n" into up to three documents. */
static size_t split(const char *d, size_t n, const char *doc[3], size_t len[3])
{
    size_t k = 0, start = 0;
    for (size_t i = 0; i + 4 <= n && k < 2; i++) {
        if (!memcmp(d + i, "\n--\n", 4)) {
            doc[k] = d + start, len[k++] = i - start;
            start = i + 4;
            i += 3;
        }
    }
    doc[k] = d + start, len[k++] = n - start;
    for (size_t i = k; i < 3; i++)
        doc[i] = "", len[i] = 0;
    return k;
}

static void parse(const char *path)
{
    char stage[96];
    snprintf(stage, sizeof(stage), "%s/stage", base);
    sl_rm_rf(stage, NULL);
    if (mkdir(stage, 0700) < 0)
        abort();
    int dirfd = open(stage, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    sl_image_limits lim = {1u << 24, 1u << 24, 64, 64, 8, 256};
    sl_stage st = {.dirfd = dirfd};
    sl_pending *p = NULL;
    size_t np = 0;
    sl_error e = {0};
    if (sl_stage_archive(path, dirfd, &lim, NULL, NULL, &st, &e) == 0 &&
        sl_pending_parse(&st, &lim, &p, &np, &e) == 0)
        sl_pending_free(p, np);
    sl_stage_fini(&st);
    close(dirfd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 3 * MAX_DOC)
        return 0;
    if (!base[0]) {
        snprintf(base, sizeof(base), "%s/sl-fuzz-layout-XXXXXX", scratch_root());
        if (!mkdtemp(base))
            abort();
        atexit(cleanup);
    }
    bool docker = data[0] & 1;
    const char *doc[3];
    size_t len[3], n[3];
    split((const char *)data + 1, size - 1, doc, len);
    char d_layer[SL_DIGEST_STR_LEN], d_cfg[SL_DIGEST_STR_LEN], d_man[SL_DIGEST_STR_LEN] = "";
    char cfg_name[80];
    digest(layer, sizeof(layer) - 1, d_layer);
    const char *vals[26] = {0};
    vals['D' - 'A'] = d_layer;
    char *cfg = subst(doc[2], len[2], vals, &n[2]);
    digest(cfg, n[2], d_cfg);
    snprintf(cfg_name, sizeof(cfg_name), "%s.json", d_cfg + 7);
    vals['C' - 'A'] = docker ? cfg_name : d_cfg;
    char *man = subst(doc[1], len[1], vals, &n[1]);
    digest(man, n[1], d_man);
    vals['M' - 'A'] = d_man;
    char *top = subst(doc[0], len[0], vals, &n[0]);
    char path[96];
    snprintf(path, sizeof(path), "%s/image.tar", base);
    struct archive *a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    if (cfg && man && top && archive_write_open_filename(a, path) == ARCHIVE_OK) {
        if (docker) {
            add(a, "manifest.json", top, n[0]);
            add(a, cfg_name, cfg, n[2]);
            add(a, "layer.tar", layer, sizeof(layer) - 1);
        } else {
            char blob[128];
            add(a, "oci-layout", "{\"imageLayoutVersion\":\"1.0.0\"}", 30);
            add(a, "index.json", top, n[0]);
            snprintf(blob, sizeof(blob), "blobs/sha256/%s", d_man + 7);
            add(a, blob, man, n[1]);
            snprintf(blob, sizeof(blob), "blobs/sha256/%s", d_cfg + 7);
            add(a, blob, cfg, n[2]);
            snprintf(blob, sizeof(blob), "blobs/sha256/%s", d_layer + 7);
            add(a, blob, layer, sizeof(layer) - 1);
        }
        archive_write_close(a);
        parse(path);
    }
    archive_write_free(a);
    free(cfg);
    free(man);
    free(top);
    return 0;
}
