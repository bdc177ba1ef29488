/*
 * cli.h - what the tools share: program name, diagnostics, allocation,
 * option parsing, human-readable sizes, names and JSON output, progress.
 * Not part of libst. Opening a checkpoint for a tool is common/ckpt.h,
 * tables fe/table.h, signal handling fe/signals.h; errors follow
 * doc/errors.md (only the cli_die family prints a failure and exits).
 */
#ifndef ST_CLI_H
#define ST_CLI_H

#include <getopt.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdnoreturn.h>

#include <st.h>

#define CLI_PRINTF(a, b) __attribute__((format(printf, a, b)))

/*
 * The version of the tools' JSON documents (doc/json.md): every --json
 * document, each entry of an array of them too, starts with
 * "schema": CLI_JSON_SCHEMA. A new version when a member changes meaning
 * or goes; added members keep it.
 */
#define CLI_JSON_SCHEMA 1

/* Exit codes of every tool (each man page, EXIT STATUS). */
enum { CLI_OK = 0, CLI_NO = 1, CLI_ERROR = 2 };

/*
 * Set the program name used in every message. Tools pass a fixed name
 * ("stinfo") rather than argv[0], so messages read the same however the
 * tool was started; a path is cut to its last component.
 */
void cli_init(const char *progname);
const char *cli_progname(void);

/* "prog: message\n" on stderr. */
void cli_warn(const char *fmt, ...) CLI_PRINTF(1, 2);
void cli_vwarn(const char *fmt, va_list ap) CLI_PRINTF(1, 0);
/* "prog: message\n" on stderr, then exit(code). */
noreturn void cli_die(int code, const char *fmt, ...) CLI_PRINTF(2, 3);
/* "prog: message\nTry 'prog --help' for more information.\n", exit 2. */
noreturn void cli_usage_error(const char *fmt, ...) CLI_PRINTF(1, 2);
/* "prog: <err->message>\n" on stderr. */
void cli_error(const st_error *err);
/* The same, or "prog: path: <st_strerror>" when libst left no message. */
void cli_error_path(const char *path, const st_error *err);
/* What cli_error_path prints after "prog: ", malloc'd (free()). */
char *cli_error_text(const char *path, const st_error *err);
/*
 * The entry of a PATH that failed in a --json array of several PATHs,
 * {"path": ..., "error": <cli_error_text>}, on f (no newline).
 */
void cli_json_error(FILE *f, const char *path, const st_error *err);
/* Print "prog (libst) VERSION" to stdout and exit 0. */
noreturn void cli_version(void);
/* Flush stdout, report a write error (exit 2), else return code. */
int cli_exit(int code);

/*
 * Allocation that cannot fail: running out of memory prints one line and
 * exits 2. A size of zero allocates one byte, so the result is never NULL.
 */
void *cli_xmalloc(size_t n);
void *cli_xcalloc(size_t n, size_t size);
void *cli_xrealloc(void *p, size_t n);
char *cli_xstrdup(const char *s);

/*
 * getopt_long with the tools' usage errors: an unknown option, a missing
 * argument or an argument given to an option that takes none prints
 * "prog: unrecognized option '--bogus'" (glibc's wording, under the
 * program's name) and "Try 'prog --help'", and exits 2. Otherwise returns
 * what getopt_long returns. shortopts must not start with ':'.
 */
int cli_getopt(int argc, char *const argv[], const char *shortopts,
               const struct option *longopts);

/*
 * The one rule of the tools that write an OUT (stconvert, gpt2export):
 * an existing OUT (a file, a directory that holds anything, a link to
 * nothing) is replaced only with --force. Without force, exits 2 with
 * "prog: OUT: already exists (use --force to replace it)" (", a link to
 * nothing" for a dangling link); an empty directory is written into.
 */
void cli_check_out(const char *path, int force);

/*
 * Sizes: "5GB" (decimal: kB MB GB TB), "4GiB" (binary: KiB MiB GiB TiB),
 * "123" bytes. Returns 0 on success, -1 on a malformed or overflowing value.
 */
/* 1 when file name s ends in suffix after at least one other byte. */
int cli_ends_with(const char *s, const char *suffix);
int cli_parse_size(const char *s, uint64_t *out);
/* Parse a non-negative integer / a double; -1 when malformed. */
int cli_parse_u64(const char *s, uint64_t *out);
int cli_parse_double(const char *s, double *out);

/*
 * A floating dtype a tool converts to: f64, f32, f16 or bf16, any case,
 * or PyTorch's names (float64, double, float32, float16, half, bfloat16).
 * 0, or -1 for anything else.
 */
int cli_parse_float_dtype(const char *s, st_dtype *out);

