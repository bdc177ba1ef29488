/*
 * st.h - libst, a C library for safetensors checkpoints.
 *
 * A safetensors file is laid out as
 *
 *   [u64 little-endian N][N bytes of JSON header][data buffer]
 *
 * The JSON header is one object. Each key but "__metadata__" names a tensor:
 *
 *   {"__metadata__": {"format": "pt"},
 *    "wte.weight": {"dtype": "F32", "shape": [50257, 768],
 *                   "data_offsets": [0, 154389504]}, ...}
 *
 * data_offsets [BEGIN, END) count from the start of the data buffer (byte
 * 8 + N of the file), not from the start of the file. Data is little-endian,
 * C order, with no alignment. "__metadata__" maps strings to strings.
 *
 * This is the one header a user includes. It pulls in:
 *   st/error.h   status codes, st_error, st_strerror
 *   st/dtype.h   the dtype table and float conversion (F64 ... F8, F4)
 *   st/file.h    reading and validating one file (mmap or memory)
 *   st/writer.h  writing one file: streaming, canonical, atomic
 *   st/checkpoint.h a file, shards and their index, or a snapshot, as one
 *   st/index.h   writing shard indexes
 *   st/atomic.h  replacing one file atomically (temporary, fsync, rename)
 *   st/snapshot.h  shard planning and snapshot directories written atomically
 *   st/gguf.h    reading and writing GGUF files (llama.cpp's format)
 *   st/hash.h    SHA-256 and git blob SHA-1 of bytes and files
 *   st/verify.h  offline integrity of caches, snapshots and folders
 *   st/stream.h  streaming tensor data in chunks on N threads
 *   st/compare.h comparing two tensors' values: tolerances, rounding
 *   st/stats.h   value statistics of a tensor (min, max, mean, std, counts)
 *   st/diagnose.h naming how two same-shape tensors differ (transposed...)
 *   st/quant.h   scaled FP8 and MXFP4: dequantizing and quantizing, and
 *                the plans that pair weights with their scales
 *   st/config.h  a model's config.json: reading it, editing its text
 *   st/arch.h    what a config.json implies; GPT-2 HF <-> GGUF tensor names
 *   st/diff.h    two checkpoints compared: pairing, planning, verdicts
 *   st/convert.h a checkpoint converted: the plan, one file or a snapshot
 *
 * The library never prints and never exits (save for a caller's misuse,
 * such as an index past a table, which aborts: libst.3, "Misuse"); it
 * keeps no global mutable state, so distinct handles may be used from
 * distinct threads. Reading
 * is also safe from many threads on ONE st_file or st_checkpoint (every
 * call but close; see st/file.h); a writer is one thread's at a time.
 */
#ifndef ST_H
#define ST_H

/* The one place the version is written (CMakeLists.txt reads it here). */
#define ST_VERSION_MAJOR 0
#define ST_VERSION_MINOR 1
#define ST_VERSION_PATCH 0
#define ST_VERSION_NUMBER \
	(ST_VERSION_MAJOR * 10000 + ST_VERSION_MINOR * 100 + ST_VERSION_PATCH)
#define ST__STR(x) #x
#define ST__XSTR(x) ST__STR(x)
#define ST_VERSION_STRING \
	ST__XSTR(ST_VERSION_MAJOR) "." ST__XSTR(ST_VERSION_MINOR) "." \
	ST__XSTR(ST_VERSION_PATCH)

#include "st/error.h"
#include "st/dtype.h"
#include "st/file.h"
#include "st/writer.h"
#include "st/checkpoint.h"
#include "st/index.h"
#include "st/atomic.h"
#include "st/snapshot.h"
#include "st/gguf.h"
#include "st/hash.h"
#include "st/verify.h"
#include "st/quant.h"
#include "st/stream.h"
#include "st/compare.h"
#include "st/stats.h"
#include "st/diagnose.h"
#include "st/config.h"
#include "st/arch.h"
#include "st/memory.h"
#include "st/npy.h"
#include "st/diff.h"
#include "st/convert.h"
#include "st/sniff.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version of the library that is linked, e.g. "0.1.0". */
ST_API const char *st_version_string(void);

#ifdef __cplusplus
}
#endif

#endif /* ST_H */
