/*
 * crc32.c - the one file of libst that uses libdeflate: the CRC-32 of zip
 * members (the polynomial of zip, gzip and zlib), which every stored
 * storage of a PyTorch zip checkpoint is checked against as it is read
 * (torch.c).
 *
 * Why not zlib's crc32, which libst links anyway (archive.c): zlib 1.2.13
 * computes it with tables, 2 to 2.4 GB/s on one core, as much CPU as the
 * rest of converting a checkpoint that is in the page cache; libdeflate
 * picks at run time a carry-less multiply kernel (PCLMULQDQ, VPCLMULQDQ
 * with AVX-512 where the CPU has them, else tables), about 9 GB/s on the
 * same core (bench/README.md, bench_torch). The CRCs of pieces read apart are joined with zlib's
 * crc32_combine (st__arc_crc32_combine), which libdeflate lacks.
 */
#include "internal.h"

#include <libdeflate.h>

uint32_t st__crc32(uint32_t crc, const void *data, size_t n)
{
	return n ? libdeflate_crc32(crc, data, n) : crc;
}
