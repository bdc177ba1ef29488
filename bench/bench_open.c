/*
 * bench_open.c - how long opening a checkpoint takes when it is 300 GB
 * versus when it is a few bytes.
 *
 * libst reads only the 8-byte length and the JSON header on open; the data
 * is mapped or read when asked for. So opening must cost the same whatever
 * the data size. This program makes two files in a temporary directory:
 *   - big.safetensors: a header describing four 75 GB tensors (F32 and
 *     BF16), extended with ftruncate to 300 GB. The data is a hole, so it
 *     needs no disk space (the filesystem must support sparse files);
 *   - tiny.safetensors: one 4-byte tensor;
 * then times st_file_open + st_file_close and st_checkpoint_open +
 * st_checkpoint_close on each over many iterations and prints the mean
 * time per open and the ratio big / tiny. It is not a test: nothing is
 * asserted, and ctest never runs it (see bench/README.md).
 *
 * Usage: bench_open [-n ITERATIONS] [-d DIR]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <st.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * Write [u64 LE N][header padded with spaces to a multiple of 8] to path,
 * then extend the file to hold data_bytes of data (a hole when sparse).
 */
static int make_file(const char *path, const char *json, unsigned long long data_bytes)
{
	size_t len = strlen(json), padded = (len + 7) / 8 * 8;
	unsigned char *buf = malloc(8 + padded);
	if (!buf)
		return -1;
	for (int i = 0; i < 8; i++)
		buf[i] = (unsigned char)((unsigned long long)padded >> (8 * i));
	memcpy(buf + 8, json, len);
	memset(buf + 8 + len, ' ', padded - len);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int rc = -1;
	if (fd >= 0 && write(fd, buf, 8 + padded) == (ssize_t)(8 + padded) &&
	    ftruncate(fd, (off_t)(8 + padded + data_bytes)) == 0)
		rc = 0;
	if (rc)
		fprintf(stderr, "bench_open: %s: %s\n", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	free(buf);
	return rc;
}

/* Mean seconds per st_file_open + close (which 0) or checkpoint open (1). */
static double time_open(const char *path, int which, int iters)
{
	st_error err;
	double t0 = now();
	for (int i = 0; i < iters; i++) {
		int rc;
		if (which == 0) {
			st_file *f;
			rc = st_file_open(&f, path, 0, &err);
			st_file_close(rc == ST_OK ? f : NULL);
		} else {
			st_checkpoint *c;
			rc = st_checkpoint_open(&c, path, 0, &err);
			st_checkpoint_close(rc == ST_OK ? c : NULL);
		}
		if (rc != ST_OK) {
			fprintf(stderr, "bench_open: %s\n", err.message);
			exit(1);
		}
	}
	return (now() - t0) / iters;
}

int main(int argc, char **argv)
{
	int iters = 20000, ch;
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	while ((ch = getopt(argc, argv, "n:d:")) != -1) {
		if (ch == 'n' && atoi(optarg) > 0)
			iters = atoi(optarg);
		else if (ch == 'd')
			dir = optarg;
		else {
			fprintf(stderr, "usage: bench_open [-n ITERATIONS] [-d DIR]\n");
			return 2;
		}
	}

	char tmpl[4096];
	snprintf(tmpl, sizeof tmpl, "%s/bench_open.XXXXXX", dir);
	if (!mkdtemp(tmpl)) {
		fprintf(stderr, "bench_open: %s: %s\n", tmpl, strerror(errno));
		return 1;
	}
	char big[4200], tiny[4200];
	snprintf(big, sizeof big, "%s/big.safetensors", tmpl);
	snprintf(tiny, sizeof tiny, "%s/tiny.safetensors", tmpl);

	/* 4 x 75 GB: two F32 [18750000000], two BF16 [37500000000]. */
	const unsigned long long q = 75000000000ULL;
	char json[1024];
	snprintf(json, sizeof json,
	         "{\"__metadata__\":{\"format\":\"pt\"},"
	         "\"a.weight\":{\"dtype\":\"F32\",\"shape\":[250000,75000],\"data_offsets\":[0,%llu]},"
	         "\"b.weight\":{\"dtype\":\"F32\",\"shape\":[75000,250000],\"data_offsets\":[%llu,%llu]},"
	         "\"c.weight\":{\"dtype\":\"BF16\",\"shape\":[500000,75000],\"data_offsets\":[%llu,%llu]},"
	         "\"d.weight\":{\"dtype\":\"BF16\",\"shape\":[75000,500000],\"data_offsets\":[%llu,%llu]}}",
	         q, q, 2 * q, 2 * q, 3 * q, 3 * q, 4 * q);
	int rc = make_file(big, json, 4 * q);
	if (rc == 0)
		rc = make_file(tiny, "{\"__metadata__\":{\"format\":\"pt\"},"
		               "\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4);
	if (rc == 0) {
		/* Warm the page cache and the allocator before timing. */
		time_open(big, 0, 100);
		time_open(tiny, 0, 100);
		double fb = time_open(big, 0, iters), ft = time_open(tiny, 0, iters);
		double cb = time_open(big, 1, iters), ct = time_open(tiny, 1, iters);
		printf("bench_open: %d iterations each (big: 300 GB sparse, tiny: 4 B of data)\n",
		       iters);
		printf("st_file_open+close        big %8.2f us  tiny %8.2f us  ratio %.2f\n",
		       fb * 1e6, ft * 1e6, fb / ft);
		printf("st_checkpoint_open+close  big %8.2f us  tiny %8.2f us  ratio %.2f\n",
		       cb * 1e6, ct * 1e6, cb / ct);
	}
	unlink(big);
	unlink(tiny);
	rmdir(tmpl);
	return rc ? 1 : 0;
}
