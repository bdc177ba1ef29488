/*
 * shortest.h - the shortest decimal that reads back as the same binary
 * floating-point number, for the tools' JSON and GGUF metadata output.
 * Not part of libst: how a number is printed is the tools' business.
 *
 * The digits are the fewest that round-trip (strtod for a double, strtof
 * for a float), and among those the closest to the exact value, ties to
 * an even last digit. They are laid out as printf's "%.*g" lays out that
 * many significant digits: 0.1, 1e+02, 123456789, 1e-05, -0. So each
 * result is what the search "the smallest P whose %.*g reads back" gives,
 * except where a power of two's narrower lower neighbour lets a shorter
 * string than printf's nearest one round-trip (then this one is shorter).
 * Non-finite values print as printf prints them: inf, -inf, nan, -nan.
 */
#ifndef ST_SHORTEST_H
#define ST_SHORTEST_H

#include <stddef.h>

/* The longest text (with its NUL): "-2.2250738585072014e-308". */
#define SHORTEST_MAX 32

/* Write v to buf (SHORTEST_MAX bytes) with a NUL; returns the length. */
size_t shortest_f64(char *buf, double v);
size_t shortest_f32(char *buf, float v);

#endif
