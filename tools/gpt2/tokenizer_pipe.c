/*
 * tokenizer_pipe.c - the parts of tokenizer.json around the BPE model
 * (see tokenizer.h): the normalizer (NFC, Prepend, Replace, Sequence),
 * the pre-tokenizer (ByteLevel, Split with a Regex or String pattern,
 * Metaspace, Sequence), the post-processor's template (which special
 * tokens an encode adds), and tokenizer_config.json's add_bos_token /
 * add_eos_token. Each is read into the tokenizer's steps
 * (tokenizer_impl.h), which tokenizer.c runs; anything else is refused
 * with one line naming the file and the type.
 */
#include "gpt2/internal.h"
#include "gpt2/tokenizer_impl.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#define SPM_SPACE "\xe2\x96\x81" /* U+2581, SentencePiece's space */

static char *dup_bytes(const char *s, size_t n)
{
	char *p = malloc(n ? n : 1);
	if (p && n)
		memcpy(p, s, n);
	return p;
}

static const char *type_of(const json_node *v, char *buf)
{
	const json_node *type = json_get(v, "type");
	if (!json_is_string(type))
		return NULL;
	return gpt2_tok_show(buf, json_string(type), strlen(json_string(type)));
}

/* ---- normalizer ----------------------------------------------------------- */

static int add_norm(load_state *ls, int kind, const char *a, size_t alen, const char *b,
                    size_t blen)
{
	gpt2_tokenizer *t = ls->t;
	if (t->n_norm == PRE_MAX_STEPS)
		return gpt2_err(ls->err, ls->errlen, "%s: normalizer: more than %d steps",
		                ls->vocab_path, PRE_MAX_STEPS);
	norm_step *n = &t->norm[t->n_norm];
	n->kind = kind;
	n->a = a ? dup_bytes(a, alen) : NULL;
	n->b = b ? dup_bytes(b, blen) : NULL;
	n->alen = alen;
	n->blen = blen;
	if ((a && !n->a) || (b && !n->b))
		return gpt2_err(ls->err, ls->errlen, "%s: out of memory", ls->vocab_path);
	t->n_norm++;
	return 0;
}

/* A pattern {"String": "..."}; Regex patterns are refused where only a
 * string is supported. */
static const char *string_pattern(const json_node *pat)
{
	const json_node *s = json_get(pat, "String");
	return json_is_string(s) ? json_string(s) : NULL;
}

static int parse_normalizer(load_state *ls, const json_node *n, int depth)
{
	const char *path = ls->vocab_path;
	char sa[SHOW_MAX];
	if (!n || json_is_null(n))
		return 0;
	const char *type = json_is_object(n) ? type_of(n, sa) : NULL;
	if (!type)
		return gpt2_err(ls->err, ls->errlen, "%s: normalizer: no type", path);
	if (strcmp(type, "Sequence") == 0 && depth == 0) {
		const json_node *list = json_get(n, "normalizers");
		if (!json_is_array(list))
			return gpt2_err(ls->err, ls->errlen,
			                "%s: normalizer: Sequence without normalizers", path);
		for (const json_node *c = json_first(list); c; c = json_next(c))
			if (parse_normalizer(ls, c, 1) != 0)
				return -1;
		return 0;
	}
	if (strcmp(type, "NFC") == 0)
		return add_norm(ls, NORM_NFC, NULL, 0, NULL, 0);
	if (strcmp(type, "Prepend") == 0) {
		const json_node *p = json_get(n, "prepend");
		if (!json_is_string(p))
			return gpt2_err(ls->err, ls->errlen,
			                "%s: normalizer: Prepend without prepend", path);
		return add_norm(ls, NORM_PREPEND, json_string(p), strlen(json_string(p)), NULL, 0);
	}
	if (strcmp(type, "Replace") == 0) {
		const char *from = string_pattern(json_get(n, "pattern"));
		const json_node *to = json_get(n, "content");
		if (!from || !from[0] || !json_is_string(to))
			return gpt2_err(ls->err, ls->errlen,
			                "%s: normalizer: Replace is supported with a String "
			                "pattern and a content",
			                path);
		return add_norm(ls, NORM_REPLACE, from, strlen(from), json_string(to),
		                strlen(json_string(to)));
	}
	return gpt2_err(ls->err, ls->errlen, "%s: normalizer: type '%s' is not supported", path,
	                type);
}

