/* Common definitions of the libsluice public API. */
#ifndef SLUICE_COMMON_H
#define SLUICE_COMMON_H

#if defined(__GNUC__)
#define SL_EXPORT __attribute__((visibility("default")))
#else
#define SL_EXPORT
#endif

#endif
