/*
 * tokenizer_load.c - loading GPT-2's tokenizer (see tokenizer.h):
 * tokenizer.json, or vocab.json + merges.txt, checked and built into the
 * tables of tokenizer_impl.h (the vocabulary in both domains, the merge
 * ranks, the added tokens). Every refusal is one line naming the file.
 */
#include "gpt2/tokenizer_impl.h"
#include "fe/json.h"
#include "gpt2/internal.h"
#include <st/gguf.h>


#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

/* ---- files ------------------------------------------------------------ */

int gpt2_tok_read_file(const char *path, char **buf, size_t *len, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return gpt2_err(err, errlen, "%s: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fileno(f), &st) != 0) {
		int e = errno;
		fclose(f);
		return gpt2_err(err, errlen, "%s: %s", path, strerror(e));
	}
	if (!S_ISREG(st.st_mode)) {
		fclose(f);
		return gpt2_err(err, errlen, "%s: not a regular file", path);
	}
	if ((uint64_t)st.st_size > MAX_FILE_SIZE) {
		fclose(f);
		return gpt2_err(err, errlen, "%s: file too large (%lld bytes, expected at most %zu)",
		            path, (long long)st.st_size, MAX_FILE_SIZE);
	}
	size_t size = (size_t)st.st_size;
	char *b = malloc(size + 1);
	if (!b) {
		fclose(f);
		return gpt2_err(err, errlen, "%s: out of memory", path);
	}
	size_t got = fread(b, 1, size, f);
	int rerr = ferror(f);
	fclose(f);
	if (rerr || got != size) {
		free(b);
		return gpt2_err(err, errlen, "%s: read error%s", path, rerr ? "" : " (file changed size)");
	}
	b[size] = 0;
	*buf = b;
	*len = size;
	return 0;
}

const char *gpt2_tok_show(char *buf, const char *s, size_t len)
{
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if ((c & 0xC0) != 0x80 && o >= 64) {
			memcpy(buf + o, "...", 4);
			return buf;
		}
		if (c < 0x20 || c == 0x7f)
			o += (size_t)snprintf(buf + o, SHOW_MAX - o, "\\x%02x", c);
		else
			buf[o++] = (char)c;
	}
	buf[o] = 0;
	return buf;
}

static int file_exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* ---- hash tables (the inserting side) ------------------------------------ */

/*
 * A seed for the hash tables, new for each tokenizer. The hashes below are
 * easy to invert: with them fixed, a vocab.json of 100000 keys made to fall
 * into one slot took 16 s to load (a million, half an hour). Whoever writes
 * the file cannot know the seed. The results never depend on it.
 */
static uint64_t random_seed(const void *salt)
{
	uint64_t seed;
	if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) != (ssize_t)sizeof seed) {
		/* No entropy yet (early boot): the clock and an address. */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		seed = ((uint64_t)ts.tv_sec << 32 ^ (uint64_t)ts.tv_nsec) *
		               0x9E3779B97F4A7C15ull ^
		       (uint64_t)(uintptr_t)salt;
	}
	return seed;
}

static void key_insert(gpt2_tokenizer *t, uint32_t id)
{
	uint64_t h = hash_bytes(t->seed, t->key_data + t->key_off[id], t->key_len[id]);
	uint32_t i = (uint32_t)h & t->key_mask;
	while (t->key_tab[i])
		i = (i + 1) & t->key_mask;
	t->key_tab[i] = id + 1;
}

/* Later duplicates replace earlier ones, as in Hugging Face's merge map. */
static void merge_insert(gpt2_tokenizer *t, int32_t a, int32_t b, uint32_t rank, int32_t id)
{
	uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
	uint64_t i = mix64(key ^ t->seed) & t->merge_mask;
	while (t->merges[i].key != UINT64_MAX && t->merges[i].key != key)
		i = (i + 1) & t->merge_mask;
	t->merges[i].key = key;
	t->merges[i].rank = rank;
	t->merges[i].id = id;
}

/* ---- loading ------------------------------------------------------------------ */

static int json_int_id(const json_node *v, int32_t *id)
{
	if (!json_is_number(v))
		return -1;
	double d = json_number(v);
	if (!(d >= 0 && d < MAX_IDS) || d != (double)(int32_t)d)
		return -1;
	*id = (int32_t)d;
	return 0;
}