/* ---- pre-tokenizer -------------------------------------------------------- */

static pre_step *new_pre(load_state *ls, int kind)
{
	gpt2_tokenizer *t = ls->t;
	if (t->n_pre == PRE_MAX_STEPS) {
		gpt2_err(ls->err, ls->errlen, "%s: pre_tokenizer: more than %d steps",
		         ls->vocab_path, PRE_MAX_STEPS);
		return NULL;
	}
	pre_step *p = &t->pre[t->n_pre++];
	memset(p, 0, sizeof *p);
	p->kind = kind;
	return p;
}

static int parse_split(load_state *ls, const json_node *n)
{
	const char *path = ls->vocab_path;
	char sa[SHOW_MAX], msg[256];
	pre_step *p = new_pre(ls, PRE_SPLIT);
	if (!p)
		return -1;
	const json_node *pat = json_get(n, "pattern");
	const json_node *re = json_get(pat, "Regex"), *lit = json_get(pat, "String");
	if (json_is_string(re)) {
		if (gpt2_regex_new(&p->re, json_string(re), strlen(json_string(re)), msg,
		                   sizeof msg) != 0)
			return gpt2_err(ls->err, ls->errlen,
			                "%s: pre_tokenizer: Split: pattern '%s': %s", path,
			                gpt2_tok_show(sa, json_string(re), strlen(json_string(re))),
			                msg);
	} else if (json_is_string(lit) && json_string(lit)[0]) {
		p->lit_len = strlen(json_string(lit));
		p->lit = dup_bytes(json_string(lit), p->lit_len);
		if (!p->lit)
			return gpt2_err(ls->err, ls->errlen, "%s: out of memory", path);
	} else {
		return gpt2_err(ls->err, ls->errlen,
		                "%s: pre_tokenizer: Split: pattern is not a Regex or a non-empty "
		                "String",
		                path);
	}
	const json_node *b = json_get(n, "behavior");
	const char *beh = json_is_string(b) ? json_string(b) : "";
	if (strcmp(beh, "Isolated") == 0)
		p->behavior = SPLIT_ISOLATED;
	else if (strcmp(beh, "Removed") == 0)
		p->behavior = SPLIT_REMOVED;
	else
		return gpt2_err(ls->err, ls->errlen,
		                "%s: pre_tokenizer: Split: behavior '%s' is not supported", path,
		                gpt2_tok_show(sa, beh, strlen(beh)));
	p->invert = json_is_true(json_get(n, "invert"));
	if (json_is_string(re) && p->behavior == SPLIT_ISOLATED && !p->invert)
		p->scan_digits = gpt2_tok_scan_digits(json_string(re), strlen(json_string(re)));
	return 0;
}

/* Metaspace as normalizer steps (spaces replaced, the replacement
 * prepended) and, with split, a step that starts a piece at each one. */
