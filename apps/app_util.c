/* app_util.c: what the `tide` subcommands and heat3d share (app_util.h). */
#include "app_util.h"

#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
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

/* Option name's value s (NULL: missing) as a whole number in [lo, hi], or a finite real in
 * (lo, hi] (lo -HUGE_VAL, hi HUGE_VAL: unbounded), into *out: 0, else -1 with "name s:
 * expected RANGE" in err. */
static int ll_opt(const char *name, const char *s, long long lo, long long hi, long long *out,
                  char *err, size_t len)
{
    if (s && !app_to_ll(s, lo, hi, out))
        return 0;
    snprintf(err, len, "%s %s: expected %lld..%lld", name, s ? app_shown(s) : "needs a value",
             lo, hi);
    return -1;
}

static int int_opt(const char *name, const char *s, int lo, int hi, int *out, char *err,
                   size_t len)
{
    long long v;
    if (ll_opt(name, s, lo, hi, &v, err, len))
        return -1;
    *out = (int)v;
    return 0;
}

static int real_opt(const char *name, const char *s, double lo, double hi, double *out,
                    char *err, size_t len)
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

/* ---- command lines --------------------------------------------------------------------------- */

static int is_rank0(void)
{
    int rank = 0, init = 0;
    MPI_Initialized(&init);
    if (init)
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank == 0;
}

/* Whether s is an option's name rather than a value: a dash and a letter (-5 and -.5 are
 * values). */
static int looks_like_option(const char *s)
{
    return s[0] == '-' && (isalpha((unsigned char)s[1]) || s[1] == '-');
}

/* The arguments the option takes after its name. */
static int opt_nargs(const app_opt *o)
{
    if (o->kind == APP_FLAG)
        return 0;
    if (o->kind == APP_CUSTOM)
        return o->count > 1 ? o->count : 1;
    return o->kind == APP_REALS || o->kind == APP_INTS ? o->count : 1;
}

/* "a, b or c" of names. */
static void names_text(const app_opt *o, char *buf, size_t len)
{
    int used = 0;
    buf[0] = 0;
    for (int i = 0; i < o->count && used >= 0 && (size_t)used < len; i++)
        used += snprintf(buf + used, len - (size_t)used, "%s%s", o->names[i],
                         i + 2 < o->count ? ", " : i + 2 == o->count ? " or " : "");
}

/* The option's label in messages: its name, or a positional's meta. */
static const char *opt_label(const app_opt *o)
{
    return o->name ? o->name : o->meta;
}

/* Reads a process grid "AxBxC" (count factors) into g: 0, else -1 with why in err. */
static int parse_grid(const app_opt *o, const char *s, int *g, char *err, size_t len)
{
    static const char *const forms[] = {"", "A", "AxB", "AxBxC"};
    const char *p = s;
    int bad = 0;
    for (int d = 0; d < o->count && !bad; d++) {
        size_t n = strcspn(p, "x");
        char f[24] = "";
        bad = !n || n >= sizeof f || (d + 1 < o->count) != (p[n] == 'x');
        if (!bad) {
            memcpy(f, p, n);
            bad = app_to_int(f, 1, INT_MAX, &g[d]);
        }
        p += n + (p[n] == 'x');
    }
    if (bad)
        return snprintf(err, len, "%s %s: expected %s, each factor 1..%d", o->name, app_shown(s),
                        o->meta ? o->meta : forms[o->count], INT_MAX), -1;
    int P = 1, init = 0;
    MPI_Initialized(&init);
    if (init)
        MPI_Comm_size(MPI_COMM_WORLD, &P);
    long long ranks = app_product(g, o->count, LLONG_MAX);
    if (ranks == P)
        return 0;
    if (ranks < 0)
        snprintf(err, len, "%s %s has more than %lld ranks, the run has %d", o->name, s,
                 LLONG_MAX, P);
    else
        snprintf(err, len, "%s %s has %lld ranks, the run has %d", o->name, s, ranks, P);
    return -1;
}

/* Reads the values v[0..opt_nargs(o)) of o (v NULL: missing) into its destination: 0, else -1
 * with "LABEL VALUE: expected RANGE" in err. */
