/*
 * kill.c — `rein kill ID [--signal S] [--grace-ms N]` and `rein reconcile`.
 *
 * An operator's hand on a run some rein process owns.  rein kill never asks
 * the owner (it may be busy, stuck or gone); it ends the run itself, but only
 * through the identity the registry recorded: the boot id, the leader's pid
 * and start time, the run's own cgroups and its remembered descendants, each
 * verified before a signal goes out.  The owner then sees its child die and
 * finalizes the record as usual.  A run whose owner is dead is left to
 * reconciliation, which this verb runs.
 *
 * Strays (orphans an owner adopted as a subreaper that no run of it could
 * claim) are no run's, so rein kill of a live owner's run never touches
 * them: they might be another run's daemon.  Its owner ends them at its
 * close; once the owner is dead, reconciliation does (rein kill of such a
 * run, or rein reconcile), since every run of that owner is over by then.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/procfs.h"
#include "base/ptree.h"
#include "base/sig.h"
#include "cli/watchman.h"
#include "cli/cli.h"
#include "rein.h"
#include "supervise/contain.h"
#include "supervise/registry.h"

/* How often the end of a killed run is checked: these are not our children,
 * so there is no exit event to wait on. */
#define KILL_POLL_MS 20

static int64_t kill_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct target {
    ptree_t tree;
    contain_run_t *cr;
    /* The leader's group, read while the leader was alive, and kept while
     * it has been seen alive at every look since; else 0. */
    pid_t pgid;
};

/*
 * Whether anything of the target lives.  The kernel keeps a group's number
 * while any process is in the group; once the group has been seen empty
 * the number is free, and a group of that number found later may be
 * someone else's, so it is dropped then.  The looks are KILL_POLL_MS
 * apart, far too short a time for the pid numbers to come round again.
 */
static bool target_alive(struct target *t)
{
    if (t->pgid > 1 && !ptree_group_alive(t->pgid))
        t->pgid = 0;
    return ptree_count_alive(&t->tree) > 0 || t->pgid > 1 ||
           (t->cr && contain_run_populated(t->cr));
}

/* signo to the target, each process once (see ptree_pass_t): the group
 * first, then the cgroup and the tree. */
static void target_signal(struct target *t, int signo)
{
    ptree_pass_t p;
    ptree_pass_begin(&p, signo, t->pgid > 1 ? t->pgid : 0);
    if (t->cr) {
        if (signo == SIGKILL)
            contain_run_kill(t->cr);
        else
            contain_run_signal(t->cr, &p);
    }
    ptree_pass_tree(&p, &t->tree);
    ptree_pass_end(&p);
}

static bool target_wait(struct target *t, int64_t ms)
{
    int64_t end = kill_now_ms() + ms;
    while (target_alive(t)) {
        if (kill_now_ms() >= end)
            return false;
        poll(NULL, 0, KILL_POLL_MS);
    }
    return true;
}

static int kill_usage(const char *why)
{
    fprintf(stderr, "rein kill: %s (usage: rein kill ID [--signal S] "
                    "[--grace-ms N])\n",
            why);
    return CLI_EXIT_USAGE;
}

int cli_reconcile_state(const char *verb, const char *state_dir,
                        rein_reconcile_stats_t *st)
{
    rein_sup_t *s = NULL;
    char why[512] = "";
    rein_sup_opts_t so = {.state_dir = state_dir, .no_reconcile = true,
                          .errmsg = why, .errlen = sizeof why};
    int rc = rein_sup_open(&so, &s);
    if (rc < 0 && !why[0] && !state_dir) {
        /* The default state directory fails without a message: by name.
         * Its lookup fills in the path before it creates the directory. */
        char dir[PATH_MAX] = "";
        int drc = registry_state_dir(dir, sizeof dir);
        if (drc < 0) {
            cli_state_dir_error(verb, drc == -ENAMETOOLONG ? NULL : dir, drc);
            return CLI_EXIT_FAILURE;
        }
    }
    if (rc == 0)
        rc = rein_sup_reconcile(s, st);
    rein_sup_close(s);
    if (rc < 0) {
        fprintf(stderr, "rein %s: %s\n", verb,
                why[0] ? why : rein_strerror(rc));
        return CLI_EXIT_FAILURE;
    }
    return CLI_EXIT_OK;
}

/* Ends run rec of a dead owner by reconciling, then reports how the
 * registry now says it ended: reconcile decides from the same evidence
 * as rein ps, but the run is only over once its record says so. */
