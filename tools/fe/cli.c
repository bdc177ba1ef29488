/*
 * cli.c - the helpers every tool shares (see cli.h): messages, allocation,
 * options, formatting, progress. Printing and exiting happen here and in
 * the tools, never in libst; nothing here knows one tool's options.
 */
#include "fe/cli.h"
#include "fe/shortest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *progname = "st";

void cli_init(const char *name)
{
	const char *slash = strrchr(name, '/');
	progname = slash ? slash + 1 : name;
}

const char *cli_progname(void) { return progname; }

/* One line on stderr, "PROG: MESSAGE", the message made safe for a
 * terminal (cli_printable): every message may carry names from a file,
 * and this is where every one of them passes (doc/safety.md). */
static void put_line(const char *msg)
{
	char *safe = cli_printable(msg, strlen(msg));
	fprintf(stderr, "%s: %s\n", progname, safe);
	free(safe);
}

void cli_vwarn(const char *fmt, va_list ap)
{
	char *msg = NULL;
	if (vasprintf(&msg, fmt, ap) < 0) {
		fprintf(stderr, "%s: out of memory\n", progname);
		return;
	}
	put_line(msg);
	free(msg);
}

void cli_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	cli_vwarn(fmt, ap);
	va_end(ap);
}

void cli_die(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	cli_vwarn(fmt, ap);
	va_end(ap);
	exit(code);
}

void cli_usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	cli_vwarn(fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try '%s --help' for more information.\n", progname);
	exit(CLI_ERROR);
}

void cli_error(const st_error *err)
{
	put_line(err->message[0] ? err->message : st_strerror(err->code));
}

char *cli_error_text(const char *path, const st_error *err)
{
	char *s = NULL;
	if (err->message[0])
		s = cli_xstrdup(err->message);
	else if (asprintf(&s, "%s: %s", path, st_strerror(err->code)) < 0)
		cli_die(CLI_ERROR, "out of memory");
	return s;
}

void cli_json_error(FILE *f, const char *path, const st_error *err)
{
	char *msg = cli_error_text(path, err);
	fprintf(f, "{\"schema\": %d, \"path\": ", CLI_JSON_SCHEMA);
	cli_json_string(f, path, strlen(path));
	fputs(", \"error\": ", f);
	cli_json_string(f, msg, strlen(msg));
	fputc('}', f);
	free(msg);
}

void cli_error_path(const char *path, const st_error *err)
{
	char *s = cli_error_text(path, err);
	put_line(s);
	free(s);
}

void cli_version(void)
{
	printf("%s (libst) %s\n", progname, st_version_string());
	exit(cli_exit(CLI_OK));
}

int cli_exit(int code)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "%s: error writing standard output: %s\n",
		        progname, strerror(errno));
		return CLI_ERROR;
	}
	return code;
}

/* ---- allocation ---------------------------------------------------------- */

static void *checked(void *p, size_t n)
{
	if (!p)
		cli_die(CLI_ERROR, "out of memory (%zu bytes)", n);
	return p;
}

void *cli_xmalloc(size_t n) { return checked(malloc(n ? n : 1), n); }

void *cli_xcalloc(size_t n, size_t size)
{
	return checked(calloc(n ? n : 1, size ? size : 1), n * size);
}

void *cli_xrealloc(void *p, size_t n) { return checked(realloc(p, n ? n : 1), n); }

char *cli_xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(cli_xmalloc(n), s, n);
}

/* ---- options ------------------------------------------------------------- */

/* Whether c is one of the short options in shortopts. */
static int is_short(const char *shortopts, int c)
{
	return c > 0 && c < 256 && c != ':' && strchr(shortopts, c) != NULL;
}

