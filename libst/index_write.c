/*
 * index_write.c - write a shard index (model.safetensors.index.json), and
 * the canonical shard file name.
 *
 * What it is: st_index_write and st_shard_name (include/st/index.h). The
 * bytes are those of transformers' save_pretrained:
 *   json.dumps(index, indent=2, sort_keys=True) + "\n"
 * with Python's defaults: ensure_ascii (every character outside printable
 * ASCII, DEL included, becomes \uXXXX, lowercase hex, astral characters as
 * surrogate pairs), ", " never at line ends, ": " after keys, "{}" for an
 * empty object. (huggingface_hub's save_torch_state_dict writes
 * json.dump(index, f, indent=2): insertion order and no final newline; the
 * sorted form is the one most published checkpoints carry.)
 *
 * What it is not: reading or checking an index (index.c).
 *
 * The file is replaced atomically through st/atomic.h (temporary file
 * beside it, fsync, rename, fsync of the directory; stale temporaries of
 * dead writers removed), as every file libst writes.
 */
#include "internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void st_shard_name(char *buf, size_t size, unsigned i, unsigned n)
{
	snprintf(buf, size, "model-%05u-of-%05u.safetensors", i, n);
}

/* ---- Python's json string encoding (ensure_ascii=True) -------------------- */

static void put_u(struct st__buf *b, unsigned u)
{
	st__buf_printf(b, "\\u%04x", u);
}

/* s must be valid UTF-8 (checked by the caller). */
static void py_json_string(struct st__buf *b, const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	st__buf_put(b, "\"", 1);
	size_t i = 0;
	while (i < len) {
		unsigned c = s[i];
		if (c >= 0x20 && c <= 0x7e && c != '"' && c != '\\') {
			size_t j = i;
			while (j < len && s[j] >= 0x20 && s[j] <= 0x7e && s[j] != '"' && s[j] != '\\')
				j++;
			st__buf_put(b, s + i, j - i);
			i = j;
			continue;
		}
		switch (c) {
		case '"': st__buf_puts(b, "\\\""); i++; continue;
		case '\\': st__buf_puts(b, "\\\\"); i++; continue;
		case '\b': st__buf_puts(b, "\\b"); i++; continue;
		case '\f': st__buf_puts(b, "\\f"); i++; continue;
		case '\n': st__buf_puts(b, "\\n"); i++; continue;
		case '\r': st__buf_puts(b, "\\r"); i++; continue;
		case '\t': st__buf_puts(b, "\\t"); i++; continue;
		default: break;
		}
		if (c < 0x80) { /* other control characters and DEL */
			put_u(b, c);
			i++;
			continue;
		}
		unsigned cp;
		size_t k;
		if (c >= 0xf0) { cp = c & 0x07; k = 3; }
		else if (c >= 0xe0) { cp = c & 0x0f; k = 2; }
		else { cp = c & 0x1f; k = 1; }
		for (size_t m = 1; m <= k && i + m < len; m++)
			cp = (cp << 6) | (s[i + m] & 0x3f);
		i += k + 1;
		if (cp >= 0x10000) {
			cp -= 0x10000;
			put_u(b, 0xd800 | (cp >> 10));
			put_u(b, 0xdc00 | (cp & 0x3ff));
		} else {
			put_u(b, cp);
		}
	}
	st__buf_put(b, "\"", 1);
}

/* ---- validation ------------------------------------------------------------ */

#define bytes_cmp st__bytes_cmp

/* Python sorts keys by code point; for UTF-8 that is byte order. */
static int entry_cmp(const void *pa, const void *pb)
{
	const st_index_entry *a = *(const st_index_entry *const *)pa;
	const st_index_entry *b = *(const st_index_entry *const *)pb;
	return bytes_cmp(a->name, a->name_len, b->name, b->name_len);
}

static int meta_cmp(const void *pa, const void *pb)
{
	const st_meta *a = *(const st_meta *const *)pa;
	const st_meta *b = *(const st_meta *const *)pb;
	return bytes_cmp(a->key, a->key_len, b->key, b->key_len);
}

/* I2: a plain file name beside the index, ending in .safetensors. */
static int shard_name_ok(const char *f)
{
	size_t len = strlen(f);
	static const char sfx[] = ".safetensors";
	size_t sl = sizeof sfx - 1;
	if (len <= sl || strcmp(f + len - sl, sfx) != 0)
		return 0;
	if (strchr(f, '/') || strcmp(f, "..") == 0 || strcmp(f, ".") == 0)
		return 0;
	return st__utf8_valid(f, len, NULL);
}

/*
 * A printable form of a name for messages: control bytes as \xNN, and every
 * byte from 0x80 up as well when the name is not valid UTF-8; cut if long.
 */
static const char *show(char *out, size_t size, const char *s, size_t len)
{
	size_t o = 0;
	int utf8 = st__utf8_valid(s, len, NULL);
	for (size_t i = 0; i < len && o + 8 < size; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f || (c >= 0x80 && !utf8))
			o += (size_t)snprintf(out + o, size - o, "\\x%02x", c);
		else
			out[o++] = (char)c;
	}
	out[o] = 0;
	return out;
}

/* ---- st_index_write ---------------------------------------------------------- */

