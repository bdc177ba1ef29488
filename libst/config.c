/*
 * config.c - a model's config.json (st/config.h): reading it, capped at
 * ST_CONFIG_MAX_BYTES, and editing it as text: set its torch_dtype
 * (st_config_set_dtype) when the weights change dtype.
 *
 * What it is: a small JSON scanner that records where the values to
 * replace lie and splices the new one in, so that every other byte (key
 * order, indentation, number spelling) stays as the file had it; cJSON
 * would reformat the whole file. What it is not: a JSON validator beyond
 * what finding those values needs.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- reading ------------------------------------------------------------------ */

int st_config_path(const char *path, char **out, st_error *err)
{
	struct stat st;
	size_t n = strlen(path);
	const char *slash = memrchr(path, '/', n);
	int dir = (n > 0 && path[n - 1] == '/') || (stat(path, &st) == 0 && S_ISDIR(st.st_mode));

	if (dir)
		*out = st__path_join(path, "config.json");
	else if (slash == path)
		*out = strdup("/config.json");
	else if (slash) {
		char *d = strndup(path, (size_t)(slash - path));
		*out = d ? st__path_join(d, "config.json") : NULL;
		free(d);
	} else
		*out = strdup("config.json");
	if (!*out)
		return st__error(err, ST_ENOMEM, "%s: out of memory", path);
	return ST_OK;
}

