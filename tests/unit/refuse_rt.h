/* A runtime for tests whose sessions must never reach it (every session is
 * handed off, or refused before it starts): each call fails its session. */
#ifndef SLUICE_TEST_REFUSE_RT_H
#define SLUICE_TEST_REFUSE_RT_H

#include "sluice/runtime.h"

extern const sl_runtime_ops refuse_rt_ops;

#endif
