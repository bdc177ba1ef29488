/*
 * verify_jobs.c - the plan of st_verify (one job per file to read) and
 * the threads that run it: each file is read once, hashed, and, when it
 * holds weights, checked and its tensors hashed in the same pass. It
 * does not decide what to read (verify.c, verify_hf.c) nor where links
 * lead (verify_fs.c).
 */
#include "verify_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- jobs: one file to read ------------------------------------------------- */

struct job *st__verify_plan_add(struct plan *pl)
{
	if (pl->n == pl->cap) {
		size_t cap = pl->cap ? 2 * pl->cap : 64;
		struct job *nj = realloc(pl->j, cap * sizeof *nj);
		if (!nj) {
			pl->oom = 1;
			return NULL;
		}
		pl->j = nj;
		pl->cap = cap;
	}
	struct job *j = &pl->j[pl->n++];
	memset(j, 0, sizeof *j);
	j->algo = -1;
	j->expected_size = UINT64_MAX;
	return j;
}

void st__verify_job_free(struct job *j)
{
	free(j->disk);
	free(j->label);
	free(j->name);
	free(j->known_as);
	free(j->hash_path);
}

/* ---- the reading threads ----------------------------------------------------- */

/*
 * Where format problems go: under name, the message's own leading
 * "prefix: " (the path the check was given) replaced by it.
 */
struct collect {
	st_verify *v;
	const char *name, *prefix;
};

static void on_format_problem(void *ctx, int severity, const char *message)
{
	struct collect *c = ctx;
	if (severity != ST_PROBLEM_ERROR)
		return;
	size_t n = strlen(c->prefix);
	const char *what = !strncmp(message, c->prefix, n) && message[n] == ':' &&
	                   message[n + 1] == ' ' ? message + n + 2 : message;
	st__verify_problem(c->v, ST_VERIFY_INVALID, c->name, "%s", what);
}

static void ignore_problem(void *ctx, int severity, const char *message)
{
	(void)ctx;
	(void)severity;
	(void)message;
}

/* Per-tensor hashing state for one file. */
struct tensors {
	struct st__header h;
	int parsed;
	uint64_t base;     /* file offset of the data buffer */
	size_t cur;        /* next tensor to finish */
	st_hash *hash;
	st_verify_tensor *out;
};

struct reader {
	st_verify *v;
	struct plan *pl;
	size_t *next;
	unsigned char *buf;
};

/* Feed bytes [off, off + n) of the file to the per-tensor hashes. */
static void tensors_feed(struct tensors *t, const unsigned char *p, size_t n,
                         uint64_t off)
{
	while (t->cur < t->h.n_tensors) {
		const st_tensor *x = &t->h.tensors[t->cur];
		uint64_t b = t->base + x->begin, e = t->base + x->end;
		uint64_t lo = off > b ? off : b, hi = off + n < e ? off + n : e;
		if (lo < hi)
			st_hash_update(t->hash, p + (lo - off), (size_t)(hi - lo), NULL);
		if (off + n < e)
			return; /* this tensor goes on in the next piece */
		unsigned char d[32];
		st_hash_final(t->hash, d, NULL);
		st_hash_hex(d, 32, t->out[t->cur].sha256);
		st_hash_reset(t->hash, NULL);
		t->cur++;
	}
}

/*
 * Read one file: hash it, keep its header, hash its tensors. Returns
 * ST_OK, or a problem already reported.
 */
