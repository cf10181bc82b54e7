/*
 * cancel.h — the cancel token's loop side.
 *
 * rein_cancel_t (public, rein.h) is a flag plus an eventfd, so a waiting
 * loop wakes the moment another thread or a signal handler raises it.
 */
#ifndef REIN_BASE_CANCEL_H
#define REIN_BASE_CANCEL_H

#include "rein.h"

/* The eventfd that becomes readable when c is triggered. */
int cancel_fd(const rein_cancel_t *c);

#endif
