/* app_util.c: what the `tide` subcommands and heat3d share (app_util.h). */
#include "app_util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <mpi.h>

/* ---- numbers --------------------------------------------------------------------------------- */

int app_to_ll(const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || isspace((unsigned char)*s) || *end || errno == ERANGE || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int app_to_int(const char *s, int lo, int hi, int *out)
{
    long long v;
    if (app_to_ll(s, lo, hi, &v))
        return -1;
    *out = (int)v;
    return 0;
}

int app_to_real(const char *s, double lo, double hi, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || isspace((unsigned char)*s) || *end || !isfinite(v) || !(v > lo) ||
        !(v <= hi))
        return -1;
    *out = v;
    return 0;
}

const char *app_shown(const char *s)
{
    return *s ? s : "''";
}

int app_ll_opt(const char *name, const char *s, long long lo, long long hi, long long *out,
               char *err, size_t len)
{
    if (s && !app_to_ll(s, lo, hi, out))
        return 0;
    snprintf(err, len, "%s %s: expected %lld..%lld", name, s ? app_shown(s) : "needs a value",
             lo, hi);
    return -1;
}

int app_int_opt(const char *name, const char *s, int lo, int hi, int *out, char *err, size_t len)
{
    long long v;
    if (app_ll_opt(name, s, lo, hi, &v, err, len))
        return -1;
    *out = (int)v;
    return 0;
}

int app_ints_opt(int argc, char **argv, int *i, int k, int lo, int hi, int *v, char *err,
                 size_t len)
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

int app_real_opt(const char *name, const char *s, double lo, double hi, double *out, char *err,
                 size_t len)
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

int app_name_opt(const char *name, const char *s, const char *const *names, int count, int *out,
                 char *err, size_t len)
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

long long app_product(const int *v, int k, long long limit)
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

int app_agree(int bad, char *msg, size_t len)
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

/* ---- maxima that keep a NaN ------------------------------------------------------------------ */

double app_max_nan(double a, double b)
{
    return isnan(a) || a > b ? a : b;
}

double app_max(double x)
{
    double mine[2] = {isnan(x), isnan(x) ? 0 : x}, all[2];
    MPI_Allreduce(mine, all, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return all[0] > 0 ? NAN : all[1];
}

/* ---- files ----------------------------------------------------------------------------------- */

int app_probe_file(const char *path, char *err, size_t len)
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

int app_probe_prefix(const char *prefix, char *err, size_t len)
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

void app_discard(const char *path)
{
    struct stat sb;
    if (!lstat(path, &sb) && S_ISREG(sb.st_mode))
        unlink(path);
}

int app_close_file(FILE *f, const char *path, char *err, size_t len)
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

void app_flush_out(int *failed)
{
    errno = 0;
    if ((fflush(stdout) || ferror(stdout)) && !*failed)
        *failed = errno ? errno : EIO;
}
