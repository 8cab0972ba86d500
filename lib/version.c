/* sl_version(): the running library's version (sluice/version.h). */
#include "sluice/version.h"

const char *sl_version(void)
{
    return SLUICE_VERSION;
}
