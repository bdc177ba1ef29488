/*
 * llmc.c - llm.c's GPT-2 checkpoint: header checks, a reader that copies
 * one tensor (or part of one) at a time with pread, and a writer whose
 * file is libst's atomic file (st/atomic.h).
 *
 * It does not convert dtypes or transpose: export.c does that. Every
 * number taken from a file is checked before it sizes, offsets or bounds
 * anything.
 */
#include "gpt2/llmc.h"
#include "gpt2/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The other files llm.c writes with a 256-int header, by magic. */
#define LLMC_STATE_MAGIC 20240327
#define LLMC_TOKENIZER_MAGIC 20240328
#define LLMC_LLAMA3_MAGIC 20240803

int llmc_version_dtype(int version)
{
	if (version == 3)
		return ST_DTYPE_F32;
	if (version == 5)
		return ST_DTYPE_BF16;
	return -1;
}

int llmc_dtype_version(st_dtype dtype)
{
	if (dtype == ST_DTYPE_F32)
		return 3;
	if (dtype == ST_DTYPE_BF16)
		return 5;
	return -1;
}

int llmc_pad_vocab(int vocab_size)
{
	return (vocab_size + LLMC_VOCAB_MULTIPLE - 1) / LLMC_VOCAB_MULTIPLE *
	       LLMC_VOCAB_MULTIPLE;
}

