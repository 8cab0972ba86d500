#include "stats/fsusage.h"

#include <errno.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* First size of the hard-link set (slots; always a power of two). */
#define LINKS_FIRST_SLOTS 256

typedef struct link_key {
    dev_t dev;
    ino_t ino;
} link_key;

/* Open-addressing set of (dev, ino) of files with more than one link. */
typedef struct link_set {
    link_key *slots;
    size_t nslots, used;
} link_set;

typedef struct walk {
    sl_fsusage u;
    link_set links;
} walk;

/* nftw passes no context pointer: the walk of this thread. */
static _Thread_local walk *current;

static size_t slot_of(const link_set *s, link_key k)
{
    uint64_t h = (uint64_t)k.ino * 0x9E3779B97F4A7C15ull ^ (uint64_t)k.dev;
    return (size_t)(h ^ (h >> 29)) & (s->nslots - 1);
}

/* True when k is new (and now remembered, room permitting). */
static bool add_slot(link_set *s, link_key k)
{
    for (size_t i = slot_of(s, k);; i = (i + 1) & (s->nslots - 1)) {
        link_key *p = &s->slots[i];
        if (p->ino == 0) {
            *p = k;
            s->used++;
            return true;
        }
        if (p->ino == k.ino && p->dev == k.dev)
            return false;
    }
}

static bool grow(link_set *s)
{
    size_t n = s->nslots ? s->nslots * 2 : LINKS_FIRST_SLOTS;
    link_set bigger = {calloc(n, sizeof(link_key)), n, 0};
    if (!bigger.slots)
        return false;
    for (size_t i = 0; i < s->nslots; i++)
        if (s->slots[i].ino)
            add_slot(&bigger, s->slots[i]);
    free(s->slots);
    *s = bigger;
    return true;
}

/* True when this linked inode was not seen before in the walk. Past the
 * bound (or without memory) every link counts. */
static bool first_link(link_set *s, const struct stat *st)
{
    link_key k = {st->st_dev, st->st_ino ? st->st_ino : (ino_t)-1};
    bool full = s->used >= SL_FSUSAGE_MAX_LINKS;
    if (!full && s->used * 2 >= s->nslots && !grow(s))
        full = true;
    if (full) {
        for (size_t i = s->nslots ? slot_of(s, k) : 0; s->nslots && s->slots[i].ino;
             i = (i + 1) & (s->nslots - 1))
            if (s->slots[i].ino == k.ino && s->slots[i].dev == k.dev)
                return false;
        return true;
    }
    return add_slot(s, k);
}

static int visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)path;
    (void)ftw;
    walk *w = current;
    if (type == FTW_NS || type == FTW_DNR) {
        w->u.partial = true;
        if (type == FTW_NS)
            return FTW_CONTINUE;
    }
    if (st->st_nlink > 1 && !S_ISDIR(st->st_mode) && !first_link(&w->links, st))
        return FTW_CONTINUE;
    w->u.inodes++;
    w->u.bytes += (uint64_t)st->st_blocks * 512;
    return FTW_CONTINUE;
}

int sl_fsusage_walk(const char *dir, sl_fsusage *u, sl_error *e)
{
    walk w;
    memset(&w, 0, sizeof(w));
    current = &w;
    int rc = nftw(dir, visit, SL_FSUSAGE_OPEN_FDS, FTW_PHYS | FTW_MOUNT | FTW_ACTIONRETVAL);
    int err = errno;
    current = NULL;
    free(w.links.slots);
    if (rc != 0 && w.u.inodes == 0)
        return sl_error_set(e, err, "walk %s", dir);
    if (rc != 0)
        w.u.partial = true;
    *u = w.u;
    return 0;
}
