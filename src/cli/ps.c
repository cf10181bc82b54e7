/*
 * ps.c — `rein ps [--json] [--all]`: the runs of every owner.
 *
 * Reads the registry, so it shows what rein has recorded, across every rein
 * process sharing the state directory.  A run's record is only as true as
 * its owner is alive: an owner killed before its last write (SIGKILL, a
 * full disk) leaves it `running` for ever, so each owner of a run not yet
 * exited is checked (cli_owner_check: its process by pid and start time,
 * its lock), and such a run is shown as orphaned, with the verb that ends
 * it.  ps never touches a process.  The table is for people; --json is for
 * tools, with the fields docs/cli.md lists.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/loop.h"
#include "cli/cli.h"
#include "rein.h"

/* The owner column shows this many hex digits of the owner id. */
#define PS_OWNER_SHORT 8
/* Commands longer than this are cut in the table (never in --json). */
#define PS_COMMAND_MAX 60
/* Room for the longest state column entry, "exited (manual-cancel;
 * background ended, 4294967295 hung up; 18446744073709551615 survived
 * cleanup)" (ps_state). */
#define PS_STATE_LEN 128
/* Room for a duration like "23h". */
#define PS_DURATION_LEN 24
#define PS_MS_PER_S 1000
#define PS_S_PER_MIN 60
#define PS_S_PER_HOUR 3600
#define PS_S_PER_DAY 86400

/* A duration as its largest unit ("42s", "5m", "3h", "2d"); "-" when the
 * moment is unknown (0). */
static void ps_duration(char *out, size_t size, int64_t now, int64_t then)
{
    if (then <= 0) {
        snprintf(out, size, "-");
        return;
    }
    int64_t s = now > then ? (now - then) / PS_MS_PER_S : 0;
    if (s < PS_S_PER_MIN)
        snprintf(out, size, "%" PRId64 "s", s);
    else if (s < PS_S_PER_HOUR)
        snprintf(out, size, "%" PRId64 "m", s / PS_S_PER_MIN);
    else if (s < PS_S_PER_DAY)
        snprintf(out, size, "%" PRId64 "h", s / PS_S_PER_HOUR);
    else
        snprintf(out, size, "%" PRId64 "d", s / PS_S_PER_DAY);
}

/* What ps knows of one owner, checked once per ps. */
struct ps_owner {
    char id[REGISTRY_OWNER_ID_LEN];
    cli_owner_t live;
};

/* The owners of the runs not yet exited, each checked once (an exited run
 * needs no owner, and --all may list thousands of them). */
struct ps_owners {
    struct ps_owner *v;
    size_t n;
};

/* The owner of r, checked on first sight; NULL when out of memory. */
static const struct ps_owner *ps_owner_of(registry_t *reg,
                                          struct ps_owners *os,
                                          const run_record_t *r)
{
    for (size_t i = 0; i < os->n; i++)
        if (!strcmp(os->v[i].id, r->owner))
            return &os->v[i];
    struct ps_owner *v = realloc(os->v, (os->n + 1) * sizeof *v);
    if (!v)
        return NULL;
    os->v = v;
    struct ps_owner *o = &v[os->n++];
    memcpy(o->id, r->owner, sizeof o->id);
    o->live = cli_owner_check(reg, r->owner);
    return o;
}

/* True when r is not exited but its owner is gone: its record will not
 * change again until reconciliation ends it. */
static bool ps_orphaned(registry_t *reg, struct ps_owners *os,
                        const run_record_t *r)
{
    if (r->state == RUN_EXITED)
        return false;
    const struct ps_owner *o = ps_owner_of(reg, os, r);
    return o && o->live == CLI_OWNER_GONE;
}

/* How many pids a survivors list ("pid,pid,...") names. */
static size_t ps_count_survivors(const char *s)
{
    size_t n = s && *s ? 1 : 0;
    for (; s && *s; s++)
        n += *s == ',';
    return n;
}

/* The state column: the state; for an exited run, how it ended, then
 * what became of the processes it left running: "exited (exit 0;
 * background ended, 2 hung up)" (rein ended them; the terminal's hangup
 * killed two), "; 1 survived cleanup" (cleanup_incomplete). */
