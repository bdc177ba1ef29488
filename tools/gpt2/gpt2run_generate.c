/*
 * gpt2run_generate.c - gpt2run's generation: sample, stream the text
 * or the ids, stop, report the timings (gpt2run.h).
 */
#include "gpt2/gpt2run.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fe/cli.h"

/* Where the generated tokens go: text through the decoder, or ids. */
struct output {
	int print_ids, n_printed, warned;
	int last; /* the last byte written, 0 before any */
	gpt2_tokenizer *tok;
	gpt2_decoder dec;
};

/* One token to stdout, at once (a UTF-8 character split over tokens waits). */
static void emit(struct output *out, int32_t id)
{
	if (out->print_ids) {
		printf("%s%ld", out->n_printed++ ? "," : "", (long)id);
		fflush(stdout);
		return;
	}
	size_t len;
	const char *bytes = gpt2_tokenizer_token_bytes(out->tok, id, &len);
	if (!bytes) {
		if (!out->warned++)
			cli_warn("token id %ld has no text in the tokenizer; "
			         "nothing printed for it",
			         (long)id);
		return;
	}
	char *buf = cli_xmalloc(len + 4);
	size_t n = gpt2_decoder_push(&out->dec, bytes, len, buf);
	fwrite(buf, 1, n, stdout);
	if (n)
		out->last = (unsigned char)buf[n - 1];
	fflush(stdout);
	free(buf);
}

/*
 * Whether stdout and stderr are one file (2>&1): then the timings on
 * stderr must start on a line of their own after the text.
 */
static int same_stream(void)
{
	struct stat a, b;
	return fstat(STDOUT_FILENO, &a) == 0 && fstat(STDERR_FILENO, &b) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

void gpt2run_generate(model *m, gpt2_tokenizer *tok, const int32_t *prompt, size_t T,
                      const struct gpt2run_options *o)
{
	int V = m->vocab_size;
	char err[1024];
	gpt2_sampler s;
	float temp = o->greedy ? 0.0f : (float)o->temperature;
	if (gpt2_sampler_init(&s, V, temp, (int)o->top_k, (float)o->top_p, o->seed, err,
	                      sizeof err))
		cli_die(CLI_ERROR, "%s", err);
	s.pool = m->pool;
	struct output out = {.print_ids = o->print_ids, .tok = tok};
	float *logits = cli_xmalloc((size_t)V * sizeof(float));
	double t0 = cli_now();
	if (model_forward(m, prompt, (int)T, logits, 0, err, sizeof err))
		cli_die(CLI_ERROR, "%s", err);
	double t_prompt = cli_now() - t0;
	t0 = cli_now();
	uint64_t n_gen = 0;
	const char *stop = NULL;
	while (n_gen < o->new_tokens) {
		int32_t next = gpt2_sample(&s, logits);
		n_gen++;
		if (!o->ignore_eos && model_is_eos(m, next)) {
			if (o->print_ids)
				emit(&out, next);
			stop = "end-of-text";
			break;
		}
		emit(&out, next);
		if (n_gen == o->new_tokens)
			break;
		if (model_cache_len(m) == m->max_seq_len) {
			fflush(stdout);
			cli_warn("stopped at the context limit: %d tokens "
			         "(%s) after %llu new tokens",
			         m->max_seq_len, m->ctx_key, (unsigned long long)n_gen);
			break;
		}
		if (model_forward(m, &next, 1, logits, 0, err, sizeof err))
			cli_die(CLI_ERROR, "%s", err);
	}
	double t_gen = cli_now() - t0;
	if (!o->print_ids) {
		char tail[4];
		size_t n = gpt2_decoder_flush(&out.dec, tail);
		fwrite(tail, 1, n, stdout);
		if (n)
			out.last = (unsigned char)tail[n - 1];
	}
	if (o->print_ids || (out.last != '\n' && out.last != 0 &&
	                     (isatty(STDOUT_FILENO) || (!o->quiet && same_stream())))) {
		putchar('\n');
	}
	fflush(stdout);
	if (!o->quiet) {
		fprintf(stderr, "%s: prompt: %zu tokens in %.1f ms (%.1f tokens/s)\n",
		        cli_progname(), T, t_prompt * 1e3, (double)T / t_prompt);
		fprintf(stderr,
		        "%s: generated: %llu tokens in %.1f ms (%.1f "
		        "tokens/s)%s%s\n",
		        cli_progname(), (unsigned long long)n_gen, t_gen * 1e3,
		        t_gen > 0 ? (double)n_gen / t_gen : 0.0, stop ? ", stopped at " : "",
		        stop ? stop : "");
	}
	free(logits);
	gpt2_sampler_free(&s);
}