static int32_t get_i32(const unsigned char *p)
{
	uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 |
	             (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	int32_t v;
	memcpy(&v, &u, sizeof v);
	return v;
}

static void put_i32(unsigned char *p, int32_t v)
{
	uint32_t u;
	memcpy(&u, &v, sizeof u);
	p[0] = (unsigned char)u;
	p[1] = (unsigned char)(u >> 8);
	p[2] = (unsigned char)(u >> 16);
	p[3] = (unsigned char)(u >> 24);
}

void llmc_header_config(const llmc_header *h, gpt2_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->max_seq_len = h->max_seq_len;
	cfg->vocab_size = h->vocab_size;
	cfg->num_layers = h->num_layers;
	cfg->num_heads = h->num_heads;
	cfg->channels = h->channels;
	/* llm.c hardcodes both (train_gpt2.c layernorm_forward, its tokenizer). */
	cfg->layer_norm_eps = 1e-5f;
	cfg->n_eos = 1;
	cfg->eos[0] = 50256;
}

void llmc_header_from_config(llmc_header *h, const gpt2_config *cfg,
                             int version)
{
	memset(h, 0, sizeof *h);
	h->version = version;
	h->max_seq_len = cfg->max_seq_len;
	h->vocab_size = cfg->vocab_size;
	h->num_layers = cfg->num_layers;
	h->num_heads = cfg->num_heads;
	h->channels = cfg->channels;
	h->padded_vocab_size = llmc_pad_vocab(cfg->vocab_size);
}

void llmc_header_encode(const llmc_header *h,
                        unsigned char out[LLMC_HEADER_BYTES])
{
	memset(out, 0, LLMC_HEADER_BYTES);
	put_i32(out + 0, LLMC_MAGIC);
	put_i32(out + 4, h->version);
	put_i32(out + 8, h->max_seq_len);
	put_i32(out + 12, h->vocab_size);
	put_i32(out + 16, h->num_layers);
	put_i32(out + 20, h->num_heads);
	put_i32(out + 24, h->channels);
	put_i32(out + 28, h->padded_vocab_size);
}

uint64_t llmc_slot_numel(const llmc_header *h, int slot)
{
	const gpt2_param_info *p = gpt2_param(slot);
	uint64_t C = (uint64_t)h->channels;
	if (slot == GPT2_WTE)
		return (uint64_t)h->padded_vocab_size * C;
	gpt2_config cfg;
	llmc_header_config(h, &cfg);
	return gpt2_param_numel(&cfg, slot) *
	       (p->per_layer ? (uint64_t)h->num_layers : 1);
}

uint64_t llmc_slot_offset(const llmc_header *h, int slot)
{
	uint64_t off = 0;
	for (int s = 0; s < slot; s++)
		off += llmc_slot_numel(h, s);
	return off;
}

uint64_t llmc_file_size(const llmc_header *h)
{
	int dt = llmc_version_dtype(h->version);
	uint64_t es = dt < 0 ? 4 : st_dtype_bits((st_dtype)dt) / 8;
	return LLMC_HEADER_BYTES + llmc_slot_offset(h, GPT2_NUM_SLOTS) * es;
}

/* Name the format of a file that is not an llm.c GPT-2 checkpoint. */
static const char *other_format(const unsigned char *b, uint64_t n,
                                int32_t magic)
{
	if (n >= 4 && memcmp(b, "PK\x03\x04", 4) == 0)
		return ": a zip archive (a PyTorch checkpoint?), not an llm.c "
		       "checkpoint";
	if (n >= 9 && b[8] == '{' && b[5] == 0 && b[6] == 0 && b[7] == 0)
		return ": a safetensors file, not an llm.c checkpoint (give its "
		       "snapshot folder to make a .bin from it)";
	if (magic == LLMC_STATE_MAGIC)
		return ": llm.c's debug state file, not a model checkpoint";
	if (magic == LLMC_TOKENIZER_MAGIC)
		return ": llm.c's tokenizer file, not a model checkpoint";
	if (magic == LLMC_LLAMA3_MAGIC)
		return ": an llm.c Llama 3 checkpoint; only GPT-2 is supported";
	return ": not an llm.c GPT-2 checkpoint";
}

int llmc_header_parse(llmc_header *h, const void *buf, uint64_t file_size,
                      const char *name, char *err, size_t errlen)
{
	const unsigned char *b = buf;
	memset(h, 0, sizeof *h);

	/* Magic (even in a file too short for the rest), then version. */
	int32_t magic = file_size >= 4 ? get_i32(b) : LLMC_MAGIC;
	if (magic != LLMC_MAGIC)
		return gpt2_err(err, errlen, "%s: bad magic (%ld, expected %d)%s",
		                name, (long)magic, LLMC_MAGIC,
		                other_format(b, file_size, magic));
	if (file_size < LLMC_HEADER_BYTES)
		return gpt2_err(err, errlen,
		                "%s: truncated: too short for an llm.c header "
		                "(%llu bytes, expected at least %d)", name,
		                (unsigned long long)file_size, LLMC_HEADER_BYTES);
	h->version = get_i32(b + 4);
	if (llmc_version_dtype(h->version) < 0)
		return gpt2_err(err, errlen,
		                "%s: unsupported version (%ld, expected 3 = fp32 or "
		                "5 = bf16)", name, (long)h->version);

	/* Sizes: each in range, then consistent with each other. */
	h->max_seq_len = get_i32(b + 8);
	h->vocab_size = get_i32(b + 12);
	h->num_layers = get_i32(b + 16);
	h->num_heads = get_i32(b + 20);
	h->channels = get_i32(b + 24);
	h->padded_vocab_size = get_i32(b + 28);
	gpt2_config cfg;
	llmc_header_config(h, &cfg);
	char why[256];
	if (gpt2_config_check(&cfg, why, sizeof why))
		return gpt2_err(err, errlen, "%s: header: %s", name, why);
	if (h->padded_vocab_size < h->vocab_size)
		return gpt2_err(err, errlen,
		                "%s: header: padded vocabulary smaller than the "
		                "vocabulary (Vp %ld, expected at least V = %ld)",
		                name, (long)h->padded_vocab_size,
		                (long)h->vocab_size);
	/* The bound gpt2_config_check puts on V, so Vp * C cannot overflow. */
	if (h->padded_vocab_size > (1 << 24))
		return gpt2_err(err, errlen,
		                "%s: header: padded vocabulary too large (Vp %ld, "
		                "expected at most %d)", name,
		                (long)h->padded_vocab_size, 1 << 24);

	/*
	 * The file must hold exactly what the header describes. The bounds
	 * above keep this sum below 2^52, far from overflow.
	 */
	uint64_t want = llmc_file_size(h);
	if (file_size < want)
		return gpt2_err(err, errlen,
		                "%s: truncated (%llu bytes, expected %llu for the "
		                "sizes in its header)", name,
		                (unsigned long long)file_size,
		                (unsigned long long)want);
	if (file_size > want)
		return gpt2_err(err, errlen,
		                "%s: %llu bytes of trailing data (%llu bytes, "
		                "expected %llu for the sizes in its header)", name,
		                (unsigned long long)(file_size - want),
		                (unsigned long long)file_size,
		                (unsigned long long)want);
	return 0;
}

/* ---- reading ------------------------------------------------------------ */

struct llmc_reader {
	int fd;
	char *path;
	llmc_header h;
	st_dtype dtype;
	uint64_t offset[GPT2_NUM_SLOTS + 1]; /* element offsets of the slots */
};

static int pread_all(int fd, void *buf, size_t n, uint64_t off)
{
	char *p = buf;
	while (n > 0) {
		ssize_t r = pread(fd, p, n, (off_t)off);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0) {
			errno = 0; /* end of file: the file shrank */
			return -1;
		}
		p += r;
		off += (uint64_t)r;
		n -= (size_t)r;
	}
	return 0;
}

