/*
 * gpt2run_options.c - gpt2run's --help and command line (gpt2run.h).
 */
#include "gpt2/gpt2run.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/ckpt.h"
#include "fe/cli.h"

static void usage(const char *intro)
{
	printf("Usage: %s --model-dir DIR [OPTION]...\n%s\n", cli_progname(), intro);
	printf("Prompt (default: the end-of-text token alone):\n"
	       "  -p, --prompt TEXT       the prompt as text\n"
	       "      --prompt-file FILE  read the prompt from FILE ('-' for stdin), byte for\n"
	       "                          byte\n"
	       "  -i, --ids LIST          the prompt as token ids, e.g. 464,3290,318\n"
	       "      --tokenize          print the prompt's token ids and exit (needs only\n"
	       "                          the tokenizer files)\n"
	       "      --tokenizer PATH    read the tokenizer from PATH instead of --model-dir:\n"
	       "                          a tokenizer.json, a snapshot folder or a .gguf file\n"
	       "\n"
	       "Generation:\n"
	       "  -n, --new-tokens N      generate up to N tokens (default 64)\n"
	       "      --greedy            always take the most likely token\n"
	       "      --temperature T     sample from softmax(logits / T) (default 1.0;\n"
	       "                          0 means greedy)\n"
	       "      --top-k K           sample among the K most likely tokens (0: all)\n"
	       "      --top-p P           sample within the smallest set of tokens whose\n"
	       "                          probability reaches P (default 1.0: all)\n"
	       "      --seed S            random seed (default 1337); the same seed gives the\n"
	       "                          same tokens on any thread count\n"
	       "      --ignore-eos        go on past the end-of-text token\n"
	       "      --print-ids         print the generated ids (comma-separated) instead\n"
	       "                          of text\n"
	       "\n"
	       "Logits (no generation):\n"
	       "      --logits-out FILE   write a safetensors file with one tensor 'logits',\n"
	       "                          F32 [T, vocab_size]: the logits at every prompt\n"
	       "                          position ('-': to standard output, a pipe)\n"
	       "      --check REF         compare those logits with tensor 'logits' in REF;\n"
	       "                          print the max abs diff and where it is; exit 1 when\n"
	       "                          it exceeds the tolerance. Without a prompt, REF's\n"
	       "                          integer tensor 'ids', if any, is the prompt. When\n"
	       "                          REF holds 'greedy' (ids of a greedy continuation),\n"
	       "                          also generate as many ids greedily and report the\n"
	       "                          first step that differs\n"
	       "      --atol A            tolerance of --check (default 1e-4)\n"
	       "      --trace FILE        write every intermediate of the prompt's forward\n"
	       "                          pass (F32 [T, ...], in forward order, names in\n"
	       "                          doc/trace.md) and the ids to a safetensors file\n"
	       "                          ('-': to standard output)\n"
	       "\n"
	       "Running:\n"
	       "      --dtype TYPE        hold the weights in memory as f32, bf16 or f16\n"
	       "                          (default: as stored); arithmetic is F32\n"
	       "  -j, --threads N         threads (default: CPUs online)\n"
	       "  -q, --quiet             no timings on stderr\n"
	       "  -h, --help              print this help and exit\n"
	       "  -V, --version           print the version and exit\n"
	       "\n"
	       "Text streams to stdout as it is made; timings (load, prompt tokens/s,\n"
	       "generated tokens/s) go to stderr, on lines of their own when both are one\n"
	       "file or a terminal.\n"
	       "\n"
	       "GPT2RUN_KERNEL=portable|avx2|avx512 picks the inner loops (default: the\n"
	       "best this CPU runs).\n"
	       "\n"
	       "Exit status: 0 success, 1 logits differ from --check's reference, 2 usage\n"
	       "error, unreadable or invalid snapshot, I/O error.\n");
}