/* The vocabulary object {"token": id, ...}. */
static int load_vocab_object(load_state *ls, const json_node *obj, const char *where)
{
	if (!json_is_object(obj))
		return gpt2_err(ls->err, ls->errlen, "%s: %s is not an object", ls->vocab_path, where);
	size_t n = 0;
	for (const json_node *c = json_first(obj); c; c = json_next(c))
		n++;
	ls->vocab = calloc(n ? n : 1, sizeof *ls->vocab);
	if (!ls->vocab)
		return gpt2_err(ls->err, ls->errlen, "%s: out of memory", ls->vocab_path);
	for (const json_node *c = json_first(obj); c; c = json_next(c)) {
		vocab_entry *e = &ls->vocab[ls->n_vocab];
		char sa[SHOW_MAX];
		if (json_int_id(c, &e->id) != 0)
			return gpt2_err(ls->err, ls->errlen,
			            "%s: %s: token '%s' has id %s (expected an integer in [0, %d))",
			            ls->vocab_path, where, gpt2_tok_show(sa, json_key(c), strlen(json_key(c))),
			            json_is_number(c) ? "out of range" : "not a number", MAX_IDS);
		e->key = json_key(c);
		e->len = strlen(json_key(c));
		ls->n_vocab++;
	}
	return 0;
}

/* Split "a b" into two tokens; -1 unless there is exactly one space with
 * something on both sides. */
static int split_merge(const char *s, merge_entry *m)
{
	const char *sp = strchr(s, ' ');
	if (!sp || sp == s || !sp[1] || strchr(sp + 1, ' '))
		return -1;
	m->a = s;
	m->alen = (size_t)(sp - s);
	m->b = sp + 1;
	m->blen = strlen(sp + 1);
	return 0;
}

