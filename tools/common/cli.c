/*
 * cli.c - the helpers every tool shares (see cli.h). Printing and exiting
 * happen here and in the tools, never in libst.
 */
#include "common/cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *progname = "st";

void cli_init(const char *name)
{
	const char *slash = strrchr(name, '/');
	progname = slash ? slash + 1 : name;
}

const char *cli_progname(void) { return progname; }

static void vwarn(const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", progname);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void cli_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vwarn(fmt, ap);
	va_end(ap);
}

void cli_die(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vwarn(fmt, ap);
	va_end(ap);
	exit(code);
}

void cli_usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vwarn(fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try '%s --help' for more information.\n", progname);
	exit(CLI_ERROR);
}

void cli_error(const st_error *err)
{
	fprintf(stderr, "%s: %s\n", progname,
	        err->message[0] ? err->message : st_strerror(err->code));
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

void cli_fmt_bytes(char *buf, size_t size, uint64_t n)
{
	static const char *units[] = {"kB", "MB", "GB", "TB", "PB", "EB"};
	if (n < 1000) {
		snprintf(buf, size, "%llu B", (unsigned long long)n);
		return;
	}
	double v = (double)n;
	int u = -1;
	while (v >= 1000 && u < 5) {
		v /= 1000;
		u++;
	}
	if (v >= 999.95 && u < 5) { /* avoid "1000.0 MB" */
		v /= 1000;
		u++;
	}
	snprintf(buf, size, "%.1f %s", v, units[u]);
}

void cli_fmt_count(char *buf, size_t size, uint64_t n)
{
	static const char *units[] = {"K", "M", "B", "T"};
	if (n < 1000) {
		snprintf(buf, size, "%llu", (unsigned long long)n);
		return;
	}
	double v = (double)n;
	int u = -1;
	while (v >= 1000 && u < 3) {
		v /= 1000;
		u++;
	}
	if (v >= 999.95 && u < 3) {
		v /= 1000;
		u++;
	}
	snprintf(buf, size, "%.1f%s", v, units[u]);
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

void cli_json_string(FILE *f, const char *s, size_t len)
{
	fputc('"', f);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		switch (c) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\b': fputs("\\b", f); break;
		case '\f': fputs("\\f", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		default:
			if (c < 0x20)
				fprintf(f, "\\u%04x", c);
			else
				fputc(c, f);
		}
	}
	fputc('"', f);
}

void cli_json_double(FILE *f, double v)
{
	char buf[40];
	if (!isfinite(v)) {
		fputs("null", f);
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, sizeof buf, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	fputs(buf, f);
}

void cli_print_name(FILE *f, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\x%02x", c);
		else
			fputc(c, f);
	}
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

void cli_progress_start(cli_progress *p, const char *label, uint64_t total)
{
	memset(p, 0, sizeof *p);
	p->enabled = isatty(STDERR_FILENO) && !getenv("ST_NO_PROGRESS");
	p->total = total;
	p->label = label;
	p->start = p->last = cli_now();
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
	char r[32];
	cli_fmt_bytes(r, sizeof r, (uint64_t)rate);
	fprintf(stderr, "\r%s [%.*s%*s] %3d%% %s / %s  %s/s \033[K",
	        p->label ? p->label : "", fill,
	        "##############################", width - fill, "",
	        (int)(frac * 100), done, total, r);
	fflush(stderr);
}

void cli_progress_done(cli_progress *p)
{
	if (p->enabled) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
}