static int kill_orphaned(const run_record_t *rec)
{
    rein_reconcile_stats_t st;
    int rc = cli_reconcile_state("kill", NULL, &st);
    if (rc != CLI_EXIT_OK)
        return rc;
    registry_t *reg;
    run_record_t now;
    if ((rc = cli_registry_open("kill", &reg)) != CLI_EXIT_OK)
        return rc;
    rc = registry_run_get(reg, rec->id, &now);
    registry_close(reg);
    if (rc < 0 || now.state != REIN_RUN_EXITED) {
        fprintf(stderr, "rein kill: run %lld: its owner is gone, but no "
                        "end is recorded after reconciling (%s)\n",
                (long long)rec->id,
                rc < 0 ? rein_strerror(rc)
                       : "another rein may be ending it: see rein ps --all");
        if (rc == 0)
            run_record_clear(&now);
        return CLI_EXIT_FAILURE;
    }
    printf("run %lld: its owner is gone; reconciled: %s (%zu orphaned runs "
           "ended, %zu lost; %zu strays ended)\n",
           (long long)rec->id, rein_reason_name((rein_reason_t)now.reason),
           st.orphans_reaped, st.lost, st.strays_reaped);
    run_record_clear(&now);
    return CLI_EXIT_OK;
}

/*
 * A live owner's `starting` run has a row but no process on record yet:
 * its owner writes them in the commit after the spawn.  Waits for that
 * (CLI_KILL_STARTING_WAIT_MS at most), re-reading *rec, until the run is
 * recorded past `starting` or its owner is no longer alive (reconcile's
 * then).  CLI_EXIT_OK to go on with *rec; else the exit status, the
 * reason printed.
 */
static int kill_await_start(registry_t *reg, run_record_t *rec)
{
    int64_t id = rec->id, end = kill_now_ms() + CLI_KILL_STARTING_WAIT_MS;
    bool said = false;
    cli_owner_t owner = CLI_OWNER_ALIVE;
    while (rec->state == REIN_RUN_STARTING &&
           (owner = cli_owner_check(reg, rec->owner)) == CLI_OWNER_ALIVE) {
        if (kill_now_ms() >= end) {
            fprintf(stderr, "rein kill: run %lld is still starting after "
                            "%d ms: its owner has recorded no process of "
                            "it, and nothing was signalled (see rein ps)\n",
                    (long long)id, CLI_KILL_STARTING_WAIT_MS);
            return CLI_EXIT_FAILURE;
        }
        if (!said) {
            fprintf(stderr, "rein kill: run %lld is starting; waiting for "
                            "its owner to record its process\n",
                    (long long)id);
            said = true;
        }
        poll(NULL, 0, KILL_POLL_MS);
        run_record_clear(rec);
        int rc = registry_run_get(reg, id, rec);
        if (rc < 0) {
            run_record_init(rec);
            fprintf(stderr, "rein kill: %s\n", registry_errmsg(reg));
            return CLI_EXIT_FAILURE;
        }
    }
    /* No owner on record (its row gone or unreadable): neither it nor
     * reconcile will ever say more, and the row names no process. */
    if (rec->state == REIN_RUN_STARTING && owner == CLI_OWNER_UNKNOWN) {
        fprintf(stderr, "rein kill: run %lld is recorded starting, by an "
                        "owner the registry does not know: it names no "
                        "process, and nothing was signalled\n",
                (long long)id);
        return CLI_EXIT_FAILURE;
    }
    return CLI_EXIT_OK;
}

