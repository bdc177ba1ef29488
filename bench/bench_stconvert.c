/*
 * bench_stconvert.c - how fast and how lean stconvert is, measured against
 * cp on the same machine in the same run.
 *
 * It makes a checkpoint of F32 tensors (GPT-2-like layers: large matrices
 * plus small biases, values ~ N(0, 0.02)) of --size MB, then times, in
 * alternation and --runs times each: `cp IN COPY`, `cp` followed by an
 * fsync of the copy (stconvert fsyncs its output, cp does not), and
 * `stconvert --to bf16 IN OUT`; then, for reference, BF16 -> F32 and a
 * re-layout into shards. It prints the median wall time of each, the
 * stconvert/cp ratio and stconvert's peak RSS (wait4's ru_maxrss), and
 * removes everything it made. With --base OTHER_STCONVERT, OTHER's
 * --to bf16 is timed too, in the same alternation, for a before/after
 * figure on one machine in one run. The input is read once first so that every
 * run sees it in the page cache, and sync(2) runs before each timed
 * command so that no run pays for the previous one's writeback.
 *
 * It is not a test: nothing is asserted (see bench/README.md).
 */
#include "fe/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <st.h>

#define MAX_RUNS 15

struct result {
	double secs[MAX_RUNS];
	long rss_kib[MAX_RUNS];
	int n;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(const struct result *r)
{
	double v[MAX_RUNS];
	memcpy(v, r->secs, (size_t)r->n * sizeof v[0]);
	qsort(v, (size_t)r->n, sizeof v[0], cmp_double);
	return r->n % 2 ? v[r->n / 2] : (v[r->n / 2 - 1] + v[r->n / 2]) / 2;
}

static double best(const struct result *r)
{
	double b = r->secs[0];
	for (int i = 1; i < r->n; i++)
		if (r->secs[i] < b)
			b = r->secs[i];
	return b;
}

static long max_rss(const struct result *r)
{
	long m = 0;
	for (int i = 0; i < r->n; i++)
		if (r->rss_kib[i] > m)
			m = r->rss_kib[i];
	return m;
}

/* Run argv (stdout/stderr to /dev/null), return wall seconds; peak RSS in
 * KiB to *rss. Exits on failure. */
static double run(char *const argv[], long *rss)
{
	sync();
	double t0 = cli_now();
	pid_t pid = fork();
	if (pid < 0)
		cli_die(CLI_ERROR, "fork: %s", strerror(errno));
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0) {
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	int status;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) < 0)
		cli_die(CLI_ERROR, "wait4: %s", strerror(errno));
	double t = cli_now() - t0;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		cli_die(CLI_ERROR, "%s failed (status %d)", argv[0], status);
	if (rss)
		*rss = ru.ru_maxrss;
	return t;
}

static void fsync_file(const char *path)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0 || fsync(fd) != 0)
		cli_die(CLI_ERROR, "%s: fsync: %s", path, strerror(errno));
	close(fd);
}

static char g_work[PATH_MAX]; /* removed at exit, whatever happens */