static int load_tokenizer_json(load_state *ls, const json_node *root)
{
	const char *path = ls->vocab_path;
	if (!json_is_object(root))
		return gpt2_err(ls->err, ls->errlen, "%s: not a JSON object", path);

	char sa[SHOW_MAX];
	/* The model: BPE. */
	const json_node *model = json_get(root, "model");
	if (!json_is_object(model))
		return gpt2_err(ls->err, ls->errlen, "%s: model is missing or not an object", path);
	const json_node *type = json_get(model, "type");
	if (type && (!json_is_string(type) || strcmp(json_string(type), "BPE") != 0))
		return gpt2_err(ls->err, ls->errlen, "%s: model: type '%s' is not supported (expected BPE)",
		            path, json_is_string(type)
		                  ? gpt2_tok_show(sa, json_string(type), strlen(json_string(type)))
		                  : "?");
	const json_node *v = json_get(model, "unk_token");
	if (json_is_string(v)) {
		ls->unk = json_string(v);
		ls->unk_len = strlen(ls->unk);
	}
	v = json_get(model, "ignore_merges");
	if (json_is_bool(v))
		ls->ignore_merges = json_is_true(v);
	ls->t->byte_fallback = json_is_true(json_get(model, "byte_fallback"));
	ls->t->fuse_unk = json_is_true(json_get(model, "fuse_unk"));
	/* The normalizer, pre-tokenizer and post-processor around the model. */
	if (gpt2_tok_pipeline_json(ls, root) != 0)
		return -1;
	v = json_get(model, "dropout");
	if (v && !json_is_null(v) && !(json_is_number(v) && json_number(v) == 0))
		return gpt2_err(ls->err, ls->errlen, "%s: model: dropout is not supported (expected null)", path);
	const char *affix[] = {"continuing_subword_prefix", "end_of_word_suffix"};
	for (int i = 0; i < 2; i++) {
		v = json_get(model, affix[i]);
		if (v && !json_is_null(v) && !(json_is_string(v) && !json_string(v)[0]))
			return gpt2_err(ls->err, ls->errlen, "%s: model: %s is not supported (expected empty)",
			            path, affix[i]);
	}

	if (load_vocab_object(ls, json_get(model, "vocab"), "model.vocab") != 0)
		return -1;

	const json_node *merges = json_get(model, "merges");
	if (merges && !json_is_array(merges))
		return gpt2_err(ls->err, ls->errlen, "%s: model.merges is not an array", path);
	size_t n = (size_t)json_size(merges);
	ls->mergev = calloc(n ? n : 1, sizeof *ls->mergev);
	if (!ls->mergev)
		return gpt2_err(ls->err, ls->errlen, "%s: out of memory", path);
	size_t i = 0;
	for (const json_node *m = merges ? json_first(merges) : NULL; m; m = json_next(m), i++) {
		merge_entry *e = &ls->mergev[i];
		e->where = i;
		if (json_is_string(m)) {
			if (split_merge(json_string(m), e) != 0)
				return gpt2_err(ls->err, ls->errlen,
				            "%s: model.merges[%zu]: '%s' is not two tokens separated by one space",
				            path, i, gpt2_tok_show(sa, json_string(m), strlen(json_string(m))));
		} else if (json_is_array(m) && json_size(m) == 2 &&
		           json_is_string(json_first(m)) && json_is_string(json_next(json_first(m)))) {
			e->a = json_string(json_first(m));
			e->alen = strlen(e->a);
			e->b = json_string(json_next(json_first(m)));
			e->blen = strlen(e->b);
		} else {
			return gpt2_err(ls->err, ls->errlen,
			            "%s: model.merges[%zu]: expected a string \"a b\" or a pair [\"a\", \"b\"]",
			            path, i);
		}
	}
	ls->n_merges = i;

	/* Added tokens: found in the text before pre-tokenization. */
	const json_node *added = json_get(root, "added_tokens");
	if (added && !json_is_null(added) && !json_is_array(added))
		return gpt2_err(ls->err, ls->errlen, "%s: added_tokens is not an array", path);
	n = added && json_is_array(added) ? (size_t)json_size(added) : 0;
	ls->added = calloc(n ? n : 1, sizeof *ls->added);
	if (!ls->added)
		return gpt2_err(ls->err, ls->errlen, "%s: out of memory", path);
	i = 0;
	for (const json_node *a = n ? json_first(added) : NULL; a; a = json_next(a), i++) {
		const json_node *content = json_get(a, "content");
		const json_node *id = json_get(a, "id");
		added_token *e;
		if (!json_is_string(content))
			return gpt2_err(ls->err, ls->errlen, "%s: added_tokens[%zu]: content is missing", path, i);
		/* The id must be there, but its value is not used (build). */
		if (!json_is_number(id))
			return gpt2_err(ls->err, ls->errlen, "%s: added_tokens[%zu]: id is missing", path, i);
		/* Hugging Face skips empty tokens. */
		if (!json_string(content)[0])
			continue;
		const char *unsupported[] = {"lstrip", "rstrip", "single_word"};
		for (int k = 0; k < 3; k++)
			if (json_is_true(json_get(a, unsupported[k])))
				return gpt2_err(ls->err, ls->errlen,
				            "%s: added_tokens[%zu] '%s': %s is not supported (expected false)",
				            path, i,
				            gpt2_tok_show(sa, json_string(content), strlen(json_string(content))),
				            unsupported[k]);
		e = &ls->added[ls->n_added++];
		e->text = (char *)json_string(content); /* borrowed while loading */
		e->len = strlen(json_string(content));
		e->special = json_is_true(json_get(a, "special"));
	}
	return 0;
}

/* merges.txt: a "#version" line, then one "a b" per line; the line order is
 * the rank. Empty lines are skipped; a "\r" before "\n" is dropped. */
static int load_merges_txt(load_state *ls, char *text, size_t len)
{
	size_t n_lines = 1;
	for (size_t i = 0; i < len; i++)
		n_lines += text[i] == '\n';
	ls->mergev = calloc(n_lines, sizeof *ls->mergev);
	if (!ls->mergev)
		return gpt2_err(ls->err, ls->errlen, "%s: out of memory", ls->merges_path);
	size_t line_no = 0;
	char *p = text, *end = text + len;
	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		char *e = nl ? nl : end;
		line_no++;
		if (memchr(p, 0, (size_t)(e - p)))
			return gpt2_err(ls->err, ls->errlen, "%s: line %zu: holds a NUL byte", ls->merges_path, line_no);
		*e = 0;
		if (e > p && e[-1] == '\r')
			e[-1] = 0;
		if (p[0] && strncmp(p, "#version", 8) != 0) {
			merge_entry *m = &ls->mergev[ls->n_merges];
			if (split_merge(p, m) != 0)
				return gpt2_err(ls->err, ls->errlen,
				            "%s: line %zu: expected two tokens separated by one space",
				            ls->merges_path, line_no);
			m->where = line_no;
			ls->n_merges++;
		}
		p = e + 1;
	}
	return 0;
}

