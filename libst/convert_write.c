/*
 * convert_write.c - the data path of a conversion (st/convert.h): the
 * tensors of each output file stream through st_stream_run (st/stream.h,
 * recipe 1): one item per output tensor in write order, cut into chunks
 * of at most CHUNK bytes (a chunk may hold the ends of several small
 * tensors), read and converted on the worker threads, and appended to
 * the writer in chunk order by the sink. A snapshot output is built
 * through st/snapshot.h and swapped in.
 */
#include "convert_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Output bytes per chunk: large enough for full-speed I/O, small enough
 * that the buffers x (chunk + input + scratch) stay a few tens of MiB. */
#define CHUNK (4u << 20)
/* Start writeback of the output every this many bytes, so the final fsync
 * has little left to wait for. */
#define WRITEBACK_EVERY (64u << 20)

/* One output file being written. */
typedef struct job {
	st_convert_plan *p;
	const st_convert_run *r;
	st_writer *w;
	st_convert_item **items;  /* in write order, one per stream item */
	size_t n_items;
	unsigned n_workers;
	st_convert_stats *stats;  /* n_workers x n_items, per worker and item */
	int write_failed;         /* the failure was the writer's */
} job;

static int cancelled(const st_convert_run *r, st_error *err)
{
	if (r->cancel && r->cancel(r->ctx)) {
		st__error(err, ST_EIO, "cancelled");
		err->sys_errno = ECANCELED;
		return 1;
	}
	return 0;
}

/* Elements of a converted item's group: F4 is read a byte (two elements)
 * at a time, every other float an element at a time. */
static unsigned group_elems(const st_convert_item *it)
{
	unsigned bytes, elems;
	st_dtype_group(it->tensor->dtype, &bytes, &elems);
	return elems;
}

/* Output bytes of a piece of item it: a copy is read byte by byte, a
 * conversion group by group. */
static uint64_t piece_out_bytes(const st_convert_item *it, uint64_t n_groups)
{
	if (it->action == ST_CONVERT_QSCALE)
		return n_groups * 4;
	if (it->out == it->tensor->dtype)
		return n_groups;
	if (it->action == ST_CONVERT_CONVERT)
		n_groups *= group_elems(it);
	return n_groups * (st_dtype_bits(it->out) / 8);
}

/* Read pieces -> chunk->out: copy, or convert (any worker, concurrently). */
static int convert_work(void *ctx, const st_stream_chunk *c, st_error *err)
{
	job *j = ctx;
	unsigned char *out = c->out;

	if (cancelled(j->r, err))
		return -1;
	for (size_t k = 0; k < c->n_pieces; k++) {
		const st_stream_piece *pc = &c->pieces[k];
		const st_convert_item *it = j->items[pc->item];
		if (it->action == ST_CONVERT_QUANT || it->action == ST_CONVERT_QSCALE) {
			if (st_quant_target_range(&j->p->qz[it->src], it->action == ST_CONVERT_QSCALE, out,
			                          pc->group, pc->n_groups, c->scratch, err) != ST_OK)
				return -1;
		} else if (it->action == ST_CONVERT_DEQUANT) {
			st_quant_range(&j->p->dq.t[it->src], it->out, out, pc->data[0], pc->group,
			               pc->n_groups, c->scratch);
		} else if (it->out == it->tensor->dtype) {
			memcpy(out, pc->data[0], (size_t)pc->n_groups);
		} else if (st_convert(it->out, out, it->tensor->dtype, pc->data[0],
		                      (size_t)pc->n_groups * group_elems(it),
		                      &j->stats[(size_t)c->worker * j->n_items + pc->item]) != ST_OK) {
			st__error(err, ST_EUNSUPPORTED, "internal error: cannot convert %s to %s",
			          st_dtype_name(it->tensor->dtype), st_dtype_name(it->out));
			return -1;
		}
		out += piece_out_bytes(it, pc->n_groups);
	}
	return 0;
}

/* chunk->out -> the writer, in chunk order. */
static int convert_sink(void *ctx, const st_stream_chunk *c, st_error *err)
{
	job *j = ctx;
	uint64_t n = 0;

	for (size_t k = 0; k < c->n_pieces; k++)
		n += piece_out_bytes(j->items[c->pieces[k].item], c->pieces[k].n_groups);
	if (st_writer_write(j->w, c->out, (size_t)n, err) != ST_OK) {
		j->write_failed = 1;
		return -1;
	}
	return 0;
}