void gpt2run_parse_options(int argc, char **argv, struct gpt2run_options *o, const char *intro)
{
	enum {
		OPT_TOKENIZE = 256,
		OPT_TOKENIZER,
		OPT_GREEDY,
		OPT_TOP_P,
		OPT_IGNORE_EOS,
		OPT_PRINT_IDS,
		OPT_LOGITS_OUT,
		OPT_CHECK,
		OPT_ATOL,
		OPT_DTYPE,
		OPT_MODEL_DIR,
		OPT_TRACE,
		OPT_PROMPT_FILE,
		OPT_TEMPERATURE,
		OPT_TOP_K,
		OPT_SEED
	};
	static const struct option longopts[] = {
		{"model-dir", required_argument, NULL, OPT_MODEL_DIR},
		{"prompt", required_argument, NULL, 'p'},
		{"prompt-file", required_argument, NULL, OPT_PROMPT_FILE},
		{"ids", required_argument, NULL, 'i'},
		{"tokenize", no_argument, NULL, OPT_TOKENIZE},
		{"tokenizer", required_argument, NULL, OPT_TOKENIZER},
		{"new-tokens", required_argument, NULL, 'n'},
		{"greedy", no_argument, NULL, OPT_GREEDY},
		{"temperature", required_argument, NULL, OPT_TEMPERATURE},
		{"top-k", required_argument, NULL, OPT_TOP_K},
		{"top-p", required_argument, NULL, OPT_TOP_P},
		{"seed", required_argument, NULL, OPT_SEED},
		{"ignore-eos", no_argument, NULL, OPT_IGNORE_EOS},
		{"print-ids", no_argument, NULL, OPT_PRINT_IDS},
		{"logits-out", required_argument, NULL, OPT_LOGITS_OUT},
		{"check", required_argument, NULL, OPT_CHECK},
		{"trace", required_argument, NULL, OPT_TRACE},
		{"atol", required_argument, NULL, OPT_ATOL},
		{"dtype", required_argument, NULL, OPT_DTYPE},
		{"threads", required_argument, NULL, 'j'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	memset(o, 0, sizeof *o);
	o->new_tokens = 64;
	o->temperature = 1.0;
	o->top_p = 1.0;
	o->atol = 1e-4;
	o->seed = 1337;
	o->dtype = -1;
	o->threads = cli_default_threads(1024);
	int c;
	while ((c = cli_getopt(argc, argv, "p:i:n:j:qhV", longopts)) != -1) {
		switch (c) {
		case OPT_MODEL_DIR: o->model_dir = optarg; break;
		case 'p': o->prompt = optarg; break;
		case OPT_PROMPT_FILE: o->prompt_file = optarg; break;
		case 'i': o->ids = optarg; break;
		case OPT_TOKENIZE: o->tokenize = 1; break;
		case OPT_TOKENIZER: o->tokenizer_dir = optarg; break;
		case 'n':
			if (cli_parse_u64(optarg, &o->new_tokens) || o->new_tokens > 100000000)
				cli_usage_error("--new-tokens: '%s' is not a count", optarg);
			break;
		case OPT_GREEDY: o->greedy = 1; break;
		case OPT_TEMPERATURE:
			if (cli_parse_double(optarg, &o->temperature) || !(o->temperature >= 0) ||
			    isinf(o->temperature))
				cli_usage_error("--temperature: '%s' is not a number >= 0", optarg);
			o->sampling_set = 1;
			break;
		case OPT_TOP_K:
			if (cli_parse_u64(optarg, &o->top_k) || o->top_k > INT32_MAX)
				cli_usage_error("--top-k: '%s' is not a count", optarg);
			o->sampling_set = 1;
			break;
		case OPT_TOP_P:
			if (cli_parse_double(optarg, &o->top_p) || !(o->top_p > 0) || o->top_p > 1)
				cli_usage_error("--top-p: '%s' is not a number in (0, 1]", optarg);
			o->sampling_set = 1;
			break;
		case OPT_SEED:
			if (cli_parse_u64(optarg, &o->seed))
				cli_usage_error("--seed: '%s' is not a non-negative integer",
				                optarg);
			break;
		case OPT_IGNORE_EOS: o->ignore_eos = 1; break;
		case OPT_PRINT_IDS: o->print_ids = 1; break;
		case OPT_LOGITS_OUT: o->logits_out = optarg; break;
		case OPT_CHECK: o->check = optarg; break;
		case OPT_TRACE: o->trace = optarg; break;
		case OPT_ATOL: o->atol = cli_opt_nonneg("--atol", optarg); break;
		case OPT_DTYPE:
			o->dtype = gpt2_dtype_parse(optarg);
			if (o->dtype < 0)
				cli_usage_error("--dtype: unknown dtype '%s' (expected "
				                "f32, bf16 or f16)",
				                optarg);
			break;
		case 'j': o->threads = cli_opt_threads(optarg, 1024); break;
		case 'q': o->quiet = 1; break;
		case 'h': usage(intro); exit(cli_exit(CLI_OK));
		case 'V': cli_version();
		}
	}
	cli_operands(argc, argv, optind, 0, 0, NULL);
	int sources = !!o->prompt + !!o->prompt_file + !!o->ids;
	if (sources > 1)
		cli_usage_error("give one of --prompt, --prompt-file and --ids");
	if (o->model_dir) /* a folder, with config.json and the tokenizer beside */
		ckpt_refuse_stdin(o->model_dir, "--model-dir");
	if (o->tokenize) {
		if (!o->prompt && !o->prompt_file)
			cli_usage_error("--tokenize needs --prompt or --prompt-file");
		if (!o->model_dir && !o->tokenizer_dir)
			cli_usage_error("--tokenize needs --model-dir or --tokenizer");
		return;
	}
	if (!o->model_dir)
		cli_usage_error("--model-dir is required");
	if (o->greedy && o->sampling_set)
		cli_usage_error("--greedy does not go with --temperature, --top-k "
		                "or --top-p");
	/* '-' is standard output: one file can go there. */
	if (o->logits_out && o->trace && !strcmp(o->logits_out, "-") && !strcmp(o->trace, "-"))
		cli_usage_error("--logits-out - and --trace - would both write to standard output");
}