int st_config_read_file(const char *file, char **text, size_t *len, st_error *err)
{
	struct stat st;
	int fd = open(file, O_RDONLY | O_CLOEXEC);

	*text = NULL;
	*len = 0;
	if (fd < 0 && errno == ENOENT)
		return st__error_sys(err, ST_ENOTFOUND, ENOENT, "%s", file);
	if (fd < 0 || fstat(fd, &st) != 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return st__error_sys(err, ST_EIO, e, "%s: cannot read", file);
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return st__error(err, ST_EIO, "%s: cannot read: not a regular file", file);
	}
	/* The size is a hint: the file may change while it is read, so the
	 * cap is checked again on what was read. */
	size_t cap = st.st_size > 0 && (uint64_t)st.st_size <= ST_CONFIG_MAX_BYTES
	                 ? (size_t)st.st_size + 2
	                 : 4096;
	size_t n = 0;
	char *buf = NULL;
	int rc = ST_OK;
	if ((uint64_t)st.st_size > ST_CONFIG_MAX_BYTES)
		rc = st__error(err, ST_EFORMAT, "%s: larger than %zu MiB, not a config file", file,
		               ST_CONFIG_MAX_BYTES >> 20);
	else if (!(buf = malloc(cap)))
		rc = st__error(err, ST_ENOMEM, "%s: out of memory", file);
	while (rc == ST_OK) {
		if (n + 1 >= cap) { /* room for the NUL, and for one byte past the size */
			if (cap > ST_CONFIG_MAX_BYTES) {
				rc = st__error(err, ST_EFORMAT, "%s: larger than %zu MiB, not a config file",
				               file, ST_CONFIG_MAX_BYTES >> 20);
				break;
			}
			size_t ncap = cap * 2 > ST_CONFIG_MAX_BYTES + 2 ? ST_CONFIG_MAX_BYTES + 2 : cap * 2;
			char *p = realloc(buf, ncap);
			if (!p) {
				rc = st__error(err, ST_ENOMEM, "%s: out of memory", file);
				break;
			}
			buf = p;
			cap = ncap;
		}
		ssize_t r = read(fd, buf + n, cap - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = st__error_sys(err, ST_EIO, errno, "%s: cannot read", file);
			break;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (rc == ST_OK && n > ST_CONFIG_MAX_BYTES)
		rc = st__error(err, ST_EFORMAT, "%s: larger than %zu MiB, not a config file", file,
		               ST_CONFIG_MAX_BYTES >> 20);
	if (rc != ST_OK) {
		free(buf);
		return rc;
	}
	buf[n] = 0;
	*text = buf;
	*len = n;
	return ST_OK;
}

int st_config_read(const char *path, char **text, size_t *len, char **file, st_error *err)
{
	char *p = NULL;
	*text = NULL;
	*len = 0;
	if (!path) { /* a checkpoint with no directory (st_checkpoint_from_file) */
		if (file)
			*file = NULL;
		return st__error(err, ST_ENOTFOUND, "no config.json: the checkpoint has no directory");
	}
	int rc = st_config_path(path, &p, err);

	if (rc == ST_OK)
		rc = st_config_read_file(p, text, len, err);
	if (file)
		*file = p;
	else
		free(p);
	return rc;
}

/* ---- editing ------------------------------------------------------------------ */

const char *st_torch_dtype_name(st_dtype d)
{
	switch (d) {
	case ST_DTYPE_F64: return "float64";
	case ST_DTYPE_F32: return "float32";
	case ST_DTYPE_F16: return "float16";
	case ST_DTYPE_BF16: return "bfloat16";
	default: return NULL;
	}
}

/*
 * config.json: set torch_dtype (every "torch_dtype" key holding a string or
 * null, at any depth, as multimodal configs nest them; and a top-level
 * "dtype", the name newer transformers write) to the new dtype, editing the
 * text in place so that every other byte (key order, indentation, number
 * spelling) is kept. With neither key at the top level, "torch_dtype" is
 * added as the last member, formatted like the first ones.
 */
typedef struct jscan {
	const char *s;
	size_t n, i;
	size_t *rep; /* value spans to replace: begin, end pairs */
	size_t n_rep, cap_rep;
	int top_dtype;
	size_t n_top, first_key_end, first_val_begin, first_val_end, second_key, last_val_end;
	size_t top_open;
	int nomem;
} jscan;

static void js_ws(jscan *j)
{
	while (j->i < j->n && (j->s[j->i] == ' ' || j->s[j->i] == '\t' || j->s[j->i] == '\n' ||
	                       j->s[j->i] == '\r'))
		j->i++;
}

static int js_string(jscan *j)
{
	if (j->i >= j->n || j->s[j->i] != '"')
		return -1;
	for (j->i++; j->i < j->n; j->i++) {
		unsigned char ch = (unsigned char)j->s[j->i];
		if (ch == '\\')
			j->i++;
		else if (ch == '"') {
			j->i++;
			return 0;
		} else if (ch < 0x20)
			return -1;
	}
	return -1;
}

static int js_value(jscan *j, int depth);

static int js_rep(jscan *j, size_t b, size_t e)
{
	if (j->n_rep + 2 > j->cap_rep) {
		size_t cap = j->cap_rep ? j->cap_rep * 2 : 16;
		size_t *rep = realloc(j->rep, cap * sizeof *rep);
		if (!rep) {
			j->nomem = 1;
			return -1;
		}
		j->rep = rep;
		j->cap_rep = cap;
	}
	j->rep[j->n_rep++] = b;
	j->rep[j->n_rep++] = e;
	return 0;
}

static int js_key_is(const jscan *j, size_t kb, size_t ke, const char *name)
{
	size_t len = strlen(name);
	return ke - kb == len + 2 && memcmp(j->s + kb + 1, name, len) == 0;
}

static int js_object(jscan *j, int depth)
{
	j->i++; /* '{' */
	js_ws(j);
	if (j->i < j->n && j->s[j->i] == '}') {
		j->i++;
		return 0;
	}
	for (size_t member = 0;; member++) {
		js_ws(j);
		size_t kb = j->i;
		if (js_string(j) != 0)
			return -1;
		size_t ke = j->i;
		js_ws(j);
		if (j->i >= j->n || j->s[j->i] != ':')
			return -1;
		j->i++;
		js_ws(j);
		size_t vb = j->i;
		if (js_value(j, depth + 1) != 0)
			return -1;
		size_t ve = j->i;
		int is_string = j->s[vb] == '"', is_null = j->s[vb] == 'n';
		if (js_key_is(j, kb, ke, "torch_dtype") && (is_string || is_null)) {
			if (js_rep(j, vb, ve) != 0)
				return -1;
			if (depth == 0)
				j->top_dtype = 1;
		} else if (depth == 0 && js_key_is(j, kb, ke, "dtype") && is_string) {
			if (js_rep(j, vb, ve) != 0)
				return -1;
			j->top_dtype = 1;
		}
		if (depth == 0) {
			j->n_top++;
			if (member == 0) {
				j->first_key_end = ke;
				j->first_val_begin = vb;
				j->first_val_end = ve;
			} else if (member == 1) {
				j->second_key = kb;
			}
			j->last_val_end = ve;
		}
		js_ws(j);
		if (j->i >= j->n)
			return -1;
		if (j->s[j->i] == '}') {
			j->i++;
			return 0;
		}
		if (j->s[j->i] != ',')
			return -1;
		j->i++;
	}
}

static int js_value(jscan *j, int depth)
{
	if (depth > 256 || j->i >= j->n)
		return -1;
	char ch = j->s[j->i];
	if (ch == '{')
		return js_object(j, depth);
	if (ch == '[') {
		j->i++;
		js_ws(j);
		if (j->i < j->n && j->s[j->i] == ']') {
			j->i++;
			return 0;
		}
		for (;;) {
			js_ws(j);
			if (js_value(j, depth + 1) != 0)
				return -1;
			js_ws(j);
			if (j->i >= j->n)
				return -1;
			if (j->s[j->i++] == ']')
				return 0;
			if (j->s[j->i - 1] != ',')
				return -1;
		}
	}
	if (ch == '"')
		return js_string(j);
	static const char *const words[] = {"true", "false", "null"};
	for (size_t w = 0; w < 3; w++) {
		size_t len = strlen(words[w]);
		if (j->n - j->i >= len && memcmp(j->s + j->i, words[w], len) == 0) {
			j->i += len;
			return 0;
		}
	}
	size_t b = j->i;
	while (j->i < j->n && strchr("+-0123456789.eE", j->s[j->i]) && j->s[j->i])
		j->i++;
	return j->i > b ? 0 : -1;
}

int st_config_set_dtype(const char *s, size_t n, const char *dtype,
                        char **out_text, size_t *out_len, st_error *err)
{
	jscan j;
	memset(&j, 0, sizeof j);
	j.s = s;
	j.n = n;
	*out_text = NULL;
	*out_len = 0;
	js_ws(&j);
	j.top_open = j.i;
	int ok = j.i < n && s[j.i] == '{' && js_object(&j, 0) == 0;
	if (ok) {
		js_ws(&j);
		ok = j.i == n;
	}
	if (!ok) {
		free(j.rep);
		if (j.nomem)
			return st__error(err, ST_ENOMEM, "config: out of memory");
		return st__error(err, ST_EFORMAT,
		                 "config: not a JSON object (at byte %zu)", j.i);
	}
	char value[64];
	snprintf(value, sizeof value, "\"%.60s\"", dtype);
	size_t vlen = strlen(value);
	/* The member to insert, when there is no top-level dtype key. */
	char *ins = NULL;
	size_t ins_at = 0, ins_len = 0;
	if (!j.top_dtype) {
		const char *sep, *kv;
		size_t sep_len, kv_len;
		if (j.n_top >= 2) {
			sep = s + j.first_val_end;
			sep_len = j.second_key - j.first_val_end;
		} else if (j.n_top == 1) {
			/* ",", then the whitespace that precedes the first key. */
			sep = NULL;
			sep_len = 0;
		} else {
			sep = "";
			sep_len = 0;
		}
		if (j.n_top >= 1) {
			kv = s + j.first_key_end;
			kv_len = j.first_val_begin - j.first_key_end;
			ins_at = j.last_val_end;
		} else {
			kv = ": ";
			kv_len = 2;
			ins_at = j.top_open + 1;
		}
		size_t lead_b = j.top_open + 1, lead_e = lead_b;
		while (lead_e < n && s[lead_e] != '"' && s[lead_e] != '}')
			lead_e++;
		size_t cap = sep_len + (lead_e - lead_b) + 16 + kv_len + vlen + 1;
		ins = malloc(cap);
		if (!ins) {
			free(j.rep);
			return st__error(err, ST_ENOMEM, "config: out of memory");
		}
		if (j.n_top == 1) {
			ins[0] = ',';
			memcpy(ins + 1, s + lead_b, lead_e - lead_b);
			ins_len = 1 + (lead_e - lead_b);
		} else {
			memcpy(ins, sep, sep_len);
			ins_len = sep_len;
		}
		memcpy(ins + ins_len, "\"torch_dtype\"", 13);
		ins_len += 13;
		memcpy(ins + ins_len, kv, kv_len);
		ins_len += kv_len;
		memcpy(ins + ins_len, value, vlen);
		ins_len += vlen;
	}
	size_t cap = n + ins_len + (j.n_rep / 2) * vlen + 1;
	char *out = malloc(cap);
	if (!out) {
		free(ins);
		free(j.rep);
		return st__error(err, ST_ENOMEM, "config: out of memory");
	}
	size_t o = 0, at = 0;
	for (size_t r = 0; r <= j.n_rep; r += 2) {
		/* Spans are in text order; the insertion point follows the last
		 * value, so it is placed when the copy reaches it. */
		size_t end = r < j.n_rep ? j.rep[r] : n;
		if (ins && ins_at >= at && ins_at <= end) {
			memcpy(out + o, s + at, ins_at - at);
			o += ins_at - at;
			memcpy(out + o, ins, ins_len);
			o += ins_len;
			at = ins_at;
			free(ins);
			ins = NULL;
		}
		memcpy(out + o, s + at, end - at);
		o += end - at;
		if (r < j.n_rep) {
			memcpy(out + o, value, vlen);
			o += vlen;
			at = j.rep[r + 1];
		}
	}
	free(ins);
	free(j.rep);
	*out_text = out;
	*out_len = o;
	return ST_OK;
}