/*
 * Progress in input bytes: what the stream read, and what the work read
 * itself (a quantized weight's block rows; MXFP4 blocks, two values a
 * byte, through their mapping).
 */
static void convert_progress(void *ctx, const st_stream_chunk *c, uint64_t bytes)
{
	job *j = ctx;

	for (size_t k = 0; k < c->n_pieces; k++) {
		const st_stream_piece *pc = &c->pieces[k];
		const st_convert_item *it = j->items[pc->item];
		if (it->action == ST_CONVERT_QUANT)
			bytes += pc->n_groups * (st_dtype_bits(it->tensor->dtype) / 8);
		else if (it->action == ST_CONVERT_DEQUANT &&
		         j->p->dq.t[it->src].role == ST_QUANT_ROLE_MXFP4)
			bytes += pc->n_groups / 2;
	}
	j->r->progress(j->r->ctx, bytes);
}

/* Write the data of every tensor of an open writer; the workers' stats are
 * added to the items. */
static int run_job(job *j, st_error *err)
{
	const st_convert_plan *p = j->p;
	size_t n = j->n_items;
	st_stream_item *pi = calloc(n ? n : 1, sizeof *pi);

	j->stats = calloc((size_t)j->n_workers * (n ? n : 1), sizeof *j->stats);
	if (!pi || !j->stats) {
		free(pi);
		free(j->stats);
		return st__error(err, ST_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		const st_convert_item *it = j->items[i];
		pi[i].tensor[0] = it->src;
		if (it->action == ST_CONVERT_QUANT || it->action == ST_CONVERT_QSCALE) {
			/* Read a block row at a time by st_quant_target_range. */
			pi[i].n_groups = it->action == ST_CONVERT_QUANT ? it->tensor->n_elements
			                                                : it->out_bytes / 4;
			pi[i].group_bytes[0] = 0;
			pi[i].cost = it->action == ST_CONVERT_QUANT ? 1 : 4;
		} else if (it->action == ST_CONVERT_DEQUANT) {
			/* FP8: a code a byte, read by the stream; MXFP4: read
			 * through its mapping by st_quant_range. */
			const st_quant_tensor *dq = &p->dq.t[it->src];
			pi[i].n_groups = dq->n_out;
			pi[i].group_bytes[0] = dq->role == ST_QUANT_ROLE_FP8 ? 1 : 0;
			pi[i].cost = st_dtype_bits(it->out) / 8;
		} else if (it->out == it->tensor->dtype) {
			pi[i].n_groups = it->tensor->n_bytes;
			pi[i].group_bytes[0] = 1;
			pi[i].cost = 1;
		} else { /* a float converted, a group (st_dtype_group) at a time */
			unsigned in, elems;
			st_dtype_group(it->tensor->dtype, &in, &elems);
			unsigned outb = elems * (st_dtype_bits(it->out) / 8);
			pi[i].n_groups = it->tensor->n_elements / elems;
			pi[i].group_bytes[0] = in;
			/* A chunk bounds both its input and its output bytes. */
			pi[i].cost = in > outb ? in : outb;
		}
	}
	size_t dq_scratch = ST_QUANT_SCRATCH(p->dq.max_row);
	st_stream_config cfg = {
		.src = {p->c, NULL},
		.items = pi,
		.n_items = n,
		.chunk_size = CHUNK,
		.pack = 1,
		.threads = j->n_workers,
		.out_size = CHUNK,
		.scratch_size = dq_scratch > p->qz_scratch ? dq_scratch : p->qz_scratch,
		.work = convert_work,
		.sink = convert_sink,
		.progress = j->r->progress ? convert_progress : NULL,
		.ctx = j,
	};
	int rc = st_stream_run(&cfg, err);
	if (rc == ST_OK) {
		for (unsigned w = 0; w < j->n_workers; w++) {
			for (size_t k = 0; k < n; k++) {
				j->items[k]->overflow += j->stats[(size_t)w * n + k].overflow;
				j->items[k]->underflow += j->stats[(size_t)w * n + k].underflow;
			}
		}
	}
	free(j->stats);
	free(pi);
	return rc;
}

/* Declare the metadata and the tensors of one output file to a writer. */
static int writer_setup(st_writer *w, const st_convert_plan *p, int shard, st_error *err)
{
	const st_convert_options *o = &p->o;
	st_checkpoint *c = p->c;
	int rc = ST_OK;

	/* Metadata of every input file, the first file winning a conflict
	 * (set in reverse so earlier files overwrite later ones), then the
	 * options' entries in order. A file's keys are unique, so they go in
	 * key order: the writer then needs neither a key set nor a sort
	 * (100k shuffled keys took 2.4x stinfo's time, in the probes and in
	 * reading the entries back scattered). */
	for (size_t f = st_checkpoint_n_files(c); rc == ST_OK && f-- > 0;) {
		st_file *file = st_checkpoint_file(c, f);
		for (size_t m = 0; rc == ST_OK && m < st_file_n_meta(file); m++) {
			const st_meta *meta = st__file_meta_by_key(file, m);
			rc = st_writer_set_meta(w, meta->key, meta->value, err);
		}
	}
	for (size_t m = 0; rc == ST_OK && m < o->n_meta; m++) {
		st_error e;
		if ((rc = st_writer_set_meta(w, o->meta[m].key, o->meta[m].value, &e)) != ST_OK)
			st__error(err, rc, "metadata %s=%s: %s", o->meta[m].key, o->meta[m].value,
			          e.message);
	}
	for (size_t i = 0; rc == ST_OK && i < p->n_items; i++) {
		const st_convert_item *it = &p->items[i];
		if (it->action == ST_CONVERT_DROP || (shard >= 0 && it->shard != (unsigned)shard))
			continue;
		rc = st_writer_add(w, it->out_name, it->out_name_len, it->out, it->out_ndim,
		                   it->out_dims, err);
	}
	return rc;
}

/*
 * A write to the output failed. libst names the temporary file, which is
 * gone by the time the user reads the message; name the file as the user
 * knows it (shown) and the system error instead.
 */
static int write_error(const char *shown, st_error *err)
{
	if (err->sys_errno) {
		int e = err->sys_errno;
		st__error(err, ST_EIO, "%.300s: cannot write: %s", shown, strerror(e));
		err->sys_errno = e;
	}
	return err->code ? err->code : ST_EIO;
}

/*
 * Write one output file (all items, or those of one shard): to path, or
 * when snap is set to file path of the snapshot. shown is its name in
 * messages (where it will be, not the temporary).
 */
static int write_one(st_convert_plan *p, const st_convert_run *r, st_snapshot *snap,
                     const char *path, const char *shown, int shard, int fd, st_error *err)
{
	st_writer *w;
	job j = {.p = p, .r = r, .n_workers = r->threads ? r->threads : 1};
	int rc = st_writer_new(&w, err);

	if (rc != ST_OK)
		return rc;
	rc = writer_setup(w, p, shard, err);
	/* The disk works while the data is still coming, so the final fsync
	 * has little left to wait for. */
	if (rc == ST_OK)
		st_writer_set_writeback(w, WRITEBACK_EVERY);
	j.w = w;
	j.n_items = rc == ST_OK ? st_writer_n_tensors(w) : 0;
	if (rc == ST_OK && !(j.items = malloc((j.n_items ? j.n_items : 1) * sizeof *j.items)))
		rc = st__error(err, ST_ENOMEM, "out of memory");
	for (size_t i = 0; rc == ST_OK && i < j.n_items; i++)
		if (!(j.items[i] = st__convert_item_named(p, st_writer_tensor(w, i)->name,
		                                          st_writer_tensor(w, i)->name_len)))
			rc = st__error(err, ST_ESTATE, "internal error: tensor missing from the checkpoint");
	if (rc == ST_OK && cancelled(r, err))
		rc = ST_EIO;
	else if (rc == ST_OK) {
		rc = snap ? st_snapshot_open_writer(snap, w, path, err)
		     : fd >= 0 ? st_writer_open_fd(w, fd, path, err)
		               : st_writer_open(w, path, err);
		if (rc != ST_OK)
			rc = write_error(shown, err);
	}
	if (rc == ST_OK && (rc = run_job(&j, err)) != ST_OK && j.write_failed)
		rc = write_error(shown, err);
	if (rc == ST_OK && cancelled(r, err))
		rc = ST_EIO;
	if (rc == ST_OK && (rc = st_writer_finish(w, err)) != ST_OK)
		rc = write_error(shown, err);
	free(j.items);
	st_writer_free(w); /* unfinished: removes the temporary */
	return rc;
}

int st_convert_write_file(st_convert_plan *p, const char *path, const st_convert_run *r,
                          st_error *err)
{
	static const st_convert_run none;
	ST__REQUIRE(p && path);
	return write_one(p, r ? r : &none, NULL, path, path, -1, -1, err);
}

int st_convert_write_fd(st_convert_plan *p, int fd, const char *name, const st_convert_run *r,
                        st_error *err)
{
	static const st_convert_run none;
	ST__REQUIRE(p && fd >= 0 && name);
	return write_one(p, r ? r : &none, NULL, name, name, -1, fd, err);
}

/*
 * The config.json a directory output gets, made from IN's text and added
 * before st_snapshot_copy_dir, which then leaves IN's alone: quantizing's
 * quantization_config, or, when weights are dequantized, none and the
 * target's torch_dtype. Nothing is added when there is nothing to change
 * or IN's is not a JSON object (copy_dir then copies it and says so).
 */
static int given_config(st_snapshot *snap, st_convert_plan *p, st_error *err)
{
	size_t len = 0, out_len = 0;
	const char *config;
	char *out = NULL;
	st_error e;
	int rc = st__convert_config(p, &config, &len, err), made = ST_EINVAL;

	if (rc != ST_OK || !config)
		return rc;
	if (p->o.quantize)
		made = st_quant_config_fp8(config, len, p->block[0], p->block[1], &out, &out_len, &e);
	else if (p->o.has_to && p->dq.n_fp8 + p->dq.n_mxfp4) /* not the pairs quantizing kept */
		made = st_quant_config_dequantized(config, len, st_torch_dtype_name(p->o.to), &out,
		                                   &out_len, &e);
	if (made == ST_OK)
		rc = st_snapshot_add_file(snap, "config.json", out, out_len, 0644, err);
	free(out);
	return rc;
}

/* Write the shards and the index of a snapshot. */
static int write_members(st_convert_plan *p, const char *dir, st_snapshot *snap,
                         const st_convert_run *r, st_error *err)
{
	unsigned n_shards = p->n_shards;
	size_t dl = strlen(dir);
	char (*names)[64] = calloc(n_shards, sizeof *names);
	char *shown = malloc(dl + 66);
	int rc = names && shown ? ST_OK : st__error(err, ST_ENOMEM, "out of memory");

	for (unsigned k = 0; rc == ST_OK && k < n_shards; k++) {
		st_snapshot_file_name(names[k], sizeof names[k], k, n_shards);
		snprintf(shown, dl + 66, "%s%s%s", dir, dl && dir[dl - 1] == '/' ? "" : "/",
		         names[k]);
		rc = write_one(p, r, snap, names[k], shown, n_shards == 1 ? -1 : (int)k, -1, err);
	}
	if (rc == ST_OK && n_shards > 1) {
		st_index_entry *entries = calloc(p->n_items ? p->n_items : 1, sizeof *entries);
		size_t n_entries = 0;
		uint64_t total = 0;
		if (!entries)
			rc = st__error(err, ST_ENOMEM, "out of memory");
		for (size_t i = 0; rc == ST_OK && i < p->n_items; i++) {
			const st_convert_item *it = &p->items[i];
			if (it->action == ST_CONVERT_DROP)
				continue;
			entries[n_entries++] = (st_index_entry){it->out_name, it->out_name_len,
			                                        names[it->shard]};
			total += it->out_bytes;
		}
		if (rc == ST_OK)
			rc = st_snapshot_write_index(snap, total, entries, n_entries, err);
		free(entries);
	}
	free(shown);
	free(names);
	return rc;
}

int st_convert_write_snapshot(st_convert_plan *p, const char *dir, const char *src,
                              unsigned flags, const st_convert_run *r, st_error *err)
{
	static const st_convert_run none;
	st_snapshot *snap = NULL;
	int rc = ST_EIO;

	ST__REQUIRE(p && dir);
	if (!r)
		r = &none;
	if (cancelled(r, err))
		return ST_EIO;
	if ((rc = st_snapshot_open(&snap, dir, flags, err)) != ST_OK)
		return rc;
	rc = write_members(p, dir, snap, r, err);
	if (rc == ST_OK && src)
		rc = given_config(snap, p, err);
	if (rc == ST_OK && src)
		rc = st_snapshot_copy_dir(snap, src, p->c,
		                          p->o.has_to ? st_torch_dtype_name(p->o.to) : NULL, r->note,
		                          r->ctx, err);
	if (rc == ST_OK && cancelled(r, err))
		rc = ST_EIO;
	if (rc == ST_OK)
		rc = st_snapshot_keep_old(snap, p->c, r->note, r->ctx, err);
	/* From here the new output is complete: the swap and the removal of
	 * the old directory must both happen. */
	if (rc == ST_OK && cancelled(r, err))
		rc = ST_EIO;
	if (rc == ST_OK)
		rc = st_snapshot_commit(snap, err);
	st_snapshot_close(snap); /* uncommitted: removes the new directory */
	return rc;
}
