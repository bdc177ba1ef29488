#!/usr/bin/env python3
"""gen_shortest_table.py - write tools/fe/shortest_table.h, the powers of
five that tools/fe/shortest.c (a Ryu-style shortest round-trip formatter,
after Ulf Adams, "Ryu: fast float-to-string conversion", PLDI 2018) scales
binary mantissas by. Exact integer arithmetic: Python's ints are unbounded.

  POW5[i]     = 5^i cut or widened to its top 125 bits (floor), i < 326
  POW5_INV[q] = floor(2^(bits(5^q) - 1 + 125) / 5^q) + 1, q < 342

Each entry is written as two 64-bit halves, low first. Run from the
source root: python3 scripts/gen_shortest_table.py > tools/fe/shortest_table.h
"""

BITS = 125
N_POW5 = 326
N_POW5_INV = 342
MASK = (1 << 64) - 1


def pow5(i):
    p = 5 ** i
    shift = p.bit_length() - BITS
    return p >> shift if shift >= 0 else p << -shift


def pow5_inv(q):
    p = 5 ** q
    return (1 << (p.bit_length() - 1 + BITS)) // p + 1


def table(name, n, f):
    print("static const uint64_t %s[%d][2] = {" % (name, n))
    for i in range(n):
        v = f(i)
        assert v < (1 << 128)
        print("\t{%du, %du}," % (v & MASK, v >> 64))
    print("};")


print("/*")
print(" * shortest_table.h - powers of five for tools/fe/shortest.c, written by")
print(" * scripts/gen_shortest_table.py (which says how they are computed); do not")
print(" * edit by hand.")
print(" */")
print("#ifndef ST_SHORTEST_TABLE_H")
print("#define ST_SHORTEST_TABLE_H")
print()
print("#include <stdint.h>")
print()
print("#define POW5_BITS %d" % BITS)
print("#define POW5_INV_BITS %d" % BITS)
print()
table("POW5", N_POW5, pow5)
print()
table("POW5_INV", N_POW5_INV, pow5_inv)
print()
print("#endif")