int st_index_write(const char *path, uint64_t total_size,
                   const st_index_entry *entries, size_t n,
                   const st_meta *meta, size_t n_meta, st_error *err)
{
	char s1[200], s2[200];
	size_t bad;

	if (!path || !*path)
		return st__error(err, ST_EINVAL, "index path is empty");
	if ((n && !entries) || (n_meta && !meta))
		return st__error(err, ST_EINVAL, "%s: entries are NULL", path);

	/* Every tensor: a UTF-8 name, a valid shard file name. */
	for (size_t i = 0; i < n; i++) {
		const st_index_entry *e = &entries[i];
		if (!e->name && e->name_len)
			return st__error(err, ST_EINVAL, "%s: weight_map: tensor name is NULL", path);
		if (!st__utf8_valid(e->name ? e->name : "", e->name_len, &bad))
			return st__error(err, ST_EINVAL,
			                 "%s: weight_map: tensor '%s': name is not valid UTF-8 (bad byte at offset %zu)",
			                 path, show(s1, sizeof s1, e->name, e->name_len), bad);
		if (!e->file || !shard_name_ok(e->file))
			return st__error(err, ST_EINVAL,
			                 "%s: weight_map: tensor '%s': shard '%s' is not a plain file name ending in .safetensors",
			                 path, show(s1, sizeof s1, e->name, e->name_len),
			                 e->file ? show(s2, sizeof s2, e->file, strlen(e->file)) : "(null)");
	}
	for (size_t i = 0; i < n_meta; i++) {
		const st_meta *m = &meta[i];
		if (!m->key || !m->value)
			return st__error(err, ST_EINVAL, "%s: metadata: key or value is NULL", path);
		if (!st__utf8_valid(m->key, m->key_len, &bad) ||
		    !st__utf8_valid(m->value, m->value_len, &bad))
			return st__error(err, ST_EINVAL, "%s: metadata '%s': not valid UTF-8",
			                 path, show(s1, sizeof s1, m->key, m->key_len));
		if (m->key_len == 10 && memcmp(m->key, "total_size", 10) == 0)
			return st__error(err, ST_EINVAL,
			                 "%s: metadata 'total_size' is set from the total_size argument", path);
	}

	/* Sort (keys are written sorted) and reject duplicates. */
	const st_index_entry **ep = malloc((n ? n : 1) * sizeof *ep);
	const st_meta **mp = malloc((n_meta ? n_meta : 1) * sizeof *mp);
	struct st__buf b = {0};
	int rc = ST_OK;
	if (!ep || !mp) {
		rc = st__error(err, ST_ENOMEM, "%s: out of memory", path);
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		ep[i] = &entries[i];
	for (size_t i = 0; i < n_meta; i++)
		mp[i] = &meta[i];
	if (n > 1)
		qsort(ep, n, sizeof *ep, entry_cmp);
	if (n_meta > 1)
		qsort(mp, n_meta, sizeof *mp, meta_cmp);
	for (size_t i = 1; i < n; i++)
		if (entry_cmp(&ep[i - 1], &ep[i]) == 0) {
			rc = st__error(err, ST_EINVAL, "%s: weight_map: tensor '%s' is listed twice",
			               path, show(s1, sizeof s1, ep[i]->name, ep[i]->name_len));
			goto out;
		}
	for (size_t i = 1; i < n_meta; i++)
		if (meta_cmp(&mp[i - 1], &mp[i]) == 0) {
			rc = st__error(err, ST_EINVAL, "%s: metadata '%s' is given twice",
			               path, show(s1, sizeof s1, mp[i]->key, mp[i]->key_len));
			goto out;
		}

	/* The document. */
	st__buf_puts(&b, "{\n  \"metadata\": {");
	int total_done = 0;
	for (size_t i = 0; i <= n_meta; i++) {
		const st_meta *m = i < n_meta ? mp[i] : NULL;
		if (!total_done && (!m || bytes_cmp(m->key, m->key_len, "total_size", 10) > 0)) {
			st__buf_puts(&b, i ? ",\n    " : "\n    ");
			st__buf_printf(&b, "\"total_size\": %" PRIu64, total_size);
			total_done = 1;
		}
		if (!m)
			break;
		st__buf_puts(&b, i || total_done ? ",\n    " : "\n    ");
		py_json_string(&b, m->key, m->key_len);
		st__buf_puts(&b, ": ");
		py_json_string(&b, m->value, m->value_len);
	}
	st__buf_puts(&b, "\n  },\n  \"weight_map\": {");
	for (size_t i = 0; i < n; i++) {
		st__buf_puts(&b, i ? ",\n    " : "\n    ");
		py_json_string(&b, ep[i]->name ? ep[i]->name : "", ep[i]->name_len);
		st__buf_puts(&b, ": ");
		py_json_string(&b, ep[i]->file, strlen(ep[i]->file));
	}
	st__buf_puts(&b, n ? "\n  }\n}\n" : "}\n}\n");
	if (b.failed) {
		rc = st__error(err, ST_ENOMEM, "%s: out of memory", path);
		goto out;
	}

	st_atomic *a;
	if ((rc = st_atomic_open(&a, path, err)) == ST_OK) {
		if ((rc = st_atomic_write(a, b.data, b.len, err)) == ST_OK)
			rc = st_atomic_commit(a, err);
		st_atomic_close(a);
	}
out:
	st__buf_free(&b);
	free(ep);
	free(mp);
	return rc;
}
