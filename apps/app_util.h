/*
 * app_util.h: what the `tide` subcommands and heat3d share: numbers read from the command line
 * within their ranges, a verdict agreed by every rank, and output files checked before the
 * work and closed with their status checked. Header-only (static inline): heat3d is built from
 * heat3d.c alone, beside the `tide` command's sources.
 */
#ifndef TIDE_APP_UTIL_H
#define TIDE_APP_UTIL_H

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <mpi.h>

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
static inline int app_to_ll(const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || isspace((unsigned char)*s) || *end || errno == ERANGE || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* The same into an int. */
static inline int app_to_int(const char *s, int lo, int hi, int *out)
{
    long long v;
    if (app_to_ll(s, lo, hi, &v))
        return -1;
    *out = (int)v;
    return 0;
}

/* A finite real in (lo, hi] into *out: 0, else -1 (out untouched); nan and inf are refused,
 * as are blanks and trailing characters. */
static inline int app_to_real(const char *s, double lo, double hi, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || isspace((unsigned char)*s) || *end || !isfinite(v) || !(v > lo) ||
        !(v <= hi))
        return -1;
    *out = v;
    return 0;
}

/* s as typed for a message: '' when empty. */
static inline const char *app_shown(const char *s)
{
    return *s ? s : "''";
}

/* Option name's value s (NULL: missing) as a whole number in [lo, hi] into *out: 0, else -1
 * with "name s: expected lo..hi" in err. */
static inline int app_ll_opt(const char *name, const char *s, long long lo, long long hi,
                             long long *out, char *err, size_t len)
{
    if (s && !app_to_ll(s, lo, hi, out))
        return 0;
    snprintf(err, len, "%s %s: expected %lld..%lld", name, s ? app_shown(s) : "needs a value",
             lo, hi);
    return -1;
}

/* The same into an int. */
static inline int app_int_opt(const char *name, const char *s, int lo, int hi, int *out,
                              char *err, size_t len)
{
    long long v;
    if (app_ll_opt(name, s, lo, hi, &v, err, len))
        return -1;
    *out = (int)v;
    return 0;
}

/* The k values after the option at argv[*i] (-grid A B C) as whole numbers in [lo, hi] into
 * v: 0, else -1 with "OPTION V1 V2: expected k whole numbers, each lo..hi" in err; *i moves
 * past them. */
static inline int app_ints_opt(int argc, char **argv, int *i, int k, int lo, int hi, int *v,
                               char *err, size_t len)
{
    int bad = argc - *i - 1 < k;
    for (int d = 0; d < k && !bad; d++)
        bad = app_to_int(argv[*i + 1 + d], lo, hi, &v[d]);
    if (bad) {
        int used = snprintf(err, len, "%s", argv[*i]);
        for (int d = 0; d < k && *i + 1 + d < argc && used >= 0 && (size_t)used < len; d++)
            used += snprintf(err + used, len - (size_t)used, " %s", argv[*i + 1 + d]);
        if (used >= 0 && (size_t)used < len)
            snprintf(err + used, len - (size_t)used, ": expected %d whole numbers, each %d..%d",
                     k, lo, hi);
    }
    *i += k;
    return bad ? -1 : 0;
}

/* Option name's value s (NULL: missing) as a finite real in (lo, hi] into *out (lo -HUGE_VAL,
 * hi HUGE_VAL: unbounded): 0, else -1 with "name s: expected ..." in err. */
static inline int app_real_opt(const char *name, const char *s, double lo, double hi,
                               double *out, char *err, size_t len)
{
    if (s && !app_to_real(s, lo, hi, out))
        return 0;
    char range[96];
    if (isinf(lo) && isinf(hi))
        snprintf(range, sizeof range, "a finite number");
    else if (isinf(hi))
        snprintf(range, sizeof range, "a finite number above %g", lo);
    else
        snprintf(range, sizeof range, "a number above %g, at most %g", lo, hi);
    snprintf(err, len, "%s %s: expected %s", name, s ? app_shown(s) : "needs a value", range);
    return -1;
}

/* Option name's value s (NULL: missing) as one of names[0..count) into *out (its index): 0,
 * else -1 with "name s: expected a, b or c" in err. */