int cli_kill(int argc, char **argv)
{
    int64_t id = 0;
    int signo = SIGTERM;
    long grace = REIN_SUP_GRACE_MS;
    const char *id_arg = NULL;
    for (int i = 1; i < argc; i++) {
        if ((!strcmp(argv[i], "--signal") || !strcmp(argv[i], "-s")) &&
            i + 1 < argc) {
            if (sig_parse(argv[++i], &signo) < 0) {
                fprintf(stderr, "rein kill: unknown signal '%s'\n", argv[i]);
                return CLI_EXIT_USAGE;
            }
        } else if (!strcmp(argv[i], "--grace-ms") && i + 1 < argc) {
            char *end;
            grace = strtol(argv[++i], &end, 10);
            if (!*argv[i] || *end || grace < 0 || grace > INT32_MAX) {
                fprintf(stderr, "rein kill: --grace-ms takes a number of "
                                "milliseconds, not '%s'\n",
                        argv[i]);
                return CLI_EXIT_USAGE;
            }
        } else if (argv[i][0] == '-') {
            /* Here with a value missing, or an option we do not know. */
            bool known = !strcmp(argv[i], "--signal") ||
                         !strcmp(argv[i], "-s") ||
                         !strcmp(argv[i], "--grace-ms");
            char why[128];
            snprintf(why, sizeof why, known ? "%s needs a value"
                                             : "unknown option '%s'",
                     argv[i]);
            return kill_usage(why);
        } else if (!id_arg) {
            id_arg = argv[i];
        } else {
            return kill_usage("one run id only");
        }
    }
    if (!id_arg)
        return kill_usage("which run?");
    if (!cli_parse_run_id(id_arg, &id)) {
        fprintf(stderr, "rein kill: '%s' is not a run id\n", id_arg);
        return CLI_EXIT_USAGE;
    }

    registry_t *reg;
    int rc = cli_registry_open("kill", &reg);
    if (rc != CLI_EXIT_OK)
        return rc;
    run_record_t rec;
    rc = registry_run_get(reg, id, &rec);
    if (rc == -ENOENT) {
        registry_close(reg);
        fprintf(stderr, "rein kill: no run with id %lld\n", (long long)id);
        return CLI_EXIT_USAGE;
    }
    if (rc < 0) {
        fprintf(stderr, "rein kill: %s\n", registry_errmsg(reg));
        registry_close(reg);
        return CLI_EXIT_FAILURE;
    }
    int status = CLI_EXIT_OK;
    char boot[PROCFS_BOOT_ID_LEN];
    if (rec.state == REIN_RUN_STARTING &&
        (rc = kill_await_start(reg, &rec)) != CLI_EXIT_OK) {
        status = rc;
        goto out;
    }
    if (rec.state == REIN_RUN_EXITED) {
        printf("run %lld had already exited (%s)\n", (long long)id,
               rein_reason_name((rein_reason_t)rec.reason));
        goto out;
    }
    if (cli_owner_check(reg, rec.owner) == CLI_OWNER_GONE) {
        /* A dead owner's runs are reconciliation's: it steals them
         * atomically first, so two operators never both kill. */
        registry_close(reg);
        reg = NULL;
        status = kill_orphaned(&rec);
        goto out;
    }

    if (procfs_boot_id(boot) < 0 || strcmp(boot, rec.boot_id) != 0) {
        printf("run %lld is from another boot: nothing of it can be "
               "running; `rein reconcile` records it lost\n",
               (long long)id);
        goto out;
    }
    struct target t = {{NULL, 0}, NULL, 0};
    contain_t *c = NULL;
    uint64_t start;
    bool leader = procfs_start_time(rec.pid, &start) == 0 &&
                  start == rec.start_time;
    if (leader) {
        ptree_capture_pinned(rec.pid, &t.tree);
        t.pgid = rec.pgid; /* pinned by the live leader */
    }
    ptree_t desc;
    if (registry_descendants(reg, id, &desc) == 0) {
        ptree_merge(&t.tree, &desc);
        ptree_free(&desc);
    }
    if ((rec.cgroup || rec.pids_cgroup) && contain_open(NULL, &c) == 0)
        contain_run_attach(c, rec.id, rec.cgroup, rec.pids_cgroup, &t.cr);
    if (!target_alive(&t)) {
        printf("run %lld (pid %d): nothing of it is alive any more\n",
               (long long)id, (int)rec.pid);
    } else {
        target_signal(&t, signo);
        if (signo != SIGKILL && signo != SIGCONT)
            target_signal(&t, SIGCONT); /* a stopped run must see it */
        bool gone = target_wait(&t, grace);
        bool escalated = false;
        /* The wait looked at the group last KILL_POLL_MS ago at most. */
        if (!gone && signo != SIGKILL) {
            escalated = true;
            target_signal(&t, SIGKILL);
            gone = target_wait(&t, REIN_SUP_KILL_BOUND_MS);
        }
        printf("run %lld (pid %d): %s%s%s\n", (long long)id, (int)rec.pid,
               sig_name(signo),
               escalated ? ", then SIGKILL after the grace" : "",
               gone ? "" : "; some processes survive (see rein ps)");
        if (!gone)
            status = CLI_EXIT_FAILURE;
    }
    /* Removes the run's cgroups only if they are empty: the run is over
     * then, and the owner's own removal later finds nothing to do. */
    contain_run_free(t.cr);
    contain_free(c);
    ptree_free(&t.tree);
out:
    run_record_clear(&rec);
    registry_close(reg);
    return status;
}

int cli_reconcile(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--watch"))
        return watchman_main(argc, argv); /* rein serve's watchman */
    if (argc > 1) {
        fprintf(stderr, "rein reconcile: unexpected argument '%s' (usage: "
                        "rein reconcile)\n",
                argv[1]);
        return CLI_EXIT_USAGE;
    }
    rein_reconcile_stats_t st;
    int rc = cli_reconcile_state("reconcile", NULL, &st);
    if (rc != CLI_EXIT_OK)
        return rc;
    printf("owners dead %zu, alive %zu; runs stolen %zu; orphans ended %zu; "
           "lost %zu; strays ended %zu, lost %zu\n",
           st.owners_dead, st.skipped_alive, st.runs_stolen,
           st.orphans_reaped, st.lost, st.strays_reaped, st.strays_lost);
    return CLI_EXIT_OK;
}
