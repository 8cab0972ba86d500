/* A scratch directory per test for the unit tests that touch files:
 * tmp_root_setup / tmp_root_teardown as cmocka's setup and teardown (or
 * tmp_root_make first in a setup that fills the directory). */
#ifndef SLUICE_TEST_TMP_ROOT_H
#define SLUICE_TEST_TMP_ROOT_H

#include <stdio.h>
#include <stdlib.h>

#include "fsutil.h"

static char root[64];

static inline void tmp_root_make(void)
{
    snprintf(root, sizeof(root), "/tmp/sl-unit-XXXXXX");
    assert_non_null(mkdtemp(root));
}

static inline int tmp_root_setup(void **state)
{
    (void)state;
    tmp_root_make();
    return 0;
}

static inline int tmp_root_teardown(void **state)
{
    (void)state;
    sl_error e;
    sl_rm_rf(root, &e);
    return 0;
}

#endif