static int parse_metaspace(load_state *ls, const json_node *n)
{
	const char *path = ls->vocab_path;
	const json_node *r = json_get(n, "replacement");
	const char *rep = json_is_string(r) ? json_string(r) : SPM_SPACE;
	if (strcmp(rep, SPM_SPACE) != 0)
		return gpt2_err(ls->err, ls->errlen,
		                "%s: pre_tokenizer: Metaspace: only the replacement U+2581 is "
		                "supported",
		                path);
	const json_node *scheme = json_get(n, "prepend_scheme");
	const json_node *aps = json_get(n, "add_prefix_space");
	int prepend = 1, first_only = 0;
	if (json_is_string(scheme)) {
		const char *s = json_string(scheme);
		if (strcmp(s, "never") == 0)
			prepend = 0;
		else if (strcmp(s, "first") == 0)
			first_only = 1;
		else if (strcmp(s, "always") != 0)
			return gpt2_err(ls->err, ls->errlen,
			                "%s: pre_tokenizer: Metaspace: unknown prepend_scheme",
			                path);
	} else if (json_is_bool(aps)) {
		prepend = json_is_true(aps);
	}
	if (add_norm(ls, NORM_REPLACE, " ", 1, SPM_SPACE, 3) != 0)
		return -1;
	if (prepend) {
		if (add_norm(ls, NORM_PREPEND, SPM_SPACE, 3, NULL, 0) != 0)
			return -1;
		/* "first": only a stretch at the start of the text; and never
		 * onto one that starts with the replacement already. */
		ls->t->norm[ls->t->n_norm - 1].first_only = first_only;
		ls->t->norm[ls->t->n_norm - 1].unless_there = 1;
	}
	const json_node *split = json_get(n, "split");
	if (!split || json_is_true(split))
		return new_pre(ls, PRE_METASPACE) ? 0 : -1;
	return 0;
}

static int parse_pre(load_state *ls, const json_node *n, int depth, int *byte_level)
{
	const char *path = ls->vocab_path;
	char sa[SHOW_MAX];
	const char *type = json_is_object(n) ? type_of(n, sa) : NULL;
	if (!type && json_is_object(n) && depth == 0)
		type = "ByteLevel"; /* the historical default of this loader */
	if (!type)
		return gpt2_err(ls->err, ls->errlen, "%s: pre_tokenizer: no type", path);
	if (strcmp(type, "Sequence") == 0 && depth == 0) {
		const json_node *list = json_get(n, "pretokenizers");
		if (!json_is_array(list))
			return gpt2_err(ls->err, ls->errlen,
			                "%s: pre_tokenizer: Sequence without pretokenizers", path);
		for (const json_node *c = json_first(list); c; c = json_next(c))
			if (parse_pre(ls, c, 1, byte_level) != 0)
				return -1;
		return 0;
	}
	if (strcmp(type, "ByteLevel") == 0) {
		if (*byte_level)
			return gpt2_err(ls->err, ls->errlen, "%s: pre_tokenizer: ByteLevel twice",
			                path);
		*byte_level = 1;
		pre_step *p = new_pre(ls, PRE_BYTELEVEL);
		if (!p)
			return -1;
		const json_node *v = json_get(n, "add_prefix_space");
		p->add_prefix_space = json_is_true(v);
		v = json_get(n, "use_regex");
		p->use_regex = json_is_bool(v) ? json_is_true(v) : 1;
		return 0;
	}
	if (strcmp(type, "Split") == 0)
		return parse_split(ls, n);
	if (strcmp(type, "Metaspace") == 0 && depth == 0)
		return parse_metaspace(ls, n);
	return gpt2_err(ls->err, ls->errlen,
	                "%s: pre_tokenizer: type '%s' is not supported (expected ByteLevel, Split, "
	                "Metaspace or a Sequence of ByteLevel and Split)",
	                path, type);
}

/* ---- post-processor -------------------------------------------------------- */

/* The one id of special_tokens[name] in a TemplateProcessing. */
static int template_id(load_state *ls, const json_node *proc, const json_node *item, int32_t *id)
{
	const json_node *st = json_get(json_get(item, "SpecialToken"), "id");
	const json_node *ids = json_get(json_get(json_get(proc, "special_tokens"),
	                                         json_is_string(st) ? json_string(st) : ""),
	                                "ids");
	double d = json_is_array(ids) && json_size(ids) == 1 ? json_number(json_first(ids)) : -1;
	if (!json_is_string(st) || !(d >= 0 && d < MAX_IDS) || d != (double)(int32_t)d)
		return gpt2_err(ls->err, ls->errlen,
		                "%s: post_processor: a special token of the template has no one id "
		                "in "
		                "special_tokens",
		                ls->vocab_path);
	*id = (int32_t)d;
	return 0;
}