int cli_getopt(int argc, char *const argv[], const char *shortopts,
               const struct option *longopts)
{
	/* A leading ':' makes getopt_long tell a missing argument (':') from
	 * an unknown option ('?') and print nothing itself. */
	char opts[128];
	int len = snprintf(opts, sizeof opts, ":%s", shortopts);
	if (len < 0 || (size_t)len >= sizeof opts)
		cli_die(CLI_ERROR, "internal error: option string too long");
	opterr = 0;
	int c = getopt_long(argc, argv, opts, longopts, NULL);
	if (c != ':' && c != '?')
		return c;
	/* getopt_long has moved optind past a long option in error; a short
	 * one may sit inside a cluster ("-xa"), so only optopt names it. */
	const char *arg = optind > 0 && optind <= argc ? argv[optind - 1] : "";
	int is_long = strncmp(arg, "--", 2) == 0;
	if (c == ':') {
		if (is_short(shortopts, optopt) && !is_long)
			cli_usage_error("option requires an argument -- '%c'", optopt);
		cli_usage_error("option '%s' requires an argument", arg);
	}
	if (optopt == 0)
		cli_usage_error("unrecognized option '%s'", arg);
	if (!is_short(shortopts, optopt) && optopt < 256)
		cli_usage_error("invalid option -- '%c'", optopt);
	/* A long option that takes no argument was given one ("--json=x"). */
	cli_usage_error("option '%.*s' doesn't allow an argument",
	                (int)strcspn(arg, "="), arg);
}

int cli_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

int cli_parse_double(const char *s, double *out)
{
	char *end;
	if (!s || !*s)
		return -1;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || isnan(v))
		return -1;
	*out = v;
	return 0;
}

/* Whether directory path holds nothing (one that cannot be read counts as
 * holding something). */
static int dir_is_empty(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int empty = d != NULL;

	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			empty = 0;
			break;
		}
	if (d)
		closedir(d);
	return empty;
}

void cli_check_out(const char *path, int force)
{
	struct stat st;

	if (force || lstat(path, &st) != 0)
		return; /* not there (or the write says why it cannot be) */
	if (stat(path, &st) != 0) {
		if (errno == ENOENT) /* replacing it would replace the user's link */
			cli_die(CLI_ERROR, "%s: already exists, a link to nothing (use --force to "
			        "replace it)", path);
		return;
	}
	if (S_ISDIR(st.st_mode) && dir_is_empty(path))
		return;
	cli_die(CLI_ERROR, "%s: already exists (use --force to replace it)", path);
}

int cli_ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n > k && strcmp(s + n - k, suffix) == 0;
}

int cli_parse_size(const char *s, uint64_t *out)
{
	static const struct { const char *suffix; uint64_t mult; } units[] = {
		{"", 1}, {"B", 1},
		{"kB", 1000ULL}, {"KB", 1000ULL}, {"MB", 1000000ULL},
		{"GB", 1000000000ULL}, {"TB", 1000000000000ULL},
		{"KiB", 1ULL << 10}, {"MiB", 1ULL << 20}, {"GiB", 1ULL << 30},
		{"TiB", 1ULL << 40},
	};
	char *end;
	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || v < 0)
		return -1;
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
		if (strcmp(end, units[i].suffix) == 0) {
			double bytes = v * (double)units[i].mult;
			if (bytes >= 18446744073709551615.0 || bytes < 1)
				return -1;
			*out = (uint64_t)bytes;
			return 0;
		}
	}
	return -1;
}

int cli_parse_float_dtype(const char *s, st_dtype *out)
{
	static const struct { const char *name; st_dtype dtype; } names[] = {
		{"f64", ST_DTYPE_F64}, {"float64", ST_DTYPE_F64},
		{"double", ST_DTYPE_F64},
		{"f32", ST_DTYPE_F32}, {"float32", ST_DTYPE_F32},
		{"f16", ST_DTYPE_F16}, {"float16", ST_DTYPE_F16},
		{"half", ST_DTYPE_F16},
		{"bf16", ST_DTYPE_BF16}, {"bfloat16", ST_DTYPE_BF16},
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (strcasecmp(s, names[i].name) == 0) {
			*out = names[i].dtype;
			return 0;
		}
	}
	return -1;
}