static void rm_work(void)
{
	if (!g_work[0])
		return;
	pid_t pid = fork();
	if (pid == 0) {
		execl("/bin/rm", "rm", "-rf", g_work, (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
	g_work[0] = 0;
}

/* A cheap N(0, 0.02)-like value: the sum of four uniforms (Irwin-Hall),
 * centred and scaled. The distribution only has to look like weights. */
static float weight(uint64_t *s)
{
	float sum = 0;
	for (int k = 0; k < 4; k++) {
		*s ^= *s << 13;
		*s ^= *s >> 7;
		*s ^= *s << 17;
		sum += (float)(*s >> 40) / (float)(1u << 24);
	}
	return (sum - 2.0f) * 0.0346f;
}

/* Write the input checkpoint: layers of c_attn [C, 3C], c_proj [C, C],
 * c_fc [C, 4C], mlp_proj [4C, C] and their biases and layer norms, until
 * `bytes` is reached. Returns the number of tensors. */
static size_t make_input(const char *path, uint64_t bytes)
{
	const uint64_t C = 1024;
	st_error err;
	st_writer *w;
	if (st_writer_new(&w, &err) != ST_OK)
		cli_die(CLI_ERROR, "%s", err.message);
	uint64_t total = 0;
	size_t n = 0;
	for (int layer = 0; total < bytes; layer++) {
		static const struct { const char *name; uint64_t r, c; } shapes[] = {
			{"attn.c_attn.weight", 1, 3}, {"attn.c_attn.bias", 0, 3},
			{"attn.c_proj.weight", 1, 1}, {"attn.c_proj.bias", 0, 1},
			{"mlp.c_fc.weight", 1, 4}, {"mlp.c_fc.bias", 0, 4},
			{"mlp.c_proj.weight", 4, 1}, {"mlp.c_proj.bias", 0, 1},
			{"ln_1.weight", 0, 1}, {"ln_1.bias", 0, 1},
			{"ln_2.weight", 0, 1}, {"ln_2.bias", 0, 1},
		};
		for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
			char name[64];
			snprintf(name, sizeof name, "h.%d.%s", layer, shapes[i].name);
			uint64_t shape[2] = {shapes[i].r * C, shapes[i].c * C};
			unsigned ndim = shapes[i].r ? 2 : 1;
			if (!shapes[i].r)
				shape[0] = shape[1];
			if (st_writer_add(w, name, strlen(name), ST_DTYPE_F32, ndim, shape, &err) != ST_OK)
				cli_die(CLI_ERROR, "%s", err.message);
			total += shape[0] * (ndim == 2 ? shape[1] : 1) * 4;
			n++;
		}
	}
	if (st_writer_open(w, path, &err) != ST_OK)
		cli_die(CLI_ERROR, "%s", err.message);
	/* One 16 MiB block of values, written over and over. */
	size_t block = 4u << 20;
	float *buf = malloc(block * sizeof *buf);
	if (!buf)
		cli_die(CLI_ERROR, "out of memory");
	uint64_t s = 0x9e3779b97f4a7c15u;
	for (size_t i = 0; i < block; i++)
		buf[i] = weight(&s);
	for (uint64_t left = total; left > 0;) {
		size_t k = left < block * 4 ? (size_t)left : block * 4;
		if (st_writer_write(w, buf, k, &err) != ST_OK)
			cli_die(CLI_ERROR, "%s", err.message);
		left -= k;
	}
	if (st_writer_finish(w, &err) != ST_OK)
		cli_die(CLI_ERROR, "%s", err.message);
	st_writer_free(w);
	free(buf);
	return n;
}

static void warm(const char *path)
{
	char *argv[] = {"/bin/sh", "-c", NULL, NULL};
	char cmd[PATH_MAX + 32];
	snprintf(cmd, sizeof cmd, "cat '%s' >/dev/null", path);
	argv[2] = cmd;
	run(argv, NULL);
}

static void print_line(const char *label, const struct result *r, const struct result *ref)
{
	printf("%-30s median %6.3f s  best %6.3f s  (", label, median(r), best(r));
	for (int i = 0; i < r->n; i++)
		printf("%s%.3f", i ? " " : "", r->secs[i]);
	printf(")");
	if (max_rss(r))
		printf("  peak RSS %.1f MiB", (double)max_rss(r) / 1024);
	if (ref)
		printf("  vs cp: median %.2f best %.2f", median(r) / median(ref), best(r) / best(ref));
	printf("\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static const struct option longs[] = {
		{"size", required_argument, NULL, 's'},
		{"dir", required_argument, NULL, 'd'},
		{"bin", required_argument, NULL, 'b'},
		{"base", required_argument, NULL, 'B'},
		{"runs", required_argument, NULL, 'r'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	cli_init("bench_stconvert");
	uint64_t size_mb = 1024, runs = 3;
	const char *dir = "/tmp", *base = NULL;
	char bin[PATH_MAX];
	/* Default: the stconvert built beside this bench (build/bin). */
	char self[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
	self[len > 0 ? len : 0] = 0;
	snprintf(bin, sizeof bin, "%s/../bin/stconvert", dirname(self));
	int c;
	while ((c = getopt_long(argc, argv, "s:d:b:B:r:h", longs, NULL)) != -1) {
		switch (c) {
		case 's':
			if (cli_parse_u64(optarg, &size_mb) != 0 || size_mb == 0)
				cli_usage_error("--size: '%s' is not a number of MB", optarg);
			break;
		case 'd':
			dir = optarg;
			break;
		case 'b':
			snprintf(bin, sizeof bin, "%s", optarg);
			break;
		case 'B':
			base = optarg;
			break;
		case 'r':
			if (cli_parse_u64(optarg, &runs) != 0 || runs == 0 || runs > MAX_RUNS)
				cli_usage_error("--runs: 1 to %d", MAX_RUNS);
			break;
		case 'h':
			printf("Usage: bench_stconvert [--size MB] [--dir DIR] [--bin STCONVERT]\n"
			       "                       [--base STCONVERT] [--runs N]\n"
			       "Time stconvert --to bf16 on a --size MB (default 1024) F32 checkpoint\n"
			       "made in DIR (default /tmp) against cp of the same file; print the\n"
			       "medians, the ratio and stconvert's peak RSS. --base times another\n"
			       "stconvert (an earlier build) in the same runs.\n");
			return 0;
		default:
			cli_usage_error("unknown option");
		}
	}
	if (access(bin, X_OK) != 0)
		cli_die(CLI_ERROR, "%s: not found (build stconvert, or give --bin)", bin);

	char work[PATH_MAX];
	snprintf(work, sizeof work, "%s/bench-stconvert-XXXXXX", dir);
	if (!mkdtemp(work))
		cli_die(CLI_ERROR, "%s: %s", work, strerror(errno));
	memcpy(g_work, work, sizeof g_work);
	atexit(rm_work);
	char in[PATH_MAX + 64], copy[PATH_MAX + 64], out[PATH_MAX + 64], back[PATH_MAX + 64],
	     shards[PATH_MAX + 64];
	snprintf(in, sizeof in, "%s/f32.safetensors", work);
	snprintf(copy, sizeof copy, "%s/copy.safetensors", work);
	snprintf(out, sizeof out, "%s/bf16.safetensors", work);
	snprintf(back, sizeof back, "%s/back.safetensors", work);
	snprintf(shards, sizeof shards, "%s/shards", work);

	size_t n_tensors = make_input(in, size_mb * 1000000);
	struct stat st;
	stat(in, &st);
	char h[32];
	cli_fmt_bytes(h, sizeof h, (uint64_t)st.st_size);
	printf("input: %s F32 checkpoint, %zu tensors, in %s; %d CPUs; %d runs each\n", h,
	       n_tensors, work, cli_ncpus(), (int)runs);
	warm(in);

	struct result r_cp = {0}, r_cpsync = {0}, r_bf16 = {0}, r_f32 = {0}, r_shard = {0},
	              r_base = {0};
	char *base_argv[] = {(char *)base, "-q", "--force", "--to", "bf16", in, out, NULL};
	char *cp_argv[] = {"/bin/cp", in, copy, NULL};
	char *bf16_argv[] = {bin, "-q", "--force", "--to", "bf16", in, out, NULL};
	char *f32_argv[] = {bin, "-q", "--force", "--to", "f32", out, back, NULL};
	char *shard_argv[] = {bin, "-q", "--force", "--shard-size", "256MB", in, shards, NULL};
	for (int i = 0; i < (int)runs; i++) {
		unlink(copy);
		r_cp.secs[r_cp.n++] = run(cp_argv, NULL);
		unlink(copy);
		double t = run(cp_argv, NULL);
		double t0 = cli_now();
		fsync_file(copy);
		r_cpsync.secs[r_cpsync.n++] = t + cli_now() - t0;
		unlink(copy);
		r_bf16.secs[r_bf16.n] = run(bf16_argv, &r_bf16.rss_kib[r_bf16.n]);
		r_bf16.n++;
		if (base) {
			r_base.secs[r_base.n] = run(base_argv, &r_base.rss_kib[r_base.n]);
			r_base.n++;
		}
	}
	print_line("cp", &r_cp, NULL);
	print_line("cp + fsync", &r_cpsync, NULL);
	print_line("stconvert --to bf16", &r_bf16, &r_cp);
	if (base) {
		print_line("base stconvert --to bf16", &r_base, &r_cp);
		printf("ratio stconvert / base --to bf16: %.2f (medians), %.2f (best runs)\n",
		       median(&r_bf16) / median(&r_base), best(&r_bf16) / best(&r_base));
	}
	warm(out);
	for (int i = 0; i < (int)runs; i++) {
		r_f32.secs[r_f32.n] = run(f32_argv, &r_f32.rss_kib[r_f32.n]);
		r_f32.n++;
		unlink(back);
	}
	print_line("stconvert --to f32 (BF16 in)", &r_f32, NULL);
	for (int i = 0; i < (int)runs; i++) {
		r_shard.secs[r_shard.n] = run(shard_argv, &r_shard.rss_kib[r_shard.n]);
		r_shard.n++;
	}
	print_line("stconvert --shard-size 256MB", &r_shard, &r_cp);
	printf("ratio stconvert --to bf16 / cp: %.2f (medians), %.2f (best runs)\n",
	       median(&r_bf16) / median(&r_cp), best(&r_bf16) / best(&r_cp));
	return cli_exit(0);
}
