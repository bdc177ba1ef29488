/*
 * strun.c - run a model of any architecture libst's runners know, from a
 * Hugging Face snapshot: GPT-2 or the Llama family (Llama 2 and 3.x,
 * Mistral, Qwen2, Qwen3), chosen by config.json. Generate text, dump the
 * logits of a prompt (--logits-out), compare them with a reference
 * (--check), or write a trace (--trace): gpt2run's flags and outputs, for
 * every architecture.
 *
 * gpt2run and strun are one program (tools/gpt2/gpt2run_main.c, on the
 * model layer, tools/gpt2/model.h): this file names the tool and says
 * what it runs.
 */
#include "fe/cli.h"
#include "gpt2/gpt2run.h"

static const char STRUN_INTRO[] =
	"Run a model from a Hugging Face snapshot on the CPU: GPT-2 or the Llama\n"
	"family (llama, mistral, qwen2, qwen3), as config.json's architectures or\n"
	"model_type says. Generate text, or dump or check the logits of a prompt.\n"
	"\n"
	"DIR holds config.json and the weights (model.safetensors, a shard index,\n"
	"one *.safetensors file, or pytorch_model.bin read without running its\n"
	"pickle), F32, F16 or BF16, and normally the tokenizer files. The Llama\n"
	"family's weights are used where they lie, in their own dtype.\n";

int main(int argc, char **argv)
{
	cli_init("strun");
	return gpt2run_main(argc, argv, STRUN_INTRO, 1);
}
