#include "util/rbuf.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

static _Thread_local uint8_t *bufs[SL_RBUF_KINDS];
static pthread_key_t key;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool key_ok;

/* Thread exit: its buffers go with it. */
static void drop(void *unused)
{
    (void)unused;
    for (int i = 0; i < SL_RBUF_KINDS; i++) {
        free(bufs[i]);
        bufs[i] = NULL;
    }
}

static void key_init(void)
{
    key_ok = pthread_key_create(&key, drop) == 0;
}

uint8_t *sl_rbuf_get(sl_rbuf_kind kind)
{
    if (bufs[kind])
        return bufs[kind];
    pthread_once(&once, key_init);
    if (!key_ok || pthread_setspecific(key, bufs) != 0)
        return NULL;
    bufs[kind] = malloc(SL_RBUF_SIZE);
    return bufs[kind];
}