static int take(const app_opt *o, char **v, char *err, size_t len)
{
    const char *label = opt_label(o), *s = v ? v[0] : NULL;
    char names[256];
    switch (o->kind) {
    case APP_FLAG:
        *(int *)o->dest = o->count;
        return 0;
    case APP_INT:
        return int_opt(label, s, (int)o->lo, (int)o->hi, o->dest, err, len);
    case APP_LL:
        return ll_opt(label, s, (long long)o->lo, (long long)o->hi, o->dest, err, len);
    case APP_UINT: {
        long long x;
        if (ll_opt(label, s, (long long)o->lo, (long long)o->hi, &x, err, len))
            return -1;
        *(unsigned *)o->dest = (unsigned)x;
        return 0;
    }
    case APP_REAL:
        return real_opt(label, s, o->lo, o->hi, o->dest, err, len);
    case APP_REALS:
    case APP_INTS: {
        int bad = !v;
        for (int i = 0; i < o->count && !bad; i++)
            bad = o->kind == APP_REALS
                      ? app_to_real(v[i], o->lo, o->hi, (double *)o->dest + i)
                      : app_to_int(v[i], (int)o->lo, (int)o->hi, (int *)o->dest + i);
        if (!bad)
            return 0;
        int used = snprintf(err, len, "%s", label);
        for (int i = 0; v && i < o->count && used >= 0 && (size_t)used < len; i++)
            used += snprintf(err + used, len - (size_t)used, " %s", app_shown(v[i]));
        if (used >= 0 && (size_t)used < len) {
            char range[96];
            if (o->kind == APP_INTS)
                snprintf(range, sizeof range, "each %d..%d", (int)o->lo, (int)o->hi);
            else if (isinf(o->hi))
                snprintf(range, sizeof range, "each a finite number above %g", o->lo);
            else
                snprintf(range, sizeof range, "each above %g, at most %g", o->lo, o->hi);
            snprintf(err + used, len - (size_t)used, "%s: expected %d %s, %s",
                     v ? "" : " needs values", o->count,
                     o->kind == APP_INTS ? "whole numbers" : "numbers", range);
        }
        return -1;
    }
    case APP_NAME: {
        int k;
        for (k = 0; s && k < o->count; k++)
            if (!strcmp(s, o->names[k])) {
                *(int *)o->dest = o->values ? o->values[k] : k;
                return 0;
            }
        names_text(o, names, sizeof names);
        snprintf(err, len, "%s %s: expected %s", label, s ? app_shown(s) : "needs a value",
                 names);
        return -1;
    }
    case APP_TEXT:
        if (s && *s) {
            *(const char **)o->dest = s;
            return 0;
        }
        snprintf(err, len, "%s %s: expected %s", label, s ? "''" : "needs a value",
                 o->meta ? o->meta : "a value");
        return -1;
    case APP_GRID:
        if (s)
            return parse_grid(o, s, o->dest, err, len);
        snprintf(err, len, "%s needs a value: expected %s", label, o->meta ? o->meta :
                 o->count == 2 ? "AxB" : "AxBxC");
        return -1;
    case APP_CUSTOM:
        if (s)
            return o->parse(o->name, v, o->dest, err, len);
        snprintf(err, len, "%s needs a value: expected %s", label, o->meta);
        return -1;
    }
    return -1;
}

int app_usage_error(const char *name, const char *fmt, ...)
{
    if (is_rank0()) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "%s: ", name);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fprintf(stderr, "\nTry '%s --help'.\n", name);
        fflush(stderr);
    }
    return APP_USAGE;
}

/* The table's option called s, or NULL. */
static const app_opt *find_opt(const app_cmd *cmd, const char *s)
{
    for (int i = 0; i < cmd->nopts; i++)
        if (cmd->opts[i].name && !strcmp(cmd->opts[i].name, s))
            return &cmd->opts[i];
    return NULL;
}