static uint32_t pow2_at_least(size_t n)
{
	uint32_t c = 16;
	while (c < n)
		c <<= 1;
	return c;
}

/* Byte order, a prefix before the texts it begins. */
static int cmp_added(const void *a, const void *b)
{
	const added_token *x = a, *y = b;
	int c = memcmp(x->text, y->text, x->len < y->len ? x->len : y->len);
	if (c)
		return c;
	return (x->len > y->len) - (x->len < y->len);
}

gpt2_tokenizer *gpt2_tok_new(void)
{
	gpt2_tokenizer *t = calloc(1, sizeof *t);
	if (t) {
		t->bos = t->eos = t->unk_id = -1;
		memset(t->byte_tok, 0xff, sizeof t->byte_tok);
	}
	return t;
}

/*
 * The bytes a SentencePiece-style token decodes to, written at
 * t->tok_data + off: U+2581 is a space, a <0xNN> token its byte (Hugging
 * Face's Replace and ByteFallback decoders). Returns the new offset.
 */
static size_t raw_decoding(gpt2_tokenizer *t, uint32_t id, size_t off)
{
	const char *k = t->key_data + t->key_off[id];
	size_t kl = t->key_len[id];
	for (unsigned b = 0; b < 256; b++)
		if (t->byte_tok[b] == (int32_t)id) {
			t->tok_data[off] = (char)b;
			return off + 1;
		}
	for (size_t j = 0; j < kl;) {
		if (kl - j >= 3 && memcmp(k + j, "\xe2\x96\x81", 3) == 0) {
			t->tok_data[off++] = ' ';
			j += 3;
		} else {
			t->tok_data[off++] = k[j++];
		}
	}
	return off;
}

