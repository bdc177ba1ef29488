/*
 * gpt2run.c - run GPT-2 from a Hugging Face snapshot: generate text, dump
 * the logits of a prompt (--logits-out), or compare them with a reference
 * (--check). This is how a user proves a checkpoint loaded or converted
 * correctly: run the model.
 *
 * gpt2run and strun are one program (tools/gpt2/gpt2run_main.c); gpt2run
 * loads with GPT-2's loader alone, which refuses every other model_type
 * (strun runs those).
 */
#include "fe/cli.h"
#include "gpt2/gpt2run.h"

static const char GPT2RUN_INTRO[] =
	"Run GPT-2 from a Hugging Face snapshot on the CPU: generate text, or dump\n"
	"or check the logits of a prompt.\n"
	"\n"
	"DIR holds config.json and the weights (model.safetensors, a shard index,\n"
	"one *.safetensors file, or pytorch_model.bin read without running its\n"
	"pickle), F32, F16 or BF16, and normally the tokenizer files.\n";

int main(int argc, char **argv)
{
	cli_init("gpt2run");
	return gpt2run_main(argc, argv, GPT2RUN_INTRO, 0);
}
