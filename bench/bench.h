/*
 * bench.h — the benchmark pieces that live outside bench.c.
 */
#ifndef REIN_BENCH_H
#define REIN_BENCH_H

/* Runs per proxy figure by default. */
#define BENCH_PROXY_RUNS 100

/* The CLI proxy's hazard latency and added wall time, each beside a bare
 * PTY floor; prints its lines.  0, or 1 on failure. */
int bench_proxy(int runs);

/* Runs per serve round-trip figure by default. */
#define BENCH_SERVE_RT_RUNS 200

/* rein serve's round trip, idle RSS with 64 PTY sessions and sustained
 * capture with zero loss, over pipes; prints its lines.  0, or 1 on
 * failure. */
int bench_serve(int quick);

#endif