/* Build the tokenizer's tables from what was loaded. */
int gpt2_tok_build(gpt2_tokenizer *t, load_state *ls)
{
	const char *vpath = ls->vocab_path;
	char *err = ls->err;
	size_t errlen = ls->errlen;

	t->seed = random_seed(t);

	/* The model's id space; added tokens come after it (below). */
	int32_t max_id = -1;
	for (size_t i = 0; i < ls->n_vocab; i++)
		max_id = ls->vocab[i].id > max_id ? ls->vocab[i].id : max_id;
	size_t nid = (size_t)max_id + 1;

	/* The char-domain keys of the model vocabulary. */
	size_t key_bytes = 0;
	for (size_t i = 0; i < ls->n_vocab; i++)
		key_bytes += ls->vocab[i].len;
	t->key_off = malloc((nid ? nid : 1) * sizeof *t->key_off);
	t->key_len = malloc((nid ? nid : 1) * sizeof *t->key_len);
	t->key_data = malloc(key_bytes ? key_bytes : 1);
	t->key_mask = pow2_at_least(ls->n_vocab * 2) - 1;
	t->key_tab = calloc((size_t)t->key_mask + 1, sizeof *t->key_tab);
	if (!t->key_off || !t->key_len || !t->key_data || !t->key_tab)
		return gpt2_err(err, errlen, "%s: out of memory", vpath);
	for (size_t i = 0; i < nid; i++)
		t->key_len[i] = UINT32_MAX;
	size_t off = 0;
	for (size_t i = 0; i < ls->n_vocab; i++) {
		const vocab_entry *e = &ls->vocab[i];
		char sa[SHOW_MAX], sb[SHOW_MAX];
		if (t->key_len[e->id] != UINT32_MAX)
			return gpt2_err(err, errlen, "%s: tokens '%s' and '%s' both have id %d", vpath,
			            gpt2_tok_show(sa, t->key_data + t->key_off[e->id], t->key_len[e->id]),
			            gpt2_tok_show(sb, e->key, e->len), e->id);
		if (key_find(t, e->key, e->len) >= 0)
			return gpt2_err(err, errlen, "%s: token '%s' appears twice", vpath,
			            gpt2_tok_show(sa, e->key, e->len));
		memcpy(t->key_data + off, e->key, e->len);
		t->key_off[e->id] = (uint32_t)off;
		t->key_len[e->id] = (uint32_t)e->len;
		off += e->len;
		key_insert(t, (uint32_t)e->id);
	}

	/*
	 * Added tokens get their ids as Hugging Face gives them, whatever ids
	 * the file lists: the id of a token with the same text (added earlier
	 * or in the model), else the next id after the model's vocabulary,
	 * counted by entries, in file order. Files Hugging Face wrote list the
	 * same ids. A GGUF file numbers every token (fixed_ids).
	 */
	int32_t next_id = (int32_t)ls->n_vocab;
	uint32_t amask = pow2_at_least(ls->n_added * 2) - 1;
	uint32_t *atab = calloc((size_t)amask + 1, sizeof *atab); /* index + 1 */
	if (!atab)
		return gpt2_err(err, errlen, "%s: out of memory", vpath);
	size_t n_unique = 0;
	for (size_t i = 0; i < ls->n_added; i++) {
		added_token a = ls->added[i];
		uint32_t h = (uint32_t)hash_bytes(t->seed, a.text, a.len) & amask;
		for (;; h = (h + 1) & amask) {
			added_token *u = atab[h] ? &ls->added[atab[h] - 1] : NULL;
			if (!u) {
				/* A new text: the model's id, else the next one. */
				if (!ls->fixed_ids) {
					a.id = key_find(t, a.text, a.len);
					if (a.id < 0)
						a.id = next_id++;
				}
				ls->added[n_unique] = a;
				atab[h] = (uint32_t)++n_unique;
				break;
			}
			if (u->len == a.len && memcmp(u->text, a.text, a.len) == 0) {
				/* The same text again: same id, special if either is. */
				u->special |= a.special;
				break;
			}
		}
	}
	free(atab);
	ls->n_added = n_unique;
	t->n_ids = (int)(next_id > (int32_t)nid ? (size_t)next_id : nid);

	/* The id of each byte's one-character token (byte-level), or of its
	 * <0xNN> token (byte fallback). */
	for (unsigned b = 0; b < 256; b++) {
		char u[8];
		size_t n = utf8_put(u, byte_to_cp(b));
		t->byte_id[b] = t->byte_level ? key_find(t, u, n) : -1;
		snprintf(u, sizeof u, "<0x%02X>", b);
		t->byte_tok[b] = t->byte_level ? -1 : key_find(t, u, 6);
	}
	t->unk_id = ls->unk ? key_find(t, ls->unk, ls->unk_len) : -1;

	/* Merges: both sides and their concatenation must be tokens. */
	const char *mpath = ls->merges_path ? ls->merges_path : vpath;
	if (ls->n_merges > UINT32_MAX / 4)
		return gpt2_err(err, errlen, "%s: too many merges (%zu)", mpath, ls->n_merges);
	t->merge_mask = pow2_at_least(ls->n_merges * 2) - 1;
	t->merges = malloc((t->merge_mask + 1) * sizeof *t->merges);
	if (!t->merges)
		return gpt2_err(err, errlen, "%s: out of memory", mpath);
	for (uint64_t i = 0; i <= t->merge_mask; i++)
		t->merges[i].key = UINT64_MAX;
	char *cat = NULL;
	size_t cat_cap = 0;
	for (size_t i = 0; i < ls->n_merges; i++) {
		const merge_entry *m = &ls->mergev[i];
		char where[64], sa[SHOW_MAX];
		if (ls->merges_path)
			snprintf(where, sizeof where, "line %zu", m->where);
		else
			snprintf(where, sizeof where, "%s[%zu]",
			         ls->merges_where ? ls->merges_where : "model.merges", m->where);
		int32_t a = key_find(t, m->a, m->alen), b = key_find(t, m->b, m->blen);
		if ((a < 0 || b < 0) && ls->ranked)
			continue;
		if (a < 0 || b < 0) {
			free(cat);
			return gpt2_err(err, errlen, "%s: %s: token '%s' is not in the vocabulary", mpath,
			            where, a < 0 ? gpt2_tok_show(sa, m->a, m->alen) : gpt2_tok_show(sa, m->b, m->blen));
		}
		if (m->alen + m->blen > cat_cap) {
			cat_cap = (m->alen + m->blen) * 2;
			char *c = realloc(cat, cat_cap);
			if (!c) {
				free(cat);
				return gpt2_err(err, errlen, "%s: out of memory", mpath);
			}
			cat = c;
		}
		memcpy(cat, m->a, m->alen);
		memcpy(cat + m->alen, m->b, m->blen);
		int32_t ab = key_find(t, cat, m->alen + m->blen);
		if (ab < 0 && ls->ranked)
			continue;
		if (ab < 0) {
			gpt2_err(err, errlen, "%s: %s: merged token '%s' is not in the vocabulary",
			     mpath, where, gpt2_tok_show(sa, cat, m->alen + m->blen));
			free(cat);
			return -1;
		}
		merge_insert(t, a, b, ls->ranked ? m->rank : (uint32_t)i, ab);
	}
	free(cat);

	/* Decoding: model tokens spell bytes in the alphabet (a token with a
	 * character outside it decodes to its own UTF-8, as Hugging Face's
	 * ByteLevel decoder does); added tokens decode to their text. */
	size_t data_bytes = key_bytes;
	for (size_t i = 0; i < ls->n_added; i++)
		data_bytes += ls->added[i].len;
	size_t model_nid = nid;
	nid = (size_t)t->n_ids;
	t->tok_off = calloc(nid + 1, sizeof *t->tok_off);
	t->tok_ok = calloc(nid ? nid : 1, 1);
	t->tok_data = malloc(data_bytes ? data_bytes : 1);
	if (!t->tok_off || !t->tok_ok || !t->tok_data)
		return gpt2_err(err, errlen, "%s: out of memory", vpath);
	/* Added tokens take precedence over a model token with the same id. */
	const char **added_text = calloc(nid ? nid : 1, sizeof *added_text);
	size_t *added_len = calloc(nid ? nid : 1, sizeof *added_len);
	if (!added_text || !added_len) {
		free(added_text);
		free(added_len);
		return gpt2_err(err, errlen, "%s: out of memory", vpath);
	}
	for (size_t i = 0; i < ls->n_added; i++) {
		added_text[ls->added[i].id] = ls->added[i].text;
		added_len[ls->added[i].id] = ls->added[i].len;
	}
	off = 0;
	for (size_t id = 0; id < nid; id++) {
		t->tok_off[id] = (uint32_t)off;
		if (added_text[id]) {
			memcpy(t->tok_data + off, added_text[id], added_len[id]);
			off += added_len[id];
			t->tok_ok[id] = 1;
		} else if (id < model_nid && t->key_len[id] != UINT32_MAX && !t->byte_level) {
			off = raw_decoding(t, (uint32_t)id, off);
			t->tok_ok[id] = 1;
		} else if (id < model_nid && t->key_len[id] != UINT32_MAX) {
			const unsigned char *k = (const unsigned char *)t->key_data + t->key_off[id];
			size_t kl = t->key_len[id], o = off, j = 0;
			while (j < kl) {
				size_t bad, sl = utf8_seq(k + j, kl - j, &bad);
				int byte = sl ? cp_to_byte(utf8_get(k + j, &sl)) : -1;
				if (byte < 0)
					break;
				t->tok_data[o++] = (char)byte;
				j += sl;
			}
			if (j < kl) {
				memcpy(t->tok_data + off, k, kl);
				o = off + kl;
			}
			off = o;
			t->tok_ok[id] = 1;
		}
	}
	t->tok_off[nid] = (uint32_t)off;
	free(added_text);
	free(added_len);

	/* Added tokens, in byte order for added_at. */
	t->added = calloc(ls->n_added ? ls->n_added : 1, sizeof *t->added);
	if (!t->added)
		return gpt2_err(err, errlen, "%s: out of memory", vpath);
	for (size_t i = 0; i < ls->n_added; i++) {
		added_token *a = &t->added[t->n_added];
		a->text = malloc(ls->added[i].len);
		if (!a->text)
			return gpt2_err(err, errlen, "%s: out of memory", vpath);
		memcpy(a->text, ls->added[i].text, ls->added[i].len);
		a->len = ls->added[i].len;
		a->id = ls->added[i].id;
		a->special = ls->added[i].special;
		t->n_added++;
		t->added_first[(unsigned char)a->text[0]] = 1;
	}
	qsort(t->added, t->n_added, sizeof *t->added, cmp_added);

	t->eot = -1;
	for (size_t i = 0; i < t->n_added && t->eot < 0; i++)
		if (t->added[i].len == 13 && memcmp(t->added[i].text, "<|endoftext|>", 13) == 0)
			t->eot = t->added[i].id;
	if (t->eot < 0)
		t->eot = key_find(t, "<|endoftext|>", 13);

	t->ignore_merges = ls->ignore_merges;

	t->cache_tab = calloc((size_t)1 << CACHE_BITS, sizeof *t->cache_tab);
	t->cache_entries = malloc(CACHE_MAX_ENTRIES * sizeof *t->cache_entries);
	t->cache_keys = malloc(CACHE_KEY_ARENA);
	t->cache_ids = malloc(CACHE_ID_ARENA * sizeof *t->cache_ids);
	if (!t->cache_tab || !t->cache_entries || !t->cache_keys || !t->cache_ids || gpt2_tok_ucd_build(t) != 0)
		return gpt2_err(err, errlen, "%s: out of memory", vpath);
	return 0;
}

