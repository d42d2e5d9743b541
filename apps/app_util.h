/*
 * app_util.h: what the `tide` subcommands and heat3d share (app_util.c, compiled into both):
 * numbers read from the command line within their ranges, a verdict agreed by every rank,
 * maxima that keep a NaN, output files checked before the work and closed with their status
 * checked.
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

/* Option name's value s (NULL: missing) as a whole number in [lo, hi] into *out: 0, else -1
 * with "name s: expected lo..hi" in err. */
int app_ll_opt(const char *name, const char *s, long long lo, long long hi, long long *out,
               char *err, size_t len);

/* The same into an int. */
int app_int_opt(const char *name, const char *s, int lo, int hi, int *out, char *err, size_t len);

/* The k values after the option at argv[*i] (-grid A B C) as whole numbers in [lo, hi] into
 * v: 0, else -1 with "OPTION V1 V2: expected k whole numbers, each lo..hi" in err; *i moves
 * past them. */
int app_ints_opt(int argc, char **argv, int *i, int k, int lo, int hi, int *v, char *err,
                 size_t len);

/* Option name's value s (NULL: missing) as a finite real in (lo, hi] into *out (lo -HUGE_VAL,
 * hi HUGE_VAL: unbounded): 0, else -1 with "name s: expected ..." in err. */
int app_real_opt(const char *name, const char *s, double lo, double hi, double *out, char *err,
                 size_t len);

/* Option name's value s (NULL: missing) as one of names[0..count) into *out (its index): 0,
 * else -1 with "name s: expected a, b or c" in err. */
int app_name_opt(const char *name, const char *s, const char *const *names, int count, int *out,
                 char *err, size_t len);

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

#endif
