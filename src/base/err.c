/*
 * err.c — the one error table.
 *
 * Every function in librein returns 0 or a negative code: -errno for a system
 * error, or a REIN_E* code from REIN_ERROR_MAP in rein.h.  This file turns
 * either kind into a message and a symbolic name, so callers print one thing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rein.h"

const char *rein_strerror(int err)
{
    switch (err) {
#define X(name, value, msg) case value: return msg;
        REIN_ERROR_MAP(X)
#undef X
    default:
        break;
    }
    if (err < 0 && err > -4096)
        return strerror(-err); /* glibc: never NULL, thread-safe for known codes */
    return err == 0 ? "success" : "unknown error";
}

const char *rein_err_name(int err)
{
    switch (err) {
#define X(name, value, msg) case value: return #name;
        REIN_ERROR_MAP(X)
#undef X
    default:
        break;
    }
    if (err < 0 && err > -4096) {
        const char *n = strerrorname_np(-err);
        if (n)
            return n;
    }
    return err == 0 ? "OK" : "EUNKNOWN";
}

void rein_free(void *p)
{
    free(p);
}