/*
 * The files must be UTF-8, as Hugging Face reads them (Rust strings, or
 * Python's open(encoding="utf-8")). Then every token, added ones included,
 * is whole characters, which the encoder relies on: an added token holding
 * half a character would split one in the text, and the pre-tokenizer
 * would read the rest of it past the end of the stretch.
 */
static int check_utf8(const char *path, const char *buf, size_t len, char *err, size_t errlen)
{
	size_t ok = utf8_valid_prefix((const unsigned char *)buf, len);
	if (ok < len)
		return gpt2_err(err, errlen, "%s: not valid UTF-8 (at byte %zu)", path, ok);
	return 0;
}

static int load(gpt2_tokenizer **out, const char *json_path, const char *merges_path,
                char *err, size_t errlen)
{
	*out = NULL;
	load_state ls = {0};
	ls.vocab_path = json_path;
	ls.merges_path = merges_path;
	ls.err = err;
	ls.errlen = errlen;

	char *json = NULL, *mtext = NULL;
	size_t json_len = 0, mlen = 0;
	json_node *root = NULL;
	gpt2_tokenizer *t = gpt2_tok_new();
	int rc = -1;
	if (!t)
		return gpt2_err(err, errlen, "%s: out of memory", json_path);
	ls.t = t;

	if (gpt2_tok_read_file(json_path, &json, &json_len, err, errlen) != 0 ||
	    check_utf8(json_path, json, json_len, err, errlen) != 0)
		goto done;
	size_t at;
	root = json_parse(json, json_len, &at);
	if (!root) {
		gpt2_err(err, errlen, "%s: not valid JSON (error at byte %zu)", json_path, at);
		goto done;
	}
	if (merges_path) {
		if (load_vocab_object(&ls, root, "vocabulary") != 0)
			goto done;
		if (gpt2_tok_read_file(merges_path, &mtext, &mlen, err, errlen) != 0 ||
		    check_utf8(merges_path, mtext, mlen, err, errlen) != 0 ||
		    load_merges_txt(&ls, mtext, mlen) != 0)
			goto done;
		/* transformers registers <|endoftext|> as bos/eos/unk, which makes
		 * it a special added token (with the next free id when the
		 * vocabulary lacks it). */
		ls.added = calloc(1, sizeof *ls.added);
		if (!ls.added) {
			gpt2_err(err, errlen, "%s: out of memory", json_path);
			goto done;
		}
		ls.added[0].text = (char *)"<|endoftext|>";
		ls.added[0].len = 13;
		ls.added[0].special = 1;
		ls.n_added = 1;
		/* ByteLevel's defaults. */
		t->pre[0].kind = PRE_BYTELEVEL;
		t->pre[0].use_regex = 1;
		t->n_pre = 1;
		t->byte_level = 1;
	} else if (load_tokenizer_json(&ls, root) != 0) {
		goto done;
	}
	if (ls.n_vocab == 0) {
		gpt2_err(err, errlen, "%s: the vocabulary is empty", json_path);
		goto done;
	}
	if (gpt2_tok_build(t, &ls) != 0)
		goto done;
	*out = t;
	t = NULL;
	rc = 0;
done:
	gpt2_tokenizer_free(t);
	free(ls.vocab);
	free(ls.mergev);
	free(ls.added);
	json_free(root);
	free(json);
	free(mtext);
	return rc;
}

