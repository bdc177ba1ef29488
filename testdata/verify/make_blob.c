/*
 * make_blob.c - write a large test blob at test time instead of committing
 * it: the bytes of HEAD (a safetensors length and header) followed by N
 * data bytes, byte j of which is byte j % 8 (little-endian) of
 * splitmix64 word j / 8, word i being splitmix64's (i + 1)-th output from
 * state SEED; with FLIP, the byte at that file offset is XORed with 1.
 * gen_verify.py computes the same bytes with numpy and their SHA-256 with
 * hashlib.
 *
 *   make_blob HEAD N SEED [FLIP] > blob
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

int main(int argc, char **argv)
{
	if (argc < 4 || argc > 5) {
		fprintf(stderr, "usage: make_blob HEAD N SEED [FLIP]\n");
		return 2;
	}
	FILE *h = fopen(argv[1], "rb");
	if (!h) {
		perror(argv[1]);
		return 2;
	}
	unsigned long long n = strtoull(argv[2], NULL, 10);
	uint64_t state = strtoull(argv[3], NULL, 10);
	long long flip = argc == 5 ? strtoll(argv[4], NULL, 10) : -1;
	static unsigned char buf[1 << 16];
	unsigned long long at = 0;
	size_t k;
	while ((k = fread(buf, 1, sizeof buf, h)) > 0) {
		for (size_t i = 0; i < k; i++, at++)
			if ((long long)at == flip)
				buf[i] ^= 1;
		fwrite(buf, 1, k, stdout);
	}
	fclose(h);
	uint64_t word = 0;
	for (unsigned long long j = 0; j < n;) {
		size_t m = 0;
		for (; m < sizeof buf && j < n; m++, j++, at++) {
			if (j % 8 == 0) {
				state += 0x9e3779b97f4a7c15ull;
				word = mix(state);
			}
			buf[m] = (unsigned char)(word >> (8 * (j % 8)));
			if ((long long)at == flip)
				buf[m] ^= 1;
		}
		fwrite(buf, 1, m, stdout);
	}
	return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 2;
}