int llmc_open(llmc_reader **out, const char *path, char *err, size_t errlen)
{
	*out = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return gpt2_err(err, errlen, "%s: %s", path, strerror(errno));
	struct stat sb;
	if (fstat(fd, &sb) != 0) {
		int e = errno;
		close(fd);
		return gpt2_err(err, errlen, "%s: %s", path, strerror(e));
	}
	if (!S_ISREG(sb.st_mode)) {
		close(fd);
		return gpt2_err(err, errlen, "%s: not a regular file", path);
	}
	unsigned char hb[LLMC_HEADER_BYTES];
	uint64_t size = (uint64_t)sb.st_size;
	size_t n = size < sizeof hb ? (size_t)size : sizeof hb;
	if (pread_all(fd, hb, n, 0) != 0) {
		int e = errno;
		close(fd);
		return gpt2_err(err, errlen, "%s: cannot read the header: %s", path,
		                e ? strerror(e) : "the file shrank");
	}
	llmc_reader *r = calloc(1, sizeof *r);
	if (!r || !(r->path = strdup(path))) {
		free(r);
		close(fd);
		return gpt2_err(err, errlen, "%s: out of memory", path);
	}
	r->fd = fd;
	if (llmc_header_parse(&r->h, hb, size, path, err, errlen)) {
		llmc_close(r);
		return -1;
	}
	r->dtype = (st_dtype)llmc_version_dtype(r->h.version);
	for (int s = 0; s <= GPT2_NUM_SLOTS; s++)
		r->offset[s] = llmc_slot_offset(&r->h, s);
	*out = r;
	return 0;
}

void llmc_close(llmc_reader *r)
{
	if (!r)
		return;
	close(r->fd);
	free(r->path);
	free(r);
}

const llmc_header *llmc_reader_header(const llmc_reader *r) { return &r->h; }
const char *llmc_reader_path(const llmc_reader *r) { return r->path; }
st_dtype llmc_reader_dtype(const llmc_reader *r) { return r->dtype; }

int llmc_read(llmc_reader *r, int slot, uint64_t off, void *buf, size_t n,
              char *err, size_t errlen)
{
	uint64_t numel = r->offset[slot + 1] - r->offset[slot];
	if (off > numel || n > numel - off)
		return gpt2_err(err, errlen,
		                "%s: read of elements [%llu, %llu) outside a slot of "
		                "%llu", r->path, (unsigned long long)off,
		                (unsigned long long)(off + n),
		                (unsigned long long)numel);
	uint64_t es = st_dtype_bits(r->dtype) / 8;
	uint64_t pos = LLMC_HEADER_BYTES + (r->offset[slot] + off) * es;
	if (pread_all(r->fd, buf, n * (size_t)es, pos) != 0)
		return gpt2_err(err, errlen, "%s: read error at byte %llu: %s",
		                r->path, (unsigned long long)pos,
		                errno ? strerror(errno)
		                      : "the file shrank while being read");
	return 0;
}

/* ---- writing ------------------------------------------------------------ */

/*
 * The file is libst's atomic file (st/atomic.h): a temporary file beside
 * the target, fsync, rename, fsync of the directory; the temporary removed
 * on any failure, and those of killed runs by the next one.
 */
struct llmc_writer {
	st_atomic *a;
	uint64_t written, want;
};

static int writer_put(llmc_writer *w, const void *buf, size_t n, char *err,
                      size_t errlen)
{
	st_error e;
	if (st_atomic_write(w->a, buf, n, &e) != ST_OK)
		return gpt2_err(err, errlen, "%s", e.message);
	w->written += n;
	return 0;
}

int llmc_writer_open(llmc_writer **out, const char *path,
                     const llmc_header *h, char *err, size_t errlen)
{
	*out = NULL;
	llmc_writer *w = calloc(1, sizeof *w);
	if (!w)
		return gpt2_err(err, errlen, "%s: out of memory", path);
	w->want = llmc_file_size(h);
	unsigned char hb[LLMC_HEADER_BYTES];
	llmc_header_encode(h, hb);
	st_error e;
	if (st_atomic_open(&w->a, path, &e) != ST_OK) {
		free(w);
		return gpt2_err(err, errlen, "%s", e.message);
	}
	if (writer_put(w, hb, sizeof hb, err, errlen)) {
		llmc_writer_free(w);
		return -1;
	}
	*out = w;
	return 0;
}

int llmc_writer_write(llmc_writer *w, const void *buf, size_t n, char *err,
                      size_t errlen)
{
	if (w->written + n > w->want)
		return gpt2_err(err, errlen, "more parameter bytes than the header "
		                "describes (%llu, expected %llu)",
		                (unsigned long long)(w->written + n),
		                (unsigned long long)w->want);
	return writer_put(w, buf, n, err, errlen);
}

int llmc_writer_finish(llmc_writer *w, char *err, size_t errlen)
{
	if (w->written != w->want)
		return gpt2_err(err, errlen, "fewer parameter bytes than the header "
		                "describes (%llu, expected %llu)",
		                (unsigned long long)w->written,
		                (unsigned long long)w->want);
	st_error e;
	if (st_atomic_commit(w->a, &e) != ST_OK)
		return gpt2_err(err, errlen, "%s", e.message);
	return 0;
}

void llmc_writer_free(llmc_writer *w)
{
	if (!w)
		return;
	st_atomic_close(w->a);
	free(w);
}