int gpt2_tokenizer_load_files(gpt2_tokenizer **out, const char *json_path,
                              const char *merges_txt, char *err, size_t errlen)
{
	return load(out, json_path, merges_txt, err, errlen);
}

int gpt2_tokenizer_load(gpt2_tokenizer **out, const char *dir, char *err, size_t errlen)
{
	*out = NULL;
	size_t n = strlen(dir) + 32;
	char *a = malloc(n), *b = malloc(n);
	int rc = -1;
	if (!a || !b) {
		gpt2_err(err, errlen, "%s: out of memory", dir);
		goto done;
	}
	snprintf(a, n, "%s/tokenizer.json", dir);
	if (file_exists(a)) {
		rc = load(out, a, NULL, err, errlen);
		goto done;
	}
	snprintf(a, n, "%s/vocab.json", dir);
	snprintf(b, n, "%s/merges.txt", dir);
	if (file_exists(a) && file_exists(b)) {
		rc = load(out, a, b, err, errlen);
		goto done;
	}
	gpt2_err(err, errlen, "%s: no tokenizer.json, or vocab.json and merges.txt", dir);
done:
	free(a);
	free(b);
	return rc;
}

/* The tokenizer_config.json in the directory of path (dir: path itself),
 * when there is one. */
static int load_config(gpt2_tokenizer *t, const char *path, int dir, char *err, size_t errlen)
{
	size_t n = strlen(path);
	char *c = malloc(n + 32);
	if (!c)
		return gpt2_err(err, errlen, "%s: out of memory", path);
	memcpy(c, path, n + 1);
	if (!dir) {
		char *slash = strrchr(c, '/');
		n = slash ? (size_t)(slash - c) : 0;
		if (!slash)
			c[n++] = '.';
	}
	snprintf(c + n, 32, "/tokenizer_config.json");
	int rc = file_exists(c) ? gpt2_tok_config_json(t, c, err, errlen) : 0;
	free(c);
	return rc;
}