static void ps_state(char *out, size_t size, const run_record_t *r,
                     bool orphaned)
{
    if (orphaned) {
        snprintf(out, size, "orphaned");
        return;
    }
    if (r->state != RUN_EXITED) {
        snprintf(out, size, "%s", registry_state_name(r->state));
        return;
    }
    buf_t b = BUF_INIT;
    if (r->reason == RUN_REASON_EXIT && r->exit_code >= 0)
        buf_printf(&b, "exit %d", r->exit_code);
    else if (r->reason == RUN_REASON_SIGNAL && r->signal > 0)
        buf_printf(&b, "signal %d", r->signal);
    else if (r->reason != RUN_REASON_NONE)
        buf_printf(&b, "%s", registry_reason_name(r->reason));
    if (r->background_ended || r->background_hung_up)
        buf_printf(&b, "%sbackground", b.len ? "; " : "");
    if (r->background_ended)
        buf_printf(&b, " ended%s", r->background_hung_up ? "," : "");
    else if (r->background_hung_up)
        buf_printf(&b, ":");
    if (r->background_hung_up)
        buf_printf(&b, " %" PRIu32 " hung up", r->background_hung_up);
    size_t left = r->cleanup_incomplete ? ps_count_survivors(r->survivors)
                                        : 0;
    if (left)
        buf_printf(&b, "%s%zu survived cleanup", b.len ? "; " : "", left);
    else if (r->cleanup_incomplete)
        buf_printf(&b, "%scleanup incomplete", b.len ? "; " : "");
    if (b.len)
        snprintf(out, size, "exited (%s)", b.p);
    else
        snprintf(out, size, "exited");
    buf_free(&b);
}

/* The command on one line: control characters become spaces, and a long
 * one is cut with "...". */
static void ps_command(buf_t *b, const char *cmd)
{
    buf_reset(b);
    if (!cmd)
        cmd = "";
    size_t n = strlen(cmd);
    bool cut = n > PS_COMMAND_MAX;
    if (cut)
        n = PS_COMMAND_MAX - 3;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)cmd[i];
        buf_append_byte(b, c < 0x20 || c == 0x7f ? ' ' : c);
    }
    if (cut)
        buf_append_str(b, "...");
}

static int ps_table(registry_t *reg, run_record_t *runs, size_t n)
{
    int64_t now = loop_wall_ms();
    buf_t cmd = BUF_INIT;
    struct ps_owners os = {NULL, 0};
    bool *orphaned = calloc(n ? n : 1, sizeof *orphaned);
    size_t n_orphaned = 0;
    if (!orphaned) {
        fprintf(stderr, "rein ps: out of memory\n");
        return CLI_EXIT_FAILURE;
    }
    /* The state column is as wide as its widest entry, so every column
     * after it lines up ("exited (no-output-timeout)" is 26 wide). */
    int sw = (int)strlen("STATE");
    for (size_t i = 0; i < n; i++) {
        char state[PS_STATE_LEN];
        orphaned[i] = ps_orphaned(reg, &os, &runs[i]);
        n_orphaned += orphaned[i];
        ps_state(state, sizeof state, &runs[i], orphaned[i]);
        if ((int)strlen(state) > sw)
            sw = (int)strlen(state);
    }
    printf("%-6s %-8s %-*s %-7s %-9s %-4s %-4s %s\n", "ID", "OWNER", sw,
           "STATE", "PID", "CONTAIN", "AGE", "OUT", "COMMAND");
    for (size_t i = 0; i < n; i++) {
        const run_record_t *r = &runs[i];
        char state[PS_STATE_LEN], age[PS_DURATION_LEN], out[PS_DURATION_LEN];
        ps_state(state, sizeof state, r, orphaned[i]);
        ps_duration(age, sizeof age, now, r->created_ms);
        ps_duration(out, sizeof out, now, r->last_output_ms);
        ps_command(&cmd, r->command);
        printf("%-6" PRId64 " %-8.*s %-*s %-7d %-9s %-4s %-4s %s\n", r->id,
               PS_OWNER_SHORT, r->owner, sw, state, (int)r->pid,
               r->containment[0] ? r->containment : "-", age, out,
               cmd.p ? cmd.p : "");
    }
    buf_free(&cmd);
    free(orphaned);
    free(os.v);
    int st = fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
    /* On stderr, so the table stays one line per run for scripts. */
    if (n_orphaned)
        fprintf(stderr,
                "rein ps: an orphaned run's rein process is gone and will "
                "not record its end; `rein reconcile` ends it\n");
    return st;
}

/* A string field, or null. */
static json_t *ps_str(const char *s)
{
    return s ? json_string(s) : json_null();
}

/* "A,B,C" as ["A","B","C"]; null when unknown. */
static json_t *ps_names(const char *s)
{
    if (!s)
        return json_null();
    json_t *a = json_array();
    while (a && *s) {
        size_t n = strcspn(s, ",");
        if (n)
            json_array_append_new(a, json_stringn(s, n));
        s += n + (s[n] == ',');
    }
    return a;
}

/* The owner's lease expiry, looked up once per owner: null when the owner
 * has no record (any more). */
static json_t *ps_lease(registry_t *reg, const char *owner, char *last_owner,
                        int64_t *last_lease, bool *last_found)
{
    if (strcmp(owner, last_owner) != 0) {
        owner_record_t o;
        *last_found = registry_owner_get(reg, owner, &o) == 0;
        *last_lease = *last_found ? o.lease_expires_ms : 0;
        if (*last_found)
            owner_record_clear(&o);
        snprintf(last_owner, REGISTRY_OWNER_ID_LEN, "%s", owner);
    }
    return *last_found ? json_integer(*last_lease) : json_null();
}