/* TemplateProcessing's "single": [special]? {"Sequence": A} [special]? */
static int parse_template(load_state *ls, const json_node *proc)
{
	const json_node *single = json_get(proc, "single");
	gpt2_tokenizer *t = ls->t;
	if (!json_is_array(single))
		return gpt2_err(ls->err, ls->errlen, "%s: post_processor: template without single",
		                ls->vocab_path);
	int seen_a = 0;
	for (const json_node *c = json_first(single); c; c = json_next(c)) {
		if (json_get(c, "Sequence")) {
			seen_a++;
			continue;
		}
		int32_t id = -1;
		int *flag = seen_a ? &t->add_eos : &t->add_bos;
		if (template_id(ls, proc, c, &id) != 0)
			return -1;
		if (*flag || seen_a > 1)
			return gpt2_err(ls->err, ls->errlen,
			                "%s: post_processor: only one special token before and "
			                "after the "
			                "sequence is supported",
			                ls->vocab_path);
		*flag = 1;
		*(seen_a ? &t->eos : &t->bos) = id;
	}
	if (seen_a != 1)
		return gpt2_err(ls->err, ls->errlen,
		                "%s: post_processor: the template has no sequence", ls->vocab_path);
	return 0;
}

static int parse_post(load_state *ls, const json_node *n, int depth)
{
	char sa[SHOW_MAX];
	if (!n || json_is_null(n))
		return 0;
	const char *type = json_is_object(n) ? type_of(n, sa) : NULL;
	if (!type)
		return gpt2_err(ls->err, ls->errlen, "%s: post_processor: no type", ls->vocab_path);
	if (strcmp(type, "Sequence") == 0 && depth == 0) {
		const json_node *list = json_get(n, "processors");
		for (const json_node *c = json_is_array(list) ? json_first(list) : NULL; c;
		     c = json_next(c))
			if (parse_post(ls, c, 1) != 0)
				return -1;
		return 0;
	}
	if (strcmp(type, "ByteLevel") == 0)
		return 0; /* offsets only */
	if (strcmp(type, "TemplateProcessing") == 0)
		return parse_template(ls, n);
	return gpt2_err(ls->err, ls->errlen, "%s: post_processor: type '%s' is not supported",
	                ls->vocab_path, type);
}

int gpt2_tok_pipeline_json(load_state *ls, const json_node *root)
{
	if (parse_normalizer(ls, json_get(root, "normalizer"), 0) != 0)
		return -1;
	const json_node *pre = json_get(root, "pre_tokenizer");
	int byte_level = 0;
	if (pre && !json_is_null(pre)) {
		if (parse_pre(ls, pre, 0, &byte_level) != 0)
			return -1;
	} else if (!ls->t->byte_fallback && !ls->t->n_norm) {
		/* No pre-tokenizer, no sign of SentencePiece: GPT-2's defaults. */
		pre_step *p = new_pre(ls, PRE_BYTELEVEL);
		if (!p)
			return -1;
		p->use_regex = 1;
		byte_level = 1;
	}
	ls->t->byte_level = byte_level;
	return parse_post(ls, json_get(root, "post_processor"), 0);
}

void gpt2_tok_pipeline_free(gpt2_tokenizer *t)
{
	for (size_t i = 0; i < t->n_norm; i++) {
		free(t->norm[i].a);
		free(t->norm[i].b);
	}
	for (size_t i = 0; i < t->n_pre; i++) {
		gpt2_regex_free(t->pre[i].re);
		free(t->pre[i].lit);
	}
	free(t->norm_buf[0]);
	free(t->norm_buf[1]);
	t->n_norm = t->n_pre = 0;
}

/* ---- tokenizer_config.json --------------------------------------------------- */

/* The id of a token given by its text: an added token, else the model's. */
static int32_t id_of_text(const gpt2_tokenizer *t, const char *s, size_t n)
{
	for (size_t i = 0; i < t->n_added; i++)
		if (t->added[i].len == n && memcmp(t->added[i].text, s, n) == 0)
			return t->added[i].id;
	return key_find(t, s, n);
}