/* "<auto|cpu|cuda> <float|double> M [N K]": the positional arguments. */
static void synopsis(const app_cmd *cmd, char *buf, size_t len)
{
    int used = 0, open = 0;
    buf[0] = 0;
    for (int i = 0; i < cmd->nopts && used >= 0 && (size_t)used < len; i++) {
        const app_opt *o = &cmd->opts[i];
        if (o->name)
            continue;
        char names[128] = "";
        for (int k = 0; o->kind == APP_NAME && k < o->count; k++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k ? "|" : "<",
                     o->names[k]);
        if (*names)
            strncat(names, ">", sizeof names - strlen(names) - 1);
        used += snprintf(buf + used, len - (size_t)used, "%s%s%s", used ? " " : "",
                         o->optional && !open ? "[" : "", *names ? names : o->meta);
        open = open || o->optional;
    }
    if (open && used >= 0 && (size_t)used < len)
        snprintf(buf + used, len - (size_t)used, "]");
}

int app_parse(const app_cmd *cmd, int argc, char **argv)
{
    int dash_h = !find_opt(cmd, "-h");
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-help") ||
            (dash_h && !strcmp(argv[i], "-h"))) {
            if (is_rank0()) {
                app_usage(cmd, stdout);
                fflush(stdout);
            }
            return 1;
        }
    int pos = 0; /* the next positional entry to fill */
    char err[512];
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const app_opt *o = NULL;
        if (looks_like_option(a)) {
            if (!(o = find_opt(cmd, a)))
                return app_usage_error(cmd->name, "unknown option '%s'", a);
            int n = opt_nargs(o), have = argc - i - 1 >= n;
            if (take(o, have ? argv + i + 1 : NULL, err, sizeof err))
                return app_usage_error(cmd->name, "%s", err);
            i += have ? n : argc;
        } else {
            while (pos < cmd->nopts && cmd->opts[pos].name)
                pos++;
            if (pos == cmd->nopts)
                return app_usage_error(cmd->name, "unexpected argument '%s'", app_shown(a));
            o = &cmd->opts[pos++];
            if (take(o, argv + i, err, sizeof err))
                return app_usage_error(cmd->name, "%s", err);
        }
        if (o->given)
            *o->given = 1;
    }
    for (; pos < cmd->nopts; pos++) {
        const app_opt *o = &cmd->opts[pos];
        if (o->name || o->optional)
            continue;
        char syn[256];
        synopsis(cmd, syn, sizeof syn);
        return app_usage_error(cmd->name, "missing %s (expected %s)", o->meta ? o->meta : "an "
                               "argument", syn);
    }
    return 0;
}

/* Writes text wrapped to `width` columns, its first line after `col` columns already written,
 * every further line indented by `indent`. */
static void wrap(FILE *f, const char *text, int col, int indent, int width)
{
    const char *p = text;
    while (*p) {
        size_t w = strcspn(p, " ");
        if (col > indent && col + 1 + (int)w > width) {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', f);
            col++;
        }
        fprintf(f, "%.*s", (int)w, p);
        col += (int)w;
        p += w;
        while (*p == ' ')
            p++;
    }
    fputc('\n', f);
}

void app_usage(const app_cmd *cmd, FILE *f)
{
    enum { INDENT = 26, WIDTH = 96 };
    char syn[256];
    synopsis(cmd, syn, sizeof syn);
    fprintf(f, "usage: mpirun -np P %s%s%s [options]\n\n%s\noptions:\n", cmd->name, *syn ? " " :
            "", syn, cmd->about);
    char head[160] = "";
    for (int i = 0; i < cmd->nopts; i++) {
        const app_opt *o = &cmd->opts[i];
        if (!o->name)
            continue;
        char names[128] = "", *meta = names;
        if (o->meta)
            meta = (char *)o->meta;
        else
            for (int k = 0; o->kind == APP_NAME && k < o->count; k++)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k ? "|" :
                         "", o->names[k]);
        snprintf(head + strlen(head), sizeof head - strlen(head), "%s%s%s%s", *head ? " | " :
                 "", o->name, *meta ? " " : "", meta);
        if (!o->help)
            continue;
        int col = fprintf(f, "  %s", head);
        if (col >= INDENT - 1) {
            fprintf(f, "\n%*s", INDENT, "");
        } else {
            fprintf(f, "%*s", INDENT - col, "");
        }
        wrap(f, o->help, INDENT, INDENT, WIDTH);
        head[0] = 0;
    }
    if (cmd->after)
        fprintf(f, "\n%s", cmd->after);
    fprintf(f, "\n" APP_EXIT_TEXT);
}

/* ---- progress -------------------------------------------------------------------------------- */