static int ps_json(registry_t *reg, run_record_t *runs, size_t n)
{
    int64_t now = loop_wall_ms();
    char last_owner[REGISTRY_OWNER_ID_LEN] = "";
    int64_t last_lease = 0;
    bool last_found = false;
    struct ps_owners os = {NULL, 0};
    json_t *arr = json_array();
    if (!arr)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        const run_record_t *r = &runs[i];
        json_t *o = json_object();
        if (!o || json_array_append_new(arr, o) < 0)
            goto fail;
        /* One id space: the run id is the session id tools show. */
        json_object_set_new(o, "id", json_integer(r->id));
        json_object_set_new(o, "session_id", json_integer(r->id));
        json_object_set_new(o, "owner", json_string(r->owner));
        json_object_set_new(o, "lease_expires_ms",
                            ps_lease(reg, r->owner, last_owner, &last_lease,
                                     &last_found));
        json_object_set_new(o, "state",
                            json_string(registry_state_name(r->state)));
        json_object_set_new(o, "orphaned",
                            json_boolean(ps_orphaned(reg, &os, r)));
        json_object_set_new(o, "reason",
                            r->reason ? json_string(registry_reason_name(
                                            r->reason))
                                      : json_null());
        json_object_set_new(o, "exit_code", r->exit_code >= 0
                                                ? json_integer(r->exit_code)
                                                : json_null());
        json_object_set_new(o, "signal", r->signal > 0
                                             ? json_integer(r->signal)
                                             : json_null());
        json_object_set_new(o, "pid", json_integer(r->pid));
        json_object_set_new(o, "start_time",
                            json_integer((json_int_t)r->start_time));
        json_object_set_new(o, "pgid", json_integer(r->pgid));
        json_object_set_new(o, "sid", json_integer(r->sid));
        json_object_set_new(o, "boot_id", json_string(r->boot_id));
        json_object_set_new(o, "cgroup", ps_str(r->cgroup));
        json_object_set_new(o, "containment", json_string(r->containment));
        json_object_set_new(o, "tty", json_boolean(r->tty));
        json_object_set_new(o, "cleanup_incomplete",
                            json_boolean(r->cleanup_incomplete));
        json_object_set_new(o, "survivors", ps_str(r->survivors));
        json_object_set_new(o, "background_ended",
                            json_boolean(r->background_ended));
        json_object_set_new(o, "background_hung_up",
                            json_integer(r->background_hung_up));
        json_object_set_new(o, "created_ms", json_integer(r->created_ms));
        json_object_set_new(o, "started_ms", json_integer(r->started_ms));
        json_object_set_new(o, "ended_ms", json_integer(r->ended_ms));
        json_object_set_new(o, "last_output_ms",
                            json_integer(r->last_output_ms));
        json_object_set_new(o, "updated_ms", json_integer(r->updated_ms));
        json_object_set_new(o, "age_ms", json_integer(now - r->created_ms));
        json_object_set_new(o, "bytes", json_integer((json_int_t)r->bytes));
        json_object_set_new(o, "command", ps_str(r->command));
        json_object_set_new(o, "cwd", ps_str(r->cwd));
        json_object_set_new(o, "log_path", ps_str(r->log_path));
        json_object_set_new(o, "env_names", ps_names(r->env_names));
    }
    if (json_dumpf(arr, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0)
        goto fail;
    json_decref(arr);
    free(os.v);
    putchar('\n');
    return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
fail:
    json_decref(arr);
    free(os.v);
    fprintf(stderr, "rein ps: out of memory\n");
    return CLI_EXIT_FAILURE;
}

int cli_ps(int argc, char **argv)
{
    bool json = false, all = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            json = true;
        } else if (!strcmp(argv[i], "--all")) {
            all = true;
        } else {
            fprintf(stderr,
                    "rein ps: unknown option '%s' (usage: rein ps [--json] "
                    "[--all])\n",
                    argv[i]);
            return CLI_EXIT_USAGE;
        }
    }
    registry_t *reg;
    int st = cli_registry_open("ps", &reg);
    if (st != CLI_EXIT_OK)
        return st;
    run_record_t *runs;
    size_t n;
    int rc = registry_run_list(reg, all, &runs, &n);
    if (rc < 0) {
        fprintf(stderr, "rein ps: %s\n", registry_errmsg(reg));
        registry_close(reg);
        return CLI_EXIT_FAILURE;
    }
    st = json ? ps_json(reg, runs, n) : ps_table(reg, runs, n);
    run_record_list_free(runs, n);
    registry_close(reg);
    return st;
}