int cli_opt_threads(const char *arg, int max)
{
	uint64_t v;
	if (cli_parse_u64(arg, &v) != 0 || v < 1 || v > (uint64_t)max)
		cli_usage_error("invalid thread count '%s' (expected 1 to %d)", arg, max);
	return (int)v;
}

double cli_opt_nonneg(const char *opt, const char *arg)
{
	double v;
	if (cli_parse_double(arg, &v) != 0 || v < 0)
		cli_usage_error("%s: not a non-negative number: '%s'", opt, arg);
	return v;
}

int cli_default_threads(int max)
{
	int n = cli_ncpus();
	return n < max ? n : max;
}

/* ---- formatting ---------------------------------------------------------- */

/*
 * n in units of 1000 with one decimal: "548.1" and the unit's name, or
 * exactly when below 1000 (unit_small); a value that would print as
 * "1000.0" moves to the next unit.
 */
static void fmt_scaled(char *buf, size_t size, uint64_t n, const char *sep,
                       const char *unit_small, const char *const *units,
                       int n_units)
{
	if (n < 1000) {
		snprintf(buf, size, "%llu%s%s", (unsigned long long)n,
		         *unit_small ? sep : "", unit_small);
		return;
	}
	double v = (double)n;
	int u = -1;
	while (v >= 1000 && u < n_units - 1) {
		v /= 1000;
		u++;
	}
	if (v >= 999.95 && u < n_units - 1) {
		v /= 1000;
		u++;
	}
	snprintf(buf, size, "%.1f%s%s", v, sep, units[u]);
}

void cli_fmt_bytes(char *buf, size_t size, uint64_t n)
{
	static const char *const units[] = {"kB", "MB", "GB", "TB", "PB", "EB"};
	fmt_scaled(buf, size, n, " ", "B", units, 6);
}

void cli_fmt_count(char *buf, size_t size, uint64_t n)
{
	static const char *const units[] = {"K", "M", "B", "T"};
	fmt_scaled(buf, size, n, "", "", units, 4);
}

void cli_fmt_shape(char *buf, size_t size, const st_tensor *t)
{
	size_t used = 0;
	int n = snprintf(buf, size, "[");
	used = n > 0 ? (size_t)n : 0;
	for (unsigned d = 0; d < t->ndim && used < size; d++) {
		n = snprintf(buf + used, size - used, "%s%llu", d ? ", " : "",
		             (unsigned long long)t->shape[d]);
		if (n < 0)
			break;
		used += (size_t)n;
	}
	if (used < size)
		snprintf(buf + used, size - used, "]");
}

void cli_print_dims(FILE *f, const uint64_t *v, unsigned n)
{
	fputc('[', f);
	for (unsigned d = 0; d < n; d++)
		fprintf(f, "%s%llu", d ? ", " : "", (unsigned long long)v[d]);
	fputc(']', f);
}

/*
 * The code point of the UTF-8 sequence at s[0..n), stored in *cp, and its
 * length; 0 when the bytes there are not valid UTF-8 (a stray byte, an
 * overlong form, a surrogate, past U+10FFFF, cut short).
 */
