/*
 * app_util.h: what the `tide` subcommands and heat3d share (app_util.c, compiled into both):
 * numbers read from the command line within their ranges, a verdict agreed by every rank,
 * maxima that keep a NaN, output files checked before the work and closed with their status
 * checked, the option tables that parse command lines and make their usage, progress lines,
 * and the check of a run's memory against the node's.
 */
#ifndef TIDE_APP_UTIL_H
#define TIDE_APP_UTIL_H

#include <stddef.h>
#include <stdio.h>

/* ---- ranges ---------------------------------------------------------------------------------- */

/* A grid size or a count of fields: up to 2^30. */
#define APP_SIZE_MAX (1 << 30)
/* The most points of a grid (and multiply-adds of a gemm): their product stays far from a
 * long long's end. */
#define APP_POINTS_MAX (1LL << 62)
/* Steps per pass over memory (-fuse, -levels). */
#define APP_FUSE_MAX 1024
/* Timed runs. */
#define APP_RUNS_MAX 1000000
/* Device memory (-budget), GB: a petabyte, far above any device, so that GB x 1e9 bytes is
 * exact in a size_t. */
#define APP_BUDGET_MAX 1e6

/* ---- numbers --------------------------------------------------------------------------------- */

/* A whole decimal in [lo, hi] into *out: 0, else -1 (out untouched). Nothing else in s: no
 * blanks, no trailing characters; a value past a long long is out of range. */
int app_to_ll(const char *s, long long lo, long long hi, long long *out);

/* The same into an int. */
int app_to_int(const char *s, int lo, int hi, int *out);

/* A finite real in (lo, hi] into *out: 0, else -1 (out untouched); nan and inf are refused,
 * as are blanks and trailing characters. */
int app_to_real(const char *s, double lo, double hi, double *out);

/* s as typed for a message: '' when empty. */
const char *app_shown(const char *s);

/* The product of v[0..k) (each >= 1) when it is at most limit, else -1; no overflow. */
long long app_product(const int *v, int k, long long limit);

/* ---- agreement ------------------------------------------------------------------------------- */

/* Collective: whether any rank is bad (nonzero); msg (len bytes on every rank, NULL: none)
 * becomes the lowest bad rank's message on every rank. */
int app_agree(int bad, char *msg, size_t len);

/* ---- maxima that keep a NaN ------------------------------------------------------------------ */

/* The larger of a and b, NaN when either is NaN (fmax drops a NaN: an error's maximum taken
 * with it would let a NaN result pass). */
double app_max_nan(double a, double b);

/* Collective: the largest x over the ranks, on every rank; NaN when x is NaN on any rank
 * (MPI_MAX need not keep a NaN). */
double app_max(double x);

/* ---- files ----------------------------------------------------------------------------------- */

/* Whether path can be written, checked before the work: an existing file opened for writing
 * (not changed), a new one created and removed. 0, else -1 with "cannot create PATH: the
 * system's reason" in err. */
int app_probe_file(const char *path, char *err, size_t len);

/* Whether files PREFIX.* can be created, checked before the work by creating and removing a
 * probe file beside them. 0, else -1 with "cannot create files PREFIX.*: the system's reason"
 * in err. */
int app_probe_prefix(const char *prefix, char *err, size_t len);

/* Removes path when it is a regular file (not a device or a pipe an output was sent to): an
 * output that failed is not left half-written. */
void app_discard(const char *path);

/* Flushes and closes f, written as path, every status checked (a full disk shows at the flush
 * or the close): 0, else -1 with "cannot write PATH: the system's reason" in err and path
 * discarded. */
int app_close_file(FILE *f, const char *path, char *err, size_t len);

/* Flushes stdout, where a program's results go; *failed keeps the errno of the first failure
 * (a full disk, a closed pipe), for a message and exit status 1 at the end. */
void app_flush_out(int *failed);

/* ---- command lines --------------------------------------------------------------------------- */

/*
 * One table per command: every option (and positional argument) it takes, from which
 * app_parse reads argv and app_usage writes the --help text, so the two never disagree.
 * Options are single-dash words matched exactly (no abbreviations); an option's values are the
 * arguments after it, whatever they start with (-overlap -1). Exit statuses: APP_USAGE (2) for
 * a command line that is wrong wherever it runs, 1 for a run that failed.
 *
 * A parser of our own rather than glibc's getopt_long_only: options here take several values
 * (-h HX HY HZ, -png-slice z 9), are matched exactly (getopt takes abbreviations: -p would be
 * -p2p or -pencils), carry their ranges and help text (getopt has neither, and prints messages
 * of its own), and parse the same on every rank without global state.
 */
