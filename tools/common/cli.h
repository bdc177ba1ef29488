/*
 * cli.h - what the tools share: program name, diagnostics, option helpers,
 * human-readable sizes, JSON output, progress. Not part of libst.
 */
#ifndef ST_CLI_H
#define ST_CLI_H

#include <stdint.h>
#include <stdio.h>
#include <stdnoreturn.h>

#include <st.h>

#define CLI_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* Exit codes of every tool (SPEC.md). */
enum { CLI_OK = 0, CLI_NO = 1, CLI_ERROR = 2 };

/* Set the program name used in every message ("stinfo"). */
void cli_init(const char *progname);
const char *cli_progname(void);

/* "prog: message\n" on stderr. */
void cli_warn(const char *fmt, ...) CLI_PRINTF(1, 2);
/* "prog: message\n" on stderr, then exit(code). */
noreturn void cli_die(int code, const char *fmt, ...) CLI_PRINTF(2, 3);
/* "prog: message\nTry 'prog --help' for more information.\n", exit 2. */
noreturn void cli_usage_error(const char *fmt, ...) CLI_PRINTF(1, 2);
/* "prog: <err->message>\n" on stderr. */
void cli_error(const st_error *err);
/* Print "prog (libst) VERSION" to stdout and exit 0. */
noreturn void cli_version(void);
/* Flush stdout, report a write error (exit 2), else return code. */
int cli_exit(int code);

/*
 * Sizes: "5GB" (decimal: kB MB GB TB), "4GiB" (binary: KiB MiB GiB TiB),
 * "123" bytes. Returns 0 on success, -1 on a malformed or overflowing value.
 */
int cli_parse_size(const char *s, uint64_t *out);
/* Parse a non-negative integer / a double; -1 when malformed. */
int cli_parse_u64(const char *s, uint64_t *out);
int cli_parse_double(const char *s, double *out);

/* "548.1 MB" style (decimal units, one decimal). */
void cli_fmt_bytes(char *buf, size_t size, uint64_t n);
/* "124.4M" style counts (K, M, B, T); small counts print exactly. */
void cli_fmt_count(char *buf, size_t size, uint64_t n);
/* "[768, 2304]" */
void cli_fmt_shape(char *buf, size_t size, const st_tensor *t);

/* A JSON string literal of s (len bytes, may hold NUL) on f. */
void cli_json_string(FILE *f, const char *s, size_t len);
/* A JSON number for a double: shortest round-trip form; NaN/Inf as null. */
void cli_json_double(FILE *f, double v);

/* A name made printable for a human (control bytes escaped). */
void cli_print_name(FILE *f, const char *s, size_t len);

/*
 * Progress on stderr, only when stderr is a terminal (else does nothing).
 * Rate-limited; cli_progress_done clears the line.
 */
typedef struct cli_progress {
	int enabled;
	uint64_t total, done;
	double start, last;
	const char *label;
} cli_progress;
void cli_progress_start(cli_progress *p, const char *label, uint64_t total);
void cli_progress_add(cli_progress *p, uint64_t n);
void cli_progress_done(cli_progress *p);

/* Monotonic seconds. */
double cli_now(void);
/* Number of online CPUs (>= 1). */
int cli_ncpus(void);

#endif