static size_t utf8_next(const unsigned char *s, size_t n, uint32_t *cp)
{
	unsigned char c = s[0];
	size_t k;
	uint32_t v, min;
	if (c < 0x80) {
		*cp = c;
		return 1;
	} else if (c >= 0xc2 && c <= 0xdf) {
		k = 2, v = c & 0x1f, min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		k = 3, v = c & 0x0f, min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		k = 4, v = c & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (n < k)
		return 0;
	for (size_t i = 1; i < k; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return k;
}

/*
 * Code points a terminal acts on rather than shows: C0 controls, DEL, the
 * C1 controls U+0080-U+009F (CSI, OSC: xterm.js executes them), the line
 * and paragraph separators, and the bidirectional overrides and isolates
 * that reorder what follows them on the screen.
 */
static int cp_active(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 ||
	       (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) ||
	       cp == 0x200e || cp == 0x200f || cp == 0x061c;
}

void cli_json_string(FILE *f, const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	fputc('"', f);
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		size_t k = utf8_next(u + i, len - i, &cp);
		if (!k) {
			/* Not UTF-8: JSON cannot carry the byte; U+FFFD stands in. */
			fputs("\\ufffd", f);
			i++;
			continue;
		}
		switch (cp) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\b': fputs("\\b", f); break;
		case '\f': fputs("\\f", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		default:
			if (cp_active(cp))
				fprintf(f, "\\u%04x", (unsigned)cp);
			else
				fwrite(u + i, 1, k, f);
		}
		i += k;
	}
	fputc('"', f);
}

/* v's shortest round-trip text (as a float when f32), or null. */
static void json_shortest(FILE *f, double v, int f32)
{
	char buf[SHORTEST_MAX];
	if (!isfinite(v)) {
		fputs("null", f);
		return;
	}
	fwrite(buf, 1, f32 ? shortest_f32(buf, (float)v) : shortest_f64(buf, v), f);
}

void cli_json_double(FILE *f, double v)
{
	json_shortest(f, v, 0);
}

void cli_json_float(FILE *f, float v)
{
	json_shortest(f, v, 1);
}

char *cli_printable(const char *s, size_t len)
{
	/* Worst case: every byte a \xNN (4), or a 3-byte code point a \uNNNN (6). */
	const unsigned char *u = (const unsigned char *)s;
	char *out = cli_xmalloc(len * 4 + 1), *o = out;
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		size_t k = utf8_next(u + i, len - i, &cp);
		if (!k) {
			o += sprintf(o, "\\x%02x", u[i]);
			i++;
		} else if (cp < 0x80 && cp_active(cp)) {
			o += sprintf(o, "\\x%02x", (unsigned)cp);
			i++;
		} else if (cp_active(cp)) {
			o += sprintf(o, "\\u%04x", (unsigned)cp);
			i += k;
		} else {
			memcpy(o, u + i, k);
			o += k;
			i += k;
		}
	}
	*o = 0;
	return out;
}

void cli_print_name(FILE *f, const char *s, size_t len)
{
	char *p = cli_printable(s, len);
	fputs(p, f);
	free(p);
}

double cli_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int cli_ncpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : (int)n;
}

/* The locale variable that decides LC_CTYPE, as setlocale(3) reads them. */
static const char *ctype_locale(void)
{
	const char *names[] = {"LC_ALL", "LC_CTYPE", "LANG"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		const char *v = getenv(names[i]);
		if (v && *v)
			return v;
	}
	return "C";
}

int cli_utf8_locale(void)
{
	const char *l = ctype_locale();
	return strcasestr(l, "utf-8") != NULL || strcasestr(l, "utf8") != NULL;
}

const char *cli_arrow(void)
{
	return cli_utf8_locale() ? "\xe2\x86\x92" : "->";
}

int cli_writer_open(st_writer *w, const char *path, st_error *err)
{
	if (strcmp(path, "-") != 0)
		return st_writer_open(w, path, err);
	cli_check_stdout_binary();
	return st_writer_open_fd(w, STDOUT_FILENO, "<stdout>", err);
}

void cli_check_stdout_binary(void)
{
	if (isatty(STDOUT_FILENO))
		cli_die(CLI_ERROR, "standard output is a terminal: '-' writes a safetensors "
		        "file there; redirect it to a file or a pipe");
}

void cli_quiet_stdout(void)
{
	fflush(stdout);
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0)
		cli_die(CLI_ERROR, "--quiet: /dev/null: %s", strerror(errno));
	close(fd);
}

void cli_operands(int argc, char *const argv[], int first, int min, int max,
                  const char *const names[])
{
	int n = argc - first;
	if (n < min) {
		char list[256] = "";
		size_t len = 0;
		for (int k = n; k < min; k++)
			len += (size_t)snprintf(list + len, len < sizeof list ? sizeof list - len : 0,
			                        "%s%s", k == n ? "" : k + 1 == min ? " and " : ", ",
			                        names[k]);
		cli_usage_error("missing operand: %s", list);
	}
	if (max >= 0 && n > max)
		cli_usage_error("extra operand '%s'", argv[first + max]);
}