typedef enum {
    APP_FLAG,   /* no value: *(int *)dest = count */
    APP_INT,    /* int in [lo, hi] */
    APP_LL,     /* long long in [lo, hi] */
    APP_UINT,   /* unsigned in [lo, hi] */
    APP_REAL,   /* finite double in (lo, hi] (lo -HUGE_VAL: unbounded) */
    APP_REALS,  /* count finite doubles in (lo, hi], count arguments */
    APP_INTS,   /* count ints in [lo, hi], count arguments */
    APP_NAME,   /* one of names[0..count): values[i] (the index i when values is NULL) as int */
    APP_TEXT,   /* any non-empty text: a const char * */
    APP_GRID,   /* a process grid AxB (count 2) or AxBxC (count 3): int[count], each factor
                   1..INT_MAX, their product the run's ranks */
    APP_CUSTOM, /* parse(name, v, dest, err, len) on the count values v (count 0: one): 0,
                   else -1 with the whole message in err */
} app_kind;

typedef struct {
    const char *name;  /* "-steps"; NULL: a positional argument */
    const char *meta;  /* the value in the usage ("S"; a positional's name, "NX"); NULL: a
                          kind APP_NAME shows its names a|b|c */
    app_kind kind;
    void *dest;
    double lo, hi;
    int count;
    const char *const *names;
    const int *values;
    int (*parse)(const char *name, char **v, void *dest, char *err, size_t len);
    int optional;      /* positional: may be left out (and every one after it) */
    int *given;        /* set to 1 when given (NULL: not recorded) */
    const char *help;  /* one paragraph, wrapped by app_usage; NULL: shares the next entry's
                          line and text (-slabs | -pencils) */
} app_opt;

typedef struct {
    const char *name;     /* "tide fft", "heat3d": messages start with it */
    const char *about;    /* paragraphs between the synopsis and the options */
    const char *after;    /* paragraphs after the options (NULL: none) */
    app_opt *opts;
    int nopts;
} app_cmd;

/* The exit status of a usage error. */
#define APP_USAGE 2

/* Every rank the same: reads argv[0..argc) into the table's destinations. 0 parsed; 1 help
 * asked (--help or -help anywhere, -h too unless the table has -h): the usage on stdout; 2 a
 * usage error: on rank 0's stderr "NAME: what was typed, its value, the valid range", then a
 * line "Try 'NAME --help'." */
int app_parse(const app_cmd *cmd, int argc, char **argv);

/* Rank 0: the usage on f: the synopsis made from the positional arguments, about, the options
 * with their help, after, and the exit statuses. */
void app_usage(const app_cmd *cmd, FILE *f);

/* Rank 0, for a usage error found after app_parse (an inconsistent combination): the message
 * (printf format, no newline) after "NAME: ", then the --help hint. Returns APP_USAGE. */
int app_usage_error(const char *name, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The paragraph on exit statuses every --help ends with. */
#define APP_EXIT_TEXT                                                                              \
    "Exit status: 0 success; 1 a run that failed (an error on any rank, a failed check, a GPU\n"   \
    "or memory the machine lacks, an output that could not be written); 2 a usage error (an\n"    \
    "unknown option, a missing or malformed value, a value out of range or one the library\n"     \
    "refuses), found before the work on every rank alike.\n"

/* ---- progress -------------------------------------------------------------------------------- */

/* Progress of a long phase on rank 0's stderr: a bar updated in place on a terminal, else a
 * line "NAME: WHAT 40% (4/10), 12 s, about 18 s left" every `every` seconds; nothing during the
 * first `every` seconds (short runs stay quiet) or when every is 0. */
typedef struct {
    const char *name, *what;
    double every, start, last;
    long long total;
    int on, tty, shown;
} app_progress;

/* The default seconds between lines, and the most -progress takes. */
#define APP_PROGRESS_EVERY 5.0
#define APP_PROGRESS_MAX 86400.0

/* An app_opt parse (APP_CUSTOM) for -progress: seconds from 0 to APP_PROGRESS_MAX into a
 * double. */
int app_parse_seconds(const char *name, char **v, void *dest, char *err, size_t len);

void app_progress_begin(app_progress *p, const char *name, const char *what, long long total,
                        double every);
void app_progress_step(app_progress *p, long long done);
void app_progress_end(app_progress *p);

/* ---- memory ---------------------------------------------------------------------------------- */

/* This node's memory a process may still take: /proc/meminfo's MemAvailable, else the physical
 * memory (sysconf). 0 when neither is known. */
double app_node_memory(void);

/* Collective: whether the bytes each rank is about to allocate fit its node, all ranks of the
 * node counted: 0, else 1 with why printed by rank 0 ("NAME: needs ..."). */
int app_memory_check(const char *name, double bytes);

/* The name of an exchange backend (tide_exchange): none (AUTO, no exchange), a2av, p2p, nccl,
 * cuda-mpi, direct. */
const char *app_exchange_name(int x);

#endif