void app_progress_begin(app_progress *p, const char *name, const char *what, long long total,
                        double every)
{
    memset(p, 0, sizeof *p);
    p->name = name;
    p->what = what;
    p->total = total;
    p->every = every;
    p->on = every > 0 && total > 0 && is_rank0();
    p->tty = p->on && isatty(STDERR_FILENO);
    p->start = p->last = MPI_Wtime();
}

int app_parse_seconds(const char *name, char **v, void *dest, char *err, size_t len)
{
    double t = 0;
    if (!strcmp(v[0], "0") || !app_to_real(v[0], 0, APP_PROGRESS_MAX, &t)) {
        *(double *)dest = t;
        return 0;
    }
    return snprintf(err, len, "%s %s: expected seconds from 0 (none) to %g", name,
                    app_shown(v[0]), APP_PROGRESS_MAX), -1;
}

/* "1 h 02 min", "3 min 05 s", "12 s". */
static void duration(double s, char *buf, size_t len)
{
    long long t = (long long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, len, "%lld h %02lld min", t / 3600, t / 60 % 60);
    else if (t >= 60)
        snprintf(buf, len, "%lld min %02lld s", t / 60, t % 60);
    else
        snprintf(buf, len, "%lld s", t);
}

void app_progress_step(app_progress *p, long long done)
{
    if (!p->on)
        return;
    double now = MPI_Wtime(), spent = now - p->start;
    /* quiet for the first interval; a terminal's bar at most 4 times a second */
    if (spent < p->every || now - p->last < (p->tty ? 0.25 : p->every))
        return;
    p->last = now;
    p->shown = 1;
    double frac = (double)done / (double)p->total;
    char took[48], left[80] = "";
    duration(spent, took, sizeof took);
    if (done > 0 && done < p->total) {
        char t[48];
        duration(spent / frac - spent, t, sizeof t);
        snprintf(left, sizeof left, ", about %s left", t);
    }
    if (p->tty) {
        enum { BAR = 30 };
        int full = (int)(frac * BAR);
        char bar[BAR + 1];
        for (int i = 0; i < BAR; i++)
            bar[i] = i < full ? '#' : '.';
        bar[BAR] = 0;
        fprintf(stderr, "\r%s: %s [%s] %3.0f%% (%lld/%lld), %s%s\033[K", p->name, p->what, bar,
                100 * frac, done, p->total, took, left);
    } else {
        fprintf(stderr, "%s: %s %.0f%% (%lld/%lld), %s%s\n", p->name, p->what, 100 * frac, done,
                p->total, took, left);
    }
    fflush(stderr);
}

void app_progress_end(app_progress *p)
{
    if (p->on && p->tty && p->shown) {
        fprintf(stderr, "\r\033[K");
        fflush(stderr);
    }
    p->on = 0;
}

/* ---- memory ---------------------------------------------------------------------------------- */

double app_node_memory(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    double kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    if (kb > 0)
        return kb * 1024;
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (double)pages * (double)size : 0;
}

int app_memory_check(const char *name, double bytes)
{
    MPI_Comm node;
    int rank, local, ranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_size(node, &ranks);
    double need = 0, have = local == 0 ? app_node_memory() : 0;
    MPI_Allreduce(&bytes, &need, 1, MPI_DOUBLE, MPI_SUM, node);
    MPI_Bcast(&have, 1, MPI_DOUBLE, 0, node);
    MPI_Comm_free(&node);
    int bad = have > 0 && need > have;
    char msg[400] = "";
    if (bad)
        snprintf(msg, sizeof msg, "%s: needs %.4g GB of host memory on a node (%d rank%s), "
                 "%.4g GB available (MemAvailable): smaller sizes, more nodes or fewer ranks "
                 "per node\n", name, need / 1e9, ranks, ranks > 1 ? "s" : "", have / 1e9);
    if (!app_agree(bad, msg, sizeof msg))
        return 0;
    if (is_rank0()) {
        fputs(msg, stderr);
        fflush(stderr);
    }
    return 1;
}

const char *app_exchange_name(int x)
{
    static const char *names[] = {"none", "a2av", "p2p", "nccl", "cuda-mpi", "direct"};
    return (unsigned)x < sizeof names / sizeof names[0] ? names[x] : "?";
}