static void run_job(struct reader *rd, struct job *j)
{
	st_verify *v = rd->v;
	int fd = open(j->disk, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat sb;
	if (fd < 0 || fstat(fd, &sb) < 0) {
		st__verify_problem(v, ST_VERIFY_UNREADABLE, j->label, "cannot read: %s",
		                   strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	if (!S_ISREG(sb.st_mode)) {
		st__verify_problem(v, ST_VERIFY_NOT_REGULAR, j->label,
		                   "not a regular file; skipped, not read");
		close(fd);
		return;
	}
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	uint64_t size = (uint64_t)sb.st_size;
	/*
	 * Sizes before hashes: a file whose size is not the listing's cannot
	 * match its hash, and hashing a sparse terabyte to learn so takes an
	 * hour. It is not hashed; only its header is read for the format check.
	 */
	int size_bad = j->expected_size != UINT64_MAX && size != j->expected_size;
	if (size_bad && size < j->expected_size)
		st__verify_problem(v, ST_VERIFY_TRUNCATED, j->label, "truncated: holds "
		                   "%llu of its %llu bytes (%s); not hashed%s",
		                   (unsigned long long)size,
		                   (unsigned long long)j->expected_size, j->size_source,
		                   j->known_as ? j->known_as : "");
	else if (size_bad)
		st__verify_problem(v, ST_VERIFY_CORRUPT, j->label, "holds %llu bytes, "
		                   "%s says %llu; not hashed%s", (unsigned long long)size,
		                   j->size_source, (unsigned long long)j->expected_size,
		                   j->known_as ? j->known_as : "");
	int algo = size_bad ? -1 : j->algo >= 0 ? j->algo
	         : j->hash_mode ? ST_HASH_SHA256 : -1;
	st_hash *h = NULL;
	if (algo >= 0 && st_hash_new(&h, (st_hash_algo)algo, NULL) != ST_OK) {
		v->oom = 1;
		close(fd);
		return;
	}
	if (algo == ST_HASH_GIT_SHA1)
		st_hash_git_begin(h, size, NULL);

	/*
	 * The safetensors header, kept from the bytes the hash reads. In hash
	 * mode any file may be one (blobs have no extension): a header that
	 * does not parse just means no per-tensor hashes, not a problem.
	 */
	int want_tensors = j->hash_mode && (v->opt->flags & ST_VERIFY_TENSORS);
	int want_header = j->validate == V_SAFETENSORS || want_tensors;
	unsigned char head[64];
	size_t head_len = 0;
	char *hdr = NULL;
	uint64_t hdr_n = 0, hdr_got = 0;
	int hdr_state = want_header ? 0 : -1; /* 0 prefix, 1 header, 2 done */
	struct tensors tz;
	memset(&tz, 0, sizeof tz);
	struct collect col = {v, j->name, j->name};
	struct st__report rep = {.path = j->name, .fn = on_format_problem,
	                         .ctx = &col};
	if (j->hash_mode)
		rep = (struct st__report){.path = j->name, .fn = ignore_problem};

	uint64_t off = 0;
	int read_errno = 0;
	for (;;) {
		/* Not hashed: read no further than the header. */
		if (size_bad && hdr_state != 0 && hdr_state != 1)
			break;
		ssize_t k = read(fd, rd->buf, READ_BUF);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			read_errno = errno;
			break;
		}
		if (k == 0)
			break;
		const unsigned char *p = rd->buf;
		size_t n = (size_t)k;
		if (h)
			st_hash_update(h, p, n, NULL);
		/* Header capture: the first 64 bytes, then 8 + N. */
		if (hdr_state == 0) {
			size_t take = n < sizeof head - head_len ? n : sizeof head - head_len;
			memcpy(head + head_len, p + 0, take);
			head_len += take;
			if (head_len == sizeof head || head_len == size) {
				if (st__prefix_check(head, head_len, size, &hdr_n, &rep)) {
					hdr_state = -1;
				} else if (!(hdr = malloc(hdr_n ? hdr_n : 1))) {
					v->oom = 1;
					hdr_state = -1;
				} else {
					hdr_state = 1;
				}
			}
		}
		if (hdr_state == 1) {
			/* Bytes [8, 8 + N) of the file from this piece. */
			uint64_t lo = off > 8 ? off : 8, hi = off + n;
			if (hi > 8 + hdr_n)
				hi = 8 + hdr_n;
			if (lo < hi) {
				memcpy(hdr + (lo - 8), p + (lo - off), (size_t)(hi - lo));
				hdr_got += hi - lo;
			}
			if (hdr_got == hdr_n) {
				hdr_state = 2;
				/* Check now, so the tensors can be hashed from here on. */
				int rc = st__header_parse(&tz.h, hdr, (size_t)hdr_n,
				                          size - 8 - hdr_n, &rep);
				tz.parsed = rc == ST_OK && rep.n_errors == 0;
				if (want_tensors && tz.parsed && tz.h.n_tensors &&
				    (tz.out = calloc(tz.h.n_tensors, sizeof *tz.out)) &&
				    st_hash_new(&tz.hash, ST_HASH_SHA256, NULL) == ST_OK)
					tz.base = 8 + hdr_n;
				else if (want_tensors)
					tz.parsed = 0;
			}
		}
		if (tz.hash)
			tensors_feed(&tz, p, n, off);
		off += n;
		pthread_mutex_lock(&v->lock);
		v->done += n;
		if (v->opt->progress)
			v->opt->progress(v->opt->progress_ctx, v->done, v->total);
		pthread_mutex_unlock(&v->lock);
	}
	close(fd);
	/* A file too short to have a first read (0 bytes) breaks rule 1 too. */
	if (hdr_state == 0 && !read_errno && off == size)
		st__prefix_check(head, head_len, size, &hdr_n, &rep);
	pthread_mutex_lock(&v->lock);
	v->n_files++;
	v->bytes += h ? off : 0;
	if (!h && !size_bad)
		v->unverified++;
	/* The planned size counted in the total: keep progress honest. */
	if (off < j->size)
		v->done += j->size - off;
	pthread_mutex_unlock(&v->lock);

	unsigned char d[32];
	char hex[65], want[65];
	if (read_errno) {
		st__verify_problem(v, ST_VERIFY_READ_ERROR, j->label, "cannot read: %s "
		                   "(after %llu bytes)", strerror(read_errno),
		                   (unsigned long long)off);
	} else if (!size_bad && off != size) {
		st__verify_problem(v, ST_VERIFY_UNREADABLE, j->label, "changed size while "
		                   "it was read (%llu bytes, then %llu)",
		                   (unsigned long long)size, (unsigned long long)off);
	} else if (h && st_hash_final(h, d, NULL) == ST_OK) {
		size_t dn = st_hash_size((st_hash_algo)algo);
		st_hash_hex(d, dn, hex);
		if (j->algo >= 0 && memcmp(d, j->expected, dn) != 0) {
			st_hash_hex(j->expected, dn, want);
			const char *an = algo == ST_HASH_SHA256 ? "sha256" : "git blob id";
			st__verify_problem(v, ST_VERIFY_CORRUPT, j->label,
			                   "corrupt: %s of its %llu bytes is %s, %s says %s%s",
			                   an, (unsigned long long)size, hex, j->source, want,
			                   j->known_as ? j->known_as : "");
		}
		if (j->hash_mode) {
			struct fhash fh = {0};
			fh.path = strdup(j->hash_path);
			fh.size = size;
			memcpy(fh.sha256, hex, 65);
			if (tz.out && tz.cur == tz.h.n_tensors) {
				/* Names are the header's: copy them out of it. */
				size_t total = 0;
				for (size_t i = 0; i < tz.h.n_tensors; i++)
					total += tz.h.tensors[i].name_len + 1;
				if ((fh.names = malloc(total ? total : 1))) {
					char *q = fh.names;
					for (size_t i = 0; i < tz.h.n_tensors; i++) {
						const st_tensor *x = &tz.h.tensors[i];
						memcpy(q, x->name, x->name_len + 1);
						tz.out[i].name = q;
						tz.out[i].name_len = x->name_len;
						q += x->name_len + 1;
					}
					fh.tensors = tz.out;
					fh.n_tensors = tz.h.n_tensors;
					tz.out = NULL;
				}
			}
			pthread_mutex_lock(&v->lock);
			struct fhash *nf = realloc(v->f, (v->n_f + 1) * sizeof *nf);
			if (nf && fh.path) {
				v->f = nf;
				v->f[v->n_f++] = fh;
			} else {
				if (nf)
					v->f = nf;
				v->oom = 1;
				free(fh.path);
				free(fh.names);
				free(fh.tensors);
			}
			pthread_mutex_unlock(&v->lock);
		}
	}
	st_hash_free(h);
	st_hash_free(tz.hash);
	free(tz.out);
	if (tz.h.tensors || tz.h.arena)
		st__header_free(&tz.h);
	free(hdr);

	/*
	 * A PyTorch file: its zip directory and pickle; a GGUF file: its
	 * header. A few kB more, from the page cache the hash just filled.
	 */
	if ((j->validate == V_TORCH || j->validate == V_GGUF) && !read_errno &&
	    (off == size || size_bad)) {
		struct collect c = {v, j->name, j->disk};
		st_error err;
		memset(&err, 0, sizeof err);
		if (j->validate == V_GGUF) {
			if (st_gguf_check_file(j->disk, on_format_problem, &c, &err) < 0)
				st__verify_problem(v, ST_VERIFY_UNREADABLE, j->name, "cannot "
				                   "check: %s", err.message);
		} else {
			st_file *f = NULL;
			if (st_file_open(&f, j->disk, ST_OPEN_TORCH, &err) != ST_OK)
				on_format_problem(&c, ST_PROBLEM_ERROR, err.message);
			st_file_close(f);
		}
	}
}

static void *reader_main(void *arg)
{
	struct reader *rd = arg;
	for (;;) {
		pthread_mutex_lock(&rd->v->lock);
		size_t i = (*rd->next)++;
		pthread_mutex_unlock(&rd->v->lock);
		if (i >= rd->pl->n)
			break;
		run_job(rd, &rd->pl->j[i]);
	}
	return NULL;
}

static int cmp_job_size(const void *a, const void *b)
{
	const struct job *x = a, *y = b;
	/* Largest first, so the threads finish together; then by path. */
	if (x->size != y->size)
		return x->size < y->size ? 1 : -1;
	return strcmp(x->disk, y->disk);
}

void st__verify_run_plan(st_verify *v, struct plan *pl)
{
	if (pl->n)
		qsort(pl->j, pl->n, sizeof *pl->j, cmp_job_size);
	for (size_t i = 0; i < pl->n; i++)
		v->total += pl->j[i].size;
	int threads = v->opt->threads > 0 ? v->opt->threads : 1;
	if ((size_t)threads > pl->n)
		threads = pl->n ? (int)pl->n : 1;
	struct reader *rd = calloc((size_t)threads, sizeof *rd);
	pthread_t *tid = calloc((size_t)threads, sizeof *tid);
	size_t next = 0;
	int started = 0;
	for (int t = 0; rd && tid && t < threads; t++) {
		rd[t] = (struct reader){v, pl, &next, malloc(READ_BUF)};
		if (!rd[t].buf)
			break;
		/* The first reader runs on this thread. */
		if (t > 0 && pthread_create(&tid[t], NULL, reader_main, &rd[t]) != 0) {
			free(rd[t].buf);
			rd[t].buf = NULL;
			break;
		}
		started = t + 1;
	}
	if (started == 0) {
		v->oom = 1;
	} else {
		reader_main(&rd[0]);
		for (int t = 1; t < started; t++)
			pthread_join(tid[t], NULL);
	}
	for (int t = 0; rd && t < started; t++)
		free(rd[t].buf);
	free(rd);
	free(tid);
}