char *cli_ascii_fallback(char *s)
{
	if (cli_utf8_locale())
		return s;
	char *o = s;
	for (const char *i = s; *i;) {
		if (!strncmp(i, "\xe2\x86\x92", 3)) {
			*o++ = '-';
			*o++ = '>';
			i += 3;
		} else if (!strncmp(i, "\xc3\x97", 2)) { /* the multiplication sign */
			*o++ = 'x';
			i += 2;
		} else
			*o++ = *i++;
	}
	*o = 0;
	return s;
}

/* Whether a progress bar would show (stderr a terminal, no opt-out). */
static int progress_wanted(void)
{
	const char *no = getenv("ST_NO_PROGRESS");
	return isatty(STDERR_FILENO) && !(no && *no);
}

void cli_progress_start(cli_progress *p, const char *label, uint64_t total)
{
	memset(p, 0, sizeof *p);
	p->enabled = progress_wanted();
	const char *term = getenv("TERM");
	p->dumb = !term || !*term || !strcmp(term, "dumb");
	p->total = total;
	p->label = label;
	p->start = p->last = cli_now();
}

void cli_fmt_eta(char *out, size_t size, double secs)
{
	if (!(secs >= 0 && secs < 360000)) {
		snprintf(out, size, "%s", "");
		return;
	}
	unsigned s = (unsigned)(secs + 0.5);
	if (s >= 3600)
		snprintf(out, size, "  ETA %u:%02u:%02u", s / 3600, s / 60 % 60, s % 60);
	else
		snprintf(out, size, "  ETA %u:%02u", s / 60, s % 60);
}

/*
 * Rewrite the line: "\r" and the text, then "ESC[K" to clear what a longer
 * line left; a dumb terminal gets spaces over it instead.
 */
static void progress_line(cli_progress *p, const char *text)
{
	int n = fprintf(stderr, "\r%s", text);
	if (p->dumb) {
		if (n - 1 < p->width)
			fprintf(stderr, "%*s\r%s", p->width - (n - 1), "", text);
	} else
		fputs("\033[K", stderr);
	if (n > 1)
		p->width = n - 1;
	fflush(stderr);
}

void cli_progress_cb(void *ctx, uint64_t bytes)
{
	cli_progress_add((cli_progress *)ctx, bytes);
}

void cli_progress_add(cli_progress *p, uint64_t n)
{
	p->done += n;
	if (!p->enabled)
		return;
	double now = cli_now();
	if (now - p->last < 0.1 && p->done < p->total)
		return;
	p->last = now;
	double frac = p->total ? (double)p->done / (double)p->total : 1.0;
	if (frac > 1)
		frac = 1;
	int width = 30, fill = (int)(frac * width);
	char done[32], total[32];
	cli_fmt_bytes(done, sizeof done, p->done);
	cli_fmt_bytes(total, sizeof total, p->total);
	double el = now - p->start;
	double rate = el > 0 ? (double)p->done / el : 0;
	char r[32], eta[32] = "";
	cli_fmt_bytes(r, sizeof r, (uint64_t)rate);
	/* After a second, when the rate means something. */
	if (el >= 1 && rate > 0 && p->done < p->total)
		cli_fmt_eta(eta, sizeof eta, (double)(p->total - p->done) / rate);
	char line[256];
	snprintf(line, sizeof line, "%s [%.*s%*s] %3d%% %s / %s  %s/s%s ",
	         p->label ? p->label : "", fill, "##############################",
	         width - fill, "", (int)(frac * 100), done, total, r, eta);
	progress_line(p, line);
}

void cli_progress_done(cli_progress *p)
{
	if (!p->enabled)
		return;
	if (p->dumb)
		fprintf(stderr, "\r%*s\r", p->width, "");
	else
		fputs("\r\033[K", stderr);
	fflush(stderr);
}