/* An option's thread count, 1 to max; anything else is a usage error. */
int cli_opt_threads(const char *arg, int max);
/* An option's number >= 0 (a tolerance); else a usage error naming opt. */
double cli_opt_nonneg(const char *opt, const char *arg);
/* The default thread count: the CPUs online, at most max. */
int cli_default_threads(int max);

/* "548.1 MB" style (decimal units, one decimal); "232 B" below 1 kB. */
void cli_fmt_bytes(char *buf, size_t size, uint64_t n);
/* "124.4M" style counts (K, M, B, T); small counts print exactly. */
void cli_fmt_count(char *buf, size_t size, uint64_t n);
/* "[768, 2304]" */
void cli_fmt_shape(char *buf, size_t size, const st_tensor *t);
/* "[768, 2304]" for n values, on f: shapes in JSON, coordinates. */
void cli_print_dims(FILE *f, const uint64_t *v, unsigned n);

/*
 * A JSON string literal of s (len bytes, may hold NUL) on f, safe to show
 * on a terminal: controls, DEL, the C1 controls and the bidirectional
 * controls as \uNNNN; a byte that is not UTF-8 as \ufffd (JSON holds
 * only Unicode text).
 */
void cli_json_string(FILE *f, const char *s, size_t len);
/*
 * A JSON number for a double, or for a float (a float32 value read back
 * as a float): the shortest round-trip form (fe/shortest.h); NaN and the
 * infinities, which JSON lacks, as null.
 */
void cli_json_double(FILE *f, double v);
void cli_json_float(FILE *f, float v);

/*
 * A string from a file made safe for a terminal (doc/safety.md): C0
 * controls, DEL and bytes that are not UTF-8 become \xNN; the C1 controls
 * (U+0080-U+009F, which terminals such as xterm.js execute) and the
 * bidirectional controls become \uNNNN; other UTF-8 passes through. So a
 * name cannot break a line or a column, move the cursor, set the title,
 * write the clipboard or reorder the text after it. cli_printable returns
 * a malloc'd copy.
 */
char *cli_printable(const char *s, size_t len);
void cli_print_name(FILE *f, const char *s, size_t len);

/*
 * Progress on stderr, only when stderr is a terminal and ST_NO_PROGRESS is
 * unset or empty (else does nothing): a bar, the bytes, the rate and,
 * after a second, the time left. Rate-limited; cli_progress_done clears
 * the line. TERM=dumb (or no TERM) gets no escape sequences. Not
 * thread-safe: callers serialize cli_progress_add.
 */
typedef struct cli_progress {
	int enabled, dumb;
	int width; /* of the line last shown */
	uint64_t total, done;
	double start, last;
	const char *label;
} cli_progress;
void cli_progress_start(cli_progress *p, const char *label, uint64_t total);
void cli_progress_add(cli_progress *p, uint64_t n);
void cli_progress_done(cli_progress *p);
/*
 * libst's progress callback (st_convert_run, st_gguf_hf_run, ...) for a
 * tool whose ctx points at a struct that begins with its cli_progress:
 * cli_progress_add of the bytes.
 */
void cli_progress_cb(void *ctx, uint64_t bytes);
/*
 * The bar's time left: "  ETA 1:05", "  ETA 1:02:05" (seconds rounded),
 * "" when secs is negative, NaN or 100 hours or more.
 */
void cli_fmt_eta(char *out, size_t size, double secs);
/*
 * Whether LC_ALL, else LC_CTYPE, else LANG names a UTF-8 locale; the tools
 * print their own non-ASCII symbols only then. cli_arrow: the arrow, "->"
 * without UTF-8.
 */
int cli_utf8_locale(void);
const char *cli_arrow(void);
/*
 * st_writer_open, or for path "-" st_writer_open_fd on standard output
 * (named "<stdout>" in messages) after cli_check_stdout_binary.
 */
int cli_writer_open(st_writer *w, const char *path, st_error *err);
/* Exit 2 when standard output is a terminal: binary output needs a file
 * or a pipe. */
void cli_check_stdout_binary(void);
/* --quiet: standard output goes to /dev/null from here on (errors, on
 * standard error, are still seen); exit 2 if it cannot be opened. */
void cli_quiet_stdout(void);

/*
 * The operands argv[first..argc): with fewer than min, exit 2 with
 * "missing operand: B" (the names of those missing, from names[]); with
 * more than max (max >= 0), "extra operand 'X'". One wording for every tool.
 */
void cli_operands(int argc, char *const argv[], int first, int min, int max,
                  const char *const names[]);
/* s with libst's arrows made "->" and its multiplication signs "x"
 * when the locale is not UTF-8 (in place). */
char *cli_ascii_fallback(char *s);

/* Monotonic seconds. */
double cli_now(void);
/* Number of online CPUs (>= 1). */
int cli_ncpus(void);

#endif