int gpt2_tokenizer_open(gpt2_tokenizer **out, const char *path, char *err, size_t errlen)
{
	*out = NULL;
	struct stat st;
	if (stat(path, &st) != 0)
		return gpt2_err(err, errlen, "%s: %s", path, strerror(errno));
	int rc;
	if (S_ISDIR(st.st_mode)) {
		rc = gpt2_tokenizer_load(out, path, err, errlen);
	} else {
		char head[4] = {0};
		FILE *f = fopen(path, "rb");
		if (!f)
			return gpt2_err(err, errlen, "%s: %s", path, strerror(errno));
		size_t got = fread(head, 1, 4, f);
		fclose(f);
		if (st_gguf_is_gguf(head, got))
			return gpt2_tok_load_gguf(out, path, err, errlen);
		rc = load(out, path, NULL, err, errlen);
	}
	if (rc == 0 && load_config(*out, path, S_ISDIR(st.st_mode), err, errlen) != 0) {
		gpt2_tokenizer_free(*out);
		*out = NULL;
		return -1;
	}
	return rc;
}

void gpt2_tokenizer_free(gpt2_tokenizer *t)
{
	if (!t)
		return;
	free(t->tok_off);
	free(t->tok_ok);
	free(t->tok_data);
	free(t->key_off);
	free(t->key_len);
	free(t->key_data);
	free(t->key_tab);
	free(t->merges);
	for (size_t i = 0; i < t->n_added; i++)
		free(t->added[i].text);
	free(t->added);
	free(t->ucd_blocks);
	free(t->cache_tab);
	free(t->cache_entries);
	free(t->cache_keys);
	free(t->cache_ids);
	free(t->syms);
	free(t->heap);
	free(t->ranks);
	free(t->tmp);
	free(t->seg);
	gpt2_tok_pipeline_free(t);
	free(t);
}

int gpt2_tokenizer_vocab_size(const gpt2_tokenizer *t) { return t->n_ids; }

int gpt2_tokenizer_eot(const gpt2_tokenizer *t) { return t->eot; }

int gpt2_tokenizer_bos(const gpt2_tokenizer *t, int *added)
{
	if (added)
		*added = t->add_bos && t->bos >= 0;
	return t->bos;
}

int gpt2_tokenizer_eos(const gpt2_tokenizer *t, int *added)
{
	if (added)
		*added = t->add_eos && t->eos >= 0;
	return t->eos;
}

const char *gpt2_tokenizer_token_bytes(const gpt2_tokenizer *t, int32_t id, size_t *len)
{
	if (id < 0 || id >= t->n_ids || !t->tok_ok[id])
		return NULL;
	*len = t->tok_off[id + 1] - t->tok_off[id];
	return t->tok_data + t->tok_off[id];
}