/* "bos_token": "<s>" or {"content": "<s>", ...} or null. */
static const char *token_text(const json_node *v)
{
	if (json_is_string(v))
		return json_string(v);
	const json_node *c = json_get(v, "content");
	return json_is_string(c) ? json_string(c) : NULL;
}

int gpt2_tok_config_json(gpt2_tokenizer *t, const char *path, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t len = 0, at;
	if (gpt2_tok_read_file(path, &buf, &len, err, errlen) != 0)
		return -1;
	json_node *root = json_parse(buf, len, &at);
	int rc = 0;
	if (!root || !json_is_object(root)) {
		rc = gpt2_err(err, errlen, "%s: not a JSON object (error at byte %zu)", path, at);
		goto done;
	}
	const char *key[2] = {"add_bos_token", "add_eos_token"};
	const char *tok[2] = {"bos_token", "eos_token"};
	for (int k = 0; k < 2; k++) {
		const json_node *add = json_get(root, key[k]);
		if (!json_is_bool(add))
			continue;
		int *flag = k ? &t->add_eos : &t->add_bos;
		int32_t *id = k ? &t->eos : &t->bos;
		*flag = json_is_true(add);
		const char *text = token_text(json_get(root, tok[k]));
		if (text)
			*id = id_of_text(t, text, strlen(text));
		if (*flag && *id < 0) {
			char sa[SHOW_MAX];
			rc = gpt2_err(err, errlen, "%s: %s is true but %s '%s' is not a token",
			              path, key[k], tok[k],
			              text ? gpt2_tok_show(sa, text, strlen(text)) : "(none)");
			goto done;
		}
	}
done:
	json_free(root);
	free(buf);
	return rc;
}

/* ---- NFC ---------------------------------------------------------------------- */

/* Append n bytes to norm_buf[which] at *o, growing it. 0, or -1. */
static int nfc_put(gpt2_tokenizer *t, int which, size_t *o, const void *p, size_t n)
{
	if (!n)
		return 0;
	if (*o + n > t->norm_cap[which]) {
		size_t cap = t->norm_cap[which] ? t->norm_cap[which] : 256;
		while (cap < *o + n)
			cap *= 2;
		char *q = realloc(t->norm_buf[which], cap);
		if (!q)
			return -1;
		t->norm_buf[which] = q;
		t->norm_cap[which] = cap;
	}
	memcpy(t->norm_buf[which] + *o, p, n);
	*o += n;
	return 0;
}

/*
 * NFC changes nothing in ASCII, and no ASCII character composes with the
 * one before it, so a text may be cut before any ASCII character: only
 * each run of other characters, with the ASCII character before it (which
 * a combining mark may join), goes through utf8proc.
 */
const char *gpt2_nfc(gpt2_tokenizer *t, int which, const char *s, size_t *len)
{
	size_t n = *len, i = 0, o = 0;
	while (i < n && (unsigned char)s[i] < 0x80)
		i++;
	if (i == n)
		return s;
	i = 0;
	while (i < n) {
		size_t j = i;
		while (j < n && (unsigned char)s[j] < 0x80)
			j++;
		size_t start = j > i ? j - 1 : j, end = j;
		while (end < n && (unsigned char)s[end] >= 0x80)
			end++;
		if (nfc_put(t, which, &o, s + i, start - i) != 0)
			return NULL;
		if (start == end)
			break;
		utf8proc_uint8_t *m = NULL;
		utf8proc_ssize_t k = utf8proc_map((const utf8proc_uint8_t *)s + start,
		                                  (utf8proc_ssize_t)(end - start), &m,
		                                  UTF8PROC_STABLE | UTF8PROC_COMPOSE);
		int rc = k < 0 ? (k == UTF8PROC_ERROR_NOMEM
		                          ? -1
		                          : nfc_put(t, which, &o, s + start, end - start))
		               : nfc_put(t, which, &o, m, (size_t)k);
		free(m);
		if (rc != 0)
			return NULL;
		i = end;
	}
	*len = o;
	return t->norm_buf[which];
}