static inline int app_name_opt(const char *name, const char *s, const char *const *names,
                               int count, int *out, char *err, size_t len)
{
    for (int i = 0; s && i < count; i++)
        if (!strcmp(s, names[i])) {
            *out = i;
            return 0;
        }
    int used = snprintf(err, len, "%s %s: expected ", name, s ? app_shown(s) : "needs a value");
    for (int i = 0; i < count && used >= 0 && (size_t)used < len; i++)
        used += snprintf(err + used, len - (size_t)used, "%s%s", names[i],
                         i + 2 < count ? ", " : i + 2 == count ? " or " : "");
    return -1;
}

/* The product of v[0..k) (each >= 1) when it is at most limit, else -1; no overflow. */
static inline long long app_product(const int *v, int k, long long limit)
{
    long long p = 1;
    for (int i = 0; i < k; i++) {
        if (v[i] < 1 || p > limit / v[i])
            return -1;
        p *= v[i];
    }
    return p;
}

/* ---- agreement ------------------------------------------------------------------------------- */

/* Collective: whether any rank is bad (nonzero); msg (len bytes on every rank, NULL: none)
 * becomes the lowest bad rank's message on every rank. */
static inline int app_agree(int bad, char *msg, size_t len)
{
    int P, me, first;
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    me = bad ? me : P;
    MPI_Allreduce(&me, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first == P)
        return 0;
    if (msg)
        MPI_Bcast(msg, (int)len, MPI_CHAR, first, MPI_COMM_WORLD);
    return 1;
}

/* ---- files ----------------------------------------------------------------------------------- */

/* Whether path can be written, checked before the work: an existing file opened for writing
 * (not changed), a new one created and removed. 0, else -1 with "cannot create PATH: the
 * system's reason" in err. */
static inline int app_probe_file(const char *path, char *err, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644), made = fd >= 0;
    if (fd < 0 && errno == EEXIST)
        fd = open(path, O_WRONLY | O_APPEND | O_NONBLOCK);
    if (fd < 0)
        return snprintf(err, len, "cannot create %s: %s", path, strerror(errno)), -1;
    close(fd);
    if (made)
        unlink(path);
    return 0;
}

/* Whether files PREFIX.* can be created, checked before the work by creating and removing a
 * probe file beside them. 0, else -1 with "cannot create files PREFIX.*: the system's reason"
 * in err. */
static inline int app_probe_prefix(const char *prefix, char *err, size_t len)
{
    size_t n = strlen(prefix) + 16;
    char *probe = malloc(n);
    if (!probe)
        return snprintf(err, len, "out of memory"), -1;
    snprintf(probe, n, "%s.probeXXXXXX", prefix);
    int fd = mkstemp(probe);
    if (fd < 0)
        snprintf(err, len, "cannot create files %s.*: %s", prefix, strerror(errno));
    else
        close(fd), unlink(probe);
    free(probe);
    return fd < 0 ? -1 : 0;
}

/* Removes path when it is a regular file (not a device or a pipe an output was sent to): an
 * output that failed is not left half-written. */
static inline void app_discard(const char *path)
{
    struct stat sb;
    if (!lstat(path, &sb) && S_ISREG(sb.st_mode))
        unlink(path);
}

/* Flushes and closes f, written as path, every status checked (a full disk shows at the flush
 * or the close): 0, else -1 with "cannot write PATH: the system's reason" in err and path
 * discarded. */
static inline int app_close_file(FILE *f, const char *path, char *err, size_t len)
{
    errno = 0;
    int bad = fflush(f) != 0 || ferror(f), reason = errno;
    if (fclose(f) && !bad)
        bad = 1, reason = errno;
    if (!bad)
        return 0;
    snprintf(err, len, "cannot write %s: %s", path, reason ? strerror(reason) : "I/O error");
    app_discard(path);
    return -1;
}

/* Flushes stdout, where a program's results go; *failed keeps the errno of the first failure
 * (a full disk, a closed pipe), for a message and exit status 1 at the end. */
static inline void app_flush_out(int *failed)
{
    errno = 0;
    if ((fflush(stdout) || ferror(stdout)) && !*failed)
        *failed = errno ? errno : EIO;
}

#endif
