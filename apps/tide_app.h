/* tide_app.h: the subcommands of the `tide` command. */
#ifndef TIDE_APP_H
#define TIDE_APP_H

/* Each runs on every rank with the same arguments (after the subcommand name) and returns the
 * process exit status: 0 success, 1 failure, 2 bad arguments. */
int tide_cmd_fft(int argc, char **argv);
int tide_cmd_poisson(int argc, char **argv);
int tide_cmd_stencil(int argc, char **argv);
int tide_cmd_band(int argc, char **argv);
int tide_cmd_gemm(int argc, char **argv);
int tide_cmd_info(int argc, char **argv);

/* Print on rank 0 only. */
void tide_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void tide_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
