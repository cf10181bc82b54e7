/*
 * sig.h — signal names, the way people and models write them.
 *
 * "TERM", "SIGTERM", "term", "sigterm" and "15" all name SIGTERM; anything
 * else is rejected (never a silent no-op), so a typo cannot turn a kill
 * into nothing.
 */
#ifndef REIN_BASE_SIG_H
#define REIN_BASE_SIG_H

/* Parses name into *signo.  0, or -EINVAL for an unknown name or number. */
int sig_parse(const char *name, int *signo);
/* "SIGTERM" for 15; "SIG?" for an unknown number. */
const char *sig_name(int signo);

#endif
